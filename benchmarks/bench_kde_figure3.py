"""Private Gaussian-KDE error versus epsilon on real embeddings (the shape of seed 001 Figure 3).

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bench_kde_figure3.py [--repetitions 384] [--epsilons 0.5 1 2 4 8] [--out kde_figure3.png]

Users are the bundled WordNet gloss embeddings (train split, 384-d, unit norm); the Gaussian KDE
``exp(-||x - y||^2)`` (random Fourier features, ``I`` repetitions, ``d = 384``) is released by the
shuffled-DP protocol with each bit sum (RR, 3NB, Pure), central DP (discrete Gaussian on every
count) and local DP (local RR), all calibrated from the same overall ``(epsilon, delta)``
(replace-one) with the chosen accounting, plus the non-private protocol (exact bit sums: only
the LSQ and rounding error). The error is measured on 1,000 test embeddings as queries against
the exact KDE: RMSE over queries and the largest absolute error, averaged over ``--trials`` runs.
Prints a table; saves a plot when matplotlib is installed (skipped with a message otherwise).
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import time

import numpy as np

from privsum.bitsum import CentralGaussianBitSum, ExactBitSum, LocalRRBitSum, PureBitSum, RRBitSum, ThreeNBBitSum
from privsum.datasets import load_wordnet_glosses
from privsum.kde import KDEFunction, ShuffledKDE
from privsum.lsq import RandomFourierFeatures

PROTOCOLS = {
    "RR": (RRBitSum, {}),
    "3NB": (ThreeNBBitSum, {}),
    "Pure": (PureBitSum, {}),
    "central": (CentralGaussianBitSum, {"noise_source": "numpy"}),
    "local": (LocalRRBitSum, {}),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=384)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1.0, 2.0, 4.0, 8.0])
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--protocols", nargs="+", default=list(PROTOCOLS), choices=list(PROTOCOLS))
    parser.add_argument("--accounting", default="tight", choices=["tight", "seed"])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--out", default="kde_figure3.png")
    args = parser.parse_args()
    print(f"command: {' '.join([os.path.basename(sys.executable), *sys.argv])}")
    print(f"machine: {platform.node()} {platform.machine()} cpus={os.cpu_count()} python {platform.python_version()}")
    users = np.asarray(load_wordnet_glosses(split="train").embeddings, dtype=float)
    test = np.asarray(load_wordnet_glosses(split="test").embeddings, dtype=float)
    queries = test[np.random.default_rng(0).choice(test.shape[0], size=args.queries, replace=False)]
    n, dimension = users.shape
    print(
        f"data: WordNet glosses, n={n} users, d={dimension}, I={args.repetitions}, {args.queries} queries, "
        f"delta={args.delta}, accounting={args.accounting}, trials={args.trials}"
    )
    family = RandomFourierFeatures(dimension=dimension, n_repetitions=args.repetitions, seed=0)
    exact = np.concatenate([family.kernel(users, queries[i : i + 100]).mean(axis=0) for i in range(0, len(queries), 100)])
    print(f"exact KDE at the queries: mean {exact.mean():.4g}, max {exact.max():.4g}")
    # The same draws without rounding or privacy: isolates the error the protocol adds.
    sketch = KDEFunction(family, sum(family.f(users[i : i + 4096]).sum(axis=0) for i in range(0, n, 4096)), n_users=n)(queries)
    print(f"LSQ estimate of the same draws (no rounding, no privacy): RMSE {np.sqrt(np.mean((sketch - exact) ** 2)):.4g}")
    results: dict[str, list[tuple[float, float, float]]] = {}
    rng = np.random.default_rng(1)

    def measure(kde: ShuffledKDE) -> tuple[float, float, float]:
        estimates = [kde.run(users, rng=rng)(queries) for _ in range(args.trials)]
        rmse = float(np.mean([np.sqrt(np.mean((e - exact) ** 2)) for e in estimates]))
        worst = float(np.mean([np.abs(e - exact).max() for e in estimates]))
        added = float(np.mean([np.sqrt(np.mean((e - sketch) ** 2)) for e in estimates]))
        return rmse, worst, added

    baseline = measure(ShuffledKDE(family=family, bitsum=ExactBitSum(n_users=n)))
    print(f"non-private (LSQ + rounding only): RMSE {baseline[0]:.4g}, max error {baseline[1]:.4g}, added {baseline[2]:.4g}")
    print("RMSE/max err: against the exact KDE; added: RMSE against the LSQ estimate of the same draws (rounding + privacy)")
    header = (
        f"{'protocol':<8} {'epsilon':>7} {'RMSE':>10} {'max err':>10} {'added':>10} {'eps0':>9} {'msgs/user':>10} {'calib s':>8}"
    )
    print(header)
    for name in args.protocols:
        protocol, options = PROTOCOLS[name]
        for epsilon in args.epsilons:
            start = time.perf_counter()
            kde = ShuffledKDE.from_privacy(
                family=family,
                protocol=protocol,
                epsilon=epsilon,
                delta=args.delta,
                n_users=n,
                accounting=args.accounting,
                protocol_options=options,
            )
            calibration_seconds = time.perf_counter() - start
            rmse, worst, added = measure(kde)
            results.setdefault(name, []).append((epsilon, rmse, added))
            print(
                f"{name:<8} {epsilon:>7g} {rmse:>10.4g} {worst:>10.4g} {added:>10.4g} {kde.bitsum.guarantee.epsilon:>9.4g} "
                f"{kde.expected_messages_per_user:>10.4g} {calibration_seconds:>8.1f}"
            )
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: skipping the plot (pip install matplotlib to draw it)")
        return
    figure, axis = plt.subplots(figsize=(5, 3.5))
    for name, rows in results.items():
        axis.plot([r[0] for r in rows], [r[2] for r in rows], marker="o", label=name)
    axis.axhline(baseline[2], color="grey", linestyle="--", label="no privacy (rounding)")
    axis.set(
        xscale="log", yscale="log", xlabel="epsilon", ylabel="added RMSE over queries", title="Private Gaussian KDE, WordNet"
    )
    axis.legend()
    figure.tight_layout()
    figure.savefig(args.out, dpi=120)
    print(f"plot saved to {args.out}")


if __name__ == "__main__":
    main()
