"""End-to-end time and peak memory of the shuffled-DP KDE at scale.

The KDE is Algorithm 1 of Wagner, "Learning from End User Data with Shuffled Differential Privacy
over Kernel Densities", ICLR 2025.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bench_kde_scale.py [--users 40000 560000] [--dimension 768] [--repetitions 768]
        [--precision float64 float32]

Synthetic unit-norm points are generated chunk by chunk and streamed into
`ShuffledKDE.run`, so neither the data nor the protocol ever holds ``n * I`` numbers: peak
memory should not grow with ``n``. The bit sum is RR calibrated once (its parameters do not
affect the running time) from an overall ``(epsilon, delta)`` with the paper's accounting.
Peak memory is the process's maximum resident set size (``resource.getrusage``), so each run is
done in a fresh subprocess. ``precision`` is `ShuffledKDE`'s feature precision: ``float64`` (the
default, rounding exactly the family's values) or ``float32`` (single-precision Fourier features).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time

import numpy as np


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def unit_chunks(n_users: int, dimension: int, chunk: int, seed: int):
    """``n_users`` unit-norm points, chunk by chunk, cycling through one pool of ``chunk`` random points.

    Reusing a pool keeps data generation out of the timing; the protocol's work is the same.
    """
    pool = np.random.default_rng(seed).standard_normal((chunk, dimension))
    pool /= np.linalg.norm(pool, axis=1, keepdims=True)
    for start in range(0, n_users, chunk):
        yield pool[: min(chunk, n_users - start)]


def one_run(n_users: int, dimension: int, repetitions: int, chunk: int, precision: str = "float64") -> dict:
    from privsum.bitsum import RRBitSum
    from privsum.kde import ShuffledKDE
    from privsum.lsq import RandomFourierFeatures

    family = RandomFourierFeatures(dimension=dimension, n_repetitions=repetitions, seed=0)
    # A fixed flip probability: the running time does not depend on it (calibration is timed elsewhere).
    bitsum = RRBitSum(n_users=n_users, flip_probability=0.25, delta=1e-6 / (2 * repetitions))
    kde = ShuffledKDE(family=family, bitsum=bitsum, delta=1e-6, accounting="seed", chunk_size=chunk, precision=precision)
    baseline = peak_mib()
    cpu = time.process_time()
    start = time.perf_counter()
    view = kde.sample_view(unit_chunks(n_users, dimension, chunk, seed=1), rng=2)
    released = kde.bitsum.analyze(view)
    elapsed = time.perf_counter() - start
    return {
        "seconds": elapsed,
        "cpu_seconds": time.process_time() - cpu,
        "peak_mib": peak_mib(),
        "peak_before_mib": baseline,
        "instances": int(released.size),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, nargs="+", default=[40_000, 560_000])
    parser.add_argument("--dimension", type=int, default=768)
    parser.add_argument("--repetitions", type=int, default=768)
    parser.add_argument("--chunk", type=int, default=4096)
    parser.add_argument("--precision", nargs="+", default=["float64", "float32"], choices=["float64", "float32"])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_run(args.users[0], args.dimension, args.repetitions, args.chunk, args.precision[0])))
        return
    print(f"command: {' '.join([os.path.basename(sys.executable), *sys.argv])}")
    print(f"machine: {platform.node()} {platform.machine()} {platform.processor() or ''} cpus={os.cpu_count()}")
    print(f"python {platform.python_version()}, numpy {np.__version__}")
    print(f"d={args.dimension} I={args.repetitions} chunk={args.chunk} (RFF + RR, fast path, streamed synthetic unit-norm data)")
    print(f"load average before: {os.getloadavg()[0]:.2f} (wall time is inflated when other processes share the CPUs)")
    print(f"{'n_users':>9} {'precision':>9} {'wall s':>9} {'cpu s':>9} {'peak RSS MiB':>13} {'RSS before run':>15}")
    for n_users in args.users:
        for precision in args.precision:
            command = [sys.executable, __file__, "--child", "--users", str(n_users), "--dimension", str(args.dimension)]
            command += ["--repetitions", str(args.repetitions), "--chunk", str(args.chunk), "--precision", precision]
            output = subprocess.run(command, check=True, capture_output=True, text=True, env=os.environ).stdout
            result = json.loads(output.strip().splitlines()[-1])
            print(
                f"{n_users:>9} {precision:>9} {result['seconds']:>9.2f} {result['cpu_seconds']:>9.2f} "
                f"{result['peak_mib']:>13.0f} {result['peak_before_mib']:>15.0f}"
            )


if __name__ == "__main__":
    main()
