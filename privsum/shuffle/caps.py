"""Per-sender message caps for randomizers that send a random number of messages."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import optimize, stats

from privsum._validation import check_real, invalid
from privsum.shuffle.protocol import SenderCap

__all__ = ["chernoff_tail", "count_tail", "count_tails", "noise_cap"]

# Caps beyond this many messages per instance are refused (the randomizer is too heavy-tailed to deploy).
_LARGEST_CAP = 1 << 24
# Exact tails up to this many messages per instance (O(K c^2) work), the Chernoff bound beyond.
_EXACT_LIMIT = 4096


def _negative_binomial(shape: float, ratio: float) -> stats.rv_discrete:
    """``NB(shape, ratio)``: failures before ``shape`` successes of probability ``1 - ratio``."""
    return stats.nbinom(shape, 1.0 - ratio)


def count_tail(threshold: int, parts: Sequence[tuple[float, float, int]]) -> float:
    """``P(sum_k m_k X_k > threshold)`` for independent ``X_k ~ NB(shape_k, ratio_k)``, ``parts`` ``(shape_k, ratio_k, m_k)``.

    Examples:
        >>> round(count_tail(0, [(1.0, 0.5, 1)]), 12)  # P(Geometric > 0) = 1/2
        0.5
        >>> round(count_tail(1, [(1.0, 0.5, 2)]), 12)  # P(2 Geometric > 1) = P(Geometric > 0)
        0.5
    """
    if threshold < 0:
        return 1.0
    return float(count_tails(threshold, parts)[threshold])


def count_tails(largest: int, parts: Sequence[tuple[float, float, int]]) -> np.ndarray:
    """``P(sum_k m_k X_k > t)`` for every ``t = 0..largest`` (see `count_tail`).

    Built one part at a time: ``P(S + m X > t) = sum_{s <= t} P(S = s) P(m X > t - s) + P(S > t)``,
    a convolution of positive terms for all ``t`` at once (``P(S = s)`` itself by convolution), so
    tails far below ``1e-16`` keep their relative precision (unlike ``1 - cdf``). Work ``O(K t^2)``.
    """
    size = largest + 1
    pmf = np.zeros(size)
    pmf[0] = 1.0
    tails = np.zeros(size)
    offsets = np.arange(size)
    for shape, ratio, multiplier in parts:
        if shape == 0.0 or ratio == 0.0:
            continue
        distribution = _negative_binomial(shape, ratio)
        exceed = distribution.sf(offsets // multiplier)  # P(m X > u) = P(X > floor(u / m))
        tails += np.convolve(pmf, exceed)[:size]
        spaced = np.zeros(size)
        spaced[::multiplier] = distribution.pmf(np.arange(largest // multiplier + 1))
        pmf = np.convolve(pmf, spaced)[:size]
    return tails


def chernoff_tail(threshold: int, parts: Sequence[tuple[float, float, int]]) -> float:
    """An upper bound on ``P(sum_k m_k X_k > threshold)``: ``min_theta E[e^(theta S)] e^(-theta (threshold + 1))``.

    ``E[e^(theta m X)] = ((1 - a) / (1 - a e^(theta m)))^shape`` for ``X ~ NB(shape, a)``, finite for
    ``theta < -log(a) / m``; the exponent is convex in ``theta`` and minimised numerically.

    Examples:
        >>> 0.5 <= chernoff_tail(0, [(1.0, 0.5, 1)]) <= 1.0  # P(Geometric > 0) = 1/2
        True
    """
    active = [(shape, ratio, multiplier) for shape, ratio, multiplier in parts if shape > 0.0 and ratio > 0.0]
    if not active:
        return 0.0 if threshold >= 0 else 1.0
    largest = min(-math.log(ratio) / multiplier for _, ratio, multiplier in active) * (1.0 - 1e-9)

    def log_bound(theta: float) -> float:
        moments = sum(shape * (math.log1p(-ratio) - math.log1p(-ratio * math.exp(theta * multiplier)))
                      for shape, ratio, multiplier in active)
        return moments - theta * (threshold + 1)

    found = optimize.minimize_scalar(log_bound, bounds=(0.0, largest), method="bounded", options={"xatol": 1e-12})
    return min(1.0, math.exp(min(0.0, float(found.fun), log_bound(largest))))


def noise_cap(
    n_instances: int, exceed_probability: float, parts: Sequence[tuple[float, float, int]], owner: str
) -> SenderCap:
    """The cap of a user sending at most one data message plus ``sum_k m_k NB(parts_k)`` noise messages per instance.

    The least ``c`` whose probability of being exceeded in any of ``n_instances`` instances (a
    union bound over instances) is at most ``exceed_probability``: from the exact tails
    (`count_tails`) up to ``c = 4096``, beyond from the Chernoff bound (`chernoff_tail`, so the cap
    may be a little larger than the least). The reported probability is an upper bound either way.
    """
    target = check_real(exceed_probability, "exceed_probability", owner, low=0.0, high=1.0, low_open=True)
    largest = 64
    while largest <= _EXACT_LIMIT:  # the noise exceeds c - 1 (one message is the data)
        tails = np.minimum(1.0, n_instances * count_tails(largest, parts))
        below = np.flatnonzero(tails <= target)
        if below.size:
            cap = int(below[0]) + 1
            return SenderCap(cap, cap * n_instances, float(tails[cap - 1]))
        largest *= 2

    def bound(cap: int) -> float:
        return min(1.0, n_instances * chernoff_tail(cap - 1, parts))

    low, high = _EXACT_LIMIT, 2 * _EXACT_LIMIT
    while bound(high) > target:
        low, high = high, 2 * high
        if high > _LARGEST_CAP:
            raise invalid("exceed_probability", owner, f"reachable with at most {_LARGEST_CAP} messages per instance", target)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if bound(middle) <= target else (middle, high)
    return SenderCap(high, high * n_instances, bound(high))
