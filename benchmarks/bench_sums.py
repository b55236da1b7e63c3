"""Benchmark of privsum.sums: the vector-sum error scaling, the t and k sweeps, and the other sums' costs.

The vector sum is that of Scott, Cormode & Maple, "Applying the Shuffle Model of Differential
Privacy to Vector Aggregation", BICOD 2021.

Run: ``PYTHONPATH=. python benchmarks/bench_sums.py [--repeats R]``. Prints machine, command, sizes,
time and peak memory. Data: uniform random vectors in [0, 1]^d (Scott, Cormode & Maple (BICOD 2021) used the ECG heartbeat
data set, not bundled here).

Normalised MSE (Scott, Cormode & Maple (BICOD 2021), section 4.4): ``||DeBias - (sums of the reported values)||^2 (d/n)^2``,
averaged over runs; the paper's Fig. 2 predicts ``d^{8/3}`` and ``n^{-5/3}`` at the best ``k``.
"""

from __future__ import annotations

import argparse
import platform
import resource
import sys
import time

import numpy as np

from privsum.shuffle import MessageHistogram
from privsum.sums import BlanketRealSum, CorrelatedNoiseSum, MultiMessageSum, ShuffledVectorSum


def seed_normalised_mse(protocol: ShuffledVectorSum, x: np.ndarray, repeats: int, rng: np.random.Generator) -> float:
    d, width = protocol.dimension, protocol.precision + 1
    errors = []
    for _ in range(repeats):
        coordinates, reports = protocol.local_reports(x, rng=rng)
        counts = np.bincount((coordinates * width + reports).ravel(), minlength=d * width).reshape(d, width)
        debiased = protocol.debiased_sampled_sums(MessageHistogram(counts, protocol.alphabet))
        truth = np.bincount(coordinates.ravel(), weights=np.take_along_axis(x, coordinates, axis=1).ravel(), minlength=d)
        errors.append(np.sum((debiased - truth) ** 2) * (d / protocol.n_users) ** 2)
    return float(np.mean(errors))


def fit_exponent(sizes: list[int], values: list[float]) -> float:
    return float(np.polyfit(np.log(sizes), np.log(values), 1)[0])


def vector_section(repeats: int, rng: np.random.Generator) -> None:
    epsilon, delta = 0.95, 0.5  # the paper's default setting (delta = 0.5 is the paper's, not a meaningful privacy level)
    print("\n== Vector sum (Scott, Cormode & Maple, BICOD 2021), analytic gamma, eps=0.95, delta=0.5, uniform data ==")
    print("-- d sweep (n = 50,000; k chosen by the protocol) --")
    dims, mses = [25, 50, 100, 200, 400], []
    for d in dims:
        protocol = ShuffledVectorSum.from_privacy(
            epsilon=epsilon, delta=delta, n_users=50_000, dimension=d, calibration="analytic"
        )
        mse = seed_normalised_mse(protocol, rng.random((50_000, d)), repeats, rng)
        mses.append(mse)
        print(
            f"d={d:4d} k={protocol.precision} gamma={protocol.blanket_probability:.4f} nMSE={mse:.5g}"
            f" bound={protocol.normalised_mse_bound():.5g}"
        )
    print(f"fitted exponent in d: {fit_exponent(dims, mses):.3f}   (Scott, Cormode & Maple (BICOD 2021) predicts 8/3 = 2.667)")
    print("-- n sweep (d = 100; k chosen by the protocol) --")
    users, mses = [10_000, 20_000, 50_000, 100_000, 200_000], []
    for n in users:
        protocol = ShuffledVectorSum.from_privacy(epsilon=epsilon, delta=delta, n_users=n, dimension=100, calibration="analytic")
        mse = seed_normalised_mse(protocol, rng.random((n, 100)), repeats, rng)
        mses.append(mse)
        print(
            f"n={n:7d} k={protocol.precision} gamma={protocol.blanket_probability:.4f} nMSE={mse:.5g}"
            f" bound={protocol.normalised_mse_bound():.5g}"
        )
    print(f"fitted exponent in n: {fit_exponent(users, mses):.3f}   (Scott, Cormode & Maple (BICOD 2021) predicts -5/3 = -1.667)")
    x = rng.random((50_000, 100))
    print("-- t sweep (n = 50,000, d = 100, k = 3) --")
    for t in [1, 2, 3, 4, 5]:
        protocol = ShuffledVectorSum.from_privacy(
            epsilon=epsilon, delta=delta, n_users=50_000, dimension=100, calibration="analytic", precision=3, samples=t
        )
        print(f"t={t} gamma={protocol.blanket_probability:.4f} nMSE={seed_normalised_mse(protocol, x, repeats, rng):.5g}")
    print("-- k sweep (n = 50,000, d = 100, t = 1): analytic (delta=0.5) and tight (delta=1e-6) --")
    for k in [1, 2, 3, 4, 5, 6]:
        row = f"k={k}"
        for calibration, target_delta in (("analytic", 0.5), ("tight", 1e-6)):
            try:
                protocol = ShuffledVectorSum.from_privacy(
                    epsilon=epsilon, delta=target_delta, n_users=50_000, dimension=100, calibration=calibration, precision=k
                )
            except ValueError:
                row += f"  {calibration}: infeasible"
                continue
            mse = seed_normalised_mse(protocol, x, repeats, rng)
            row += f"  {calibration}: gamma={protocol.blanket_probability:.4f} nMSE={mse:.5g}"
        print(row)


def scalar_section(rng: np.random.Generator) -> None:
    print("\n== Real sum (BBGN19), eps=1, delta=1e-6: tight vs analytic gamma ==")
    for n in [1_000, 10_000, 100_000]:
        for calibration in ("analytic", "tight"):
            start = time.perf_counter()
            protocol = BlanketRealSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=n, calibration=calibration)
            seconds = time.perf_counter() - start
            x = rng.random(n)
            errors = np.array([protocol.run(x, rng=rng)[0] - x.sum() for _ in range(200)])
            print(
                f"n={n:6d} {calibration:8s} k={protocol.precision:2d} gamma={protocol.blanket_probability:.5f} "
                f"eps={protocol.guarantee.epsilon:.4f} RMSE={np.sqrt(np.mean(errors**2)):8.3f} "
                f"(bound {np.sqrt(protocol.variance()):8.3f}) calibration {seconds:.2f}s"
            )


def integer_section(rng: np.random.Generator) -> None:
    print("\n== Integer sums, eps=1, delta=1e-6, n=10,000 ==")
    n = 10_000
    for domain in [1, 2, 4, 8]:
        gkmps = CorrelatedNoiseSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=n, domain=domain)
        bbgn = MultiMessageSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=n, domain=domain)
        x = rng.integers(0, domain + 1, size=(n, 20))
        start = time.perf_counter()
        gkmps_error = gkmps.run(x, rng=rng) - x.sum(axis=0)
        gkmps_seconds = time.perf_counter() - start
        start = time.perf_counter()
        bbgn_error = bbgn.run(x, rng=rng) - x.sum(axis=0)
        bbgn_seconds = time.perf_counter() - start
        print(
            f"Delta={domain}: GKMPS21 msgs/user={gkmps.expected_messages_per_user:8.2f} "
            f"RMSE={np.sqrt(np.mean(gkmps_error**2)):6.2f} "
            f"(theory {np.sqrt(gkmps.variance()):6.2f}, 20 instances in {gkmps_seconds:.2f}s) | "
            f"BBGN20 m={bbgn.n_shares} q=2^{int(np.log2(bbgn.modulus))} RMSE={np.sqrt(np.mean(bbgn_error**2)):6.2f} "
            f"(theory {np.sqrt(bbgn.variance()):6.2f}, {bbgn_seconds:.2f}s)"
        )
    for domain in [1, 2]:
        start = time.perf_counter()
        protocol = CorrelatedNoiseSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=n, domain=domain, calibration="tight")
        print(
            f"GKMPS21 Delta={domain}: verified epsilon at delta=1e-6 = {protocol.epsilon:.4f}"
            f" (claimed 1.0), {time.perf_counter() - start:.1f}s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=40, help="runs averaged per vector-sum measurement")
    parser.add_argument("--seed", type=int, default=0)
    arguments = parser.parse_args()
    print(f"machine: {platform.machine()} {platform.processor() or ''} {platform.system()} python {platform.python_version()}")
    print("command:", " ".join(sys.argv))
    rng = np.random.default_rng(arguments.seed)
    start = time.perf_counter()
    vector_section(arguments.repeats, rng)
    scalar_section(rng)
    integer_section(rng)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\ntotal time {time.perf_counter() - start:.1f}s, peak memory {peak:.0f} MiB")


if __name__ == "__main__":
    main()
