"""Malicious senders: per-sender message caps and how far capped, well-formed messages move an estimate.

The shuffle model's privacy guarantees assume honest randomizers; its analyzers trust every
message they count. A *malicious* user who runs a modified client can still only send what the
shuffler accepts: messages inside the protocol's alphabet (anything else is refused), at most
`~privsum.shuffle.ShuffleProtocol.per_sender_message_cap` of them per instance. Every protocol
states, in `~privsum.shuffle.ShuffleProtocol.manipulation_bound`, the largest absolute shift of
each instance's estimate that ``k`` such users can cause.

For protocols whose honest users send a *random* number of messages (3NB, Pure, GKMPS21), the
cap is a tail quantile: the least ``c`` with ``P(an honest user sends more than c messages in one
instance) <= tail_probability``. Enforcing it (a shuffler refusing the upload of a sender over
the cap, or a client redrawing such a user's messages) changes the honest protocol's output
only on an event of probability at most ``n I tail_probability`` (``n`` senders, ``I``
instances, union bound); an ``(epsilon, delta)``
guarantee of the uncapped protocol gives ``(epsilon, delta + (1 + e^epsilon) n I
tail_probability)`` for the capped one (two mechanisms within total variation ``eta`` on every
input). Choose ``tail_probability`` so that this addition is negligible next to ``delta``.

The quantile is computed exactly from the counts' distribution (`weighted_negative_binomial_cap`;
the Chernoff bound beyond `EXACT_CAP_LIMIT`, which never undercounts the tail).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from scipy import optimize, stats

from privsum._validation import check_integer, check_probability, invalid

__all__ = [
    "DEFAULT_CAP_TAIL_PROBABILITY",
    "EXACT_CAP_LIMIT",
    "check_malicious",
    "check_tail_probability",
    "weighted_negative_binomial_cap",
]

#: Default per-user, per-instance probability that an honest user sends more than the cap.
DEFAULT_CAP_TAIL_PROBABILITY = 1e-12

# Grid of theta / theta_max on which the Chernoff exponent is first scanned (then refined).
_THETA_GRID = 1.0 - np.geomspace(1e-12, 1.0 - 1e-6, 400)


def check_malicious(n_malicious: object, owner: str) -> int:
    """``n_malicious`` as a non-negative integer (the number of malicious senders)."""
    return check_integer(n_malicious, "n_malicious", owner, low=0)


def check_tail_probability(tail_probability: object, owner: str) -> float:
    """``tail_probability`` in ``(0, 1)``."""
    return check_probability(tail_probability, "tail_probability", owner, allow_zero=False)


def weighted_negative_binomial_cap(components: Iterable[tuple[float, float, int]], constant: int, tail_probability: float) -> int:
    """The least ``c`` with ``P(constant + sum_i w_i X_i > c) <= tail_probability``, ``X_i ~ NB(shape_i, ratio_i)`` independent.

    ``components`` holds ``(shape, ratio, weight)`` triples (ratio parameterisation of
    `privsum.shuffle.noise`; a message kind sent ``weight`` at a time, e.g. 2 for a flooding
    pair). Components with zero shape or ratio are constant zero.

    Computed exactly where the answer is at most `EXACT_CAP_LIMIT`: with ``S_i`` the partial
    sums, ``P(S_m > t) = P(S_1 > t) + sum_{i >= 2} sum_{x <= t} P(S_{i-1} = x) P(w_i X_i > t - x)``
    (the first partial sum to pass ``t``), a sum of positive terms from scipy's pmf and survival
    function, for every ``t`` at once by one convolution per component. Beyond, the Chernoff
    bound ``min_theta exp(K(theta) - theta (c - constant))`` (``K`` the cumulant generating
    function) gives a ``c`` that is never below the exact quantile (a few tens of percent above it
    where the counts are heavy-tailed).

    Examples:
        >>> weighted_negative_binomial_cap([(1.0, 0.5, 1)], 0, 1e-3)  # P(X > c) = 2^-(c+1)
        9
        >>> weighted_negative_binomial_cap([], 1, 1e-12)
        1
    """
    owner = "weighted_negative_binomial_cap"
    tail = check_tail_probability(tail_probability, owner)
    constant = check_integer(constant, "constant", owner, low=0)
    active = []
    for shape, ratio, weight in components:
        if not (shape >= 0.0 and 0.0 <= ratio < 1.0 and weight >= 1):
            raise invalid("components", owner, "(shape >= 0, ratio in [0, 1), weight >= 1) triples", (shape, ratio, weight))
        if shape > 0.0 and ratio > 0.0:
            active.append((float(shape), float(ratio), int(weight)))
    if not active:
        return constant
    chernoff = _chernoff_excess(active, tail)
    if chernoff > EXACT_CAP_LIMIT:
        return constant + chernoff
    return constant + _exact_excess(active, tail, chernoff)


#: Largest cap computed exactly (beyond, the Chernoff bound: the convolutions grow quadratically).
EXACT_CAP_LIMIT = 2**13


def _chernoff_excess(active: list[tuple[float, float, int]], tail: float) -> int:
    """A ``c`` with ``P(sum_i w_i X_i > c) <= tail`` by the Chernoff bound (every ``theta`` is valid)."""
    shapes, ratios, weights = (np.array(column) for column in zip(*active, strict=True))
    theta_max = float(np.min(-np.log(ratios) / weights))
    log_tail = math.log(tail)

    def needed(theta: float) -> float:
        """The least real ``c`` the bound at ``theta`` certifies."""
        cumulant = float(np.sum(shapes * (np.log1p(-ratios) - np.log1p(-ratios * np.exp(weights * theta)))))
        return (cumulant - log_tail) / theta

    grid = _THETA_GRID * theta_max
    values = np.array([needed(theta) for theta in grid])
    best = int(np.argmin(values))
    low, high = grid[min(best + 1, grid.size - 1)], grid[max(best - 1, 0)]
    refined = optimize.minimize_scalar(needed, bounds=(min(low, high), max(low, high)), method="bounded")
    least = min(values[best], refined.fun if refined.success else math.inf)
    return math.ceil(least * (1 + 1e-12))


def _exact_excess(active: list[tuple[float, float, int]], tail: float, upper: int) -> int:
    """The least ``c <= upper`` with ``P(sum_i w_i X_i > c) <= tail`` (``upper`` is known to qualify)."""
    points = np.arange(upper + 1)
    tails = np.zeros(upper + 1)
    partial = None  # pmf of the partial sum on 0..upper
    for shape, ratio, weight in active:
        survival = stats.nbinom.sf(points // weight, shape, 1.0 - ratio)  # P(w X > y)
        pmf = np.where(points % weight == 0, stats.nbinom.pmf(points // weight, shape, 1.0 - ratio), 0.0)
        if partial is None:
            tails += survival
            partial = pmf
        else:
            tails += np.convolve(partial, survival)[: upper + 1]
            partial = np.convolve(partial, pmf)[: upper + 1]
    meets = np.flatnonzero(tails * (1 + 1e-9) <= tail)
    return int(meets[0]) if meets.size else upper
