"""Bits per user of the shuffled sums (issue 28): the Skellam vector sum's shares, modulus and scale, and their floor.

Run: ``PYTHONPATH=. python benchmarks/bench_communication.py [--repeats R] [--skip-large]``.

For each setting (``epsilon = 1``, ``delta = 1e-6``, replace-one, ``||x||_2 <= 1``) it prints the
calibrated `SkellamVectorSum` (scale, shares ``m``, modulus ``q``), its bits per coordinate per
user (``m ceil(log2 q)``: what a user uploads, no coordinate tag), the stated noise sd against
the analytic Gaussian's (Balle & Wang, L2 sensitivity 2), the share count the worst-case
chi-square bound (or BBGN20's) would need for the same share distance at the same ``q`` (the previous sizing), the
same calibration with the share count of Balle, Bell, Gascón & Nissim's bound alone and with
their per-share coordinate tag (the cost before issue 28), and the **floor**: the fewest bits per
coordinate the share bound averaged over the noise shares (`privsum.sums.split_and_mix`) allows
over every scale of the search's grid and every share part of delta in ``FLOOR_FRACTIONS`` with
the noise sd still within ``1.10`` times the analytic Gaussian's (each candidate computed exactly:
its noise ``mu`` by the Rényi calibration, its least modulus, its value mass and least share
count); and the same floor at any noise sd. Fewer bits than the floor need a bound that nothing
here proves, or less accuracy. The
``d = 65,536`` setting is run in chunks of users (memory bounded by one chunk). Timings: median
and spread of ``from_privacy`` over ``R`` repeats with the bound's caches cleared, measured in
this one run on a shared machine (indicative only).
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import resource
import sys
import time

import numpy as np

from privsum.accounting.gaussian import gaussian_sigma
from privsum.sums import SkellamVectorSum
from privsum.sums import skellam as sk
from privsum.sums._skellam_search import REFINEMENT, SCALE_GRID, _least_shares, candidates, share_value_mass
from privsum.sums.multi_message import default_share_count
from privsum.sums.split_and_mix import _chi_square, _component_tables, least_share_count

SETTINGS = ((3_000, 384), (100_000, 384), (1_000, 65_536))
EPSILON, DELTA = 1.0, 1e-6
SD_TARGET = 1.10  # issue 28: noise sd at most 1.10 times the analytic Gaussian's
FLOOR_FRACTIONS = (0.01, 0.03, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


def machine() -> str:
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    node = f"{platform.node()} {platform.machine()} cpus={os.cpu_count()}"
    return f"{node} load(1,5,15 min)={load} python={platform.python_version()}"


def calibrate(n_users: int, dimension: int, repeats: int) -> tuple[SkellamVectorSum, list[float]]:
    times = []
    for _ in range(repeats):
        _chi_square.cache_clear()
        _component_tables.cache_clear()
        start = time.perf_counter()
        protocol = SkellamVectorSum.from_privacy(
            epsilon=EPSILON, delta=DELTA, n_users=n_users, dimension=dimension, norm_bound=1.0
        )
        times.append(time.perf_counter() - start)
    return protocol, times


def bbgn_bits(protocol: SkellamVectorSum) -> tuple[int, int]:
    """Share count and bits per coordinate with BBGN20's union bound alone for the same share distance (and with the tag)."""
    distance = protocol.share_distance
    sigma = math.log2(protocol.dimension / max(distance, 1e-300))
    shares = default_share_count(sigma, protocol.modulus, protocol.n_users)
    width = math.ceil(math.log2(protocol.modulus))
    return shares, shares * (width + math.ceil(math.log2(protocol.dimension)))


def worst_case_shares(protocol: SkellamVectorSum) -> int:
    """Least share count the worst-case chi-square bound (or BBGN20's) needs for the same distance at the same ``q``."""
    return least_share_count(protocol.share_distance, protocol.modulus, protocol.n_users, protocol.dimension)


def floor_bits(n_users: int, dimension: int, central: float) -> tuple[tuple, tuple]:
    """Fewest bits per coordinate over the scale grid and ``FLOOR_FRACTIONS``: with sd within ``SD_TARGET``, and at any sd.

    Each is ``(bits, sd ratio, share fraction, m, q)`` of the best candidate (fewest bits, then least sd).
    """
    common = {
        "n_users": n_users,
        "dimension": dimension,
        "norm_bound": 1.0,
        "delta": DELTA,
        "rejection_probability": 1e-6,
        "neighbouring": sk.Neighbouring.REPLACE_ONE,
        "label_rows": 0,
        "count_weight": 0.0,
    }
    scales = sorted({g * f for g in SCALE_GRID for f in (1.0, *REFINEMENT)})
    options = []
    for fraction in FLOOR_FRACTIONS:
        for variance, _, mu, modulus, distance in candidates(EPSILON, scales, (fraction,), 0.001, common):
            mass = share_value_mass(mu / n_users, modulus)
            shares = _least_shares(n_users, modulus, dimension, distance, mass, 2)
            if shares is not None:
                ratio = math.sqrt(variance) / central
                options.append((shares * math.ceil(math.log2(modulus)), ratio, fraction, shares, modulus))
    return min(option for option in options if option[1] <= SD_TARGET), min(options)


def show(option: tuple) -> str:
    bits, ratio, fraction, shares, modulus = option
    return f"{bits} ({ratio:.4f}, {fraction:g}, {shares}, {modulus:,})"


def streamed_error(protocol: SkellamVectorSum, chunk: int) -> tuple[float, float]:
    """Run in chunks of random unit vectors: empirical error sd and the process's peak memory (MiB)."""
    rng = np.random.default_rng(0)
    total = np.zeros(protocol.dimension)

    def chunks():
        nonlocal total
        for _ in range(protocol.n_users // chunk):
            x = rng.normal(size=(chunk, protocol.dimension))
            x /= np.linalg.norm(x, axis=1, keepdims=True)
            total += x.sum(axis=0)
            yield x

    estimate = protocol.run(chunks(), rng=1)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return float(np.std(estimate - total)), peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-large", action="store_true", help="skip the d = 65,536 streamed run")
    arguments = parser.parse_args()
    print(f"machine: {machine()} (shared machine: other jobs may be running)")
    print(f"command: {' '.join([sys.executable, *sys.argv])}")
    central = gaussian_sigma(EPSILON, DELTA, sensitivity=2.0)
    print(
        "n | d | scale | m | q | bits/coord | sd ratio | worst-case-bound m | BBGN20 m | BBGN20+tag bits/coord "
        f"| floor bits/coord at sd <= {SD_TARGET} (sd ratio, share part of delta, m, q) | floor at any sd "
        "| from_privacy s (median, min-max)"
    )
    for n_users, dimension in SETTINGS:
        protocol, times = calibrate(n_users, dimension, arguments.repeats)
        bits = protocol.bits_per_user() / dimension
        ratio = math.sqrt(protocol.variance()) / central
        bbgn_m, bbgn_tagged = bbgn_bits(protocol)
        floor, anywhere = floor_bits(n_users, dimension, central)
        print(
            f"{n_users:,} | {dimension:,} | {protocol.scale:.1f} | {protocol.n_shares} | {protocol.modulus:,} | {bits:.0f} | "
            f"{ratio:.4f} | {worst_case_shares(protocol)} | {bbgn_m} | {bbgn_tagged} | "
            f"{show(floor)} | {show(anywhere)} | "
            f"{np.median(times):.2f} ({min(times):.2f}-{max(times):.2f})"
        )
        if dimension > 10_000 and not arguments.skip_large:
            sd, peak = streamed_error(protocol, chunk=100)
            stated = math.sqrt(protocol.variance())
            print(f"    streamed run (chunks of 100 users): error sd {sd:.3f} (stated {stated:.3f}); peak RSS {peak:.0f} MiB")
    print(f"state after run: load(1,5,15 min)={', '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
