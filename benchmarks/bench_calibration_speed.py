"""Issue-18 calibration and accounting speed targets, each measured in one run (median and spread).

Usage (from the repository root)::

    PYTHONPATH=.:benchmarks python benchmarks/bench_calibration_speed.py [--repeats 3] [--only rr 3nb]
        [--rr-sizes 560000 10000000 1000000000] [--baseline DIR]

Prints one JSON line per measurement with the machine, its load average, the command, the
median and the spread (min, max) of the repeats:

* ``rr``: ``ShuffledKDE.from_privacy(family=RandomFourierFeatures(dimension=768,
  n_repetitions=768, seed=0), protocol="rr", epsilon=2, delta=1e-6, n_users=40_000)`` with every
  cache cleared before each repeat (calibration cache, RR pair cache, composed-guarantee cache),
  against one ``40,000 x 768 x 768`` float64 matmul measured in the same process (target: at most
  1 s and at most the matmul); and ``RRBitSum(n_users=n, flip_probability=0.25, delta=1e-8)``'s
  ``guarantee`` and ``event`` (the worst-case profile) at each ``--rr-sizes`` value, caches
  cleared (target: at most 1 s each).
* ``--baseline DIR``: the same RR calibration with the privsum found in ``DIR`` (an older
  checkout, e.g. ``git archive <commit> privsum | tar -x -C DIR``), timed in a child process
  in the same run, and the speed-up.
* ``3nb``: the same ``ShuffledKDE.from_privacy`` with ``protocol="3nb"``, every cache cleared
  before each repeat (calibration cache, truncated negative-binomial pmfs, composed-guarantee
  cache), against the same in-process matmul (target: at most 1 s and at most the matmul); and
  ``ThreeNBBitSum.from_privacy(epsilon=e, delta=1e-6, n_users=1000)`` at ``e = 0.01`` and
  ``e = 1e-6`` (which must finish fast or be refused with a clear error); and the calibrated
  KDE's guarantee with 36,000 of its 40,000 users (bit-sum event and composed guarantee).

The machine this runs on may be shared with other work: the load average is printed with every
line, and ratios are of numbers measured in the same run.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
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
    """Every in-memory cache the RR and 3NB calibrations and the KDE's composition use."""
    from privsum.accounting import budget
    from privsum.accounting.cache import clear_calibration_cache
    from privsum.bitsum import _3nb_calibration as noise
    from privsum.bitsum import _rr_accounting as rr
    from privsum.bitsum import _rr_pairs as rr_pairs
    from privsum.bitsum import exact

    clear_calibration_cache()
    rr_pairs.clear_caches()
    rr._regular_samples.cache_clear()
    exact._NB_CACHE.cache_clear()
    noise.calibrated_parameters.cache_clear()
    budget.composed_guarantee.cache_clear()


def matmul_seconds(repeats: int) -> list[float]:
    rng = np.random.default_rng(0)
    points = rng.standard_normal((40_000, 768))
    frequencies = rng.standard_normal((768, 768))
    return timings(lambda: points @ frequencies, repeats)


def kde_calibration(protocol: str, repeats: int) -> tuple[list[float], list[float], object]:
    """Uncached ``ShuffledKDE.from_privacy`` at the paper setting and the matmul, timed in this process."""
    from privsum.kde import ShuffledKDE
    from privsum.lsq import RandomFourierFeatures

    family = RandomFourierFeatures(dimension=768, n_repetitions=768, seed=0)
    result = {}

    def calibrate() -> None:
        result["kde"] = ShuffledKDE.from_privacy(family=family, protocol=protocol, epsilon=2.0, delta=1e-6, n_users=40_000)

    matmul = matmul_seconds(repeats)
    calibration = timings(calibrate, repeats, clear_caches)
    return calibration, matmul, result["kde"]


def bench_rr_kde(repeats: int) -> None:
    calibration, matmul, kde = kde_calibration("rr", repeats)
    emit(
        "ShuffledKDE.from_privacy RR I=768 eps=2 delta=1e-6 n=40000, uncached",
        calibration=summary(calibration),
        matmul_40000x768x768=summary(matmul),
        ratio_to_matmul=round(statistics.median(calibration) / statistics.median(matmul), 3),
        flip_probability=kde.bitsum.flip_probability,
        epsilon=kde.guarantee.epsilon,
        goal="<= 1 s and <= 1 matmul",
    )


_BASELINE_SNIPPET = """
import json, sys, time
from privsum.kde import ShuffledKDE
from privsum.lsq import RandomFourierFeatures
family = RandomFourierFeatures(dimension=768, n_repetitions=768, seed=0)
start = time.perf_counter()
kde = ShuffledKDE.from_privacy(family=family, protocol="rr", epsilon=2.0, delta=1e-6, n_users=40_000)
print(json.dumps([time.perf_counter() - start, kde.bitsum.flip_probability]))
"""


def bench_rr_baseline(repeats: int, baseline: str) -> None:
    """The same uncached calibration with an older privsum, each repeat in a fresh child process."""

    def child(directory: str) -> list[float]:
        # run inside `directory`: `python -c` puts the working directory first on sys.path
        env = {**os.environ, "PYTHONPATH": directory}
        output = subprocess.run(
            [sys.executable, "-c", _BASELINE_SNIPPET], cwd=directory, env=env, check=True, capture_output=True, text=True
        )
        return json.loads(output.stdout.strip().splitlines()[-1])

    runs = [child(os.path.abspath(baseline)) for _ in range(repeats)]
    mine = [child(os.getcwd()) for _ in range(repeats)]
    before, after = [run[0] for run in runs], [run[0] for run in mine]
    emit(
        "ShuffledKDE.from_privacy RR I=768, fresh processes: baseline privsum against this one",
        baseline_dir=baseline,
        baseline=summary(before),
        this=summary(after),
        speedup=round(statistics.median(before) / statistics.median(after), 2),
        baseline_flip_probability=runs[0][1],
        flip_probability=mine[0][1],
    )


def bench_3nb_kde(repeats: int) -> object:
    calibration, matmul, kde = kde_calibration("3nb", repeats)
    emit(
        "ShuffledKDE.from_privacy 3NB I=768 eps=2 delta=1e-6 n=40000, uncached",
        calibration=summary(calibration),
        matmul_40000x768x768=summary(matmul),
        ratio_to_matmul=round(statistics.median(calibration) / statistics.median(matmul), 3),
        noise_ratio=kde.bitsum.noise_ratio,
        instance_epsilon=kde.bitsum.guarantee.epsilon,
        epsilon=kde.guarantee.epsilon,
        goal="<= 1 s and <= 1 matmul",
    )
    return kde


def bench_3nb_dropout(repeats: int, kde: object) -> None:
    """The calibrated KDE's guarantee with 36,000 of its 40,000 users (a dominating pair; the exact grid is infeasible)."""
    bitsum = kde.bitsum
    event = timings(lambda: bitsum._event_for_fewer(36_000), repeats)
    composed = timings(lambda: kde.guarantee_for_participants(36_000), repeats, clear_caches)
    emit(
        "ShuffledKDE 3NB I=768 n=40000: guarantee with 36,000 participants, uncached",
        bitsum_event=summary(event),
        kde_guarantee=summary(composed),
        instance_epsilon=bitsum.event_for_participants(36_000).guarantee.epsilon,
        epsilon=kde.guarantee_for_participants(36_000).epsilon,
        goal="fast (an upper bound on the guarantee)",
    )


def bench_3nb_small_epsilon(repeats: int) -> None:
    from privsum.bitsum import ThreeNBBitSum
    from privsum.exceptions import InvalidParameterError

    def calibrate(epsilon: float, outcome: dict) -> None:
        try:
            protocol = ThreeNBBitSum.from_privacy(epsilon=epsilon, delta=1e-6, n_users=1000)
            outcome["result"] = f"noise_ratio={protocol.noise_ratio}"
        except InvalidParameterError as error:
            outcome["result"] = f"refused: {error}"

    for epsilon in (0.01, 1e-6):
        outcome: dict = {}
        emit(
            f"ThreeNBBitSum.from_privacy(epsilon={epsilon}, delta=1e-6, n_users=1000), uncached",
            calibration=summary(timings(functools.partial(calibrate, epsilon, outcome), repeats, clear_caches)),
            result=outcome["result"],
            goal="fast, or refused with a clear error",
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
    parser.add_argument("--baseline", help="a directory holding an older privsum package to compare with")
    args = parser.parse_args()
    if "rr" in args.only:
        bench_rr_kde(args.repeats)
        if args.baseline:
            bench_rr_baseline(args.repeats, args.baseline)
        bench_rr_guarantee(args.repeats, args.rr_sizes)
    if "3nb" in args.only:
        kde = bench_3nb_kde(args.repeats)
        bench_3nb_dropout(args.repeats, kde)
        bench_3nb_small_epsilon(args.repeats)


if __name__ == "__main__":
    main()
