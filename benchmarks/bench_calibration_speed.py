"""Issue-18 calibration and accounting speed targets, each measured in one run (median and spread).

Usage (from the repository root)::

    PYTHONPATH=.:benchmarks python benchmarks/bench_calibration_speed.py [--repeats 3] [--only rr 3nb]
        [--rr-sizes 560000 10000000 1000000000]

Prints one JSON line per measurement with the machine, its load average, the command, the
median and the spread (min, max) of the repeats:

* ``rr``: ``ShuffledKDE.from_privacy(family=RandomFourierFeatures(dimension=768,
  n_repetitions=768, seed=0), protocol="rr", epsilon=2, delta=1e-6, n_users=40_000)`` with every
  cache cleared before each repeat (calibration cache, RR pair cache, composed-guarantee cache),
  against one ``40,000 x 768 x 768`` float64 matmul measured in the same process (target: at most
  1 s and at most the matmul); and ``RRBitSum(n_users=n, flip_probability=0.25, delta=1e-8)``'s
  ``guarantee`` and ``event`` (the worst-case profile) at each ``--rr-sizes`` value, caches
  cleared (target: at most 1 s each).
* ``3nb``: reserved for the 3NB part.

The machine this runs on may be shared with other work: the load average is printed with every
line, and ratios are of numbers measured in the same run.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import time
from collections.abc import Callable

import numpy as np
from bench_scale_common import report

TARGETS = ("rr", "3nb")


def timings(operation: Callable[[], object], repeats: int, before: Callable[[], None] = lambda: None) -> list[float]:
    values = []
    for _ in range(repeats):
        before()
        start = time.perf_counter()
        operation()
        values.append(time.perf_counter() - start)
    return values


def summary(values: list[float]) -> dict:
    return {"median_s": round(statistics.median(values), 4), "spread_s": [round(min(values), 4), round(max(values), 4)]}


def emit(target: str, **fields: object) -> None:
    report({"target": target, "load_average": [round(v, 2) for v in os.getloadavg()], **fields})


def clear_caches() -> None:
    """Every in-memory cache the RR calibration and the KDE's composition use."""
    from privsum.accounting.cache import clear_calibration_cache
    from privsum.bitsum import rr
    from privsum.kde import protocol

    clear_calibration_cache()
    rr._neighbour_counts.cache_clear()
    protocol._composed_guarantee.cache_clear()


def matmul_seconds(repeats: int) -> list[float]:
    rng = np.random.default_rng(0)
    points = rng.standard_normal((40_000, 768))
    frequencies = rng.standard_normal((768, 768))
    return timings(lambda: points @ frequencies, repeats)


def bench_rr_kde(repeats: int) -> None:
    from privsum.kde import ShuffledKDE
    from privsum.lsq import RandomFourierFeatures

    family = RandomFourierFeatures(dimension=768, n_repetitions=768, seed=0)
    result = {}

    def calibrate() -> None:
        result["kde"] = ShuffledKDE.from_privacy(family=family, protocol="rr", epsilon=2.0, delta=1e-6, n_users=40_000)

    matmul = matmul_seconds(repeats)
    calibration = timings(calibrate, repeats, clear_caches)
    emit(
        "ShuffledKDE.from_privacy RR I=768 eps=2 delta=1e-6 n=40000, uncached",
        calibration=summary(calibration),
        matmul_40000x768x768=summary(matmul),
        ratio_to_matmul=round(statistics.median(calibration) / statistics.median(matmul), 3),
        flip_probability=result["kde"].bitsum.flip_probability,
        epsilon=result["kde"].guarantee.epsilon,
        goal="<= 1 s and <= 1 matmul",
    )


def bench_rr_guarantee(repeats: int, sizes: list[int]) -> None:
    from privsum.bitsum import RRBitSum

    for n_users in sizes:
        protocol = functools.partial(RRBitSum, n_users=n_users, flip_probability=0.25, delta=1e-8)
        guarantee = timings(lambda make=protocol: make().guarantee, repeats, clear_caches)
        event = timings(lambda make=protocol: make().event, repeats, clear_caches)
        emit(
            f"RRBitSum(n_users={n_users}, flip_probability=0.25, delta=1e-8), uncached",
            guarantee=summary(guarantee),
            event=summary(event),
            epsilon=protocol().guarantee.epsilon,
            goal="<= 1 s each",
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", nargs="+", choices=TARGETS, default=list(TARGETS))
    parser.add_argument("--rr-sizes", nargs="+", type=int, default=[560_000])
    args = parser.parse_args()
    if "rr" in args.only:
        bench_rr_kde(args.repeats)
        bench_rr_guarantee(args.repeats, args.rr_sizes)
    if "3nb" in args.only:
        emit("3NB", note="not measured here yet")


if __name__ == "__main__":
    main()
