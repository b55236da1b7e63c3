"""Exact compositions computed without privsum: the references the accountant must never undercut.

* ``k`` mechanisms that are each ``(epsilon0, delta0)``-DP: the worst case is Kairouz, Oh & Viswanath's
  four-outcome pair, whose ``k``-fold product has the privacy loss ``epsilon0 (2 B - k)`` on the runs
  with no ``delta0`` atom, ``B ~ Bin(k, e^epsilon0 / (1 + e^epsilon0))``: its delta is a pair of
  binomial tails (scipy), with ``1 - (1 - delta0)^k`` added. Pure ``epsilon0`` (``delta0 = 0``) is
  binary randomized response, and so is a discrete Laplace mechanism on a sensitivity-1 query.
* ``k`` Gaussian releases with noise ``sigma`` and sensitivity 1 are one Gaussian release with
  noise ``sigma / sqrt(k)``: Balle & Wang's analytic formula in 50-digit mpmath.
* Randomized response composed ``k`` times, term by term in 50-digit mpmath.
"""

from __future__ import annotations

import math

import mpmath
from scipy import stats

# The reference epsilon is the least epsilon whose delta is at most delta * (1 + REFERENCE_SLACK): a
# hair below the exact one, so that float error in scipy's tails never fails a correct answer.
REFERENCE_SLACK = 1e-11


def homogeneous_delta(epsilon0: float, delta0: float, count: int, epsilon: float) -> float:
    """Exact delta at ``epsilon`` of ``count`` compositions of ``(epsilon0, delta0)`` (binomial tails)."""
    high = 1.0 / (1.0 + math.exp(-epsilon0))
    threshold = math.floor((epsilon / epsilon0 + count) / 2.0)  # loss (2b - k) epsilon0 > epsilon  <=>  b > threshold
    while threshold >= 0 and (2 * threshold - count) * epsilon0 > epsilon:
        threshold -= 1
    while (2 * (threshold + 1) - count) * epsilon0 <= epsilon:
        threshold += 1
    upper = float(stats.binom.sf(threshold, count, high))
    lower = float(stats.binom.sf(threshold, count, 1.0 - high))
    randomized_response = max(0.0, upper - math.exp(epsilon) * lower) if lower > 0 else upper
    kept = math.exp(count * math.log1p(-delta0))
    return -math.expm1(count * math.log1p(-delta0)) + kept * randomized_response


def homogeneous_epsilon(epsilon0: float, delta0: float, count: int, delta: float) -> float:
    """The least epsilon whose `homogeneous_delta` is at most ``delta`` (bisection to float precision)."""
    target = delta * (1.0 + REFERENCE_SLACK)
    low, high = 0.0, min(1.0, count * epsilon0)
    if homogeneous_delta(epsilon0, delta0, count, 0.0) <= target:
        return 0.0
    while homogeneous_delta(epsilon0, delta0, count, high) > target:
        if high >= count * epsilon0:
            return math.inf
        low, high = high, min(2.0 * high, count * epsilon0)
    for _ in range(200):
        middle = (low + high) / 2.0
        if middle in (low, high):
            break
        low, high = (middle, high) if homogeneous_delta(epsilon0, delta0, count, middle) > target else (low, middle)
    return low


def pure_composition_epsilon(epsilon0: float, count: int, delta: float) -> float:
    """`homogeneous_epsilon` of a pure ``epsilon0``: the exact composition of randomized response."""
    return homogeneous_epsilon(epsilon0, 0.0, count, delta)


def gaussian_composition_epsilon(sigma: float, count: int, delta: float) -> float:
    """Exact epsilon at ``delta`` of ``count`` Gaussian releases (noise ``sigma``, sensitivity 1), in 50 digits."""
    with mpmath.workdps(50):
        ratio = mpmath.mpf(sigma) / mpmath.sqrt(count)

        def delta_at(epsilon: mpmath.mpf) -> mpmath.mpf:
            first = mpmath.ncdf(1 / (2 * ratio) - epsilon * ratio)
            return first - mpmath.e**epsilon * mpmath.ncdf(-1 / (2 * ratio) - epsilon * ratio)

        target = mpmath.mpf(delta) * (1 + mpmath.mpf(REFERENCE_SLACK))
        low, high = mpmath.mpf(0), mpmath.mpf(1)
        while delta_at(high) > target:
            low, high = high, 2 * high
        for _ in range(80):
            middle = (low + high) / 2
            low, high = (middle, high) if delta_at(middle) > target else (low, middle)
        return float(low)


def randomized_response_composition_delta(epsilon0: float, count: int, epsilon: float) -> float:
    """Exact delta at ``epsilon`` of binary randomized response (``epsilon0``, the float given) composed ``count`` times."""
    with mpmath.workdps(50):
        e0 = mpmath.mpf(epsilon0)
        high, low = mpmath.e**e0 / (1 + mpmath.e**e0), 1 / (1 + mpmath.e**e0)
        scale = mpmath.e ** mpmath.mpf(epsilon)
        total = mpmath.mpf(0)
        for highs in range(count + 1):
            if (2 * highs - count) * e0 > epsilon:
                first, second = high**highs * low ** (count - highs), low**highs * high ** (count - highs)
                total += mpmath.binomial(count, highs) * (first - scale * second)
        return float(total)
