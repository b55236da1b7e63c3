"""Vector-sum estimators at Scott, Cormode & Maple's default point: MSE of the estimated mean vector.

Run: ``PYTHONPATH=. python benchmarks/bench_vector_estimator.py [--repeats R] [--data uniform|beta]``.

Setting (Scott, Cormode & Maple, "Applying the Shuffle Model of Differential Privacy to Vector
Aggregation", BICOD 2021, section 5 defaults): n = 50,000, d = 100, k = 3, t = 1, epsilon = 0.95,
delta = 0.5, analytic gamma. The paper used the ECG heartbeat data set (not bundled); the data here
are synthetic vectors in [0, 1]^d. MSE = sum over coordinates of (estimated mean - true mean)^2,
averaged over repeats; the same users' reports feed three estimators:

* ``report_count``: `ShuffledVectorSum.analyze` with the default estimator;
* ``paper (by hand)``: ``DeBias_j / c_j`` computed here from the raw reports, independently of the library's analyzer;
* ``sampling_rate``: the previous default, ``(d / t) DeBias_j``.

Prints the machine, its load average and the command; ratios are of MSEs measured in this one run.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys

import numpy as np

from privsum.shuffle import MessageHistogram
from privsum.sums import ShuffledVectorSum


def machine() -> str:
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    cpus = os.cpu_count()
    return f"{platform.node()} {platform.machine()} cpus={cpus} load(1,5,15 min)={load} python={platform.python_version()}"


def paper_means(protocol: ShuffledVectorSum, coordinates: np.ndarray, reports: np.ndarray) -> np.ndarray:
    """The paper's estimate of each coordinate's mean: debiased reports over the coordinate's report count."""
    d, k, gamma = protocol.dimension, protocol.precision, protocol.blanket_probability
    counts = np.bincount(coordinates.ravel(), minlength=d)
    totals = np.bincount(coordinates.ravel(), weights=reports.ravel() / k, minlength=d)
    return ((totals - gamma * counts / 2) / (1 - gamma)) / counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--data", choices=("uniform", "beta"), default="uniform")
    arguments = parser.parse_args()
    print(f"machine: {machine()} (shared machine: other jobs may be running)")
    print(f"command: {' '.join([sys.executable, *sys.argv])}")
    n, d = 50_000, 100
    common = {"epsilon": 0.95, "delta": 0.5, "n_users": n, "dimension": d, "calibration": "analytic", "precision": 3}
    default = ShuffledVectorSum.from_privacy(**common)
    scaled = ShuffledVectorSum.from_privacy(**common, estimator="sampling_rate")
    rng = np.random.default_rng(0)
    x = rng.random((n, d)) if arguments.data == "uniform" else rng.beta(2, 5, size=(n, d))
    truth = x.mean(axis=0)
    print(f"n={n} d={d} k={default.precision} t=1 gamma={default.blanket_probability:.5f} data={arguments.data}")
    errors: dict[str, list[float]] = {"report_count (default)": [], "paper (by hand)": [], "sampling_rate (old)": []}
    width = default.precision + 1
    for _ in range(arguments.repeats):
        coordinates, reports = default.local_reports(x, rng=rng)
        counts = np.bincount((coordinates * width + reports).ravel(), minlength=d * width).reshape(d, width)
        histogram = MessageHistogram(counts, default.alphabet)
        errors["report_count (default)"].append(np.sum((default.analyze(histogram) / n - truth) ** 2))
        errors["paper (by hand)"].append(np.sum((paper_means(default, coordinates, reports) - truth) ** 2))
        errors["sampling_rate (old)"].append(np.sum((scaled.analyze(histogram) / n - truth) ** 2))
    reference = float(np.mean(errors["paper (by hand)"]))
    for name, values in errors.items():
        values_array = np.asarray(values)
        spread = values_array.std(ddof=1) / np.sqrt(values_array.size)
        print(
            f"{name:24s} MSE mean={values_array.mean():.5f} (+- {spread:.5f} s.e.) median={np.median(values_array):.5f}"
            f"  ratio to paper={values_array.mean() / reference:.3f}"
        )
    exact = {name: float(p.variance(x).sum()) / n**2 for name, p in (("report_count", default), ("sampling_rate", scaled))}
    print(f"exact variance (library formula, summed over coordinates): {exact}")


if __name__ == "__main__":
    main()
