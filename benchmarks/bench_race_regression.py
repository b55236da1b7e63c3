"""Benchmark RACELinearRegression on scikit-learn's diabetes data (BMI feature, max-abs scaled).

Usage:
    PYTHONPATH=. python benchmarks/bench_race_regression.py [--seeds 16] [--private-rows ...]
        [--reference-rows ...] [--epsilon 10] [--bits 6] [--solvers signs moments]

Each seed draws a 70/30 train/test split (``train_test_split(random_state=seed)``) and uses the
same seed as the public hash seed and, at finite epsilon, the private noise seed. Both features
and target are divided by their maximum absolute value over the whole data set (the scaling the
regression target states; a private deployment must use public bounds instead). Rows
``(x, 1, y)`` then have norm at most sqrt(3) = data_bound. Each solver runs with its own default
transform; without ``--private-rows`` / ``--reference-rows`` each uses its own list of sketch
rows (`ROWS`), the first entry its default at epsilon = inf and 10. Reported per configuration, over seeds:
the slope over the training split's least-squares slope (median, min, max) and the test mean
squared error over that of predicting the training mean (median, min, max; below 1 is better
than the mean), and the mean time per fit (sketch, release and solve). Least squares' own
test-error ratio is printed for reference.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.model_selection import train_test_split

from privsum.accounting import Neighbouring
from privsum.sketches import RACELinearRegression
from privsum.sketches.applications import REGRESSION_SOLVERS, default_rows

#: ``solver: (rows at epsilon = inf, rows at the private epsilon)``; the solver's default first.
ROWS = {
    "signs": ([500, 50, 2000], [50, 10, 100]),
    "moments": ([500, 2000, 8000], [500, 30, 100]),
    "linear": ([500, 2000, 8000], [500, 30, 100]),
    "surrogate": ([500, 2000], [500, 30, 100]),  # slow, and far off at eps = inf
}


def machine() -> str:
    cpu = f"{platform.machine()} {platform.processor() or ''}".strip()
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    return f"{platform.node()} {cpu} cpus={os.cpu_count()} load={load} python={platform.python_version()} numpy={np.__version__}"


def diabetes_bmi() -> tuple[np.ndarray, np.ndarray]:
    data = load_diabetes()
    features, targets = data.data[:, [2]], data.target
    return features / np.abs(features).max(), targets / np.abs(targets).max()


def summary(values: list[float]) -> str:
    array = np.asarray(values)
    return f"median {np.median(array):7.3f}  min {array.min():7.3f}  max {array.max():7.3f}"


def run(config: dict, splits: list, features_test_error) -> tuple[list[float], list[float], float]:
    slopes, errors, started = [], [], time.perf_counter()
    for seed, (train_x, test_x, train_y, test_y) in enumerate(splits):
        model = RACELinearRegression(seed=seed, noise_source="numpy", random_state=seed if config["epsilon"] else None, **config)
        model.fit(train_x, train_y)
        least_squares = np.polyfit(train_x[:, 0], train_y, 1)[0]
        slopes.append(float(model.coef_[0] / least_squares))
        errors.append(features_test_error(model.predict(test_x), train_y, test_y))
    return slopes, errors, (time.perf_counter() - started) / len(splits)


def error_ratio(predictions: np.ndarray, train_y: np.ndarray, test_y: np.ndarray) -> float:
    return float(np.mean((predictions - test_y) ** 2) / np.mean((train_y.mean() - test_y) ** 2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=16)
    parser.add_argument("--epsilon", type=float, default=10.0)
    parser.add_argument("--private-rows", type=int, nargs="+", default=None)
    parser.add_argument("--reference-rows", type=int, nargs="+", default=None)
    parser.add_argument("--bits", type=int, default=6, help="n_bits of the signed random projections")
    parser.add_argument("--solvers", nargs="+", default=["signs", "moments"], choices=list(REGRESSION_SOLVERS))
    args = parser.parse_args()
    print(f"machine: {machine()}  (shared machine: other developers' jobs may be running)")
    print(f"command: {' '.join([sys.executable, *sys.argv])}")
    features, targets = diabetes_bmi()
    splits = [train_test_split(features, targets, test_size=0.3, random_state=seed) for seed in range(args.seeds)]
    least_squares_errors = []
    for train_x, test_x, train_y, test_y in splits:
        slope, intercept = np.polyfit(train_x[:, 0], train_y, 1)
        least_squares_errors.append(error_ratio(slope * test_x[:, 0] + intercept, train_y, test_y))
    print(f"{len(splits)} splits, {len(splits[0][0])} training points")
    print(f"least squares test error / mean's: {summary(least_squares_errors)}")
    configs = []
    for index, epsilon in enumerate([None, args.epsilon]):
        for solver in args.solvers:
            given = args.reference_rows if epsilon is None else args.private_rows
            for rows in given or ROWS[solver][index]:
                configs.append({"solver": solver, "n_rows": rows, "epsilon": epsilon, "n_bits": args.bits})
    for config in configs:
        slopes, errors, seconds = run(config, splits, error_ratio)
        chosen = default_rows(config["solver"], config["epsilon"], Neighbouring.ADD_REMOVE)
        default = " (default)" if config["n_rows"] == chosen else ""
        label = f"{config['solver']:9s} R={config['n_rows']:5d} p={config['n_bits']} eps={config['epsilon'] or 'inf'}{default}"
        print(f"{label:42s} slope/LS: {summary(slopes)} | test error/mean's: {summary(errors)} | {seconds:6.2f} s/fit")
        print(f"{'':42s} slopes/LS per seed: {' '.join(f'{value:.2f}' for value in slopes)}")
        print(f"{'':42s} test error/mean's per seed: {' '.join(f'{value:.2f}' for value in errors)}", flush=True)
    print(f"load average at the end: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")


if __name__ == "__main__":
    main()
