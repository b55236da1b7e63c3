"""The shuffled-DP KDE classifier on the full WordNet gloss data set (all 117,659 glosses, 45 classes).

Run with ``python examples/wordnet_full.py --path DIR`` where ``DIR`` holds the full build of the
data set, which is not bundled (45.8 MB). Write it once with (about 16 minutes on two cores)::

    apt-get install -y wordnet-base wamerican-small
    pip install -e '.[text]'
    python scripts/build_wordnet_dataset.py --full --out DIR

This is the full-scale counterpart of ``python -m privsum demo`` (which uses the bundled 15-class
subset): every training gloss of every one of the 45 lexicographer classes is one user. For each
protocol and epsilon the script trains `privsum.apps.ShuffledKDEClassifier` (replace-one
neighbours on (gloss, label); labels sent by m-ary randomized response at ``--label-epsilon``),
and prints the test accuracy, the guarantee of the whole run (label round included, communication
threat model), the per-user communication, and the words of the public vocabulary with the
highest private density for a few classes (`privsum.apps.decode_class`). The non-private
(``exact``) and central-DP (``central-gaussian``) rows are the baselines. It saves
``accuracy_vs_epsilon.csv`` and ``.svg`` in ``--output``. Everything is seeded (``--seed``) and
nothing touches the network.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from privsum.apps import ShuffledKDEClassifier, decode_class
from privsum.datasets import load_vocabulary, load_wordnet_glosses
from privsum.demo import Result, _write_csv, _write_figure

DEFAULT_PROTOCOLS = ("rr", "3nb")
DEFAULT_EPSILONS = (1.0, 3.0, 8.0)
DEFAULT_DECODED = ("noun.animal", "noun.food", "noun.plant", "verb.motion")
BASELINES = ("exact", "central-gaussian")
GLOSSES_FILE, VOCABULARY_FILE = "wordnet_glosses.npz", "wordnet_vocabulary.npz"
BUILD_HELP = (
    "Build it once (about 16 minutes on two cores) with:\n"
    "    apt-get install -y wordnet-base wamerican-small\n"
    "    pip install -e '.[text]'\n"
    "    python scripts/build_wordnet_dataset.py --full --out DIR\n"
    "and pass --path DIR."
)


def machine_description() -> str:
    """CPU, core count, OS and library versions (no host name)."""
    processor = platform.processor() or platform.machine()
    system = f"{platform.system()} {platform.release()}"
    return f"{processor}, {os.cpu_count()} cpus, {system}, python {platform.python_version()}, numpy {np.__version__}"


def glosses_file(path: str | os.PathLike[str] | None) -> Path:
    """The full build's gloss file under ``path`` (a folder or the file); exits with build instructions if absent."""
    if path is None:
        raise SystemExit("wordnet_full.py needs --path DIR, the folder of the full WordNet build.\n" + BUILD_HELP)
    folder = Path(path)
    file = folder / GLOSSES_FILE if folder.is_dir() or folder.suffix != ".npz" else folder
    if not file.is_file():
        raise SystemExit(f"The full WordNet gloss data set was not found: {file} does not exist.\n" + BUILD_HELP)
    return file


def load_data(file: Path, per_class: int | None, seed: int):
    """Training points and names, test points and names, class names, and the decoding vocabulary."""
    train, test = load_wordnet_glosses(split="train", path=file), load_wordnet_glosses(split="test", path=file)
    rows = np.arange(train.n_examples)
    if per_class is not None:  # optional subsample for a quicker run
        rng = np.random.default_rng(seed)
        keep = [rng.permutation(np.flatnonzero(train.labels == c))[:per_class] for c in range(train.n_classes)]
        rows = np.sort(np.concatenate(keep))
    names = np.asarray(train.class_names)
    vocabulary_path = file.parent / VOCABULARY_FILE
    vocabulary = load_vocabulary(path=vocabulary_path) if vocabulary_path.is_file() else load_vocabulary()
    return (train.embeddings[rows], names[train.labels[rows]]), (test.embeddings, names[test.labels]), train, vocabulary


def configurations(protocols: Sequence[str], epsilons: Sequence[float], kernel: str) -> list[tuple[str, str, float]]:
    """The non-private reference first, then each private protocol and the central baseline at each epsilon."""
    rows = [("exact", kernel, math.inf)]
    private = [p for p in dict.fromkeys((*protocols, "central-gaussian")) if p != "exact"]
    return rows + [(p, kernel, e) for p in private for e in epsilons]


def main(
    *,
    path: str | os.PathLike[str] | None = None,
    protocols: Sequence[str] = DEFAULT_PROTOCOLS,
    epsilons: Sequence[float] = DEFAULT_EPSILONS,
    kernel: str = "gaussian",
    repetitions: int = 384,
    label_epsilon: float = 4.0,
    delta: float = 1e-6,
    per_class: int | None = None,
    decoded: Sequence[str] = DEFAULT_DECODED,
    top_k: int = 8,
    output: str | os.PathLike[str] | None = "wordnet-full-output",
    seed: int = 0,
) -> list[Result]:
    """Train every configuration on the full data set, print the table and decoded words, save CSV and SVG."""
    file = glosses_file(path)
    start = time.perf_counter()
    (X, y), (X_test, y_test), train, (words, vectors) = load_data(file, per_class, seed)
    print(f"machine: {machine_description()}")
    print(f"data: {file}: {len(y)} training users, {len(y_test)} test glosses, {train.n_classes} classes, {X.shape[1]}-d")
    print(f"I = {repetitions}; delta = {delta:g}; label round epsilon = {label_epsilon:g}; replace-one neighbours; seed {seed}\n")
    header = f"{'protocol':<17}{'kernel':<10}{'epsilon':>8}{'accuracy':>10}{'msgs/user':>12}{'bits/msg':>9}{'seconds':>9}"
    print(header + "  guarantee (communication threat, incl. labels)")
    results, decoded_words = [], {}
    for protocol, kernel_name, epsilon in configurations(protocols, epsilons, kernel):
        began = time.perf_counter()
        model = ShuffledKDEClassifier(
            classes=train.class_names,
            kernel=kernel_name,
            protocol=protocol,
            # the KDE part at `epsilon` and the label round at `label_epsilon`: a total of their sum
            epsilon=1.0 if math.isinf(epsilon) else epsilon + label_epsilon,
            label_budget_fraction=0.5 if math.isinf(epsilon) else label_epsilon / (epsilon + label_epsilon),
            delta=delta,
            label_privacy="clear" if protocol == "exact" else "round",
            n_repetitions=repetitions,
            random_state=seed,
        ).fit(X, y)
        guarantee = "none (non-private)" if protocol == "exact" else str(model.guarantees_["communication"])
        result = Result(protocol, kernel_name, epsilon, model.score(X_test, y_test), guarantee, time.perf_counter() - began)
        results.append(result)
        communication = model.communication_
        shown = "-" if math.isinf(epsilon) else f"{epsilon:g}"
        print(
            f"{protocol:<17}{kernel_name:<10}{shown:>8}{result.accuracy:>10.3f}{communication['expected_messages_per_user']:>12.4g}"
            f"{communication['bits_per_message']:>9.0f}{result.seconds:>9.1f}  {guarantee}",
            flush=True,
        )
        if protocol == protocols[0] and epsilon == epsilons[len(epsilons) // 2]:
            decoded_words = {c: decode_class(model, c, words, vectors, top_k=top_k) for c in decoded if c in train.class_names}
    majority = max(np.mean(y_test == c) for c in train.class_names)
    print(f"\nmajority-class accuracy: {majority:.3f}")
    print(f"decoded words ({protocols[0]}, epsilon {epsilons[len(epsilons) // 2]:g}; vocabulary of {len(words)} words):")
    for label, top in decoded_words.items():
        print(f"  {label:<20} {', '.join(top)}")
    if output:
        folder = Path(output)
        folder.mkdir(parents=True, exist_ok=True)
        _write_csv(results, folder / "accuracy_vs_epsilon.csv")
        drawn = _write_figure(results, folder / "accuracy_vs_epsilon.svg")
        figure_note = " and .svg" if drawn else " (no figure: matplotlib is not installed)"
        print(f"saved: {folder / 'accuracy_vs_epsilon.csv'}{figure_note}")
    print(f"elapsed: {time.perf_counter() - start:.1f} s")
    return results


def parse_arguments(argv: Sequence[str] | None = None) -> dict:
    """The options of `main`, from the command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--path", default=None, help="folder (or .npz) of `build_wordnet_dataset.py --full --out DIR`")
    parser.add_argument("--protocols", nargs="+", default=list(DEFAULT_PROTOCOLS), help="private bit sums (rr, 3nb, pure, local)")
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(DEFAULT_EPSILONS), help="KDE epsilons")
    parser.add_argument("--kernel", default="gaussian", choices=["gaussian", "ip", "lsh"])
    parser.add_argument("--repetitions", type=int, default=384, help="I, LSQ repetitions (the paper uses I = d = 384)")
    parser.add_argument("--label-epsilon", type=float, default=4.0)
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--per-class", type=int, default=None, help="subsample training users per class (default: all)")
    parser.add_argument("--decoded", nargs="*", default=list(DEFAULT_DECODED), help="classes to decode into words")
    parser.add_argument("--top-k", type=int, default=8)
    parser.add_argument("--output", default="wordnet-full-output", help="folder for the CSV and SVG ('' to skip)")
    parser.add_argument("--seed", type=int, default=0)
    arguments = vars(parser.parse_args(argv))
    arguments["output"] = arguments["output"] or None
    return arguments


if __name__ == "__main__":
    print(f"command: python {' '.join(sys.argv)}")
    main(**parse_arguments())
