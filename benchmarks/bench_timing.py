"""Shared timing helpers of the calibration benchmarks: the run's header, uncached repeats, median and spread.

The machine may be shared with other work: a benchmark prints the command, the machine and the
load average at start (`print_header`), and the load next to every timing.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import TypeVar

from privsum.accounting.cache import clear_calibration_cache

Result = TypeVar("Result")


def print_header() -> None:
    """Print the command line, the machine and the load average at start."""
    print(f"command: {' '.join([os.path.basename(sys.executable), *sys.argv])}")
    print(f"machine: {platform.node()} {platform.machine()} cpus={os.cpu_count()} python {platform.python_version()}")
    print(f"load average at start: {os.getloadavg()}")


def uncached_times(function: Callable[[], Result], repeats: int) -> tuple[Result, list[float]]:
    """The last result of ``function`` and its wall times over ``repeats`` runs, the calibration cache cleared before each."""
    times, result = [], None
    for _ in range(repeats):
        clear_calibration_cache()
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return result, times


def spread(times: list[float], digits: int = 2) -> str:
    """Median, min and max of ``times`` in seconds (``digits`` decimals), and the number of runs."""
    return (
        f"median {statistics.median(times):.{digits}f} s (min {min(times):.{digits}f}, max {max(times):.{digits}f}, "
        f"{len(times)} runs)"
    )
