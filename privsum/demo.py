"""The main job: the shuffled-DP KDE classifier and class decoder on the bundled WordNet data.

Run ``python -m privsum demo`` (``--help`` for options). Trains the private classifier with the
RR, 3NB and Pure bit sums and both kernels at a few epsilons (and RR under Wagner (ICLR 2025)'s looser
accounting, for comparison), and with the shuffled vector sum (inner-product kernel; labels in the
clear, through the label round, or inside one joint sum); prints test accuracy and messages per
user next to the non-private baselines (Algorithm 1's rounded features and the exact centroid) and
the best central-DP baseline (the Gaussian mechanism on each class's feature sum), the guarantee
of each run, decoded words for a few classes, and saves ``accuracy_vs_epsilon.svg`` and ``.csv``
in the output folder.

References:
    Wagner, "Learning from End User Data with Shuffled Differential Privacy over Kernel
    Densities", ICLR 2025.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from privsum._plotting import MISSING_MATPLOTLIB, pyplot_or_none
from privsum.apps import PROTOCOLS, ShuffledKDEClassifier, decode_classes
from privsum.datasets import load_vocabulary, load_wordnet_glosses

__all__ = ["main", "run_demo"]

PRIVATE_PROTOCOLS = ("rr", "3nb", "pure")
SEED_ACCOUNTING_LABEL = "rr-seed"  # RR calibrated by Wagner's Theorem 3.2 instead of the tight (PLD) accounting
EXACT_CENTROID_LABEL = "exact-centroid"  # the non-private nearest-centroid classifier (exact feature sums)
FIGURE_COLOURS = {  # one colour per protocol row of the figure
    "rr": "#d62728",
    SEED_ACCOUNTING_LABEL: "#ff9896",
    "3nb": "#1f77b4",
    "pure": "#2ca02c",
    "central-gaussian": "#9467bd",
    "exact": "#444444",
    EXACT_CENTROID_LABEL: "#888888",
    "vector": "#ff7f0e",
    "vector+label-round": "#bcbd22",
    "vector-joint": "#17becf",
    "central-gaussian-clear": "#c5b0d5",
}
#: ``protocol_options`` of the bit-sum rows: 3NB's flooding calibrated for the fewest messages
#: (`privsum.bitsum.ThreeNBBitSum.from_privacy`); the tight composition search buys the variance
#: allowance back (``benchmarks/bench_3nb_demo_flooding.py`` compares it with the paper's flooding).
PROTOCOL_OPTIONS = {"3nb": {"flooding": "communication", "variance_factor": 4.0}}
#: Vector-sum rows (inner-product kernel): (row name, classifier protocol, how labels are treated,
#: every epsilon or only the first). The label-round and joint rows run at the first epsilon only
#: (the joint sum has C (d + 1) coordinates per user), to keep the demo fast.
VECTOR_ROWS = (
    ("vector", "vector", "clear", True),
    ("vector+label-round", "vector", "round", False),
    ("vector-joint", "vector", "joint", False),
    ("central-gaussian-clear", "central-gaussian", "clear", True),
)


@dataclass(frozen=True)
class Configuration:
    """One classifier to train: the row name, the classifier's protocol and kernel, and the label treatment."""

    name: str
    protocol: str
    kernel: str
    epsilon: float
    labels: str  # "clear", "round" (the label round at the demo's label epsilon) or "joint"
    accounting: str = "tight"


DECODED_CLASSES = ("noun.animal", "noun.food", "noun.plant")


@dataclass(frozen=True)
class Result:
    """One trained configuration and its test accuracy."""

    protocol: str
    kernel: str
    epsilon: float
    accuracy: float
    guarantee: str
    seconds: float
    labels: str = "clear"
    messages_per_user: float = math.nan


def _subsample(labels: np.ndarray, per_class: int, rng: np.random.Generator) -> np.ndarray:
    keep = [rng.permutation(np.flatnonzero(labels == c))[:per_class] for c in np.unique(labels)]
    return np.sort(np.concatenate(keep))


def run_demo(
    *,
    epsilons: tuple[float, ...] = (1.0, 3.0, 8.0),
    kernels: tuple[str, ...] = ("gaussian", "ip"),
    protocols: tuple[str, ...] = PRIVATE_PROTOCOLS,
    per_class: int = 3000,
    n_repetitions: int = 384,
    label_epsilon: float = 4.0,
    delta: float = 1e-6,
    seed: int = 0,
    progress: bool = True,
) -> tuple[list[Result], dict[str, list[str]]]:
    """Train every configuration; return the results and the decoded words (3NB, middle epsilon).

    ``progress`` shows a progress bar (tqdm) on standard error.
    """
    train, test = load_wordnet_glosses(split="train"), load_wordnet_glosses(split="test")
    rng = np.random.default_rng(seed)
    rows = _subsample(train.labels, per_class, rng)
    names = np.asarray(train.class_names)
    X, y = train.embeddings[rows], names[train.labels[rows]]
    X_test, y_test = test.embeddings, names[test.labels]
    configurations = _configurations(epsilons, kernels, protocols)
    results: list[Result] = []
    decoded: dict[str, list[str]] = {}
    words, vectors = load_vocabulary()
    bar = tqdm(configurations, desc="demo", unit="run", file=sys.stderr, disable=not progress, dynamic_ncols=True)
    for configuration in bar:
        bar.set_postfix_str(f"{configuration.name} / {configuration.kernel} / eps={configuration.epsilon:g}")
        start = time.perf_counter()
        model = _classifier(
            configuration, train.class_names, delta=delta, label_epsilon=label_epsilon, n_repetitions=n_repetitions, seed=seed
        )
        model.fit(X, y)
        private = math.isfinite(configuration.epsilon)
        guarantee = str(model.guarantees_["communication"]) if private else "none (non-private)"
        if private and configuration.labels == "clear":
            guarantee += f"; KDE part alone {model.kde_guarantee_}"
        results.append(
            Result(
                configuration.name,
                configuration.kernel,
                configuration.epsilon,
                model.score(X_test, y_test),
                guarantee,
                time.perf_counter() - start,
                _labels_text(configuration.labels, label_epsilon),
                model.communication_["expected_messages_per_user"],
            )
        )
        if (
            configuration.name == "3nb"
            and configuration.kernel == kernels[0]
            and configuration.epsilon == epsilons[len(epsilons) // 2]
        ):
            labels = [c for c in DECODED_CLASSES if c in train.class_names]
            decoded = decode_classes(model, words, vectors, labels=labels, top_k=8)
    bar.close()
    return results, decoded


def _configurations(epsilons: tuple[float, ...], kernels: tuple[str, ...], protocols: tuple[str, ...]) -> list[Configuration]:
    """The demo's rows: non-private references, bit sums, the best central baseline and the vector sums."""
    rows = [Configuration("exact", "exact", k, math.inf, "clear") for k in kernels]
    if "ip" in kernels:
        rows.append(Configuration(EXACT_CENTROID_LABEL, "exact-vector", "ip", math.inf, "clear"))
    rows += [Configuration(p, p, k, e, "round") for k in kernels for p in (*protocols, "central-gaussian") for e in epsilons]
    if "rr" in protocols:  # how much of RR's gap to 3NB the tight accounting closes (first kernel)
        rows += [Configuration(SEED_ACCOUNTING_LABEL, "rr", kernels[0], e, "round", accounting="seed") for e in epsilons]
    if "ip" in kernels:
        rows += [
            Configuration(name, protocol, "ip", e, labels)
            for name, protocol, labels, every_epsilon in VECTOR_ROWS
            if protocol in PROTOCOLS
            for e in (epsilons if every_epsilon else epsilons[:1])
        ]
    return rows


def _classifier(
    configuration: Configuration, classes: list[str], *, delta: float, label_epsilon: float, n_repetitions: int, seed: int
) -> ShuffledKDEClassifier:
    return ShuffledKDEClassifier(
        classes=classes,
        kernel=configuration.kernel,
        protocol=configuration.protocol,
        accounting=configuration.accounting,
        epsilon=1.0 if math.isinf(configuration.epsilon) else configuration.epsilon,
        delta=delta,
        label_epsilon=label_epsilon if configuration.labels == "round" else math.inf,
        label_privacy="joint" if configuration.labels == "joint" else "round",
        n_repetitions=n_repetitions,
        protocol_options=PROTOCOL_OPTIONS.get(configuration.protocol),
        random_state=seed,
    )


def _labels_text(labels: str, label_epsilon: float) -> str:
    return {"clear": "clear", "round": f"RR eps={label_epsilon:g}", "joint": "joint sum"}[labels]


def _write_csv(results: list[Result], path: Path) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["protocol", "kernel", "epsilon", "accuracy", "guarantee", "seconds", "labels", "messages_per_user"])
        for r in results:
            writer.writerow(
                [
                    r.protocol,
                    r.kernel,
                    r.epsilon,
                    f"{r.accuracy:.4f}",
                    r.guarantee,
                    f"{r.seconds:.1f}",
                    r.labels,
                    f"{r.messages_per_user:g}",
                ]
            )


def _write_figure(results: list[Result], path: Path) -> bool:
    """Accuracy versus epsilon, one panel per kernel, one line per protocol (matplotlib); False without matplotlib."""
    pyplot = pyplot_or_none()
    if pyplot is None:
        return False
    kernels = sorted({r.kernel for r in results})
    figure, axes = pyplot.subplots(1, len(kernels), figsize=(5.2 * len(kernels), 4.0), sharey=True, squeeze=False)
    for axis, kernel in zip(axes[0], kernels, strict=True):
        for protocol, colour in FIGURE_COLOURS.items():
            points = sorted((r.epsilon, r.accuracy) for r in results if r.kernel == kernel and r.protocol == protocol)
            if not points:
                continue
            if protocol in ("exact", EXACT_CENTROID_LABEL):  # non-private: a horizontal reference line
                axis.axhline(points[0][1], color=colour, linestyle="--", linewidth=1.2, label=protocol)
            else:
                epsilons, accuracies = zip(*points, strict=True)
                axis.plot(epsilons, accuracies, marker="o", color=colour, linewidth=2, label=protocol)
        axis.set_xscale("log")
        axis.set_title(f"kernel: {kernel}")
        axis.set_xlabel("epsilon (KDE part, log scale)")
        axis.set_ylim(0.0, 1.0)
        axis.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("test accuracy")
    axes[0][-1].legend(fontsize=7, loc="lower right")
    figure.tight_layout()
    figure.savefig(path)
    pyplot.close(figure)
    return True


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point of the demo."""
    parser = argparse.ArgumentParser(prog="python -m privsum demo", description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 3.0, 8.0])
    parser.add_argument("--per-class", type=int, default=3000, help="training users per class (subsampled)")
    parser.add_argument("--repetitions", type=int, default=384, help="I, LSQ repetitions (the paper uses I = d)")
    parser.add_argument("--label-epsilon", type=float, default=4.0)
    parser.add_argument("--output", type=Path, default=Path("privsum-demo-output"))
    parser.add_argument("--seed", type=int, default=0)
    arguments = parser.parse_args(argv)
    start = time.perf_counter()
    results, decoded = run_demo(
        epsilons=tuple(arguments.epsilons),
        per_class=arguments.per_class,
        n_repetitions=arguments.repetitions,
        label_epsilon=arguments.label_epsilon,
        seed=arguments.seed,
    )
    print("Shuffled-DP KDE classifier on WordNet glosses (15 classes, all-MiniLM-L6-v2 embeddings)")
    print(
        f"training users: {arguments.per_class} per class; I = {arguments.repetitions}; delta = 1e-6; "
        f"label round epsilon = {arguments.label_epsilon:g}; replace-one neighbours\n"
    )
    header = f"{'protocol':<24}{'kernel':<10}{'labels':<12}{'epsilon (KDE)':>14}{'accuracy':>10}{'messages/user':>15}"
    print(f"{header}  guarantee (communication threat, incl. labels)")
    for r in results:
        epsilon = "-" if math.isinf(r.epsilon) else f"{r.epsilon:g}"
        row = f"{r.protocol:<24}{r.kernel:<10}{r.labels:<12}{epsilon:>14}{r.accuracy:>10.3f}{r.messages_per_user:>15,.0f}"
        print(f"{row}  {r.guarantee}")
    print(f"({SEED_ACCOUNTING_LABEL}: RR calibrated with Wagner's Theorem 3.2 accounting instead of the tight PLD one)")
    print(
        "(exact: non-private, Algorithm 1's 1-bit rounded features; exact-centroid: non-private exact feature sums;\n"
        " central-gaussian: the Gaussian mechanism on each class's feature sum, L2 sensitivity 2 max||f||, trusted curator;\n"
        " vector: the shuffled Skellam vector sum; labels: in the clear (the guarantee is then infinite),\n"
        " through the m-ary RR label round, or inside one joint sum over all classes)"
    )
    print("\nDecoded words (3NB, first kernel, middle epsilon):")
    for label, top in decoded.items():
        print(f"  {label:<14} {', '.join(top)}")
    arguments.output.mkdir(parents=True, exist_ok=True)
    _write_csv(results, arguments.output / "accuracy_vs_epsilon.csv")
    figure = arguments.output / "accuracy_vs_epsilon.svg"
    if _write_figure(results, figure):
        print(f"\nSaved {figure} and .csv; total {time.perf_counter() - start:.0f} s.")
    else:
        print(
            f"\nSaved {figure.with_suffix('.csv')}; no figure: {MISSING_MATPLOTLIB}. Total {time.perf_counter() - start:.0f} s."
        )
    return 0
