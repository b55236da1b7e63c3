"""Smoke tests of the classifier examples (full WordNet, Fashion-MNIST) on tiny synthetic stand-ins of their data."""

import gzip
import io
import math
import zipfile

import numpy as np
import pytest

from privsum.datasets._storage import encode_strings, encode_unit_rows
from tests.examples.test_examples import load_example

WORDNET_CLASSES = ("noun.animal", "noun.food", "noun.plant")
WORDS = ("dog", "bread", "tree", "cat", "cheese", "fern")  # word i sits at the centre of class i % 3


def _save_npz(path, arrays):
    with zipfile.ZipFile(path, "w") as archive:
        for name, array in arrays.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.asarray(array), allow_pickle=False)
            archive.writestr(f"{name}.npy", buffer.getvalue())


def _unit(rows):
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def write_wordnet_stand_in(folder, *, per_class=150, dimension=8, seed=0):
    """A tiny file in the layout of `scripts/build_wordnet_dataset.py --full`: three separated clusters, and a vocabulary."""
    rng = np.random.default_rng(seed)
    centres = np.eye(dimension)[: len(WORDNET_CLASSES)]
    labels = np.repeat(np.arange(len(WORDNET_CLASSES)), per_class)
    embeddings = _unit(centres[labels] + rng.normal(0.0, 0.15, (labels.size, dimension)))
    n = labels.size
    _save_npz(
        folder / "wordnet_glosses.npz",
        {
            "format_version": np.array(1),
            "embeddings": encode_unit_rows(embeddings),
            "labels": labels.astype(np.uint8),
            "is_test": rng.random(n) < 0.25,
            "class_names": np.array(WORDNET_CLASSES),
            "texts": encode_strings([f"gloss {i}" for i in range(n)]),
            "lemmas": encode_strings([f"lemma{i}" for i in range(n)]),
            "synset_offsets": np.arange(n, dtype=np.uint32),
            "synset_pos": np.frombuffer(b"n" * n, dtype=np.uint8),
        },
    )
    vocabulary = _unit(centres[np.arange(len(WORDS)) % 3] + rng.normal(0.0, 0.05, (len(WORDS), dimension)))
    _save_npz(
        folder / "wordnet_vocabulary.npz",
        {
            "format_version": np.array(1),
            "embeddings": encode_unit_rows(vocabulary),
            "words": encode_strings(WORDS),
            "n_words": np.array(len(WORDS)),
        },
    )


def test_wordnet_full_runs_on_a_tiny_stand_in(tmp_path, capsys):
    write_wordnet_stand_in(tmp_path)
    results = load_example("wordnet_full").main(
        path=tmp_path, protocols=("3nb",), epsilons=(2.0, 8.0), repetitions=32, decoded=WORDNET_CLASSES, top_k=2, output=tmp_path
    )
    printed = capsys.readouterr().out
    assert [(r.protocol, r.epsilon) for r in results] == [
        ("exact", math.inf),
        ("3nb", 2.0),
        ("3nb", 8.0),
        ("central-gaussian", 2.0),
        ("central-gaussian", 8.0),
    ]
    assert results[0].accuracy > 0.9  # three well-separated clusters
    assert all(0.0 <= r.accuracy <= 1.0 for r in results)
    assert all("replace-one" in r.guarantee for r in results[1:])
    for name, words in (("noun.animal", ("dog", "cat")), ("noun.food", ("bread", "cheese")), ("noun.plant", ("tree", "fern"))):
        # the two top words of each class, in either order (their order depends on the calibrated noise)
        assert any(f"{name:<20} {a}, {b}" in printed for a, b in (words, words[::-1]))
    assert "machine:" in printed and "msgs/user" in printed
    assert (tmp_path / "accuracy_vs_epsilon.csv").read_text().count("\n") == 1 + len(results)
    assert "<svg" in (tmp_path / "accuracy_vs_epsilon.svg").read_text()


@pytest.mark.parametrize("path", [None, "missing-folder"])
def test_wordnet_full_explains_how_to_build_the_data(path, tmp_path):
    with pytest.raises(SystemExit, match=r"build_wordnet_dataset.py --full --out DIR"):
        load_example("wordnet_full").main(path=None if path is None else tmp_path / path)


def test_wordnet_full_arguments_parse():
    arguments = load_example("wordnet_full").parse_arguments(["--path", "d", "--protocols", "rr", "--output", ""])
    assert arguments["path"] == "d" and arguments["protocols"] == ["rr"] and arguments["output"] is None


def _idx_bytes(array, type_code):
    header = bytes([0, 0, type_code, array.ndim]) + np.array(array.shape, dtype=">u4").tobytes()
    return header + array.tobytes()


def write_fashion_stand_in(folder, *, per_class=40, side=8, seed=0):
    """Tiny IDX files: class c lights its own block of pixels; train files gzipped, test files not."""
    rng = np.random.default_rng(seed)
    for prefix, count, suffix in (("train", per_class, ".gz"), ("t10k", per_class // 2, "")):
        labels = np.repeat(np.arange(10), count).astype(np.uint8)
        images = rng.integers(0, 30, (labels.size, side * side))
        for c in range(10):
            images[labels == c, 6 * c : 6 * c + 6] += 200
        images = images.astype(np.uint8).reshape(-1, side, side)
        for name, array in (("images-idx3-ubyte", images), ("labels-idx1-ubyte", labels)):
            data = _idx_bytes(array, 0x08)
            (folder / f"{prefix}-{name}{suffix}").write_bytes(gzip.compress(data) if suffix else data)


def test_fashion_mnist_runs_on_tiny_idx_files(tmp_path, capsys):
    write_fashion_stand_in(tmp_path)
    results = load_example("fashion_mnist").main(
        path=tmp_path, protocols=("rr", "pure"), epsilons=(4.0,), dimension=16, repetitions=32, output=tmp_path / "out"
    )
    printed = capsys.readouterr().out
    assert [(r.protocol, r.epsilon) for r in results] == [
        ("exact", math.inf),
        ("rr", 4.0),
        ("pure", 4.0),
        ("central-gaussian", 4.0),
    ]
    assert results[0].accuracy > 0.9  # every class has its own pixels
    assert all(0.0 <= r.accuracy <= 1.0 for r in results)
    assert "public FastJLT to 16-d" in printed and "400 training users, 200 test images" in printed
    assert (tmp_path / "out" / "accuracy_vs_epsilon.svg").is_file()


def test_read_idx_reads_big_endian_types_and_rejects_other_files(tmp_path):
    example = load_example("fashion_mnist")
    values = np.arange(-3, 9, dtype=np.int32).reshape(3, 4)
    (tmp_path / "a.idx").write_bytes(_idx_bytes(values.astype(">i4"), 0x0C))
    np.testing.assert_array_equal(example.read_idx(tmp_path / "a.idx"), values)
    (tmp_path / "b.idx").write_bytes(b"PK\x03\x04not an idx file")
    with pytest.raises(ValueError, match="not an IDX file"):
        example.read_idx(tmp_path / "b.idx")
    (tmp_path / "c.idx").write_bytes(_idx_bytes(values.astype(">i4"), 0x0C)[:-4])
    with pytest.raises(ValueError, match="header says"):
        example.read_idx(tmp_path / "c.idx")


def test_fashion_mnist_explains_how_to_get_the_data(tmp_path):
    example = load_example("fashion_mnist")
    with pytest.raises(SystemExit, match="apt-get install -y dataset-fashion-mnist"):
        example.main(path=tmp_path / "absent")
    (tmp_path / "train-images-idx3-ubyte").write_bytes(b"")
    with pytest.raises(SystemExit, match="train-labels-idx1-ubyte"):
        example.main(path=tmp_path)


def test_fashion_mnist_representation_is_unit_norm_and_refuses_constant_images():
    example = load_example("fashion_mnist")
    images = np.random.default_rng(1).integers(0, 256, (5, 784)).astype(np.uint8)
    for dimension in (784, 64):
        rows = example.embed(images, dimension)
        assert rows.shape == (5, dimension)
        np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0)
    with pytest.raises(ValueError, match="constant"):
        example.embed(np.full((1, 784), 7, dtype=np.uint8), 784)
