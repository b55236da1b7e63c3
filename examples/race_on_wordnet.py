"""Private RACE sketches on real text embeddings: kernel density and classification versus epsilon.

Run with ``python examples/race_on_wordnet.py`` (under a minute on two cores); ``--help`` lists
the sizes. It reproduces the kind of result of Coleman & Shrivastava, "A One-Pass Distributed
and Private Sketch for Kernel Sums with Applications to Machine Learning at Scale", CCS 2021, on the
bundled WordNet glosses (`privsum.datasets.load_wordnet_glosses`):

* **Private KDE.** One RACE sketch of the training split (the private data) is released under
  pure epsilon-DP (add/remove) with `RACE.release`; its kernel density estimate is compared
  with the exact kernel density at held-out test points (the queries), as the mean relative
  error ``|estimate - exact| / exact``. The raw (non-private) sketch is the reference.
* **Private classifier.** `RACEClassifier` releases one sketch per class (15 WordNet
  lexicographer classes) under epsilon-DP in total; accuracy on the test split, with the MAP
  rule ``argmax_c K_c(y)`` and the maximum-likelihood rule ``argmax_c K_c(y) / n_c``.

**Data and kernel.** The 384-d unit-norm embeddings are mapped to ``--dimension`` coordinates
(default 32) by a `privsum.lsq.FastJLT` drawn from a fixed seed. The projection is public
randomness chosen before and independently of any data, like the hash functions, so it reveals
nothing about the training points. The kernel is the angular LSH kernel of
`privsum.lsq.SignedRandomProjection` with ``--bits`` bits, ``k(x, y) = (1 - angle(x, y)/pi)^p``,
natural for cosine-compared sentence embeddings and exact for RACE (no folding). Kernel
densities are computed exactly for the projected points, which is what the sketch estimates.

Noise comes from ``noise_source="numpy"`` with fixed seeds so that the run is reproducible; a
deployment would keep the default OpenDP sampler (exact, OS randomness). Every number the
example prints is averaged over ``--trials`` independent releases.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from privsum.datasets import load_wordnet_glosses
from privsum.lsq import FastJLT, SignedRandomProjection
from privsum.sketches import RACE, RACEClassifier

DEFAULT_EPSILONS = (0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
PROJECTION_SEED, HASH_SEED, SUBSAMPLE_SEED = 2, 1, 0
_KERNEL_CHUNK = 250  # queries per exact-kernel block: an (n_train, 250) matrix at a time


@dataclass(frozen=True)
class Row:
    """One line of the table: ``epsilon=None`` is the non-private sketch."""

    epsilon: float | None
    kde_mean_relative_error: float
    kde_median_relative_error: float
    accuracy_map: float
    accuracy_maximum_likelihood: float


def machine_description() -> str:
    """CPU, core count, OS and library versions (no host name)."""
    processor = platform.processor() or platform.machine()
    system = f"{platform.system()} {platform.release()}"
    return f"{processor}, {os.cpu_count()} cpus, {system}, python {platform.python_version()}, numpy {np.__version__}"


def project(embeddings: np.ndarray, dimension: int) -> np.ndarray:
    """The public, data-independent projection: a seeded fast JL transform (identity at full dimension)."""
    embeddings = np.asarray(embeddings, dtype=float)
    if dimension >= embeddings.shape[1]:
        return embeddings
    return FastJLT(input_dimension=embeddings.shape[1], output_dimension=dimension, seed=PROJECTION_SEED).transform(embeddings)


def subsample(n_available: int, n_wanted: int | None, seed: int) -> np.ndarray:
    """Sorted indices of ``n_wanted`` rows drawn without replacement (all rows when ``None``)."""
    if n_wanted is None or n_wanted >= n_available:
        return np.arange(n_available)
    return np.sort(np.random.default_rng(seed).choice(n_available, size=n_wanted, replace=False))


def exact_density(family: SignedRandomProjection, points: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """``(1/n) sum_i k(x_i, y)`` for each query, by blocks of queries."""
    blocks = [
        family.kernel(points, queries[start : start + _KERNEL_CHUNK]).mean(axis=0)
        for start in range(0, len(queries), _KERNEL_CHUNK)
    ]
    return np.concatenate(blocks)


def relative_errors(estimate: np.ndarray, exact: np.ndarray) -> np.ndarray:
    return np.abs(estimate - exact) / exact


def classify(scores: np.ndarray, counts: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """Accuracy of the MAP rule (``argmax K_c``) and of the maximum-likelihood rule (``argmax K_c / n_c``)."""
    map_accuracy = float(np.mean(scores.argmax(axis=1) == labels))
    likelihood_accuracy = float(np.mean((scores / np.maximum(counts, 1.0)).argmax(axis=1) == labels))
    return map_accuracy, likelihood_accuracy


def non_private_row(family, train, train_labels, test, test_labels, exact, n_classes) -> Row:
    """The reference: raw sketches, no noise (only the sketching error)."""
    errors = relative_errors(RACE(family).update(train).density(test[: exact.size]), exact)
    sketches = [RACE(family).update(train[train_labels == label]) for label in range(n_classes)]
    scores = np.column_stack([sketch.estimate(test) for sketch in sketches])
    counts = np.array([sketch.n_updates for sketch in sketches], dtype=float)
    return Row(None, float(errors.mean()), float(np.median(errors)), *classify(scores, counts, test_labels))


def private_row(epsilon, family, sketch, train, train_labels, test, test_labels, exact, n_classes, trials, seed) -> Row:
    """Average over ``trials`` releases of the KDE sketch and ``trials`` private fits of the classifier."""
    streams = np.random.default_rng([seed, round(epsilon * 1000)]).spawn(2 * trials)
    mean_errors, median_errors, accuracies = [], [], []
    for trial in range(trials):
        released = sketch.release(epsilon, noise_source="numpy", rng=streams[trial])
        errors = relative_errors(released.density(test[: exact.size]), exact)
        mean_errors.append(errors.mean())
        median_errors.append(np.median(errors))
        model = RACEClassifier(
            family=family,
            classes=list(range(n_classes)),
            epsilon=epsilon,
            rule="map",
            noise_source="numpy",
            random_state=streams[trials + trial],
        ).fit(train, train_labels)
        scores = model.decision_function(test)  # MAP scores K_c(y); the ML rule divides by the noisy counts
        counts = np.array([released_class.point_count for released_class in model.sketches_])
        accuracies.append(classify(scores, counts, test_labels))
    map_accuracy, likelihood_accuracy = np.mean(accuracies, axis=0)
    return Row(
        epsilon, float(np.mean(mean_errors)), float(np.mean(median_errors)), float(map_accuracy), float(likelihood_accuracy)
    )


def format_table(rows: Sequence[Row]) -> str:
    header = f"{'epsilon':>11} {'KDE mean rel. err':>18} {'KDE median rel. err':>20} {'acc. MAP':>9} {'acc. ML':>8}"
    lines = [header, "-" * len(header)]
    for row in rows:
        label = "non-private" if row.epsilon is None else f"{row.epsilon:g}"
        lines.append(
            f"{label:>11} {row.kde_mean_relative_error:>18.4f} {row.kde_median_relative_error:>20.4f} "
            f"{row.accuracy_map:>9.3f} {row.accuracy_maximum_likelihood:>8.3f}"
        )
    return "\n".join(lines)


def save_plot(rows: Sequence[Row], majority: float, path: str) -> bool:
    """Two panels (KDE error, accuracy) versus epsilon; returns False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    private = [row for row in rows if row.epsilon is not None]
    reference = next(row for row in rows if row.epsilon is None)
    epsilons = [row.epsilon for row in private]
    figure, (kde_axes, accuracy_axes) = plt.subplots(1, 2, figsize=(10, 4))
    kde_axes.loglog(epsilons, [row.kde_mean_relative_error for row in private], "o-", label="released sketch")
    kde_axes.axhline(reference.kde_mean_relative_error, linestyle="--", color="grey", label="non-private sketch")
    kde_axes.set(xlabel="epsilon (add/remove)", ylabel="mean relative error", title="Private KDE at held-out queries")
    kde_axes.legend()
    accuracy_axes.semilogx(epsilons, [row.accuracy_map for row in private], "o-", label="MAP rule")
    accuracy_axes.semilogx(epsilons, [row.accuracy_maximum_likelihood for row in private], "s-", label="max. likelihood rule")
    accuracy_axes.axhline(reference.accuracy_map, linestyle="--", color="C0", alpha=0.6, label="non-private MAP")
    accuracy_axes.axhline(reference.accuracy_maximum_likelihood, linestyle="--", color="C1", alpha=0.6, label="non-private ML")
    accuracy_axes.axhline(majority, linestyle=":", color="black", label="majority class")
    accuracy_axes.set(
        xlabel="epsilon (add/remove)", ylabel="test accuracy", title="RACEClassifier, 15 WordNet classes", ylim=(0, 1)
    )
    accuracy_axes.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return True


def main(
    *,
    epsilons: Sequence[float] = DEFAULT_EPSILONS,
    train_points: int | None = None,
    test_points: int | None = None,
    queries: int = 2000,
    dimension: int = 32,
    rows: int = 100,
    bits: int = 4,
    trials: int = 3,
    seed: int = 0,
    plot: str | None = "race_on_wordnet.png",
) -> list[Row]:
    """Run the experiment, print the table, save the plot; returns the table's rows.

    Args:
        epsilons: privacy parameters (add/remove, pure DP) of each release and of each classifier fit.
        train_points: training glosses used (``None``: all 26,748), a seeded subsample.
        test_points: test glosses classified (``None``: all 6,689), a seeded subsample.
        queries: KDE queries, the first of the test glosses used.
        dimension: output dimension of the public projection (384 or more: no projection).
        rows: RACE rows ``R``.
        bits: signed-random-projection bits ``p`` (``2^p`` counters per row).
        trials: independent releases averaged per epsilon.
        seed: seed of the noise.
        plot: PNG path, or ``None`` for no plot.
    """
    started = time.perf_counter()
    train_data, test_data = load_wordnet_glosses(split="train"), load_wordnet_glosses(split="test")
    train_rows = subsample(train_data.n_examples, train_points, SUBSAMPLE_SEED)
    test_rows = subsample(test_data.n_examples, test_points, SUBSAMPLE_SEED + 1)
    train, train_labels = project(train_data.embeddings[train_rows], dimension), train_data.labels[train_rows]
    test, test_labels = project(test_data.embeddings[test_rows], dimension), test_data.labels[test_rows]
    n_classes = train_data.n_classes
    family = SignedRandomProjection(dimension=train.shape[1], n_repetitions=rows, n_bits=bits, seed=HASH_SEED)
    print(f"machine: {machine_description()}")
    print(
        f"data: WordNet glosses, {len(train)} train (private) / {len(test)} test, {n_classes} classes, "
        f"embeddings 384-d -> {train.shape[1]}-d (public FastJLT, seed {PROJECTION_SEED})"
    )
    print(
        f"sketch: SignedRandomProjection p={bits} bits (kernel (1 - angle/pi)^{bits}), R={rows} rows x W={family.n_buckets}; "
        f"noise: discrete Laplace, scale R/epsilon (add/remove), numpy sampler, {trials} trials, seed {seed}"
    )
    print(f"KDE queries: {min(queries, len(test))} held-out test glosses\n")

    exact = exact_density(family, train, test[:queries])
    sketch = RACE(family).update(train)
    table = [non_private_row(family, train, train_labels, test, test_labels, exact, n_classes)]
    for epsilon in epsilons:
        table.append(private_row(epsilon, family, sketch, train, train_labels, test, test_labels, exact, n_classes, trials, seed))
    print(format_table(table))
    majority = float(np.bincount(test_labels, minlength=n_classes).max() / len(test_labels))
    print(f"\nmajority-class accuracy: {majority:.3f}; median exact density at the queries: {np.median(exact):.4f}")
    if plot is not None:
        print(f"plot: {plot}" if save_plot(table, majority, plot) else "plot: skipped (matplotlib is not installed)")
    print(f"elapsed: {time.perf_counter() - started:.1f} s")
    return table


def parse_arguments(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(DEFAULT_EPSILONS))
    parser.add_argument("--train-points", type=int, default=None, help="training glosses (default: all 26,748)")
    parser.add_argument("--test-points", type=int, default=None, help="test glosses classified (default: all 6,689)")
    parser.add_argument("--queries", type=int, default=2000, help="held-out KDE queries")
    parser.add_argument("--dimension", type=int, default=32, help="public projection's dimension (384: none)")
    parser.add_argument("--rows", type=int, default=100, help="RACE rows R")
    parser.add_argument("--bits", type=int, default=4, help="signed-random-projection bits p")
    parser.add_argument("--trials", type=int, default=3, help="releases averaged per epsilon")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot", default="race_on_wordnet.png", help="PNG path ('' for none)")
    arguments = vars(parser.parse_args(argv))
    arguments["plot"] = arguments["plot"] or None
    return arguments


if __name__ == "__main__":
    print(f"command: python {' '.join(sys.argv)}")
    main(**parse_arguments())
