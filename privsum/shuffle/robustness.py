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
from collections.abc import Iterable, Sequence

import numpy as np
from scipy import optimize, stats

from privsum._validation import check_integer, check_probability, invalid

__all__ = [
    "DEFAULT_CAP_TAIL_PROBABILITY",
    "EXACT_CAP_LIMIT",
    "check_malicious",
    "check_tail_probability",
    "chernoff_tail",
    "count_tail",
    "count_tails",
    "negative_binomial_excess",
    "weighted_negative_binomial_cap",
]

#: Default per-user, per-instance probability that an honest user sends more than the cap.
DEFAULT_CAP_TAIL_PROBABILITY = 1e-12

# Grid of theta / theta_max on which the Chernoff exponent is first scanned (then refined).
_THETA_GRID = 1.0 - np.geomspace(1e-12, 1.0 - 1e-6, 400)


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
    components = list(components)
    for shape, ratio, weight in components:
        if not (shape >= 0.0 and 0.0 <= ratio < 1.0 and weight >= 1):
            raise invalid("components", owner, "(shape >= 0, ratio in [0, 1), weight >= 1) triples", (shape, ratio, weight))
    excess, _ = negative_binomial_excess(components, tail)
    return constant + excess


def negative_binomial_excess(components: Iterable[tuple[float, float, int]], tail: float) -> tuple[int, float]:
    """``(c, p)``: the least ``c`` with ``p = P(sum_i w_i X_i > c) <= tail`` (``p`` an upper bound beyond `EXACT_CAP_LIMIT`).

    The one tail-quantile search behind every message cap (`weighted_negative_binomial_cap`,
    `privsum.shuffle.caps.noise_cap`); ``components`` are ``(shape, ratio, weight)`` triples,
    already checked (zero shape or ratio: constant zero). The Chernoff bound first gives a ``c``
    that qualifies; where it is at most twice `EXACT_CAP_LIMIT`, the exact tails (`count_tails`) up
    to it or `EXACT_CAP_LIMIT`, whichever is less, then give the least where one of them qualifies
    (with a 1e-9 relative margin). The Chernoff ``c`` is never below the exact quantile (a few tens
    of percent above it where the counts are heavy-tailed).

    Examples:
        >>> negative_binomial_excess([(1.0, 0.5, 1)], 1e-3)  # P(X > c) = 2^-(c+1)
        (9, 0.0009765625)
    """
    active = [(float(shape), float(ratio), int(weight)) for shape, ratio, weight in components if shape > 0.0 and ratio > 0.0]
    if not active:
        return 0, 0.0
    chernoff, bound = _chernoff_fit(active, tail)
    if chernoff > 2 * EXACT_CAP_LIMIT:  # the exact quantile is hardly within the exact range (and K c^2 work)
        return chernoff, bound
    exact = _exact_quantile(active, tail, min(chernoff, EXACT_CAP_LIMIT))
    return exact if exact is not None else (chernoff, bound)


#: Largest cap computed exactly (beyond, the Chernoff bound: the convolutions grow quadratically).
EXACT_CAP_LIMIT = 2**12


def _chernoff_excess(active: list[tuple[float, float, int]], tail: float) -> int:
    """A ``c`` with ``P(sum_i w_i X_i > c) <= tail`` by the Chernoff bound (every ``theta`` is valid)."""
    return _chernoff_fit(active, tail)[0]


def _chernoff_fit(active: list[tuple[float, float, int]], tail: float) -> tuple[int, float]:
    """`_chernoff_excess`'s ``c`` and the bound ``exp(K(theta) - theta c) <= tail`` it certifies at its ``theta``."""
    shapes, ratios, weights = (np.array(column) for column in zip(*active, strict=True))
    theta_max = float(np.min(-np.log(ratios) / weights))
    log_tail = math.log(tail)

    def cumulant(theta: float) -> float:
        return float(np.sum(shapes * (np.log1p(-ratios) - np.log1p(-ratios * np.exp(weights * theta)))))

    def needed(theta: float) -> float:
        """The least real ``c`` the bound at ``theta`` certifies."""
        return (cumulant(theta) - log_tail) / theta

    grid = _THETA_GRID * theta_max
    values = np.array([needed(theta) for theta in grid])
    best = int(np.argmin(values))
    low, high = grid[min(best + 1, grid.size - 1)], grid[max(best - 1, 0)]
    refined = optimize.minimize_scalar(needed, bounds=(min(low, high), max(low, high)), method="bounded")
    theta, least = (refined.x, refined.fun) if refined.success and refined.fun < values[best] else (grid[best], values[best])
    excess = math.ceil(least * (1 + 1e-12))
    return excess, min(tail, math.exp(cumulant(float(theta)) - theta * excess))


def _exact_quantile(active: list[tuple[float, float, int]], tail: float, upper: int) -> tuple[int, float] | None:
    """The least ``c <= upper`` with ``P(sum_i w_i X_i > c) <= tail`` (1e-9 relative margin) and that tail; ``None`` if none."""
    tails = count_tails(upper, active)
    meets = np.flatnonzero(tails * (1 + 1e-9) <= tail)
    return (int(meets[0]), min(float(tails[meets[0]]), tail)) if meets.size else None


def _exact_excess(active: list[tuple[float, float, int]], tail: float, upper: int) -> int:
    """The least ``c <= upper`` with ``P(sum_i w_i X_i > c) <= tail`` (``upper`` is known to qualify)."""
    exact = _exact_quantile(active, tail, upper)
    return exact[0] if exact is not None else upper
