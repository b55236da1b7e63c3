"""The accountant against exact compositions: every reported epsilon must be at least the exact one.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bench_accountant_certified.py [--skip-timing]

For each case the exact epsilon at the target delta is computed **without privsum**: pure
``(epsilon0, 0)`` events (whose worst case is binary randomized response, so the composed privacy
loss is ``epsilon0 (2 B - k)`` with ``B ~ Bin(k, e^epsilon0 / (1 + e^epsilon0))``) by scipy's
binomial distribution functions, inverted by bisection on the breakpoints and solved exactly on the
final piece; Gaussian events by Balle & Wang's analytic formula for one Gaussian with noise
``sigma / sqrt(k)`` (k Gaussian releases are one), in 50-digit mpmath. It prints the accountant's
``"best"`` and ``"pld"`` answers next to it (``pld`` is ``inf`` where the PLD composition cannot
certify an answer at that delta and declines), then the time of a few common calls (median and
spread of 5 runs).
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import sys
import time
import warnings

import mpmath
from scipy import stats

from privsum.accounting import GaussianEvent, GuaranteeEvent, PrivacyAccountant, PrivacyGuarantee, gaussian_epsilon

CASES = (
    ("pure (1e-4, 0) x 10^7", ("pure", 1e-4), 10**7, 1e-6),
    ("pure (1e-4, 0) x 10^9", ("pure", 1e-4), 10**9, 1e-6),
    ("pure (0.01, 0) x 10^4", ("pure", 0.01), 10**4, 1e-9),
    ("pure (0.1, 0) x 10^3", ("pure", 0.1), 10**3, 1e-9),
    ("Gaussian sigma 50 x 10^4", ("gauss", 50.0), 10**4, 1e-12),
    ("Gaussian sigma 2 x 10^3", ("gauss", 2.0), 10**3, 1e-12),
)


def pure_delta(epsilon0: float, count: int, epsilon: float) -> float:
    """Exact delta at ``epsilon`` of ``count`` pure ``epsilon0`` mechanisms (binomial sums)."""
    high = math.exp(epsilon0) / (1.0 + math.exp(epsilon0))
    threshold = math.floor((epsilon / epsilon0 + count) / 2.0)  # loss (2b - k) eps0 > epsilon  <=>  b > threshold
    while (2 * threshold - count) * epsilon0 > epsilon:
        threshold -= 1
    while (2 * (threshold + 1) - count) * epsilon0 <= epsilon:
        threshold += 1
    upper = stats.binom.sf(threshold, count, high)
    lower = stats.binom.sf(threshold, count, 1.0 - high)
    return float(upper - math.exp(epsilon) * lower)


def pure_epsilon(epsilon0: float, count: int, delta: float) -> float:
    low, high = 0.0, 1.0
    while pure_delta(epsilon0, count, high) > delta:
        low, high = high, 2.0 * high
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if pure_delta(epsilon0, count, middle) > delta else (low, middle)
    return high


def gaussian_epsilon_exact(sigma: float, count: int, delta: float) -> float:
    mpmath.mp.dps = 50
    ratio = mpmath.mpf(sigma) / mpmath.sqrt(count)

    def delta_at(epsilon: mpmath.mpf) -> mpmath.mpf:
        first = mpmath.ncdf(1 / (2 * ratio) - epsilon * ratio)
        return first - mpmath.e**epsilon * mpmath.ncdf(-1 / (2 * ratio) - epsilon * ratio)

    low, high = mpmath.mpf(0), mpmath.mpf(1)
    while delta_at(high) > delta:
        low, high = high, 2 * high
    for _ in range(120):  # bisection to far below float precision
        middle = (low + high) / 2
        low, high = (middle, high) if delta_at(middle) > delta else (low, middle)
    return float(high)


def accountant_for(kind: tuple[str, float], count: int) -> PrivacyAccountant:
    accountant = PrivacyAccountant()
    if kind[0] == "pure":
        accountant.compose(GuaranteeEvent(PrivacyGuarantee(kind[1], 0.0)), count)
    else:
        headline = PrivacyGuarantee(gaussian_epsilon(1e-6, sigma=kind[1], sensitivity=1.0), 1e-6)
        accountant.compose(GaussianEvent(kind[1], 1.0, headline), count)
    return accountant


def timed(call, repeats: int = 5) -> tuple[float, float, float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times), max(times)


def kde_setting() -> None:
    """The composed epsilon of 768 tight RR instances (n = 40,000, q = 0.0773) and the KDE's calibration (eps 2, delta 1e-6)."""
    from privsum.accounting import DEFAULT_DISCRETIZATION, ComposedEvent
    from privsum.bitsum import RRBitSum
    from privsum.bitsum.rr import worst_case_event
    from privsum.kde import ShuffledKDE
    from privsum.lsq import RandomFourierFeatures

    composed = ComposedEvent(worst_case_event(40_000, 0.0773, 1e-6 / (2 * 768)), 768)
    start = time.perf_counter()
    pair = composed.pld(composed.native_discretization or DEFAULT_DISCRETIZATION)
    epsilon = pair.epsilon(1e-6)
    elapsed = time.perf_counter() - start
    bound = getattr(pair, "absolute_error", None)  # the certified round-off (absent before it was tracked)
    print(f"\nKDE: 768 RR instances at q = 0.0773, n = 40,000: composed epsilon {epsilon:.8f} ({elapsed:.2f} s)")
    print(f"KDE: certified round-off added to delta: {bound}")
    family = RandomFourierFeatures(dimension=768, n_repetitions=768, seed=0)
    start = time.perf_counter()
    kde = ShuffledKDE.from_privacy(
        family=family, protocol=RRBitSum, epsilon=2.0, delta=1e-6, n_users=40_000, accounting="tight", calibration="tight"
    )
    print(
        f"KDE calibration (eps 2, delta 1e-6): q = {kde.bitsum.flip_probability:.8f}, "
        f"epsilon0 = {kde.bitsum.event.guarantee.epsilon:.7f}, total epsilon {kde.guarantee.epsilon:.7f} "
        f"({time.perf_counter() - start:.2f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--kde", action="store_true", help="also the paper's KDE setting (tight RR, n=40,000, I=768)")
    args = parser.parse_args()
    print(f"command: {' '.join([os.path.basename(sys.executable), *sys.argv])}")
    print(f"machine: {platform.node()} {platform.machine()} cpus={os.cpu_count()} load={os.getloadavg()[0]:.1f}")
    print("| case | delta | exact epsilon | accountant 'best' | 'best' - exact | 'pld' |")
    print("|---|---|---|---|---|---|")
    for label, kind, count, delta in CASES:
        exact = pure_epsilon(kind[1], count, delta) if kind[0] == "pure" else gaussian_epsilon_exact(kind[1], count, delta)
        accountant = accountant_for(kind, count)
        best = accountant.epsilon(delta)
        try:
            with warnings.catch_warnings():  # a declining PLD warns about its floor: reported as inf in the table
                warnings.simplefilter("ignore")
                pld = accountant.epsilon(delta, method="pld")
        except Exception as error:  # a refusal is reported as such
            pld = f"refused ({type(error).__name__})"
        pld_text = pld if isinstance(pld, str) else f"{pld:.8g}"
        print(f"| {label} | {delta:g} | {exact:.8g} | {best:.8g} | {best - exact:+.2e} | {pld_text} |")
    if args.kde:
        kde_setting()
    if args.skip_timing:
        return
    from privsum.accounting import ProfileEvent, randomized_response_profile

    rr = ProfileEvent.at_delta(randomized_response_profile(0.05), 0.0)

    def rr_profile_300() -> None:
        accountant = PrivacyAccountant()
        accountant.compose(rr, 300)
        accountant.epsilon(1e-6)

    def generic_768() -> None:
        accountant = PrivacyAccountant()
        accountant.compose(GuaranteeEvent(PrivacyGuarantee(0.02, 1e-9)), 768)
        accountant.epsilon(1e-6)

    print()
    print("| call | median s | min s | max s |")
    print("|---|---|---|---|")
    calls = (("RR profile (0.05) x 300, epsilon(1e-6)", rr_profile_300), ("(0.02, 1e-9) x 768, epsilon(1e-6)", generic_768))
    for name, call in calls:
        median, low, high = timed(call)
        print(f"| {name} | {median:.3f} | {low:.3f} | {high:.3f} |")
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
