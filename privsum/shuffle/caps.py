"""Per-sender message caps for randomizers that send a random number of messages."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats

from privsum._validation import check_real, invalid
from privsum.shuffle.protocol import SenderCap

__all__ = ["count_tail", "noise_cap", "smallest_cap"]

# Caps beyond this many messages per instance are refused (the randomizer is too heavy-tailed to deploy).
_LARGEST_CAP = 1 << 24


def _negative_binomial(shape: float, ratio: float) -> stats.rv_discrete:
    """``NB(shape, ratio)``: failures before ``shape`` successes of probability ``1 - ratio``."""
    return stats.nbinom(shape, 1.0 - ratio)


def count_tail(threshold: int, parts: Sequence[tuple[float, float, int]]) -> float:
    """``P(sum_k m_k X_k > threshold)`` for independent ``X_k ~ NB(shape_k, ratio_k)``, ``parts`` ``(shape_k, ratio_k, m_k)``.

    Built one part at a time: ``P(S + m X > t) = sum_{s <= t} P(S = s) P(m X > t - s) + P(S > t)``,
    with ``P(S = s)`` for ``s <= t`` by convolution. Every term is positive, so tails far below
    ``1e-16`` keep their relative precision (unlike ``1 - cdf``). Work ``O(K t^2)``.

    Examples:
        >>> round(count_tail(0, [(1.0, 0.5, 1)]), 12)  # P(Geometric > 0) = 1/2
        0.5
        >>> round(count_tail(1, [(1.0, 0.5, 2)]), 12)  # P(2 Geometric > 1) = P(Geometric > 0)
        0.5
    """
    if threshold < 0:
        return 1.0
    pmf = np.zeros(threshold + 1)
    pmf[0] = 1.0
    offsets = np.arange(threshold + 1)
    tail = 0.0
    for shape, ratio, multiplier in parts:
        if shape == 0.0 or ratio == 0.0:
            continue
        distribution = _negative_binomial(shape, ratio)
        tail += float(np.sum(pmf * distribution.sf((threshold - offsets) // multiplier)))
        spaced = np.zeros(threshold + 1)
        spaced[::multiplier] = distribution.pmf(np.arange(threshold // multiplier + 1))
        pmf = np.convolve(pmf, spaced)[: threshold + 1]
    return tail


def smallest_cap(tail: Callable[[int], float], target: float, owner: str) -> tuple[int, float]:
    """The smallest cap ``c >= 1`` with ``tail(c) <= target`` (``tail`` non-increasing), and ``tail(c)``.

    ``tail(c)`` is the probability that an honest user sends more than ``c`` messages.
    """
    target = check_real(target, "exceed_probability", owner, low=0.0, high=1.0, low_open=True)
    high = 1
    while tail(high) > target:
        high *= 2
        if high > _LARGEST_CAP:
            raise invalid("exceed_probability", owner, f"reachable with at most {_LARGEST_CAP} messages per instance", target)
    low = high // 2  # tail(low) > target, or low == 0
    while high - low > 1:
        middle = (low + high) // 2
        if tail(middle) <= target:
            high = middle
        else:
            low = middle
    return high, tail(high)


def noise_cap(
    n_instances: int, exceed_probability: float, parts: Sequence[tuple[float, float, int]], owner: str
) -> SenderCap:
    """The cap of a user sending at most one data message plus ``sum_k m_k NB(parts_k)`` noise messages per instance.

    The least ``c`` whose probability of being exceeded in any of ``n_instances`` instances (a
    union bound over instances) is at most ``exceed_probability``.
    """

    def tail(cap: int) -> float:
        return min(1.0, n_instances * count_tail(cap - 1, parts))

    cap, exceed = smallest_cap(tail, exceed_probability, owner)
    return SenderCap(cap, cap * n_instances, exceed)
