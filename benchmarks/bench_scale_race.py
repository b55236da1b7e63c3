"""RACE at scale: 10^7 points streamed into a sketch (``RACE.update`` on an iterator of chunks).

Usage (from the repository root)::

    PYTHONPATH=.:benchmarks python benchmarks/bench_scale_race.py [--points 10000000] [--dimension 64] [--rows 100]
        [--width 1024] [--chunk 100000]

Points are drawn chunk by chunk (generation timed apart and excluded). The dominant step is
hashing, a ``n d R`` projection (float64 matmul) then bucketing; the limit is this machine's matmul
GFLOP/s at the chunk's shape, and the ratio is ``2 n d R / protocol time`` against it.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from bench_scale_common import matmul_gflops, peak_mib, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=10_000_000)
    parser.add_argument("--dimension", type=int, default=64)
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--chunk", type=int, default=100_000)
    arguments = parser.parse_args()
    from privsum.lsq import L2LSH
    from privsum.sketches import RACE

    n, d, rows = arguments.points, arguments.dimension, arguments.rows
    family = L2LSH(dimension=d, n_repetitions=rows, bucket_width=4.0, n_buckets=arguments.width, seed=0)
    generator = np.random.default_rng(1)
    generation = [0.0]

    def chunks():
        for start in range(0, n, arguments.chunk):
            began = time.perf_counter()
            points = generator.standard_normal((min(arguments.chunk, n - start), d))
            generation[0] += time.perf_counter() - began
            yield points

    start = time.perf_counter()
    sketch = RACE(family).update(chunks())
    elapsed = time.perf_counter() - start
    sketch_time = elapsed - generation[0]
    released = sketch.release(1.0, noise_source="numpy", rng=0)
    limit = matmul_gflops(min(arguments.chunk, 10_000), d, rows)
    achieved = 2.0 * n * d * rows / sketch_time / 1e9
    report(
        {
            "points": n,
            "dimension": d,
            "rows": rows,
            "width": arguments.width,
            "chunk": arguments.chunk,
            "wall_s": round(elapsed, 2),
            "data_generation_s": round(generation[0], 2),
            "sketch_s": round(sketch_time, 2),
            "peak_mib": round(peak_mib(), 1),
            "n_updates": sketch.n_updates,
            "released_point_count": round(released.point_count),
            "dominant_step": "n*d*R hashing projection (float64 matmul) + bucketing",
            "achieved_gflops": round(achieved, 2),
            "limit_matmul_gflops": round(limit, 2),
            "achieved_over_limit": round(achieved / limit, 3),
            "points_per_s": round(n / sketch_time),
        }
    )


if __name__ == "__main__":
    main()
