"""Streamed bit sums at scale: RR and 3NB over 10^7 users x 100 instances, chunk by chunk.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bench_scale_bitsum.py [--users 10000000] [--instances 100] [--chunk 100000]
        [--protocols rr 3nb] [--paths fast faithful]

Users' bits are drawn chunk by chunk (a fraction 0.3 of ones) and streamed into
``protocol.run(iterator_of_chunks)``: memory is bounded by one chunk. Data generation is timed
separately and excluded from the protocol's time. Dominant steps and the limits they are compared
with (measured on this machine, in the same process):

* ``fast`` path: one validation and one column sum over the ``n x I`` bits per chunk (the exact
  sampler then draws ``O(I)`` variables); limit = one int8 column-sum pass (``bits.sum(axis=0)``).
* ``faithful`` path: every user's randomizer -- RR: one uniform draw per entry; 3NB: three
  negative binomial draws per entry -- then counting. Limit for RR = numpy's uniform draws per
  second; for 3NB = numpy's ``negative_binomial`` draws per second (three per entry).

Each configuration runs in a fresh subprocess so that its peak memory is its own.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import numpy as np
from bench_scale_common import best_time, column_sum_entries_per_second, peak_mib, report, uniform_draws_per_second


def _protocol(name: str, n_users: int):
    from privsum.bitsum import RRBitSum, ThreeNBBitSum

    if name == "rr":  # a fixed flip probability: the running time does not depend on it
        return RRBitSum(n_users=n_users, flip_probability=0.05, delta=1e-6)
    return ThreeNBBitSum(n_users=n_users, noise_ratio=0.45, flooding_shape=45.0, flooding_ratio=0.96, delta=1e-6)


def _nb_draws_per_second(shape: float, ratio: float, size: int = 2_000_000) -> float:
    generator = np.random.default_rng(0)
    return size / best_time(lambda: generator.negative_binomial(shape, 1 - ratio, size=size))


def one_run(name: str, path: str, n_users: int, n_instances: int, chunk: int) -> dict:
    protocol = _protocol(name, n_users)
    generator = np.random.default_rng(1)
    generation = [0.0]

    def chunks():
        for start in range(0, n_users, chunk):
            began = time.perf_counter()
            bits = (generator.random((min(chunk, n_users - start), n_instances)) < 0.3).astype(np.int8)
            generation[0] += time.perf_counter() - began
            yield bits

    start = time.perf_counter()
    estimate = protocol.run(chunks(), rng=2, path=path)
    elapsed = time.perf_counter() - start
    protocol_time = elapsed - generation[0]
    entries = n_users * n_instances
    if path == "fast":
        limit = column_sum_entries_per_second(chunk, n_instances)
        step = "validate + column-sum of int8 bits (limit: one column-sum pass)"
    elif name == "rr":
        limit = uniform_draws_per_second()
        step = "one uniform draw per entry + counting (limit: numpy uniform draws)"
    else:
        per_user = protocol.noise_shape / n_users
        limit = _nb_draws_per_second(per_user, protocol.noise_ratio) / 3
        step = "three NB draws per entry + counting (limit: numpy NB draws / 3)"
    achieved = entries / protocol_time
    return {
        "protocol": name,
        "path": path,
        "users": n_users,
        "instances": n_instances,
        "chunk": chunk,
        "wall_s": round(elapsed, 2),
        "data_generation_s": round(generation[0], 2),
        "protocol_s": round(protocol_time, 2),
        "peak_mib": round(peak_mib(), 1),
        "dominant_step": step,
        "achieved_entries_per_s": round(achieved),
        "limit_entries_per_s": round(limit),
        "achieved_over_limit": round(achieved / limit, 3),
        "mean_relative_error": float(np.mean(np.abs(estimate - 0.3 * n_users)) / (0.3 * n_users)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=10_000_000)
    parser.add_argument("--instances", type=int, default=100)
    parser.add_argument("--chunk", type=int, default=100_000)
    parser.add_argument("--protocols", nargs="+", choices=["rr", "3nb"], default=["rr", "3nb"])
    parser.add_argument("--paths", nargs="+", choices=["fast", "faithful"], default=["fast", "faithful"])
    parser.add_argument("--one", nargs=2, metavar=("PROTOCOL", "PATH"), help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.one:
        result = one_run(*arguments.one, arguments.users, arguments.instances, arguments.chunk)
        report(result)
        return
    for name in arguments.protocols:
        for path in arguments.paths:
            command = [sys.executable, __file__, "--one", name, path, "--users", str(arguments.users)]
            command += ["--instances", str(arguments.instances), "--chunk", str(arguments.chunk)]
            output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            print(output.strip(), flush=True)
            json.loads(output.strip().splitlines()[-1])  # fail loudly on a malformed line


if __name__ == "__main__":
    main()
