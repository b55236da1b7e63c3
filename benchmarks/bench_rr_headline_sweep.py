"""Issue-18 target "any RRBitSum.guarantee up to n = 10^9 in at most 1 s", over the flip probability.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bench_rr_headline_sweep.py [--repeats 3] [--sizes 1e4 1e6 1e7 1e8 1e9]
        [--points 22]

For each crowd size, times ``RRBitSum(n_users=n, flip_probability=q, delta=1e-8).guarantee`` at
``--points`` flip probabilities log-spaced from 1e-7 to 0.49, every RR cache cleared before each
timing. Prints one JSON line per size with the machine, its load average, the command, and the
slowest flip probabilities (median over the repeats, with the spread), so that "any q" is read
off the largest median.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

from privsum.bitsum import RRBitSum, _rr_pairs


def _time_guarantee(n_users: int, flip: float) -> tuple[float, float]:
    _rr_pairs.clear_caches()
    start = time.perf_counter()
    epsilon = RRBitSum(n_users=n_users, flip_probability=flip, delta=1e-8).guarantee.epsilon
    return time.perf_counter() - start, epsilon


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e4, 1e6, 1e7, 1e8, 1e9])
    parser.add_argument("--points", type=int, default=22)
    args = parser.parse_args()
    flips = np.geomspace(1e-7, 0.49, args.points)
    for size in args.sizes:
        n_users = int(size)
        times = {float(q): [] for q in flips}
        for _ in range(args.repeats):
            for q in flips:
                times[float(q)].append(_time_guarantee(n_users, float(q))[0])
        medians = sorted(((statistics.median(ts), q, min(ts), max(ts)) for q, ts in times.items()), reverse=True)
        print(
            json.dumps(
                {
                    "benchmark": "rr_guarantee_over_q",
                    "n_users": n_users,
                    "slowest": [
                        {"flip": f"{q:.3g}", "median_s": round(m, 3), "min_s": round(lo, 3), "max_s": round(hi, 3)}
                        for m, q, lo, hi in medians[:3]
                    ],
                    "machine": platform.processor() or platform.machine(),
                    "load_average": os.getloadavg(),
                    "command": " ".join(["python", *sys.argv]),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
