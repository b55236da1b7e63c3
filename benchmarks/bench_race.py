"""Benchmark RACE: update (points/s), query (queries/s), release time, peak memory.

Usage:
    PYTHONPATH=. python benchmarks/bench_race.py [--points 1000000] [--dimension 64] [--rows 100 1000]
        [--width 1024] [--queries 10000] [--family l2|srp] [--opendp-release]

Points arrive in blocks of ``--block`` (a stream); only `RACE.update` calls are timed. Peak
memory is the process's maximum resident set size (``resource.getrusage``), cumulative over
the run, so later rows include earlier ones.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import time

import numpy as np

from privsum.lsq import L2LSH, SignedRandomProjection
from privsum.sketches import RACE


def peak_memory_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # ru_maxrss is KiB on Linux


def machine() -> str:
    cpu = f"{platform.machine()} {platform.processor() or ''}".strip()
    return f"{platform.node()} {cpu} cpus={os.cpu_count()} python={platform.python_version()} numpy={np.__version__}"


def build_family(kind: str, dimension: int, rows: int, width: int):
    if kind == "srp":
        return SignedRandomProjection(dimension=dimension, n_repetitions=rows, n_bits=int(np.log2(width)), seed=1)
    return L2LSH(dimension=dimension, n_repetitions=rows, bucket_width=4.0, n_buckets=width, seed=1)


def run(arguments: argparse.Namespace) -> None:
    print(f"machine: {machine()}")
    print(f"command: {' '.join([sys.executable, *sys.argv])}")
    print(f"sizes: points={arguments.points} d={arguments.dimension} width={arguments.width} family={arguments.family}")
    header = f"{'rows':>6} {'update s':>9} {'points/s':>11} {'query s':>8} {'queries/s':>10} {'release s':>10} {'peak MiB':>9}"
    print(header)
    for rows in arguments.rows:
        family = build_family(arguments.family, arguments.dimension, rows, arguments.width)
        sketch = RACE(family)
        data_rng = np.random.default_rng(0)
        elapsed = 0.0
        for start in range(0, arguments.points, arguments.block):
            block = data_rng.normal(size=(min(arguments.block, arguments.points - start), arguments.dimension))
            began = time.perf_counter()
            sketch.update(block)
            elapsed += time.perf_counter() - began
        queries = data_rng.normal(size=(arguments.queries, arguments.dimension))
        began = time.perf_counter()
        sketch.estimate(queries)
        query_time = time.perf_counter() - began
        began = time.perf_counter()
        sampler = "opendp" if arguments.opendp_release else "numpy"
        sketch.release(1.0, noise_source=sampler, rng=None if sampler == "opendp" else 0)
        release_time = time.perf_counter() - began
        print(
            f"{rows:>6} {elapsed:>9.2f} {arguments.points / elapsed:>11.3g} {query_time:>8.3f} "
            f"{arguments.queries / query_time:>10.3g} {release_time:>10.3f} {peak_memory_mib():>9.0f}"
        )
    print(f"release sampler: {'opendp (exact)' if arguments.opendp_release else 'numpy'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, default=1_000_000)
    parser.add_argument("--dimension", type=int, default=64)
    parser.add_argument("--rows", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--block", type=int, default=100_000)
    parser.add_argument("--family", choices=["l2", "srp"], default="l2")
    parser.add_argument("--opendp-release", action="store_true", help="time the release with OpenDP's exact sampler")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
