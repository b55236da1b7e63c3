"""Loaders for the bundled WordNet 3.0 gloss dataset and its decoding vocabulary.

The data were built offline by ``scripts/build_wordnet_dataset.py`` (see the data page of the docs for
sources, licence, sizes and the class list) and ship inside the package, so loading them needs only
the base install and never touches the network.
"""

from __future__ import annotations

import functools
import importlib.resources
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from privsum._validation import check_choice, invalid
from privsum.datasets._storage import decode_strings, decode_unit_rows

__all__ = ["LabelledEmbeddings", "Vocabulary", "load_vocabulary", "load_wordnet_glosses"]

GLOSSES_FILE = "wordnet_glosses.npz"
VOCABULARY_FILE = "wordnet_vocabulary.npz"
SUPPORTED_FORMAT_VERSION = 1
_SPLITS = ("train", "test", "all")


@dataclass(frozen=True, eq=False)
class LabelledEmbeddings:
    """Labelled unit-norm text embeddings, with the texts they came from.

    Attributes:
        embeddings: Read-only float32 array of shape ``(n_examples, dimension)``, rows of unit norm.
        labels: Read-only int64 array of shape ``(n_examples,)``, each an index into ``class_names``.
        class_names: Name of each class, indexed by label.
        texts: The embedded text of each example (for WordNet, the gloss's definition).
        lemmas: A headword of each example (for WordNet, the synset's first lemma); for display only.
        ids: A unique identifier of each example (for WordNet 3.0, the part-of-speech letter and the
            synset offset, as in ``"n02084071"``).
    """

    embeddings: np.ndarray
    labels: np.ndarray
    class_names: tuple[str, ...]
    texts: tuple[str, ...]
    lemmas: tuple[str, ...]
    ids: tuple[str, ...]

    def __post_init__(self) -> None:
        n_examples = self.embeddings.shape[0]
        if not (self.embeddings.ndim == 2 and self.labels.shape == (n_examples,)):
            raise ValueError("embeddings must be 2-D with one label per row")
        if not (len(self.texts) == len(self.lemmas) == len(self.ids) == n_examples):
            raise ValueError("texts, lemmas and ids must have one entry per row")
        if n_examples and not (self.labels.min() >= 0 and self.labels.max() < len(self.class_names)):
            raise ValueError("labels must index class_names")

    @property
    def n_examples(self) -> int:
        """Number of examples (rows)."""
        return int(self.embeddings.shape[0])

    @property
    def n_classes(self) -> int:
        """Number of classes."""
        return len(self.class_names)

    @property
    def dimension(self) -> int:
        """Length of each embedding."""
        return int(self.embeddings.shape[1])

    def class_counts(self) -> np.ndarray:
        """Number of examples of each class, indexed by label."""
        return np.bincount(self.labels, minlength=self.n_classes)

    def __repr__(self) -> str:
        return f"LabelledEmbeddings(n_examples={self.n_examples}, dimension={self.dimension}, class_names={self.class_names!r})"


class Vocabulary(NamedTuple):
    """Public words and their unit-norm embeddings (row ``i`` embeds ``words[i]``); unpacks as a pair."""

    words: tuple[str, ...]
    embeddings: np.ndarray

    def __repr__(self) -> str:
        shown = ", ".join(self.words[:3]) + (", ..." if len(self.words) > 3 else "")
        return f"Vocabulary({len(self.words)} words: {shown}; embeddings of shape {self.embeddings.shape})"


def _resolve(path: str | os.PathLike[str] | None, file_name: str, owner: str) -> Path | None:
    """The file to read, or None for the bundled resource."""
    if path is None:
        return None
    if not isinstance(path, (str, os.PathLike)):
        raise invalid("path", owner, "None, a file or a folder holding " + file_name, path)
    resolved = Path(path)
    if resolved.is_dir():
        resolved = resolved / file_name
    if not resolved.is_file():
        raise FileNotFoundError(
            f"{resolved} does not exist. Write it with `python scripts/build_wordnet_dataset.py --full --out FOLDER`."
        )
    return resolved


@functools.lru_cache(maxsize=4)
def _read_archive(path: Path | None, file_name: str) -> dict[str, np.ndarray]:
    """All arrays of an ``.npz`` written by the build script (bundled when ``path`` is None), decoded."""
    if path is None:
        resource = importlib.resources.files("privsum.datasets").joinpath("data").joinpath(file_name)
        if not resource.is_file():
            raise FileNotFoundError(f"the bundled data file {file_name} is missing from this installation of privsum")
        with importlib.resources.as_file(resource) as bundled, np.load(bundled, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    else:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    version = int(arrays["format_version"])
    if version != SUPPORTED_FORMAT_VERSION:
        raise ValueError(f"{file_name} has format version {version}; this privsum reads version {SUPPORTED_FORMAT_VERSION}")
    arrays["embeddings"] = decode_unit_rows(arrays["embeddings"])
    for array in arrays.values():
        array.flags.writeable = False
    return arrays


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def _class_selection(stored_names: tuple[str, ...], classes: Any) -> tuple[str, ...]:
    if classes is None:
        return stored_names
    if isinstance(classes, str) or not isinstance(classes, Sequence):
        raise invalid("classes", "load_wordnet_glosses", "None or a sequence of class names", classes)
    unknown = [name for name in classes if name not in stored_names]
    if unknown or not classes or len(set(classes)) != len(classes):
        raise invalid("classes", "load_wordnet_glosses", "distinct names among " + ", ".join(stored_names), classes)
    return tuple(classes)


def load_wordnet_glosses(
    *, split: str = "train", classes: Sequence[str] | None = None, path: str | os.PathLike[str] | None = None
) -> LabelledEmbeddings:
    """Load WordNet 3.0 glosses labelled by lexicographer file, embedded with all-MiniLM-L6-v2.

    The bundled data hold 33,437 glosses: up to 3,000 of each of 15 well-populated, semantically
    distinct classes (among them ``noun.animal``, ``noun.food`` and ``noun.plant``), split once with
    a fixed seed into 80% train (26,748) and 20% test (6,689) within each class. Embeddings are
    stored as int8 directions and come back as float32 rows of unit norm (cosine to the unquantised
    embedding above 0.9999). The full data set (all 117,659 glosses in 45 classes) is written by
    ``scripts/build_wordnet_dataset.py --full --out FOLDER`` and read with ``path=FOLDER``.

    Args:
        split: ``"train"``, ``"test"`` or ``"all"``.
        classes: Class names to keep, in the order that defines the new labels ``0, 1, ...``; None
            keeps every class of the file.
        path: None for the bundled data, or a file written by the build script (or its folder).

    Returns:
        The examples of the split, with read-only arrays.

    Raises:
        InvalidParameterError: If ``split``, ``classes`` or ``path`` is not valid.
        FileNotFoundError: If ``path`` names no file.

    Examples:
        >>> from privsum.datasets import load_wordnet_glosses
        >>> train = load_wordnet_glosses(split="train")
        >>> train.dimension, train.embeddings.dtype.name
        (384, 'float32')
        >>> "noun.animal" in train.class_names
        True
        >>> plants_and_food = load_wordnet_glosses(split="test", classes=["noun.plant", "noun.food"])
        >>> plants_and_food.class_names, sorted(set(plants_and_food.labels.tolist()))
        (('noun.plant', 'noun.food'), [0, 1])
    """
    split = check_choice(split, "split", "load_wordnet_glosses", _SPLITS)
    arrays = _read_archive(_resolve(path, GLOSSES_FILE, "load_wordnet_glosses"), GLOSSES_FILE)
    stored_names = tuple(str(name) for name in arrays["class_names"])
    class_names = _class_selection(stored_names, classes)
    new_label = np.full(len(stored_names), -1, dtype=np.int64)
    new_label[[stored_names.index(name) for name in class_names]] = np.arange(len(class_names))
    labels = new_label[arrays["labels"]]
    keep = labels >= 0
    if split != "all":
        keep &= arrays["is_test"] == (split == "test")
    rows = np.flatnonzero(keep)
    texts = decode_strings(arrays["texts"], arrays["labels"].size)
    lemmas = decode_strings(arrays["lemmas"], arrays["labels"].size)
    part_of_speech = arrays["synset_pos"].tobytes().decode("ascii")
    offsets = arrays["synset_offsets"]
    return LabelledEmbeddings(
        embeddings=_read_only(arrays["embeddings"][rows]),
        labels=_read_only(labels[rows]),
        class_names=class_names,
        texts=tuple(texts[row] for row in rows),
        lemmas=tuple(lemmas[row] for row in rows),
        ids=tuple(f"{part_of_speech[row]}{offsets[row]:08d}" for row in rows),
    )


def load_vocabulary(*, path: str | os.PathLike[str] | None = None) -> Vocabulary:
    """Load the public decoding vocabulary: common English words embedded like the glosses.

    The words are the single-word, lower-case WordNet 3.0 lemmas that are also in the SCOWL size-35
    list of common English words (20,882 words, sorted), each embedded on its own with the same model
    as the glosses, so a class's density can be queried at every word to decode the class.

    Args:
        path: None for the bundled vocabulary, or a file written by the build script (or its folder).

    Returns:
        ``Vocabulary(words, embeddings)``: a tuple of words and a read-only float32 array of shape
        ``(len(words), 384)`` with rows of unit norm.

    Raises:
        InvalidParameterError: If ``path`` is not valid.
        FileNotFoundError: If ``path`` names no file.

    Examples:
        >>> from privsum.datasets import load_vocabulary
        >>> words, embeddings = load_vocabulary()
        >>> embeddings.shape == (len(words), 384)
        True
        >>> "dog" in words
        True
    """
    arrays = _read_archive(_resolve(path, VOCABULARY_FILE, "load_vocabulary"), VOCABULARY_FILE)
    words = decode_strings(arrays["words"], int(arrays["n_words"]))
    return Vocabulary(words=words, embeddings=arrays["embeddings"])
