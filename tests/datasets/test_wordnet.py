"""The bundled WordNet gloss data and vocabulary: shapes, split, labels, and that they carry meaning."""

import importlib.resources
import shutil
import zipfile

import numpy as np
import pytest

from privsum.datasets import EMBEDDING_DIMENSION, LabelledEmbeddings, load_vocabulary, load_wordnet_glosses
from privsum.datasets import wordnet as wordnet_module
from privsum.exceptions import InvalidParameterError

# Renormalising float32 int8 codes leaves the norm within a few float32 ulps of 1.
NORM_TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def train():
    return load_wordnet_glosses(split="train")


@pytest.fixture(scope="module")
def test():
    return load_wordnet_glosses(split="test")


@pytest.fixture(scope="module")
def vocabulary():
    return load_vocabulary()


def class_centres(data: LabelledEmbeddings) -> np.ndarray:
    centres = np.stack([data.embeddings[data.labels == label].mean(axis=0) for label in range(data.n_classes)])
    return centres / np.linalg.norm(centres, axis=1, keepdims=True)


@pytest.mark.parametrize("split", ["train", "test", "all"])
def test_shapes_dtypes_and_unit_norm(split):
    data = load_wordnet_glosses(split=split)
    assert data.embeddings.shape == (data.n_examples, EMBEDDING_DIMENSION) and data.dimension == EMBEDDING_DIMENSION
    assert data.embeddings.dtype == np.float32 and data.labels.dtype == np.int64
    assert np.all(np.abs(np.linalg.norm(data.embeddings, axis=1) - 1) < NORM_TOLERANCE)
    assert len(data.texts) == len(data.lemmas) == len(data.ids) == data.n_examples
    assert data.labels.min() >= 0 and data.labels.max() < data.n_classes
    assert all(text.strip() for text in data.texts)


def test_classes_are_the_documented_ones_and_every_class_is_well_populated(train, test):
    assert {"noun.animal", "noun.food", "noun.plant"} <= set(train.class_names)
    assert train.class_names == test.class_names and 10 <= train.n_classes <= 20
    assert len(set(train.class_names)) == train.n_classes
    assert np.all(train.class_counts() >= 600) and np.all(test.class_counts() >= 150)
    assert train.n_examples >= 20_000


def test_split_is_disjoint_stratified_and_covers_all(train, test):
    everything = load_wordnet_glosses(split="all")
    assert not set(train.ids) & set(test.ids)
    assert set(train.ids) | set(test.ids) == set(everything.ids)
    assert len(set(everything.ids)) == everything.n_examples
    test_share = test.class_counts() / everything.class_counts()
    assert np.all(np.abs(test_share - 0.2) < 0.01)


def test_loading_is_deterministic_and_returns_read_only_arrays(train):
    again = load_wordnet_glosses(split="train")
    assert np.array_equal(train.embeddings, again.embeddings) and np.array_equal(train.labels, again.labels)
    assert train.ids == again.ids and train.texts == again.texts
    with pytest.raises(ValueError, match="read-only"):
        train.embeddings[0, 0] = 0.0
    with pytest.raises(ValueError, match="read-only"):
        train.labels[0] = 0


def test_ids_name_wordnet_synsets_of_the_right_part_of_speech(train):
    for identifier, label in zip(train.ids[:2000], train.labels[:2000], strict=True):
        assert len(identifier) == 9 and identifier[1:].isdigit()
        expected = "n" if train.class_names[label].startswith("noun.") else "v"
        assert identifier[0] == expected


def test_nearest_class_centre_classifier_is_accurate(train, test):
    # Measured: 0.739 test accuracy over 15 classes (chance about 0.09); the floor leaves room for a rebuild.
    predictions = np.argmax(test.embeddings @ class_centres(train).T, axis=1)
    accuracy = float(np.mean(predictions == test.labels))
    assert accuracy > 0.70


ANIMAL_WORDS = {"animal", "animals", "fauna", "mammal", "species", "creature", "insect", "vertebrate", "invertebrate"}
ANIMAL_WORDS |= {"wildlife", "zoology", "zoological", "carnivorous", "herbivorous", "bird", "reptile", "beast"}
PLANT_WORDS = {"plant", "plants", "botanical", "botany", "flora", "floral", "foliage", "vegetation", "shrub", "shrubbery"}
PLANT_WORDS |= {"flowering", "perennial", "horticultural", "herb", "flower", "tree", "leaf", "leaves"}
FOOD_WORDS = {"food", "recipe", "edible", "condiment", "cuisine", "fruit", "flavoring", "culinary", "dessert"}
FOOD_WORDS |= {"legume", "vegetable", "dish", "meal", "sauce", "meat", "bread", "snack", "delicacy"}


@pytest.mark.parametrize(
    ("class_name", "hand_list"), [("noun.animal", ANIMAL_WORDS), ("noun.plant", PLANT_WORDS), ("noun.food", FOOD_WORDS)]
)
def test_vocabulary_words_nearest_a_class_centre_name_the_class(train, vocabulary, class_name, hand_list):
    # Observed top 12 for noun.animal: fauna, species, zoological, carnivorous, mammal, herbivorous, insect, ...
    words, embeddings = vocabulary
    centre = class_centres(train)[train.class_names.index(class_name)]
    nearest = {words[index] for index in np.argsort(-(embeddings @ centre))[:12]}
    assert len(nearest & hand_list) >= 6


def test_vocabulary_is_sorted_common_words_with_unit_norm_embeddings(vocabulary):
    words, embeddings = vocabulary
    assert embeddings.shape == (len(words), EMBEDDING_DIMENSION) and embeddings.dtype == np.float32
    assert 10_000 <= len(words) <= 25_000
    assert list(words) == sorted(set(words)) and all(word.isalpha() and word.islower() for word in words)
    assert {"dog", "cat", "apple", "tree", "run", "happy"} <= set(words)
    assert np.all(np.abs(np.linalg.norm(embeddings, axis=1) - 1) < NORM_TOLERANCE)
    assert not embeddings.flags.writeable


def test_vocabulary_embeddings_match_meaning(vocabulary):
    words, embeddings = vocabulary
    index = {word: row for row, word in enumerate(words)}

    def similarity(first, second):
        return float(embeddings[index[first]] @ embeddings[index[second]])

    assert similarity("dog", "puppy") > similarity("dog", "tax") + 0.2
    assert similarity("apple", "banana") > similarity("apple", "carburetor") + 0.2


def test_classes_argument_selects_and_relabels():
    data = load_wordnet_glosses(split="all", classes=["noun.plant", "noun.animal"])
    everything = load_wordnet_glosses(split="all")
    assert data.class_names == ("noun.plant", "noun.animal")
    counts = everything.class_counts()
    expected = [counts[everything.class_names.index(name)] for name in data.class_names]
    assert data.class_counts().tolist() == expected
    plant_rows = np.flatnonzero(everything.labels == everything.class_names.index("noun.plant"))
    assert set(data.ids[row] for row in np.flatnonzero(data.labels == 0)) == {everything.ids[row] for row in plant_rows}


@pytest.mark.parametrize("split", ["validation", "", None, 1])
def test_invalid_split_is_refused(split):
    with pytest.raises(InvalidParameterError, match="'split'"):
        load_wordnet_glosses(split=split)


@pytest.mark.parametrize("classes", [["noun.unicorn"], [], ["noun.food", "noun.food"], "noun.food", 3])
def test_invalid_classes_are_refused(classes):
    with pytest.raises(InvalidParameterError, match="'classes'"):
        load_wordnet_glosses(classes=classes)


def test_missing_path_says_how_to_build_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="build_wordnet_dataset.py --full"):
        load_wordnet_glosses(path=tmp_path / "nowhere.npz")
    with pytest.raises(FileNotFoundError, match="build_wordnet_dataset.py"):
        load_vocabulary(path=tmp_path)
    with pytest.raises(InvalidParameterError, match="'path'"):
        load_vocabulary(path=3)


def test_path_reads_a_copy_of_the_files_from_a_folder(tmp_path):
    data_folder = importlib.resources.files("privsum.datasets").joinpath("data")
    for name in (wordnet_module.GLOSSES_FILE, wordnet_module.VOCABULARY_FILE):
        with importlib.resources.as_file(data_folder.joinpath(name)) as bundled:
            shutil.copyfile(bundled, tmp_path / name)
    copied = load_wordnet_glosses(split="test", path=tmp_path)
    bundled = load_wordnet_glosses(split="test")
    assert copied.ids == bundled.ids and np.array_equal(copied.embeddings, bundled.embeddings)
    assert load_vocabulary(path=str(tmp_path)).words == load_vocabulary().words


def test_files_load_without_pickle():
    data_folder = importlib.resources.files("privsum.datasets").joinpath("data")
    for name in (wordnet_module.GLOSSES_FILE, wordnet_module.VOCABULARY_FILE):
        with importlib.resources.as_file(data_folder.joinpath(name)) as bundled:
            with np.load(bundled, allow_pickle=False) as archive:
                assert all(archive[member].dtype != object for member in archive.files)
            with zipfile.ZipFile(bundled) as packed:
                assert all(info.date_time == (1980, 1, 1, 0, 0, 0) for info in packed.infolist())


def test_a_newer_format_version_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(wordnet_module, "SUPPORTED_FORMAT_VERSION", 99)
    wordnet_module._read_archive.cache_clear()
    try:
        with pytest.raises(ValueError, match="format version 1"):
            load_vocabulary()
    finally:
        wordnet_module._read_archive.cache_clear()


def test_labelled_embeddings_checks_consistency():
    with pytest.raises(ValueError, match="one label per row"):
        LabelledEmbeddings(np.zeros((2, 3)), np.zeros(3, dtype=np.int64), ("a",), ("", ""), ("", ""), ("x", "y"))
    with pytest.raises(ValueError, match="index class_names"):
        LabelledEmbeddings(np.zeros((1, 3)), np.array([1]), ("a",), ("",), ("",), ("x",))
    with pytest.raises(ValueError, match="one entry per row"):
        LabelledEmbeddings(np.zeros((1, 3)), np.array([0]), ("a",), (), ("",), ("x",))


def test_notice_ships_the_wordnet_licence():
    notice = importlib.resources.files("privsum.datasets").joinpath("data").joinpath("NOTICE").read_text(encoding="utf-8")
    assert "WordNet 3.0 Copyright 2006 by Princeton University.  All rights reserved." in notice
    assert "Copyright 2000-2011 by Kevin Atkinson" in notice and "Apache License" in notice


def test_reprs_are_short(train, vocabulary):
    assert len(repr(train)) < 500 and "n_examples=" in repr(train)
    assert len(repr(vocabulary)) < 200 and f"{len(vocabulary.words)} words" in repr(vocabulary)
