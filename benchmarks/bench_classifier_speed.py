"""Classifier fit + predict on the main job's setting against its own features and randomization alone.

Usage (from the repository root)::

    PYTHONPATH=.:benchmarks python benchmarks/bench_classifier_speed.py [--repeats 3] [--protocol 3nb] [--epsilon 3]

The main job's data and setting (bundled WordNet glosses, 3,000 training users per class, 15
classes, Gaussian kernel, I = 384, label round epsilon 4, delta 1e-6). One fit first fills the
calibration cache (as the demo's earlier rows would); then, in the same run:

* ``fit + predict``: ``ShuffledKDEClassifier.fit`` on the training users and ``predict`` on the
  test set (label round, per-class calibration from the cache, every user's features and bit-sum
  randomization, the analyzers, and the test set's kernel scores);
* ``features + randomization``: ``ShuffledKDE.run`` with each fitted per-class protocol over as
  many training users as that class reported in the fit (random Fourier features, 1-bit
  rounding, the bit sums' randomization and analysis), nothing else.

Prints one JSON line with the machine, its load average, the command, the median and spread of
each, and their ratio (target: at most 2).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
from bench_scale_common import report

from privsum.apps import ShuffledKDEClassifier
from privsum.datasets import load_wordnet_glosses
from privsum.demo import _subsample


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--protocol", default="3nb")
    parser.add_argument("--epsilon", type=float, default=3.0)
    args = parser.parse_args()

    train, test = load_wordnet_glosses(split="train"), load_wordnet_glosses(split="test")
    rows = _subsample(train.labels, 3000, np.random.default_rng(0))
    names = np.asarray(train.class_names)
    X, y = train.embeddings[rows], names[train.labels[rows]]
    options = {"flooding": "communication", "variance_factor": 4} if args.protocol == "3nb" else None

    def model() -> ShuffledKDEClassifier:
        return ShuffledKDEClassifier(
            classes=train.class_names,
            kernel="gaussian",
            protocol=args.protocol,
            epsilon=args.epsilon + 4.0,  # the KDE part at args.epsilon, the label round at 4 on top
            label_budget_fraction=4.0 / (args.epsilon + 4.0),
            delta=1e-6,
            n_repetitions=384,
            protocol_options=options,
            random_state=0,
        )

    model().fit(X, y)  # fills the calibration cache
    whole, alone = [], []
    for _ in range(args.repeats):
        start = time.perf_counter()
        fitted = model().fit(X, y)
        fitted.predict(test.embeddings)
        whole.append(time.perf_counter() - start)
        groups = _class_groups(fitted, X)
        start = time.perf_counter()
        generator = np.random.default_rng(1)
        for protocol, points in groups:
            protocol.run(points, rng=generator)
        alone.append(time.perf_counter() - start)
    report(
        {
            "target": f"classifier fit+predict / features+randomization ({args.protocol}, epsilon {args.epsilon})",
            "load_average": [round(v, 2) for v in os.getloadavg()],
            "fit_predict": _summary(whole),
            "features_randomization": _summary(alone),
            "ratio": round(statistics.median(whole) / statistics.median(alone), 3),
            "training_users": int(X.shape[0]),
            "test_points": int(test.embeddings.shape[0]),
            "goal": "<= 2",
        }
    )


def _class_groups(fitted: ShuffledKDEClassifier, X: np.ndarray) -> list:
    """Each fitted class protocol with as many training users as its class reported in the fit."""
    picker = np.random.default_rng(2)
    groups = []
    for protocol, size in zip(fitted.protocols_, fitted.class_counts_, strict=True):
        if protocol is not None:
            groups.append((protocol, X[picker.choice(X.shape[0], size=int(size), replace=False)]))
    return groups


def _summary(values: list[float]) -> dict:
    return {"median_s": round(statistics.median(values), 4), "spread_s": [round(min(values), 4), round(max(values), 4)]}


if __name__ == "__main__":
    main()
