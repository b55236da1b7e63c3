"""A distributed bit sum on a local Dask cluster of 4 worker processes, against the local streamed run.

Usage (from the repository root)::

    PYTHONPATH=.:benchmarks python benchmarks/bench_scale_dask.py [--users 10000000] [--instances 100] [--chunk 250000]
        [--workers 4] [--protocol 3nb]

The users' bits are a lazy Dask array generated on the workers (``da.random``), one block per
chunk; `privsum.distributed.run` randomizes each block on a worker (its own ``SeedSequence.spawn``
stream), reduces the histograms by a tree of additions and analyzes on the driver. The local
baseline streams the same sizes in one process. Peak memory is reported for the driver process
(workers are separate processes). The dominant step is generating and summing the bits; the limit
is one int8 column-sum pass, times the number of cores.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from bench_scale_common import column_sum_entries_per_second, peak_mib, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=10_000_000)
    parser.add_argument("--instances", type=int, default=100)
    parser.add_argument("--chunk", type=int, default=250_000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--protocol", choices=["rr", "3nb"], default="3nb")
    arguments = parser.parse_args()
    import dask.array as da
    import distributed

    from privsum import distributed as privsum_distributed
    from privsum.bitsum import RRBitSum, ThreeNBBitSum

    n, instances = arguments.users, arguments.instances
    if arguments.protocol == "rr":
        protocol = RRBitSum(n_users=n, flip_probability=0.05, delta=1e-6)
    else:
        protocol = ThreeNBBitSum(n_users=n, noise_ratio=0.45, flooding_shape=45.0, flooding_ratio=0.96, delta=1e-6)
    cluster = distributed.LocalCluster(
        n_workers=arguments.workers, processes=True, threads_per_worker=1, dashboard_address=None, memory_limit="4GiB"
    )
    with distributed.Client(cluster) as client:
        bits = (da.random.default_rng(1).random((n, instances), chunks=(arguments.chunk, instances)) < 0.3).astype(np.int8)
        start = time.perf_counter()
        estimate = privsum_distributed.run(protocol, bits, rng=2, client=client)
        dask_time = time.perf_counter() - start
    cluster.close()

    generator = np.random.default_rng(3)

    def chunks():
        for begin in range(0, n, arguments.chunk):
            yield (generator.random((min(arguments.chunk, n - begin), instances)) < 0.3).astype(np.int8)

    start = time.perf_counter()
    local = protocol.run(chunks(), rng=4)
    local_time = time.perf_counter() - start
    limit = column_sum_entries_per_second(arguments.chunk, instances) * (os.cpu_count() or 1)
    report(
        {
            "protocol": arguments.protocol,
            "users": n,
            "instances": instances,
            "chunk": arguments.chunk,
            "workers": arguments.workers,
            "dask_wall_s": round(dask_time, 2),
            "local_streamed_wall_s": round(local_time, 2),
            "driver_peak_mib": round(peak_mib(), 1),
            "dask_mean_relative_error": float(np.mean(np.abs(estimate - 0.3 * n)) / (0.3 * n)),
            "local_mean_relative_error": float(np.mean(np.abs(local - 0.3 * n)) / (0.3 * n)),
            "dominant_step": "generate + validate + column-sum the bits (limit: int8 column-sum pass x cores)",
            "dask_entries_per_s": round(n * instances / dask_time),
            "limit_entries_per_s": round(limit),
            "achieved_over_limit": round(n * instances / dask_time / limit, 3),
        }
    )


if __name__ == "__main__":
    main()
