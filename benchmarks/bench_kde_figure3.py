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
dependency-free plot (log-log) with two panels, the RMSE against the exact KDE (what Wagner (ICLR 2025)
Figure 3 shows) and the RMSE added by rounding and privacy (against the LSQ estimate of the same
draws), one line per protocol and the non-private level dash-dotted.
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
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1.0, 2.0, 4.0, 8.0, 16.0])
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--protocols", nargs="+", default=list(PROTOCOLS), choices=list(PROTOCOLS))
    parser.add_argument("--accounting", default="tight", choices=["tight", "seed"])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--output", default="kde_figure3", help="path prefix of the .csv, .md and .svg files")
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
    title = f"Private Gaussian KDE, WordNet (n={n}, d={dimension}, I={args.repetitions}, delta={args.delta:g})"
    write_svg(results, baseline, f"{args.output}.svg", title)
    print(f"wrote {args.output}.csv, {args.output}.md and {args.output}.svg")


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


def write_svg(
    results: dict[str, list[tuple[float, float, float]]], baseline: tuple[float, float, float], path: str, title: str
) -> None:
    """Two log-log panels (error against the exact KDE; error added to the LSQ estimate) as plain SVG."""
    panels = [("RMSE vs exact KDE", 1, baseline[0]), ("added RMSE (rounding + privacy)", 2, baseline[2])]
    epsilons = sorted({row[0] for rows in results.values() for row in rows})
    width, height, margin, gap = 360, 260, 60, 70
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * width + gap + 2 * margin}" height="{height + 2 * margin + 20}" '
        'font-family="sans-serif" font-size="11">',
        f'<text x="{margin}" y="20" font-size="13">{escape(title)}</text>',
    ]
    for index, (label, column, reference) in enumerate(panels):
        left = margin + index * (width + gap)
        values = [row[column] for rows in results.values() for row in rows] + [reference]
        x_axis = LogAxis(min(epsilons), max(epsilons), left, left + width)
        y_axis = LogAxis(min(values), max(values), margin + height, margin)
        parts += panel_frame(x_axis, y_axis, epsilons, (left, margin, width, height), label)
        y = y_axis(reference)
        parts.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{left + width}" y2="{y:.1f}" stroke="#444" stroke-dasharray="6 3 1 3"/>'
        )
        parts.append(f'<text x="{left + width - 4}" y="{y - 4:.1f}" text-anchor="end" fill="#444">no privacy</text>')
        for row_index, (name, rows) in enumerate(results.items()):
            colour = COLOURS.get(name, "#000")
            points = " ".join(f"{x_axis(r[0]):.1f},{y_axis(r[column]):.1f}" for r in sorted(rows))
            parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"/>')
            for r in rows:
                parts.append(f'<circle cx="{x_axis(r[0]):.1f}" cy="{y_axis(r[column]):.1f}" r="2.5" fill="{colour}"/>')
            parts.append(f'<text x="{left + width + 6}" y="{margin + 12 + 14 * row_index}" fill="{colour}">{escape(name)}</text>')
    parts.append("</svg>")
    with open(path, "w") as handle:
        handle.write("\n".join(parts) + "\n")


class LogAxis:
    """Maps ``[low, high]`` (log scale, widened to whole decades' quarters) onto pixels ``[start, stop]``."""

    def __init__(self, low: float, high: float, start: float, stop: float) -> None:
        self.low, self.high = math.log10(low) - 0.05, math.log10(high) + 0.05
        self.start, self.stop = start, stop

    def __call__(self, value: float) -> float:
        fraction = (math.log10(value) - self.low) / (self.high - self.low)
        return self.start + fraction * (self.stop - self.start)

    def ticks(self) -> list[float]:
        """Values ``m * 10^k`` (m in 1, 2, 5) inside the axis."""
        for mantissas in ((1, 2, 5), range(1, 10)):  # every integer mantissa when the axis spans little
            candidates = [m * 10.0**k for k in range(math.floor(self.low), math.ceil(self.high) + 1) for m in mantissas]
            inside = [t for t in candidates if self.low <= math.log10(t) <= self.high]
            if len(inside) >= 2:
                break
        return inside


def panel_frame(
    x_axis: LogAxis, y_axis: LogAxis, x_ticks: list[float], box: tuple[float, float, float, float], label: str
) -> list[str]:
    """A panel's box, ticks with labels (the measured epsilons on x, log ticks on y), axis titles."""
    left, top, width, height = box
    bottom = top + height
    parts = [f'<rect x="{left}" y="{top}" width="{width}" height="{height}" fill="none" stroke="#999"/>']
    for tick in x_ticks:
        x = x_axis(tick)
        parts.append(f'<line x1="{x:.1f}" y1="{bottom}" x2="{x:.1f}" y2="{bottom + 4}" stroke="#999"/>')
        parts.append(f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="middle">{tick:g}</text>')
    for tick in y_axis.ticks():
        y = y_axis(tick)
        parts.append(f'<line x1="{left - 4}" y1="{y:.1f}" x2="{left + width}" y2="{y:.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{tick:g}</text>')
    parts.append(f'<text x="{left + width / 2}" y="{bottom + 34}" text-anchor="middle">epsilon (log scale)</text>')
    parts.append(f'<text x="{left + width / 2}" y="{top - 8}" text-anchor="middle">{escape(label)} (log scale)</text>')
    return parts


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


if __name__ == "__main__":
    main()
