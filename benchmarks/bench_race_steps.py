"""Where a RACE update spends its time: each step of one chunk, in nanoseconds per hash code.

Usage (from the repository root)::

    PYTHONPATH=.:benchmarks python benchmarks/bench_race_steps.py [--dimension 64] [--rows 100] [--width 1024]
        [--chunk 10485] [--repeats 7]

One chunk of ``n`` standard normal points (the default ``RACE.update`` chunk at 100 rows) is
hashed and counted ``repeats`` times; each step reports its best time over ``n R`` codes. Steps:
validation (``check_points``), the float64 projection alone (a ``R x d`` by ``d x n`` matmul: the
benchmark limit's operation), the whole hashing into counter indices (projection + bucketing
passes), counting (``np.add.at`` on the flat counters) and the whole update of that chunk. The
bucketing passes are the hashing minus the projection. Not a test: the numbers depend on the machine.
"""

from __future__ import annotations

import argparse

import numpy as np
from bench_scale_common import best_time, matmul_gflops, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dimension", type=int, default=64)
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--chunk", type=int, default=10485)
    parser.add_argument("--repeats", type=int, default=7)
    arguments = parser.parse_args()
    from privsum.lsq import L2LSH
    from privsum.sketches import RACE

    d, rows, n = arguments.dimension, arguments.rows, arguments.chunk
    family = L2LSH(dimension=d, n_repetitions=rows, bucket_width=4.0, n_buckets=arguments.width, seed=0)
    points = np.random.default_rng(1).standard_normal((n, d))
    indices = np.empty((rows, n), dtype=np.int64)
    counters = np.zeros(rows * arguments.width, dtype=np.int64)
    steps = {
        "validation": lambda: family.check_points(points),
        "projection_matmul": lambda: np.matmul(family.directions, points.T, out=indices.view(np.float64)),
        "hashing_to_counter_indices": lambda: family._counter_indices_into(points, indices),
        "counting_add_at": lambda: np.add.at(counters, indices.ravel(), 1),
        "whole_update": lambda: RACE(family).update(points, chunk_size=n),
    }
    codes = n * rows
    nanoseconds = {name: best_time(step, arguments.repeats) / codes * 1e9 for name, step in steps.items()}
    nanoseconds["bucketing_passes"] = nanoseconds["hashing_to_counter_indices"] - nanoseconds["projection_matmul"]
    limit = matmul_gflops(min(n, 10_000), d, rows)
    report(
        {
            "dimension": d,
            "rows": rows,
            "width": arguments.width,
            "chunk": n,
            "ns_per_code": {name: round(value, 3) for name, value in nanoseconds.items()},
            "limit_matmul_gflops": round(limit, 2),
            "limit_ns_per_code": round(2.0 * d / limit, 3),
            "whole_update_over_limit": round(2.0 * d / limit / nanoseconds["whole_update"], 3),
        }
    )


if __name__ == "__main__":
    main()
