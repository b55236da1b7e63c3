"""Benchmark: one-round clipped sums (seed 004 Table 3 setting on synthetic data), high-dimensional and sparse variants.

Run from the repository root:

    PYTHONPATH=. python benchmarks/bench_clipped.py            # full sizes (n = 10^5, U = 2^20), a few minutes
    PYTHONPATH=. python benchmarks/bench_clipped.py --quick    # smaller, for a smoke run

Relative error RE = |estimate - truth| / truth, averaged like seed 004 (repetitions sorted, the
20% largest and 20% smallest dropped, the rest averaged). Shuffle protocols run their fast paths
(exact in law). "central, oracle tau = max" clips at the data's true maximum: a reference, **not**
differentially private. Synthetic data only (seed 004's exact Zipf/Gauss parameters were lost in
extraction; ours are stated in the output); the "images" are synthetic smooth blobs, not MNIST.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import time

import numpy as np

from privsum.sums.clipped import CentralClippedSum, ClippedSum, full_domain_correlated_sum, full_domain_multi_message_sum
from privsum.sums.clipped_vector import (
    CentralClippedVectorSum,
    CentralSparseAggregation,
    ClippedVectorSum,
    SparseVectorAggregation,
)


def trimmed_mean(values: list[float]) -> float:
    ordered = np.sort(np.asarray(values, dtype=float))
    cut = len(ordered) // 5
    return float(ordered[cut : len(ordered) - cut].mean())


def zipf_data(rng: np.random.Generator, n: int, exponent: float, domain: int) -> np.ndarray:
    values = rng.zipf(exponent, n)
    while np.any(values > domain):  # condition on the domain (redraw), nothing clipped
        bad = values > domain
        values[bad] = rng.zipf(exponent, int(bad.sum()))
    return values.astype(np.int64)


def gauss_data(rng: np.random.Generator, n: int, mean: float, std: float, domain: int) -> np.ndarray:
    return np.clip(np.round(rng.normal(mean, std, n)), 0, domain).astype(np.int64)


def one_dimensional(args: argparse.Namespace, rng: np.random.Generator) -> None:
    n, domain, epsilon, delta = args.n, 2**args.log_domain, 1.0, 1e-6
    datasets = {
        "Zipf(a=2)": zipf_data(rng, n, 2.0, domain),
        "Zipf(a=3)": zipf_data(rng, n, 3.0, domain),
        "Gauss(1000, 100)": gauss_data(rng, n, 1000.0, 100.0, domain),
    }
    ours = ClippedSum.from_privacy(epsilon=epsilon, delta=delta, n_users=n, domain=domain, failure_probability=0.1)
    gkmps = full_domain_correlated_sum(epsilon=epsilon, delta=delta, n_users=n, domain=domain)
    bbgn = full_domain_multi_message_sum(epsilon=epsilon, delta=delta, n_users=n, domain=domain)
    print(
        f"\n## 1-D sums: n = {n}, U = 2^{args.log_domain}, epsilon = {epsilon}, delta = {delta}, beta = 0.1, "
        f"{args.reps} repetitions"
    )
    print(f"one-round clipped sum: instances {[type(p).__name__[:4] for p in ours.instances]} (Corr = GKMPS21, Spar = BBGN20)")
    print(f"  guarantee {ours.guarantee} (each instance at epsilon/2, delta/2: a replaced user touches two sub-domains)")
    print(f"GKMPS21 full domain: levels = {gkmps.levels} (random rounding), guarantee {gkmps.guarantee} (analytic claim)")
    print(f"BBGN20 full domain: modulus 2^{bbgn.modulus.bit_length() - 1}, {bbgn.n_shares} shares, guarantee {bbgn.guarantee}")
    header = f"| {'dataset':17} | {'max':>8} | {'sum':>11} | {'mechanism':34} | {'RE (%)':>9} | {'msgs/user':>9} | "
    header += f"{'tau (ours)':>10} |"
    print(header)
    print("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|")
    for name, x in datasets.items():
        truth = float(x.sum())
        rows = []
        started = time.perf_counter()
        taus, errors = [], []
        for _ in range(args.reps):
            result = ours.combine(ours.sample_sub_domain_estimates(x, rng=rng))
            errors.append(abs(result.estimate[0] - truth) / truth)
            taus.append(int(result.clipping_threshold[0]))
        rows.append(("one-round clipped (ours)", errors, ours.average_messages_per_user(x), f"2^{int(np.log2(np.median(taus)))}"))
        rows.append(
            (
                "GKMPS21, full domain",
                [abs(gkmps.run(x, rng=rng)[0] - truth) / truth for _ in range(args.reps)],
                gkmps.expected_messages_per_user,
                "",
            )
        )
        rows.append(
            (
                "BBGN20, full domain",
                [abs(bbgn.run(x, rng=rng)[0] - truth) / truth for _ in range(args.reps)],
                float(bbgn.n_shares),
                "",
            )
        )
        central = CentralClippedSum(epsilon=epsilon)  # oracle tau = max: NOT private, reference only
        rows.append(
            (
                "central, oracle tau = max (not DP)",
                [abs(central.release(x) - truth) / truth for _ in range(args.reps)],
                float("nan"),
                "",
            )
        )
        for mechanism, errs, messages, tau in rows:
            print(
                f"| {name:17} | {int(x.max()):>8} | {int(truth):>11} | {mechanism:34} | {100 * trimmed_mean(errs):>9.4g} | "
                f"{messages:>9.4g} | {tau:>10} |"
            )
        ours_re, central_re, gkmps_re = (trimmed_mean(rows[i][1]) for i in (0, 3, 1))
        print(
            f"|   {name}: ours / central = {ours_re / central_re:.2f}x, GKMPS21 / ours = {gkmps_re / ours_re:.1f}x "
            f"({time.perf_counter() - started:.1f} s)"
        )


def smooth_images(rng: np.random.Generator, n: int, side: int) -> np.ndarray:
    grid = np.linspace(0.0, 1.0, side)
    xs, ys = np.meshgrid(grid, grid)
    centres = rng.uniform(0.25, 0.75, (n, 2))
    widths = rng.uniform(0.08, 0.2, n)
    images = np.exp(
        -((xs[None] - centres[:, 0, None, None]) ** 2 + (ys[None] - centres[:, 1, None, None]) ** 2)
        / (2 * widths[:, None, None] ** 2)
    )
    return images.reshape(n, side * side)  # pixel values in [0, 1]


def high_dimensional(args: argparse.Namespace, rng: np.random.Generator) -> None:
    n, side, epsilon, delta = args.n_vectors, 16, 5.0, 1e-6
    x = smooth_images(rng, n, side)
    radius = float(side)  # the worst case for pixels in [0, 1]^(16x16): ||x|| <= 16
    truth = x.sum(axis=0)
    print(
        f"\n## High-dimensional sum: synthetic smooth 16x16 images (not MNIST), n = {n}, d = {side * side}, "
        f"epsilon = {epsilon}, delta = {delta}"
    )
    print(
        f"radius R = {radius} (worst case), data max norm = {np.linalg.norm(x, axis=1).max():.3f}; "
        "relative l2 error = ||est - sum|| / ||sum||"
    )
    print(f"| {'mechanism':42} | {'rel. l2 err (%)':>15} | {'msgs/user':>10} | guarantee |")
    print("|---|---|---|---|")
    for calibration in ("analytic", "tight"):
        protocol = ClippedVectorSum.from_privacy(
            epsilon=epsilon, delta=delta, n_users=n, dimension=side * side, radius=radius, calibration=calibration, levels=2**16
        )
        errs = [np.linalg.norm(protocol.run(x, rng=rng) - truth) / np.linalg.norm(truth) for _ in range(args.vector_reps)]
        label = f"one-round clipped, {'advanced' if calibration == 'analytic' else 'PLD'} composition"
        print(
            f"| {label:42} | {100 * trimmed_mean(errs):>15.4g} | {protocol.expected_messages_per_user:>10.4g} | "
            f"{protocol.guarantee} |"
        )
    for label, bound in (("central Gaussian, oracle tau = max norm", None), ("central Gaussian, tau = R (given)", radius)):
        central = CentralClippedVectorSum(epsilon=epsilon, delta=delta, clipping_bound=bound)
        errs = [np.linalg.norm(central.release(x) - truth) / np.linalg.norm(truth) for _ in range(args.vector_reps)]
        print(f"| {label:42} | {100 * trimmed_mean(errs):>15.4g} | {'-':>10} | {central.guarantee} |")


def sparse_sets(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    popularity = 1.0 / np.arange(1, d + 1) ** 1.1
    popularity /= popularity.sum()
    sizes = np.minimum(rng.zipf(2.0, n), d)  # most users hold a few items, a few hold many
    x = np.zeros((n, d), dtype=np.int64)
    for i, size in enumerate(sizes):
        x[i, rng.choice(d, size=size, replace=False, p=popularity)] = 1
    return x


def sparse(args: argparse.Namespace, rng: np.random.Generator) -> None:
    n, d, epsilon, delta = args.n_vectors, 256, 5.0, 1e-6
    x = sparse_sets(rng, n, d)
    truth = x.sum(axis=0)
    sparsity = x.sum(axis=1)
    print(f"\n## Sparse vector aggregation: synthetic sets, n = {n}, d = {d}, epsilon = {epsilon}, delta = {delta}")
    print(
        f"sparsity: mean {sparsity.mean():.2f}, max {sparsity.max()}; max frequency {truth.max()}; error = l_inf (max over items)"
    )
    print(f"| {'mechanism':42} | {'l_inf err':>9} | {'msgs/user (noise + data)':>26} | guarantee |")
    print("|---|---|---|---|")
    for calibration in ("analytic", "tight"):
        protocol = SparseVectorAggregation.from_privacy(
            epsilon=epsilon, delta=delta, n_users=n, dimension=d, calibration=calibration
        )
        errs = [np.abs(protocol.run(x, rng=rng) - truth).max() for _ in range(args.vector_reps)]
        noise = protocol.noise_messages_per_user
        data = protocol.average_messages_per_user(x) - noise
        label = f"one-round sparse, {'advanced' if calibration == 'analytic' else 'PLD'} composition"
        print(f"| {label:42} | {trimmed_mean(errs):>9.4g} | {f'{noise:.4g} + {data:.3g}':>26} | {protocol.guarantee} |")
    for label, bound in (("central Gaussian, oracle tau = max sparsity", None), ("central Gaussian, tau = d (given)", d)):
        central = CentralSparseAggregation(epsilon=epsilon, delta=delta, sparsity_bound=bound)
        errs = [np.abs(central.release(x) - truth).max() for _ in range(args.vector_reps)]
        print(f"| {label:42} | {trimmed_mean(errs):>9.4g} | {'-':>26} | {central.guarantee} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args()
    args.n, args.log_domain, args.reps = (10_000, 16, 10) if args.quick else (100_000, 20, 20)
    args.n_vectors, args.vector_reps = (2_000, 5) if args.quick else (10_000, 10)
    print(f"# bench_clipped — command: {' '.join(['python', *sys.argv])}")
    print(
        f"machine: {platform.node()} {platform.machine()} {platform.processor() or ''}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, numpy {np.__version__}"
    )
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    one_dimensional(args, rng)
    high_dimensional(args, rng)
    sparse(args, rng)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\ntotal time {time.perf_counter() - started:.1f} s, peak memory {peak:.0f} MiB")


if __name__ == "__main__":
    main()
