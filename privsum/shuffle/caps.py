"""Per-sender message caps for randomizers that send a random number of messages."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import stats

from privsum._validation import check_real, invalid
from privsum.shuffle.protocol import SenderCap

__all__ = ["noise_count_tail", "signed_counts_cap", "smallest_cap"]

# Caps beyond this many messages per instance are refused (the randomizer is too heavy-tailed to deploy).
_LARGEST_CAP = 1 << 24


def _negative_binomial(shape: float, ratio: float) -> stats.rv_discrete:
    """``NB(shape, ratio)``: failures before ``shape`` successes of probability ``1 - ratio`` (mean ``shape ratio/(1-ratio)``)."""
    return stats.nbinom(shape, 1.0 - ratio)


def noise_count_tail(threshold: int, pair_noise: tuple[float, float], doubled_noise: tuple[float, float] | None) -> float:
    """``P(A + 2B > threshold)`` for ``A ~ NB(pair_noise)`` and ``B ~ NB(doubled_noise)`` (``B = 0`` when None).

    Summed as ``sum_b P(B = b) P(A > threshold - 2b) + P(B > threshold // 2)``: every term is
    positive, so tails far below ``1e-16`` keep their relative precision (unlike ``1 - cdf``).

    Examples:
        >>> round(noise_count_tail(0, (1.0, 0.5), None), 12)  # P(Geometric > 0) = 1/2
        0.5
    """
    if threshold < 0:
        return 1.0
    first = _negative_binomial(*pair_noise)
    if doubled_noise is None or doubled_noise[0] == 0.0 or doubled_noise[1] == 0.0:
        return float(first.sf(threshold))
    second = _negative_binomial(*doubled_noise)
    halves = np.arange(threshold // 2 + 1)
    inside = float(np.sum(second.pmf(halves) * first.sf(threshold - 2 * halves)))
    return inside + float(second.sf(threshold // 2))


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


def signed_counts_cap(
    n_instances: int, exceed_probability: float, pair: tuple[float, float], flooding: tuple[float, float], owner: str
) -> SenderCap:
    """The cap of a user sending ``1 + A + 2B`` messages per instance at most (``A ~ NB(pair)``, ``B ~ NB(flooding)``).

    The least ``c`` whose probability of being exceeded in any of ``n_instances`` instances (a
    union bound) is at most ``exceed_probability``.
    """

    def tail(cap: int) -> float:
        return min(1.0, n_instances * noise_count_tail(cap - 1, pair, flooding))

    cap, exceed = smallest_cap(tail, exceed_probability, owner)
    return SenderCap(cap, cap * n_instances, exceed)
