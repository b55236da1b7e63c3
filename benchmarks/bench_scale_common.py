"""Shared helpers of the ``bench_scale_*`` benchmarks: machine description, peak memory, machine limits.

Not a test: the numbers depend on the machine. Every benchmark prints the machine (platform, CPU
count, RAM), the command line, the sizes, the wall time, the peak resident memory
(``resource.getrusage``) and the throughput of its dominant step as a fraction of this machine's
measured limit for that step (raw numpy throughput of the same operation, measured here).
"""

from __future__ import annotations

import json
import os
import platform
import resource
import sys
import time
from collections.abc import Callable

import numpy as np


def peak_mib() -> float:
    """Peak resident set size of this process so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def machine() -> dict:
    """Platform, CPU count and RAM."""
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        ram = float("nan")
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "ram_gib": round(ram, 1),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
    }


def best_time(operation: Callable[[], object], repeats: int = 3) -> float:
    """Best wall time of ``repeats`` calls (the machine's limit: no other work in the loop)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        operation()
        best = min(best, time.perf_counter() - start)
    return best


def uniform_draws_per_second(size: int = 10_000_000) -> float:
    """numpy ``Generator.random`` float64 draws per second into a preallocated buffer."""
    generator = np.random.default_rng(0)
    out = np.empty(size)
    return size / best_time(lambda: generator.random(out=out))


def matmul_gflops(rows: int, inner: int, columns: int) -> float:
    """float64 matmul GFLOP/s at the given shape (``2 rows inner columns`` flops)."""
    generator = np.random.default_rng(0)
    a, b = generator.standard_normal((rows, inner)), generator.standard_normal((inner, columns))
    out = np.empty((rows, columns))
    return 2.0 * rows * inner * columns / best_time(lambda: np.matmul(a, b, out=out)) / 1e9


def column_sum_entries_per_second(rows: int, columns: int) -> float:
    """Entries per second of one pass summing an int8 ``(rows, columns)`` array over users."""
    bits = (np.random.default_rng(0).random((rows, columns)) < 0.3).astype(np.int8)
    return bits.size / best_time(lambda: bits.sum(axis=0, dtype=np.int64))


def report(record: dict) -> None:
    """Print one result as a JSON line, with the machine and the command."""
    record = {"machine": machine(), "command": " ".join([os.path.basename(sys.executable), *sys.argv]), **record}
    print(json.dumps(record), flush=True)
