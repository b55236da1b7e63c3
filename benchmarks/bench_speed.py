"""Issue-18 speed targets, each as a ratio measured in one run (median and spread of repeats).

Usage (from the repository root)::

    PYTHONPATH=.:benchmarks python benchmarks/bench_speed.py [--repeats 3] [--only import accountant amplification kde cache]

Prints one JSON line per target with the machine, its load average, the command, the median and
the spread (min, max) of the repeats, and the ratio the target is about:

* ``import``: ``python -c "import privsum"`` against ``python -c "pass"`` (fresh interpreters).
* ``accountant``: composition with ``count = 10**9`` (basic, advanced, PLD); and the closed-form
  sum against the former list-based sum at ``count = 10**6`` (speed-up).
* ``amplification``: ``shuffle_amplification(1, 1e-6, n)`` at ``n = 10**5, 10**6``; and the
  former route (build the FMT21 profile, invert it) against the new one at ``n = 2 * 10**4``.
* ``kde``: rounding ``n = 40,000`` users x ``d = I = 768`` RFF instances (``precision="float64"``
  and ``"exact"``) against the in-process limit: the ``40,000 x 768 x 768`` float64 matmul plus two
  uniform draws per user x instance, measured in the same process at the same chunking (the three
  interleaved chunk by chunk).
* ``cache``: ``ShuffledKDE.from_privacy`` (3NB, ``I = 768``) first call against the cached call.
* ``clipped``: ``ClippedVectorSum.event_for_participants`` (10,000 users, ``d = 64``, 9,000 taking
  part); and one divisible-Laplace epsilon by the former pmf sums against the closed form.
* ``opendp``: the central Laplace bit sum's OpenDP release per counter, and the share of it spent
  converting the counts to a Python list (``tolist``).

The machine this runs on may be shared with other work: the load average is printed, and the
ratios (numerator and denominator measured in the same run) are what to compare.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np
from bench_scale_common import report

TARGETS = ("import", "accountant", "amplification", "kde", "cache", "clipped", "opendp")


def timings(operation: Callable[[], object], repeats: int) -> list[float]:
    values = []
    for _ in range(repeats):
        start = time.perf_counter()
        operation()
        values.append(time.perf_counter() - start)
    return values


def summary(values: list[float]) -> dict:
    return {"median_s": round(statistics.median(values), 6), "spread_s": [round(min(values), 6), round(max(values), 6)]}


def emit(target: str, **fields: object) -> None:
    report({"target": target, "load_average": [round(v, 2) for v in os.getloadavg()], **fields})


def bench_import(repeats: int) -> None:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

    def fresh(code: str) -> None:
        subprocess.run([sys.executable, "-c", code], cwd=root, check=True, env={**os.environ, "PYTHONPATH": root})

    empty, light = timings(lambda: fresh("pass"), repeats), timings(lambda: fresh("import privsum"), repeats)
    emit(
        "import privsum",
        interpreter=summary(empty),
        with_import=summary(light),
        import_only_median_s=round(statistics.median(light) - statistics.median(empty), 4),
        target_s=0.5,
    )


def bench_accountant(repeats: int) -> None:
    from privsum.accounting import GuaranteeEvent, PrivacyAccountant, PrivacyGuarantee

    def total(method: str, epsilon0: float) -> float:
        accountant = PrivacyAccountant()
        accountant.compose(GuaranteeEvent(PrivacyGuarantee(epsilon0, 1e-18)), count=10**9)
        return accountant.epsilon(1e-6, method=method)

    for method, epsilon0, target in (("basic", 1e-5, 0.1), ("advanced", 1e-5, 0.1), ("pld", 1e-4, 1.0)):
        values = timings(lambda m=method, e=epsilon0: total(m, e), repeats)
        emit(f"accountant count=1e9 ({method})", epsilon=total(method, epsilon0), **summary(values), target_s=target)
    guarantee = PrivacyGuarantee(1e-3, 1e-12)

    def listed() -> float:
        headlines = [guarantee] * 10**6
        return math.fsum(g.epsilon for g in headlines) + math.fsum(g.delta for g in headlines)

    def closed() -> float:
        accountant = PrivacyAccountant()
        accountant.compose(GuaranteeEvent(guarantee), count=10**6)
        return accountant.epsilon(1e-3, method="basic")

    old, new = timings(listed, repeats), timings(closed, repeats)
    emit(
        "accountant count=1e6 basic: list-based / closed form",
        list_based=summary(old),
        closed_form=summary(new),
        speedup=round(statistics.median(old) / statistics.median(new), 1),
    )


def bench_amplification(repeats: int) -> None:
    from privsum.accounting import shuffle_amplification, shuffle_amplification_profile
    from privsum.accounting.amplification import _amplified_epsilon

    for n_users in (10**5, 10**6):
        values = timings(lambda n=n_users: shuffle_amplification(1.0, 1e-6, n), repeats)
        emit(
            f"shuffle_amplification(1, 1e-6, {n_users})",
            **summary(values),
            epsilon=shuffle_amplification(1.0, 1e-6, n_users).epsilon,
        )
    n_users = 20_000
    old = timings(lambda: shuffle_amplification_profile(1.0, n_users).epsilon(1e-6), repeats)
    new = timings(lambda: _amplified_epsilon(1.0, n_users, 1e-6), repeats)
    emit(
        f"amplification n={n_users}: profile route / root search",
        profile_route=summary(old),
        root_search=summary(new),
        speedup=round(statistics.median(old) / statistics.median(new), 1),
    )


def bench_kde(repeats: int) -> None:
    from privsum.kde import _rounding as rounding
    from privsum.lsq import RandomFourierFeatures

    n_users, dimension, instances, chunk = 40_000, 768, 768, 4096
    family = RandomFourierFeatures(dimension=dimension, n_repetitions=instances, seed=0)
    points = np.random.default_rng(1).standard_normal((n_users, dimension))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    generator = np.random.default_rng(2)
    frequencies = family.frequencies.T.copy()
    product, uniforms = np.empty((chunk, instances)), np.empty((chunk, instances))
    workspaces = {"float64": rounding.Workspace(), "exact": rounding.Workspace()}

    def limit(block: np.ndarray) -> None:  # matmul + two uniform draws per user x instance
        rows = block.shape[0]
        np.matmul(block, frequencies, out=product[:rows])
        generator.random(out=uniforms[:rows])
        generator.random(out=uniforms[:rows])

    def rounding(precision: str) -> Callable[[np.ndarray], None]:
        def run(block: np.ndarray) -> None:
            bits = rounding.round_to_bits(family, block, generator, None, workspaces[precision], precision)
            generator.random(out=uniforms[: bits.shape[0]])  # the bit sum's one draw per user x instance

        return run

    operations = {"limit": limit, "float64": rounding("float64"), "exact": rounding("exact")}
    measured = {name: [] for name in operations}
    for _ in range(repeats):  # interleaved chunk by chunk, so that load changes hit all three alike
        totals = dict.fromkeys(operations, 0.0)
        for start in range(0, n_users, chunk):
            for name, operation in operations.items():
                began = time.perf_counter()
                operation(points[start : start + chunk])
                totals[name] += time.perf_counter() - began
        for name, total in totals.items():
            measured[name].append(total)
    ratios = {
        name: round(statistics.median(values) / statistics.median(measured["limit"]), 3) for name, values in measured.items()
    }
    emit(
        f"kde rounding n={n_users} d=I={dimension} vs in-process limit",
        **{name: summary(values) for name, values in measured.items()},
        ratio_to_limit=ratios,
        target_ratio=1.2,
    )


def bench_cache(repeats: int) -> None:
    from privsum.accounting.cache import clear_calibration_cache
    from privsum.bitsum import ThreeNBBitSum
    from privsum.kde import ShuffledKDE
    from privsum.lsq import RandomFourierFeatures

    family = RandomFourierFeatures(dimension=768, n_repetitions=768, seed=0)

    def calibrate() -> object:
        return ShuffledKDE.from_privacy(family=family, protocol=ThreeNBBitSum, epsilon=2.0, delta=1e-6, n_users=40_000)

    first, cached = [], []
    for _ in range(repeats):
        clear_calibration_cache()
        first += timings(calibrate, 1)
        cached += timings(calibrate, 1)
    emit(
        "ShuffledKDE.from_privacy 3NB I=768: first call / cached call",
        first=summary(first),
        cached=summary(cached),
        speedup=round(statistics.median(first) / statistics.median(cached), 1),
    )


def bench_clipped(repeats: int) -> None:
    from privsum.accounting.cache import clear_calibration_cache
    from privsum.clipping import ClippedVectorSum
    from privsum.shuffle.noise import negative_binomial_pmf, negative_binomial_truncated
    from privsum.sums.multi_message import divisible_laplace_epsilon

    protocol = ClippedVectorSum.from_privacy(epsilon=4.0, delta=1e-6, n_users=10_000, dimension=64, radius=1.0)

    def uncached() -> object:
        clear_calibration_cache()
        return protocol.event_for_participants(9000)

    values = timings(uncached, repeats)
    emit("ClippedVectorSum.event_for_participants(9000), n=10,000, d=64", **summary(values), before="73-129 s (issue report)")
    arguments = (0.95, 1 - 1e-5, 1000)

    def pmf_sums() -> float:
        head, _ = negative_binomial_truncated(arguments[0], arguments[1], 1e-30)
        pmf = negative_binomial_pmf(np.arange(head.size + arguments[2]), arguments[0], arguments[1])
        at_zero = float(np.dot(pmf[: head.size], pmf[: head.size]))
        return math.log(at_zero / float(np.dot(pmf[arguments[2] : arguments[2] + head.size], pmf[: head.size])))

    old, new = timings(pmf_sums, repeats), timings(lambda: divisible_laplace_epsilon(*arguments), repeats)
    emit(
        f"divisible-Laplace epsilon {arguments}: pmf sums / closed form",
        pmf_sums=summary(old),
        closed_form=summary(new),
        speedup=round(statistics.median(old) / statistics.median(new), 1),
    )


def bench_opendp(repeats: int) -> None:
    from privsum.bitsum import CentralLaplaceBitSum

    counters = 100_000
    protocol = CentralLaplaceBitSum.from_privacy(epsilon=1.0, n_users=1000)
    sums = np.random.default_rng(0).integers(0, 1000, counters)
    release = timings(lambda: protocol.noise(sums, np.random.default_rng()), 1)
    conversion = timings(lambda: sums.astype(int).tolist(), repeats)
    emit(
        f"central Laplace OpenDP release, {counters} counters",
        release=summary(release),
        per_counter_us=round(statistics.median(release) / counters * 1e6, 3),
        tolist=summary(conversion),
        tolist_share=round(statistics.median(conversion) / max(statistics.median(release), 1e-12), 4),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", nargs="+", choices=TARGETS, default=list(TARGETS))
    arguments = parser.parse_args()
    benches = {
        "import": bench_import,
        "accountant": bench_accountant,
        "amplification": bench_amplification,
        "kde": bench_kde,
        "cache": bench_cache,
        "clipped": bench_clipped,
        "opendp": bench_opendp,
    }
    for name in arguments.only:
        benches[name](arguments.repeats)


if __name__ == "__main__":
    main()
