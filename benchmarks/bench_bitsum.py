"""Throughput of the bit-sum protocols: user-instances per second on the fast and faithful paths.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bench_bitsum.py [--users 1000000] [--instances 100] [--chunk 100000]

The faithful path materialises, shuffles and counts every message, chunked over users to bound
memory (histograms of disjoint user groups merge by addition); the fast path samples the
analyzer's histogram directly. Peak memory is the process's maximum resident set size so far
(``resource.getrusage``), so it only grows from line to line.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import time
import warnings

import numpy as np

from privsum.bitsum import CentralGaussianBitSum, LocalRRBitSum, PureBitSum, RRBitSum, ThreeNBBitSum
from privsum.exceptions import PrivacyLeakWarning


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def faithful_view(protocol, bits: np.ndarray, chunk: int, rng: np.random.Generator):
    total = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)  # each chunk is part of a full run of n users
        for start in range(0, bits.shape[0], chunk):
            messages = protocol.randomize(bits[start : start + chunk], rng=rng)
            part = protocol.view(protocol.shuffle(messages, rng=rng))
            total = part if total is None else total + part
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--instances", type=int, default=100)
    parser.add_argument("--chunk", type=int, default=100_000)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-6)
    args = parser.parse_args()
    n, m = args.users, args.instances
    print(f"command: {' '.join([os.path.basename(sys.executable), *sys.argv])}")
    print(f"machine: {platform.node()} {platform.machine()} {platform.processor() or ''} cpus={os.cpu_count()}")
    print(f"python {platform.python_version()}, numpy {np.__version__}")
    print(f"sizes: n_users={n} n_instances={m} chunk={args.chunk} epsilon={args.epsilon} delta={args.delta}")
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2, size=(n, m), dtype=np.int8)
    print(f"input built, peak RSS {peak_mib():.0f} MiB")

    calibrations = {
        "RR": lambda: RRBitSum.from_privacy(epsilon=args.epsilon, delta=args.delta, n_users=n),
        "3NB": lambda: ThreeNBBitSum.from_privacy(epsilon=args.epsilon, delta=args.delta, n_users=n),
        "Pure": lambda: PureBitSum.from_privacy(epsilon=args.epsilon, n_users=n),
        "LocalRR": lambda: LocalRRBitSum.from_privacy(epsilon=args.epsilon, n_users=n),
        "CentralGaussian": lambda: CentralGaussianBitSum.from_privacy(epsilon=args.epsilon, delta=args.delta, n_users=n),
    }
    header = (
        f"{'protocol':16s} {'calib s':>8s} {'path':9s} {'seconds':>8s} {'user-inst/s':>12s} {'messages':>12s} {'peak MiB':>9s}"
    )
    print(header)
    for name, build in calibrations.items():
        start = time.perf_counter()
        protocol = build()
        calibration_seconds = time.perf_counter() - start
        paths = ("fast", "faithful") if name in ("RR", "3NB", "Pure") else ("fast",)
        for path in paths:
            start = time.perf_counter()
            fast = path == "fast"
            view = protocol.sample_view(bits, rng=rng) if fast else faithful_view(protocol, bits, args.chunk, rng)
            protocol.analyze(view)
            seconds = time.perf_counter() - start
            print(
                f"{name:16s} {calibration_seconds:8.2f} {path:9s} {seconds:8.2f} {n * m / seconds:12.3e} "
                f"{view.total_messages:12d} {peak_mib():9.0f}"
            )


if __name__ == "__main__":
    main()
