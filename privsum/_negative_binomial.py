"""Vectorised negative-binomial probabilities and a proved bound on the truncated upper tail.

``NB(r, a)`` (papers' ratio parameterisation) has ``P(X = k) = Gamma(k + r) / (Gamma(r) k!)
(1 - a)^r a^k``. ``scipy.stats.nbinom`` is accurate but costs a few milliseconds per call on top
of the points themselves (freezing, ``isf``, ``sf``), which dominated the 3NB calibrations
(thousands of flooding pmfs per calibration). `negative_binomial_pmf_up_to` evaluates the same
probabilities with Loader's saddle-point form (Loader, "Fast and Accurate Computation of Binomial
Probabilities", 2000; the method behind R's ``dnbinom``), ``P(X = k) = r/(r + k) dbinom(r; r + k, 1 - a)``::

    log P(X = k) = stirlerr(r + k) - stirlerr(r) - stirlerr(k) - bd0(r, (r + k)(1 - a)) - bd0(k, (r + k) a)
                   + log sqrt(r / (2 pi k (r + k)))

with ``stirlerr`` the error of Stirling's formula (`privsum._binomial`) and ``bd0(x, M) = x log(x/M)
+ M - x``, evaluated by a series whose leading term dominates near ``x = M`` and directly away
from it, so that its relative error is a few ``2^-53``. Every term is then accurate to a few
``2^-53`` of its own size, and the sizes are small wherever the probability is not negligible.
The tests compare the values with 50-digit arithmetic: the relative error is below ``1e-12``
(``3e-13`` seen) for shapes ``1e-6 .. 1e3``, ratios up to ``1 - 1e-5`` and every point up to the
``1 - 1e-30`` quantile, as for scipy.

`negative_binomial_tail_bound` is a proved upper bound on ``P(X > L)``: beyond ``L`` the ratio of
consecutive probabilities ``a (k + r)/(k + 1)`` is at most ``theta = a max(1, (L + r)/(L + 1))``
(it decreases in ``k`` for ``r >= 1`` and increases towards ``a`` for ``r < 1``), so the tail is at
most the geometric series ``P(X = L) theta / (1 - theta)``.
"""

from __future__ import annotations

import math

import numpy as np

from privsum._binomial import _stirlerr, _stirlerr_value

__all__ = [
    "negative_binomial_pmf_up_to",
    "negative_binomial_tail_bound",
    "negative_binomial_truncation",
    "truncated_negative_binomial",
]

_LOG_TWO_PI = math.log(2.0 * math.pi)
# bd0 uses its series where |x - M| <= _SERIES_REACH (x + M), i.e. |v| <= 0.1: 9 terms reach 2^-53.
_SERIES_REACH = 0.1
_SERIES_TERMS = 9
# The pmf is computed by the saddle-point form every _BLOCK points and by ratios in between.
_BLOCK = 64
# Blocks whose first value is below e^-700 (about 1e-304) are computed point by point.
_LOG_SMALLEST_ANCHOR = -700.0
# truncated_negative_binomial computes the pmf until the geometric bound is this share of the tail mass.
_BEYOND_SHARE = 1.0 / 64.0
# A relative error this large is allowed for in the tail bound (the pmf's is below 1e-12).
_PMF_RTOL = 1e-9


def _bd0(x: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """``x log(x / mean) + mean - x`` for ``x, mean > 0``, to a few ``2^-53`` relative.

    Near ``x = mean``, with ``v = (x - mean)/(x + mean)``: ``(x - mean) v + 2 x v^3 sum_j
    v^(2j)/(2j + 3)``, whose leading term dominates (the rest is below 2% of it for ``|v| <= 0.1``).
    Elsewhere ``x log(x / mean) - (x - mean)``, at least a hundredth of its terms.
    """
    gap = x - mean
    v = gap / (x + mean)
    w = v * v
    series = np.full_like(v, 1.0 / (2 * _SERIES_TERMS + 1))
    for j in range(_SERIES_TERMS - 1, -1, -1):
        series = series * w + 1.0 / (2 * j + 3)
    near = gap * v + 2.0 * x * v * w * series
    far = x * np.log(x / mean) - gap
    return np.where(np.abs(v) <= _SERIES_REACH, near, far)


def _bd0_scalar(x: float, mean: float) -> float:
    """`_bd0` for one pair."""
    gap = x - mean
    v = gap / (x + mean)
    if abs(v) > _SERIES_REACH:
        return x * math.log(x / mean) - gap
    w = v * v
    series = 1.0 / (2 * _SERIES_TERMS + 1)
    for j in range(_SERIES_TERMS - 1, -1, -1):
        series = series * w + 1.0 / (2 * j + 3)
    return gap * v + 2.0 * x * v * w * series


def _log_pmf_positive(k: np.ndarray, shape: float, ratio: float) -> np.ndarray:
    """``log P(X = k)`` for ``k >= 1`` (float array), ``X ~ NB(shape, ratio)``, ``0 < ratio < 1``."""
    total = k + shape
    log_value = (
        _stirlerr(total)
        - _stirlerr_value(shape)
        - _stirlerr(k)
        - _bd0(np.full_like(k, shape), total * (1.0 - ratio))
        - _bd0(k, total * ratio)
    )
    return log_value + 0.5 * (math.log(shape) - _LOG_TWO_PI - np.log(k) - np.log(total))


def _log_pmf_at(k: int, shape: float, ratio: float) -> float:
    """``log P(X = k)`` for one ``k >= 0``: the same form in scalar arithmetic."""
    if k == 0:
        return shape * math.log1p(-ratio)
    total = k + shape
    stirling = _stirlerr_value(total) - _stirlerr_value(shape) - _stirlerr_value(float(k))
    deviance = _bd0_scalar(shape, total * (1.0 - ratio)) + _bd0_scalar(float(k), total * ratio)
    return stirling - deviance + 0.5 * (math.log(shape) - _LOG_TWO_PI - math.log(k) - math.log(total))


def negative_binomial_pmf_up_to(shape: float, ratio: float, last: int) -> np.ndarray:
    """``P(X = k)`` for ``k = 0..last`` and ``X ~ NB(shape, ratio)`` (mean ``shape ratio / (1 - ratio)``).

    Every 64th value comes from the saddle-point form (see the module docstring), the others from
    the one before by the ratio ``ratio (k - 1 + shape) / k`` (at most 63 products from an
    anchor: at most about ``2e-14`` more relative error). Blocks whose anchor is below ``1e-304``
    are computed point by point, so that no value underflows because its anchor did.

    Args:
        shape: ``r > 0``.
        ratio: ``a`` in ``(0, 1)``.
        last: the last point, ``>= 0``.

    Returns:
        The probabilities, each within a relative ``1e-12`` of the exact value (values below about
        ``1e-300`` may underflow to zero).

    Examples:
        >>> values = negative_binomial_pmf_up_to(1.0, 0.5, 3)
        >>> [round(float(v), 12) for v in values]
        [0.5, 0.25, 0.125, 0.0625]
    """
    blocks = last // _BLOCK + 1
    k = np.arange(float(blocks * _BLOCK)).reshape(blocks, _BLOCK).T  # k[i, b] = b * _BLOCK + i
    log_anchor = np.empty(blocks)
    log_anchor[0] = shape * math.log1p(-ratio)
    log_anchor[1:] = _log_pmf_positive(k[0, 1:], shape, ratio)
    values = np.empty((_BLOCK, blocks))
    values[0] = np.exp(log_anchor)
    steps = values[1:]
    np.subtract(k[1:], 1.0, out=steps)  # exact, then one rounding: accurate also for tiny shapes
    steps += shape
    steps /= k[1:]
    steps *= ratio  # ratio (k - 1 + shape) / k
    for row in range(1, _BLOCK):  # a cumulative product down the rows, each a vector over the blocks
        np.multiply(values[row], values[row - 1], out=values[row])
    tiny = np.flatnonzero(log_anchor < _LOG_SMALLEST_ANCHOR)
    if tiny.size:
        values[1:, tiny] = np.exp(_log_pmf_positive(k[1:, tiny].ravel(), shape, ratio)).reshape(_BLOCK - 1, tiny.size)
    return values.T.ravel()[: last + 1]


def negative_binomial_tail_bound(shape: float, ratio: float, last: int) -> float:
    """A proved upper bound on ``P(X > last)`` for ``X ~ NB(shape, ratio)`` (``1`` where none applies).

    ``P(X = last) theta / (1 - theta)`` with ``theta = ratio max(1, (last + shape)/(last + 1))`` (see
    the module docstring), inflated by a relative ``1e-9`` for the pmf's rounding.

    Examples:
        >>> bound = negative_binomial_tail_bound(1.0, 0.5, 10)  # exactly 0.5^11 for the geometric
        >>> bool(0.5**11 <= bound <= 0.5**11 * (1 + 1e-8))
        True
    """
    theta = ratio * max(1.0, (last + shape) / (last + 1.0))
    if not theta < 1.0:
        return 1.0
    log_bound = _log_pmf_at(last, shape, ratio) + math.log(theta) - math.log1p(-theta)
    return min(1.0, math.exp(log_bound) * (1.0 + _PMF_RTOL))


def negative_binomial_truncation(shape: float, ratio: float, tail_mass: float, max_last: int) -> int | None:
    """A point ``L`` with ``negative_binomial_tail_bound(shape, ratio, L) <= tail_mass``, within 1% of the least.

    Returns ``None`` if no ``L <= max_last`` qualifies. The bound does not increase beyond the
    mode, so the least such ``L`` is bracketed by doubling steps from the mode and bisected.

    Examples:
        >>> negative_binomial_truncation(1.0, 0.5, 1e-3, 1000)  # 0.5^(L+1) <= 1e-3 from L = 9 on
        9
    """

    def meets(last: int) -> bool:
        return negative_binomial_tail_bound(shape, ratio, last) <= tail_mass

    mean = shape * ratio / (1.0 - ratio)
    spread = math.sqrt(shape * ratio) / (1.0 - ratio)
    low = min(max_last, max(0, math.floor((shape - 1.0) * ratio / (1.0 - ratio))))  # the mode
    if meets(low):
        return low
    step = max(1.0, mean + spread - low)
    while True:  # low misses
        high = min(max_last, math.ceil(low + step))
        if meets(high):
            break
        if high >= max_last:
            return None
        low, step = high, 2.0 * step
    while high - low > max(1, 0.01 * high):  # low misses, high meets
        middle = (low + high) // 2
        if meets(middle):
            high = middle
        else:
            low = middle
    return int(high)


def truncated_negative_binomial(shape: float, ratio: float, tail_mass: float, max_length: int) -> tuple[np.ndarray, float] | None:
    """The pmf of ``NB(shape, ratio)`` on ``0..L`` and an upper bound ``<= tail_mass`` on ``P(X > L)``.

    The pmf is computed up to ``M``, where the geometric bound (`negative_binomial_tail_bound`) is
    below ``tail_mass / 64``; ``L <= M`` is then the least point where the computed mass on
    ``L+1..M`` (inflated for the pmf's accuracy and the summation's rounding) plus that bound meets
    ``tail_mass``. The geometric bound alone is loose
    where the ratios ``ratio (k + shape)/(k + 1)`` are still far below their limit (small shapes):
    the summed mass is exact there. Returns ``None`` if more than ``max_length`` points are needed.

    Examples:
        >>> pmf, dropped = truncated_negative_binomial(1.0, 0.5, 1e-3, 1000)
        >>> pmf.size - 1, bool(0.5**10 <= dropped <= 1e-3)
        (9, True)
    """
    last = negative_binomial_truncation(shape, ratio, tail_mass * _BEYOND_SHARE, max_length - 1)
    if last is None:
        return None
    pmf = negative_binomial_pmf_up_to(shape, ratio, last)
    beyond = negative_binomial_tail_bound(shape, ratio, last)
    inflation = 1.0 + _PMF_RTOL + pmf.size * 2.3e-16  # relative error of the pmf and of a running sum
    tails = np.cumsum(pmf[:0:-1])[::-1] * inflation + beyond  # tails[j] bounds P(X > j), j = 0..last-1
    fits = np.flatnonzero(tails <= tail_mass)
    if fits.size == 0:
        return pmf, beyond
    cut = int(fits[0])
    return pmf[: cut + 1].copy(), float(tails[cut])  # a copy: the caller may keep it
