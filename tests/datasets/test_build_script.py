"""The build script's parsing, selection and writing, on tiny hand-made inputs (no build tools needed)."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from privsum.datasets import load_vocabulary, load_wordnet_glosses

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "build_wordnet_dataset.py"


@pytest.fixture(scope="module")
def build():
    spec = importlib.util.spec_from_file_location("build_wordnet_dataset", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


LICENCE_LINES = "  1 This software and database is being provided to you\n  2 \n"
NOUN_LINES = (
    "02084071 05 n 03 dog 0 domestic_dog 0 Canis_familiaris 0 000 | a member of the genus Canis; "
    '"the dog barked all night"  \n'
    "07695965 13 n 01 meat_loaf 0 000 | a baked loaf of ground meat  \n"
)
ADJ_LINES = '00001740 00 a 01 able(a) 0 000 | (usually followed by `to\') having the means or skill; "able to swim"  \n'
VERB_LINES = '01835496 38 v 01 travel 0 000 01 + 02 00 | change location; move; "How fast does your new car go?"  \n'


@pytest.fixture
def wordnet_dir(tmp_path):
    contents = {"data.noun": NOUN_LINES, "data.verb": VERB_LINES, "data.adj": ADJ_LINES, "data.adv": ""}
    for name, lines in contents.items():
        (tmp_path / name).write_text(LICENCE_LINES + lines, encoding="utf-8")
    indexes = {
        "index.noun": "dog n 1 0 1 1 02084071\nmeat_loaf n 1 0 1 0 07695965\ncanis_familiaris n 1 0 1 0 02084071\n",
        "index.verb": "travel v 1 0 1 1 01835496\n",
        "index.adj": "able a 1 0 1 1 00001740\n",
        "index.adv": "",
    }
    for name, lines in indexes.items():
        (tmp_path / name).write_text(LICENCE_LINES + lines, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("gloss", "definition"),
    [
        ('a member of the genus Canis; "the dog barked"  \n', "a member of the genus Canis"),
        ('change location; move; "How fast?"; "We travelled"', "change location; move"),
        ('promise of reward as in "carrot and stick"; "used the carrot"', 'promise of reward as in "carrot and stick"'),
        ("a workplace; as in the expression;  \n", "a workplace; as in the expression"),
    ],
)
def test_definition_drops_only_the_quoted_examples(build, gloss, definition):
    assert build.definition_of(gloss) == definition


def test_parse_synsets_reads_class_lemma_and_definition(build, wordnet_dir):
    synsets = build.parse_synsets(wordnet_dir)
    assert [(synset.part_of_speech, synset.offset) for synset in synsets] == [
        ("n", 2084071),
        ("n", 7695965),
        ("v", 1835496),
        ("a", 1740),
    ]
    dog, meat_loaf, travel, able = synsets
    assert build.LEXICOGRAPHER_FILES[dog.lexicographer_file] == "noun.animal"
    assert build.LEXICOGRAPHER_FILES[meat_loaf.lexicographer_file] == "noun.food"
    assert build.LEXICOGRAPHER_FILES[travel.lexicographer_file] == "verb.motion"
    assert (dog.lemma, meat_loaf.lemma, able.lemma) == ("dog", "meat loaf", "able")
    assert dog.definition == "a member of the genus Canis" and travel.definition == "change location; move"


def test_lexicographer_table_has_the_45_files_and_the_bundled_classes(build):
    assert len(build.LEXICOGRAPHER_FILES) == 45 == len(set(build.LEXICOGRAPHER_FILES))
    assert set(build.BUNDLED_CLASSES) <= set(build.LEXICOGRAPHER_FILES)
    assert load_wordnet_glosses(split="test").class_names == build.BUNDLED_CLASSES


def test_vocabulary_keeps_single_listed_lower_case_lemmas(build, wordnet_dir):
    wordlist = wordnet_dir / "words"
    wordlist.write_text("dog\nDog\nable\nzebra\ntravel's\nmeat\n", encoding="utf-8")
    assert build.vocabulary_words(wordnet_dir, wordlist) == ["able", "dog"]


def test_choose_examples_is_seeded_capped_and_stratified(build):
    labels = np.repeat(np.arange(3), [50, 200, 7])
    first = build.choose_examples(labels, 100, 0.2, np.random.default_rng(5))
    second = build.choose_examples(labels, 100, 0.2, np.random.default_rng(5))
    other = build.choose_examples(labels, 100, 0.2, np.random.default_rng(6))
    assert all(np.array_equal(a, b) for a, b in zip(first, second, strict=True))
    assert not np.array_equal(first[0], other[0])
    chosen, is_test = first
    assert np.bincount(labels[chosen]).tolist() == [50, 100, 7] and len(set(chosen.tolist())) == chosen.size
    assert np.bincount(labels[chosen][is_test], minlength=3).tolist() == [10, 20, 1]
    everything, _ = build.choose_examples(labels, None, 0.2, np.random.default_rng(5))
    assert sorted(everything.tolist()) == list(range(labels.size))


def test_written_files_load_with_the_package_loaders(build, wordnet_dir, tmp_path):
    synsets = build.parse_synsets(wordnet_dir)
    rng = np.random.default_rng(11)
    embeddings = rng.standard_normal((len(synsets), 384))
    embeddings /= np.linalg.norm(embeddings, axis=1, keepdims=True)
    labels, is_test, class_names = np.array([1, 2, 0, 0]), np.array([False, True, False, True]), ("adj", "animal", "food")
    out = tmp_path / "out"
    build.save_npz(
        out / "wordnet_glosses.npz", build.gloss_arrays(synsets, labels, is_test, class_names, embeddings) | build.metadata("x")
    )
    words = ["able", "dog"]
    build.save_npz(out / "wordnet_vocabulary.npz", build.vocabulary_arrays(words, embeddings[:2]) | build.metadata("y"))

    test = load_wordnet_glosses(split="test", path=out)
    assert test.class_names == class_names and test.labels.tolist() == [2, 0]
    assert test.ids == ("n07695965", "a00001740") and test.lemmas == ("meat loaf", "able")
    assert np.min(np.sum(test.embeddings * embeddings[[1, 3]], axis=1)) > 0.9999
    vocabulary = load_vocabulary(path=out / "wordnet_vocabulary.npz")
    assert vocabulary.words == ("able", "dog") and vocabulary.embeddings.shape == (2, 384)
    first_bytes = (out / "wordnet_vocabulary.npz").read_bytes()
    build.save_npz(out / "wordnet_vocabulary.npz", build.vocabulary_arrays(words, embeddings[:2]) | build.metadata("y"))
    assert (out / "wordnet_vocabulary.npz").read_bytes() == first_bytes


def test_full_build_refuses_to_write_into_the_package(build, capsys):
    with pytest.raises(SystemExit):
        build.parse_arguments(["--full"])
    assert "--out" in capsys.readouterr().err
