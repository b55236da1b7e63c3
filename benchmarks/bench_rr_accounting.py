"""Cost of RRBitSum's verified ("tight") accounting: the worst case over every neighbour k.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bench_rr_accounting.py [--sizes 20000 40000 100000 200000 1000000] [--before-up-to 200000]

"before" is the reference path that visits every k (`privsum.bitsum.exact.rr_worst_case_delta`,
and the previous calibration loop, re-created below from it); "after" is the branch and bound over
blocks of k in `privsum.bitsum.rr`. For each size, the flip probability is ``34 / n`` (about the
tight calibration at epsilon 1, delta 1e-6). Columns: the worst-case delta at one epsilon, the
verified epsilon of a directly built protocol (``.event``), and ``from_privacy(calibration="tight")``.
Peak memory is the process's maximum resident set size so far (``resource.getrusage``), so it
only grows from line to line; "before" runs are skipped above ``--before-up-to`` users.
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

from privsum.accounting.calibration import calibrate
from privsum.bitsum import rr
from privsum.bitsum.exact import rr_profile, rr_worst_case_delta


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def timed(function):
    start = time.perf_counter()
    value = function()
    return value, time.perf_counter() - start


def before_worst_delta(n: int, flip: float, epsilon: float) -> tuple[float, int]:
    worst, worst_k = rr_worst_case_delta(n, flip, epsilon, return_worst_k=True)
    return float(worst[0]), int(worst_k[0])


def before_verified_epsilon(n: int, flip: float, delta: float) -> float:
    """The previous `_verified_epsilon`: candidate neighbours, each round checked over every k."""
    candidates = {0}
    for _ in range(40):
        epsilon = max(rr_profile(n, flip, k).epsilon(delta) for k in candidates)
        worst, worst_k = before_worst_delta(n, flip, epsilon)
        if worst <= delta * (1 + 1e-9) or worst_k in candidates:
            return epsilon
        candidates.add(worst_k)
    return math.inf


def before_tight_flip(epsilon: float, delta: float, n: int) -> float:
    """The previous `_tight_flip_probability`: bisection on candidates, each round checked over every k."""
    local = 1.0 / (1.0 + math.exp(epsilon))
    candidates = {0}
    for _ in range(20):

        def delta_at(log_flip: float, ks: frozenset[int] = frozenset(candidates)) -> float:
            return max(float(rr_profile(n, math.exp(log_flip), k).delta(epsilon)) for k in ks)

        log_flip = calibrate(
            delta_at, target_delta=delta, lower=math.log(1e-12), upper=math.log(local), more_private="increasing"
        )
        flip = min(math.exp(log_flip), local)
        worst, worst_k = before_worst_delta(n, flip, epsilon)
        if worst <= delta * (1 + 1e-9):
            return flip
        candidates.add(worst_k)
    return math.nan


def paths(n: int, flip: float, args: argparse.Namespace) -> dict:
    """(before, after) callables of each measured quantity."""
    return {
        "worst delta": (
            lambda: before_worst_delta(n, flip, args.epsilon)[0],
            lambda: float(rr.rr_worst_case_delta_bound(n, flip, args.epsilon)[0]),
        ),
        "event epsilon": (
            lambda: before_verified_epsilon(n, flip, args.delta),
            lambda: rr.RRBitSum(n_users=n, flip_probability=flip, delta=args.delta).guarantee.epsilon,
        ),
        "from_privacy q": (
            lambda: before_tight_flip(args.epsilon, args.delta, n),
            lambda: rr.RRBitSum.from_privacy(epsilon=args.epsilon, delta=args.delta, n_users=n).flip_probability,
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 40_000, 100_000, 200_000, 1_000_000])
    parser.add_argument("--before-up-to", type=int, default=200_000)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-6)
    args = parser.parse_args()
    print(f"command: {' '.join([os.path.basename(sys.executable), *sys.argv])}")
    print(f"machine: {platform.node()} {platform.machine()} {platform.processor() or ''} cpus={os.cpu_count()}")
    print(f"python {platform.python_version()}, numpy {np.__version__}; epsilon={args.epsilon} delta={args.delta}")
    print(f"{'n':>9s} {'what':14s} {'before s':>9s} {'after s':>9s} {'before value':>14s} {'after value':>14s} {'peak MiB':>9s}")
    for n in args.sizes:
        flip = 34.0 / n
        run_before = n <= args.before_up_to
        rows = paths(n, flip, args)
        for what, (before, after) in rows.items():
            before_value, before_seconds = timed(before) if run_before else (math.nan, math.nan)
            rr._neighbour_counts.cache_clear()  # time the new path from a cold cache
            rr._binomial_window.cache_clear()
            after_value, after_seconds = timed(after)
            print(
                f"{n:9d} {what:14s} {before_seconds:9.2f} {after_seconds:9.3f} {before_value:14.8g} {after_value:14.8g} "
                f"{peak_mib():9.0f}"
            )


if __name__ == "__main__":
    main()
