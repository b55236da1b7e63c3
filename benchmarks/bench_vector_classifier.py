"""The classifier over vector sums on the demo's WordNet setting: accuracy and messages per user against the targets.

Run: ``PYTHONPATH=. python benchmarks/bench_vector_classifier.py [--repeats R] [--epsilons 1 3 8]``.

Setting (as ``python -m privsum demo``): the bundled WordNet glosses, 15 classes, 3,000 training
users per class (subsampled with seed 0), d = 384, delta = 1e-6, replace-one; test accuracy on the
bundled test split. Rows (inner-product kernel unless stated):

* ``exact-centroid``: the non-private nearest-centroid classifier (exact feature sums);
* ``exact (Alg. 1)``: non-private, the 1-bit rounded random-sign features of Wagner (ICLR 2025);
* ``central-gaussian``: the Gaussian mechanism on each class's feature sum (L2 sensitivity 2),
  Balle & Wang's exact calibration, labels in the clear;
* ``vector``: the shuffled Skellam vector sum, labels in the clear / through the label round
  (epsilon 4) / inside one joint sum over all classes.

Each private row is repeated with ``random_state = 0 .. R-1`` (the noise and, with the label
round, the reported labels change; the data subsample is fixed): median and min-max spread.
Messages per user are the classifier's ``communication_`` (label message included; the largest
over classes); 3NB's are what the classifier reports for it with labels in the clear, from its
calibration for the smallest class (``ShuffledKDE.from_privacy``, random signs, I = 384).
Prints the machine, its load average and the command.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time

import numpy as np

from privsum.apps import PROTOCOLS, ShuffledKDEClassifier
from privsum.bitsum import ThreeNBBitSum
from privsum.datasets import load_wordnet_glosses
from privsum.kde import ShuffledKDE
from privsum.lsq import RandomSigns

PER_CLASS = 3000
DELTA = 1e-6
LABEL_EPSILON = 4.0


def machine() -> str:
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    return (
        f"{platform.node()} {platform.machine()} cpus={os.cpu_count()} load(1,5,15 min)={load} python={platform.python_version()}"
    )


def demo_data() -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    train, test = load_wordnet_glosses(split="train"), load_wordnet_glosses(split="test")
    rng = np.random.default_rng(0)
    rows = np.sort(
        np.concatenate([rng.permutation(np.flatnonzero(train.labels == c))[:PER_CLASS] for c in np.unique(train.labels)])
    )
    names = np.asarray(train.class_names)
    return train.class_names, train.embeddings[rows], names[train.labels[rows]], test.embeddings, names[test.labels]


def fit_and_score(data, *, protocol: str, epsilon: float, labels: str, seed: int, kernel: str = "ip") -> tuple[float, float, str]:
    classes, X, y, X_test, y_test = data
    model = ShuffledKDEClassifier(
        classes=classes,
        kernel=kernel,
        protocol=protocol,
        # with a label round: the KDE part at epsilon and the label round at LABEL_EPSILON on top
        epsilon=(epsilon + (LABEL_EPSILON if labels == "round" else 0.0)) if math.isfinite(epsilon) else 1.0,
        label_budget_fraction=LABEL_EPSILON / (epsilon + LABEL_EPSILON) if math.isfinite(epsilon) else 0.5,
        delta=DELTA,
        label_privacy=labels,
        n_repetitions=X.shape[1],
        random_state=seed,
    ).fit(X, y)
    guarantee = f"{model.guarantees_['communication']}; KDE part {model.kde_guarantee_}"
    return model.score(X_test, y_test), model.communication_["expected_messages_per_user"], guarantee


def three_nb_messages(epsilon: float, dimension: int, n_users: int) -> float:
    """What the classifier reports for 3NB with labels in the clear: one label message plus the KDE's, calibrated
    for the smallest class (the classifier's shared calibration; larger classes send fewer noise messages)."""
    family = RandomSigns(dimension=dimension, n_repetitions=dimension, seed=0)
    kde = ShuffledKDE.from_privacy(family=family, protocol=ThreeNBBitSum, epsilon=epsilon, delta=DELTA, n_users=n_users)
    return 1.0 + kde.expected_messages_per_user


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 3.0, 8.0])
    parser.add_argument("--skip-3nb", action="store_true", help="do not calibrate 3NB for its message count")
    arguments = parser.parse_args()
    print(f"machine: {machine()} (shared machine: other jobs may be running)")
    print(f"command: {' '.join([sys.executable, *sys.argv])}")
    data = demo_data()
    print(
        f"WordNet: {len(data[0])} classes, {data[1].shape[0]} training users "
        f"(d = {data[1].shape[1]}), {data[3].shape[0]} test points"
    )
    print(f"delta = {DELTA:g}; label round epsilon = {LABEL_EPSILON:g}; repeats = {arguments.repeats}\n")
    rows: list[tuple[str, str, float]] = [("exact-vector", "clear", math.inf), ("exact", "clear", math.inf)]
    rows += [("central-gaussian", "clear", e) for e in arguments.epsilons]
    if "vector" in PROTOCOLS:
        rows += [("vector", labels, e) for labels in ("clear", "round", "joint") for e in arguments.epsilons]
    else:
        print("protocol='vector' (the shuffled Skellam vector sum) is not available in this checkout: its rows are skipped\n")
    print(
        f"{'protocol':<18}{'labels':<8}{'epsilon':>8}{'median acc':>12}{'min':>8}{'max':>8}"
        f"{'msgs/user':>12}{'s/run':>8}  guarantee"
    )
    medians: dict[tuple[str, str, float], float] = {}
    messages: dict[str, float] = {}
    for protocol, labels, epsilon in rows:
        repeats = 1 if protocol in ("exact-vector", "exact") else arguments.repeats
        start = time.perf_counter()
        scores = []
        for seed in range(repeats):
            accuracy, message_count, guarantee = fit_and_score(data, protocol=protocol, epsilon=epsilon, labels=labels, seed=seed)
            scores.append(accuracy)
        seconds = (time.perf_counter() - start) / repeats
        medians[(protocol, labels, epsilon)] = float(np.median(scores))
        messages[protocol] = message_count
        shown = "-" if math.isinf(epsilon) else f"{epsilon:g}"
        print(
            f"{protocol:<18}{labels:<8}{shown:>8}{np.median(scores):>12.4f}{min(scores):>8.4f}{max(scores):>8.4f}"
            f"{message_count:>12,.0f}{seconds:>8.1f}  {guarantee}"
        )
    if not arguments.skip_3nb:
        smallest = int(min(np.count_nonzero(data[2] == c) for c in data[0]))
        for epsilon in arguments.epsilons:
            print(
                f"3NB (random signs, I = d) at epsilon {epsilon:g}: "
                f"{three_nb_messages(epsilon, data[1].shape[1], smallest):,.0f} messages per user "
                f"(calibrated for the smallest class, {smallest} users)"
            )
    centroid = medians[("exact-vector", "clear", math.inf)]
    print("\nTargets:")
    for epsilon in arguments.epsilons:
        if epsilon >= 3:
            gap = centroid - medians[("central-gaussian", "clear", epsilon)]
            print(
                f"  central-gaussian within 0.01 of the exact centroid ({centroid:.4f}) "
                f"at epsilon {epsilon:g}: gap {gap:+.4f} -> {gap <= 0.01}"
            )
    if "vector" in PROTOCOLS:
        for (protocol, labels, epsilon), threshold in {
            ("vector", "clear", 1.0): 0.70,
            ("vector", "clear", 3.0): 0.72,
            ("vector", "round", 1.0): 0.66,
            ("vector", "joint", 1.0): 0.66,
        }.items():
            if (protocol, labels, epsilon) in medians:
                value = medians[(protocol, labels, epsilon)]
                print(f"  vector, labels {labels}, epsilon {epsilon:g}: {value:.4f} >= {threshold} -> {value >= threshold}")


if __name__ == "__main__":
    main()
