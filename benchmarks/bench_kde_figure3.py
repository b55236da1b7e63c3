"""Private Gaussian-KDE error versus epsilon on real embeddings.

The shape of Figure 3 of Wagner, "Learning from End User Data with Shuffled Differential Privacy
over Kernel Densities", ICLR 2025.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bench_kde_figure3.py [--repetitions 384] [--epsilons 0.5 1 2 4 8 16]
        [--trials 3] [--output kde_figure3]

Users are the bundled WordNet gloss embeddings (train split, 384-d, unit norm); the Gaussian KDE
``exp(-||x - y||^2)`` (random Fourier features, ``I`` repetitions, ``d = 384``) is released by the
shuffled-DP protocol with each bit sum (RR, 3NB, Pure), central DP (discrete Gaussian on every
count) and local DP (local RR), all calibrated from the same overall ``(epsilon, delta)``
(replace-one) with the chosen accounting, plus the non-private protocol (exact bit sums: only
the LSQ and rounding error). The error is measured on 1,000 test embeddings as queries against
the exact KDE: RMSE over queries and the largest absolute error, averaged over ``--trials`` runs.
Prints a table and writes ``OUTPUT.csv``, ``OUTPUT.md`` (the same table) and ``OUTPUT.svg``: a
log-log plot (matplotlib, the ``plot`` extra) with two panels, the RMSE against the exact KDE (what
Wagner (ICLR 2025) Figure 3 shows) and the RMSE added by rounding and privacy (against the LSQ
estimate of the same draws), one line per protocol and the non-private level dash-dotted. Without
matplotlib the tables are still written, and the script says why the figure is not.
``--replot TABLE.md`` redraws ``OUTPUT.svg`` from a table this script wrote, without measuring.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np

from privsum._plotting import MISSING_MATPLOTLIB, pyplot_or_none
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
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1.0, 2.0, 4.0, 8.0, 16.0])
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--protocols", nargs="+", default=list(PROTOCOLS), choices=list(PROTOCOLS))
    parser.add_argument("--accounting", default="tight", choices=["tight", "seed"])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--output", default="kde_figure3", help="path prefix of the .csv, .md and .svg files")
    parser.add_argument("--replot", type=Path, help="redraw OUTPUT.svg from this .md table (no measuring)")
    args = parser.parse_args()
    title = f"Private Gaussian KDE, WordNet (d=384, I={args.repetitions}, delta={args.delta:g})"
    if args.replot is not None:
        results, baseline = results_from_table(args.replot.read_text(encoding="utf-8"))
        report_figure(write_figure(results, baseline, f"{args.output}.svg", title), f"{args.output}.svg")
        return
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
    rows: list[dict[str, object]] = []
    rng = np.random.default_rng(1)

    def measure(kde: ShuffledKDE) -> tuple[float, float, float]:
        estimates = [kde.run(users, rng=rng)(queries) for _ in range(args.trials)]
        rmse = float(np.mean([np.sqrt(np.mean((e - exact) ** 2)) for e in estimates]))
        worst = float(np.mean([np.abs(e - exact).max() for e in estimates]))
        added = float(np.mean([np.sqrt(np.mean((e - sketch) ** 2)) for e in estimates]))
        return rmse, worst, added

    start = time.perf_counter()
    exact_kde = ShuffledKDE(family=family, bitsum=ExactBitSum(n_users=n))
    baseline = measure(exact_kde)
    elapsed = time.perf_counter() - start
    rows.append(table_row("none", math.inf, baseline, math.inf, exact_kde.expected_messages_per_user, 0.0, elapsed))
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
            epsilon0, messages = kde.bitsum.guarantee.epsilon, kde.expected_messages_per_user
            run_seconds = time.perf_counter() - start - calibration_seconds
            rows.append(table_row(name, epsilon, (rmse, worst, added), epsilon0, messages, calibration_seconds, run_seconds))
            print(
                f"{name:<8} {epsilon:>7g} {rmse:>10.4g} {worst:>10.4g} {added:>10.4g} {kde.bitsum.guarantee.epsilon:>9.4g} "
                f"{kde.expected_messages_per_user:>10.4g} {calibration_seconds:>8.1f}"
            )
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    write_table(rows, args.output)
    print(f"wrote {args.output}.csv and {args.output}.md")
    report_figure(write_figure(results, baseline, f"{args.output}.svg", title), f"{args.output}.svg")


def table_row(
    name: str, epsilon: float, errors: tuple[float, float, float], epsilon0: float, messages: float, calib: float, run: float
) -> dict[str, object]:
    rmse, worst, added = errors
    return {
        "protocol": name,
        "epsilon": epsilon,
        "rmse": f"{rmse:.4g}",
        "max_error": f"{worst:.4g}",
        "added_rmse": f"{added:.4g}",
        "epsilon0": f"{epsilon0:.4g}",
        "messages_per_user": f"{messages:.4g}",
        "calibration_s": round(calib, 2),
        "run_s": round(run, 2),
    }


def write_table(rows: list[dict[str, object]], prefix: str) -> None:
    """The rows as ``prefix.csv`` and as a markdown table in ``prefix.md``."""
    columns = list(rows[0])
    with open(f"{prefix}.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += [
        "| " + " | ".join(f"{row[c]:g}" if isinstance(row[c], float) else str(row[c]) for c in columns) + " |" for row in rows
    ]
    with open(f"{prefix}.md", "w") as handle:
        handle.write("\n".join(lines) + "\n")


COLOURS = {"RR": "#d62728", "3NB": "#1f77b4", "Pure": "#2ca02c", "central": "#9467bd", "local": "#ff7f0e"}


def write_figure(
    results: dict[str, list[tuple[float, float, float]]], baseline: tuple[float, float, float], path: str, title: str
) -> bool:
    """Two log-log panels (error against the exact KDE; error added to the LSQ estimate); False without matplotlib."""
    pyplot = pyplot_or_none()
    if pyplot is None:
        return False
    figure, axes = pyplot.subplots(1, 2, figsize=(10.0, 4.2))
    panels = [("RMSE vs exact KDE", 1, baseline[0]), ("added RMSE (rounding + privacy)", 2, baseline[2])]
    for axis, (label, column, reference) in zip(axes, panels, strict=True):
        for name, rows in results.items():
            ordered = sorted(rows)
            axis.plot(
                [r[0] for r in ordered],
                [r[column] for r in ordered],
                marker="o",
                markersize=3,
                linewidth=2,
                color=COLOURS.get(name, "#000000"),
                label=name,
            )
        axis.axhline(reference, color="#444444", linestyle="-.", linewidth=1, label="no privacy")
        axis.set_xscale("log")
        axis.set_yscale("log")
        epsilons = sorted({r[0] for rows in results.values() for r in rows})
        axis.set_xticks(epsilons, [f"{e:g}" for e in epsilons])
        axis.tick_params(axis="x", which="minor", bottom=False, labelbottom=False)
        axis.set_xlabel("epsilon (log scale)")
        axis.set_title(f"{label} (log scale)", fontsize=10)
        axis.grid(True, alpha=0.3)
    axes[1].legend(fontsize=8)
    figure.suptitle(title, fontsize=11)
    figure.tight_layout()
    figure.savefig(path, metadata={"Date": None})
    pyplot.close(figure)
    return True


def report_figure(written: bool, path: str) -> None:
    print(f"wrote {path}" if written else f"no figure: {MISSING_MATPLOTLIB}")


def results_from_table(markdown: str) -> tuple[dict[str, list[tuple[float, float, float]]], tuple[float, float, float]]:
    """``(results, baseline)`` from the markdown table `write_table` writes (the ``none`` row is the baseline)."""
    lines = [line for line in markdown.splitlines() if line.startswith("|")]
    columns = [cell.strip() for cell in lines[0].strip("|").split("|")]
    results: dict[str, list[tuple[float, float, float]]] = {}
    baseline = (math.nan, math.nan, math.nan)
    for line in lines[2:]:
        row = dict(zip(columns, (cell.strip() for cell in line.strip("|").split("|")), strict=True))
        point = (float(row["epsilon"]), float(row["rmse"]), float(row["added_rmse"]))
        if row["protocol"] == "none":
            baseline = (point[1], float(row["max_error"]), point[2])
        else:
            results.setdefault(row["protocol"], []).append(point)
    return results, baseline


if __name__ == "__main__":
    main()
