"""The shuffled-DP KDE streamed at scale: 560,000 users x 768 instances (DBPedia scale) and 10^7 users x 128.

Usage (from the repository root)::

    PYTHONPATH=.:benchmarks python benchmarks/bench_scale_kde.py [--runs 560000:768 10000000:128] [--dimension 768]
        [--chunk 4096] [--precision float64]

Random Fourier features of ``d = 768``-dimensional unit-norm points (one pool of ``chunk``
random points cycled, so data generation stays out of the timing), ``I`` repetitions (``I``
instances: one coordinate each), 3NB bit sums (its exact profile does not depend on ``n``; RR's
verified accounting is an ``O(n)`` search per epsilon, minutes at ``n = 2 * 10^5``); users are streamed through
``ShuffledKDE.run(iterator_of_chunks)``. The dominant step is the ``n d I`` projection (a float64
matmul), then ``cos`` and one uniform draw per entry; the limit is this machine's matmul GFLOP/s
at the chunk's shape, and the ratio is the protocol's whole-run ``2 n d I / time`` against it (so
every other step counts against the ratio). Each run is a fresh subprocess (its own peak memory).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

import numpy as np
from bench_scale_common import matmul_gflops, peak_mib, report, uniform_draws_per_second


def unit_chunks(n_users: int, dimension: int, chunk: int, seed: int):
    pool = np.random.default_rng(seed).standard_normal((chunk, dimension))
    pool /= np.linalg.norm(pool, axis=1, keepdims=True)
    for start in range(0, n_users, chunk):
        yield pool[: min(chunk, n_users - start)]


def one_run(n_users: int, instances: int, dimension: int, chunk: int, precision: str) -> dict:
    from privsum.bitsum import ThreeNBBitSum
    from privsum.kde import ShuffledKDE
    from privsum.lsq import RandomFourierFeatures

    family = RandomFourierFeatures(dimension=dimension, n_repetitions=instances, seed=0)
    # fixed 3NB parameters (running time does not depend on them; calibration is timed elsewhere)
    bitsum = ThreeNBBitSum(n_users=n_users, noise_ratio=0.45, flooding_shape=45.0, flooding_ratio=0.96, delta=1e-8)
    kde = ShuffledKDE(family=family, bitsum=bitsum, delta=1e-6, accounting="seed", chunk_size=chunk, precision=precision)
    accounting_start = time.perf_counter()
    guarantee = kde.guarantee  # computed once, before the timed run
    accounting = time.perf_counter() - accounting_start
    start = time.perf_counter()
    released = kde.run(unit_chunks(n_users, dimension, chunk, seed=1), rng=2)
    elapsed = time.perf_counter() - start
    limit = matmul_gflops(chunk, dimension, instances)
    achieved = 2.0 * n_users * dimension * instances / elapsed / 1e9
    return {
        "users": n_users,
        "instances": instances,
        "dimension": dimension,
        "chunk": chunk,
        "precision": precision,
        "wall_s": round(elapsed, 2),
        "peak_mib": round(peak_mib(), 1),
        "released_users": released.n_users,
        "guarantee": str(guarantee),
        "accounting_s": round(accounting, 2),
        "dominant_step": "n*d*I projection (float64 matmul), then cos and one uniform per entry",
        "achieved_gflops_whole_run": round(achieved, 2),
        "limit_matmul_gflops": round(limit, 2),
        "achieved_over_limit": round(achieved / limit, 3),
        "uniform_draws_per_s_limit": round(uniform_draws_per_second()),
        "entries_per_s": round(n_users * instances / elapsed),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", nargs="+", default=["560000:768", "10000000:128"], help="users:instances")
    parser.add_argument("--dimension", type=int, default=768)
    parser.add_argument("--chunk", type=int, default=4096)
    parser.add_argument("--precision", choices=["float64", "float32", "exact"], default="float64")
    parser.add_argument("--one", metavar="USERS:INSTANCES", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.one:
        users, instances = (int(v) for v in arguments.one.split(":"))
        report(one_run(users, instances, arguments.dimension, arguments.chunk, arguments.precision))
        return
    for spec in arguments.runs:
        command = [sys.executable, __file__, "--one", spec, "--dimension", str(arguments.dimension)]
        command += ["--chunk", str(arguments.chunk), "--precision", arguments.precision]
        print(subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip(), flush=True)


if __name__ == "__main__":
    main()
