"""The worst case of shuffled randomized response over every neighbour, by covering blocks of neighbours.

With ``k`` ones among the ``n - 1`` other users the count view is the pair of `CountPair`
(``zeros = n-1-k``, ``ones = k``). Privacy needs the maximum over every ``k`` and both
directions; the symmetry ``k <-> n-1-k`` (reflect the count, swap the directions) leaves
``k <= (n-1)/2`` with both directions.

Block bound (proved). For ``k`` in ``[a, a + m]`` write ``n-1-k = (n-1-a-m) + (a+m-k)`` and
``k = a + (k-a)``: the others' count is that of ``a`` ones and ``n-1-a-m`` zeros plus an independent
count of the remaining ``m`` users. Adding an independent variable is a Markov kernel applied to
both distributions of the pair, and the hockey-stick divergence is an f-divergence, so by the
data-processing inequality ``delta_k(e) <= delta'_a(e)`` for every ``e``, both directions, where
``delta'`` is the pair of ``n - m`` users with ``a`` ones among the others. One pair bounds a block.

The scans below evaluate a few neighbours exactly (``0``, ``(n-1)/2`` and a geometric sequence in
between), then cover the remaining ones by blocks from ``k = 0`` upwards (`cover`: each block a
factor larger than the last settled one, the factor shrinking after a block its bound does not
settle); a single neighbour is evaluated exactly, and larger blocks are bounded by
`coin_block_pair`, which keeps part of the dropped users' noise. Every neighbour is covered by a
settled block or an exact evaluation, so the results are upper bounds on the exact maximum, and
their slack above it is the settle rule's. With a work budget (window points over the pairs
evaluated) a scan seeds only ``k = 0`` and covers what is left when the budget runs out with a
few coarse blocks, whose bounds join the result: the time is bounded, the slack grows.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np

from privsum.bitsum._rr_pairs import CountPair, count_pair

__all__ = [
    "OutOfWorkError",
    "block_pair",
    "coin_block_pair",
    "cover",
    "meets_target",
    "seed_ks",
    "worst_case_deltas",
    "worst_case_epsilon",
    "worst_case_samples",
]


class _ViolationError(Exception):
    """An exactly evaluated neighbour above the threshold (ends a threshold scan early)."""

    def __init__(self, k: int, value: float) -> None:
        super().__init__(k, value)
        self.k, self.value = k, value


def block_pair(n_users: int, flip: float, first: int, last: int, tail_mass: float, fft_delta_error: float = 0.0) -> CountPair:
    """A pair dominating every neighbour ``k`` in ``first..last`` (exact when ``first == last``)."""
    return count_pair(n_users - 1 - last, first, flip, tail_mass, fft_delta_error)


def coin_block_pair(
    n_users: int, flip: float, first: int, last: int, tail_mass: float, fft_delta_error: float = 0.0
) -> tuple[CountPair, float]:
    """A pair dominating every neighbour in ``first..last`` that keeps part of the dropped users' noise.

    Returns the pair and an extra delta to add to its profile. Each report of the ``m = last - first``
    users the block bound drops is a mixture: with probability ``2q`` a fair coin, otherwise the
    user's bit (``Bern(q) = (1-2q) delta_0 + 2q Bern(1/2)``, ``Bern(1-q)`` likewise). Given which
    of them are coins (``S`` of them, ``S ~ Bin(m, 2q)``, whatever ``k``), the count is that of the
    block bound's pair plus ``Bin(S, 1/2)`` plus a known shift; the hockey-stick divergence is
    jointly convex, so every neighbour's delta is at most ``E[h(S)]``, ``h(s)`` the delta of the
    pair with ``s`` coins, which falls with ``s`` (more independent noise). With ``s0`` such that
    ``P(S < s0) <= tail_mass`` (Bernstein), ``E[h(S)] <= h(s0) + tail_mass``.
    """
    users = last - first
    mean, variance = users * 2.0 * flip, users * 2.0 * flip * (1.0 - 2.0 * flip)
    tail_mass = max(tail_mass, math.ulp(0.0))  # a larger tail is still bounded (and added): no log(1/0)
    log_term = -math.log(tail_mass)
    radius = log_term / 3.0 + math.sqrt((log_term / 3.0) ** 2 + 2.0 * variance * log_term)
    coins = max(0, math.ceil(mean - radius))  # P(S < coins) <= exp(-radius^2 / (2 (var + radius/3))) = tail
    pair = count_pair(n_users - 1 - last, first, flip, tail_mass, fft_delta_error, coins)
    return pair, (tail_mass if coins else 0.0)


def seed_ks(half: int) -> list[int]:
    """Neighbours evaluated exactly before any block: ``0``, ``half`` and a geometric sequence between."""
    if half <= 0:
        return [0]
    return sorted({0, half, *np.unique(np.geomspace(1, half, 24).astype(int)).tolist()})


class OutOfWorkError(Exception):
    """A work budget ran out before the block starting at ``first`` (neighbours below it are covered)."""

    def __init__(self, first: int) -> None:
        super().__init__(first)
        self.first = first


# Window points a pair is charged at least: its fixed cost (building it, a search over its count)
# is about that of a pair this wide, so many narrow pairs cannot outlast the budget's time.
_PAIR_OVERHEAD_POINTS = 2048


class _Work:
    """A budget of binomial-window points over the pairs a scan evaluates (``None``: unlimited)."""

    def __init__(self, budget: float | None) -> None:
        self.left = math.inf if budget is None else budget

    def spend(self, first: int, points: int) -> None:
        points = max(points, _PAIR_OVERHEAD_POINTS)
        if self.left < points:
            raise OutOfWorkError(first)
        self.left -= points


def cover(half: int, attempt: Callable[[int, int], bool], *, seeds: list[int] | None = None) -> None:
    """Offer ``attempt(first, last)`` blocks until every ``k`` in ``0..half`` is in a settled one.

    The seeds (`seed_ks` by default) come first, one at a time (an attempt on a single neighbour
    evaluates it exactly and must return True); then blocks from ``0`` upwards between the seeds.
    Each block is a factor larger than the last settled one; a block that does not settle is
    retried at the last settled size and the factor shrinks (towards 1.1; it grows back, up to 2,
    with each settled block), so that sizes track the largest that settles.
    """
    seeds = sorted(set(seed_ks(half) if seeds is None else seeds) | {half + 1})
    for k in seeds[:-1]:
        attempt(k, k)
    size, settled, growth = 1, 1, 2.0
    first = 0
    for stop in seeds:
        while first < stop:
            last = min(first + size - 1, stop - 1)
            if attempt(first, last):
                settled = last - first + 1
                size = max(settled + 1, int(settled * growth))
                growth = min(2.0, growth * 1.2)
                first = last + 1
            else:
                growth = max(1.1, math.sqrt(growth))
                size = max(1, min(settled, (last - first + 1) // 2))
        first = stop + 1  # past the seed


def meets_target(
    n_users: int, flip: float, epsilon: float, threshold: float, *, tail_mass: float, work: float | None = None
) -> tuple[bool, int, float]:
    """Whether every neighbour's delta at ``epsilon`` is at most ``threshold``.

    Returns ``(meets, k, bound)``: when it does not, a violating ``k`` and its delta; when it
    does, an upper bound on every neighbour's delta at ``epsilon`` (the largest of the settled
    blocks' bounds and exactly evaluated neighbours), at most ``threshold``.

    Raises:
        OutOfWorkError: the scan needs more than ``work`` window points (``None``: unlimited).
    """
    largest = 0.0
    budget = _Work(work)

    def attempt(first: int, last: int) -> bool:
        nonlocal largest
        pair = block_pair(n_users, flip, first, last, tail_mass)
        budget.spend(first, pair.width)
        value = pair.delta_at(epsilon)
        if value <= threshold:
            largest = max(largest, value)
            return True
        if first == last:
            raise _ViolationError(first, value)
        return False

    try:
        cover((n_users - 1) // 2, attempt)
    except _ViolationError as violation:
        return False, violation.k, violation.value
    return True, 0, largest


def worst_case_epsilon(
    n_users: int, flip: float, delta: float, *, rtol: float, tail_mass: float, work: float | None = None
) -> float:
    """An upper bound on ``max_k epsilon_k(delta)``, at most ``rtol`` (relative) above it within ``work``.

    Neighbours evaluated exactly give ``lower``, the largest exact epsilon. A block settles when
    its bound's delta at ``lower`` meets ``delta`` (its epsilon is at most ``lower``), or at
    ``lower (1 + rtol)`` (which then joins the result). Blocks are bounded by `coin_block_pair`
    (which is `block_pair` for blocks too small to keep any coin).

    With a ``work`` budget (binomial-window points over the pairs evaluated) only ``k = 0`` is
    seeded, the scan goes up from it (where the largest epsilons are) and, once `_EXACT_SHARE` of
    the budget is spent, settles blocks within `_LOOSE_RTOL` of ``lower`` instead of ``rtol``; should
    the budget run out with the neighbours from some ``k`` on still to cover, those are covered by
    `_COARSE_BLOCKS` equal coin blocks whose exact epsilons join the result. Always an upper bound;
    its slack above the maximum is ``rtol`` when the budget suffices, else up to about a percent.
    """
    lower = 0.0
    upper = 0.0
    budget = _Work(work)
    loose_after = -math.inf if work is None else budget.left * (1.0 - _EXACT_SHARE)  # left when the loose rtol starts
    half = (n_users - 1) // 2

    def attempt(first: int, last: int) -> bool:
        nonlocal lower, upper
        if first == last:
            pair = block_pair(n_users, flip, first, last, tail_mass)
            budget.spend(first, pair.width)
            lower = max(lower, pair.epsilon(delta))
            return True
        pair, extra = coin_block_pair(n_users, flip, first, last, tail_mass)
        budget.spend(first, pair.width)
        if not math.isfinite(lower):
            return True  # the result is infinite anyway
        if pair.delta_at(lower) + extra <= delta:
            return True
        threshold = lower * (1.0 + (max(rtol, _LOOSE_RTOL) if budget.left <= loose_after else rtol))
        if pair.delta_at(threshold) + extra <= delta:
            upper = max(upper, threshold)  # the block's epsilon is at most the threshold
            return True
        return False

    try:
        cover(half, attempt, seeds=None if work is None else [0])
    except OutOfWorkError as stop:
        upper = max(upper, _coarse_epsilon(n_users, flip, delta, stop.first, half, max(lower, upper)))
    return max(lower, upper)


# Share of a budgeted scan's work spent at ``rtol``; blocks after it settle within _LOOSE_RTOL.
_EXACT_SHARE = 0.65
_LOOSE_RTOL = 1e-3
# Blocks covering what a budgeted scan left, their pairs' tail mass and FFT error, as shares of delta.
_COARSE_BLOCKS = 8
_COARSE_TAIL_SHARE = 1e-5
_COARSE_FFT_SHARE = 1e-2


def _coarse_blocks(first: int, half: int) -> list[tuple[int, int]]:
    """`_COARSE_BLOCKS` (or fewer) equal blocks covering ``first..half``."""
    edges = np.unique(np.linspace(first, half + 1, _COARSE_BLOCKS + 1).round().astype(np.int64))
    return [(int(start), int(stop) - 1) for start, stop in itertools.pairwise(edges)]


def _coarse_epsilon(n_users: int, flip: float, delta: float, first: int, half: int, settled: float) -> float:
    """An upper bound on the epsilons of the coin blocks of `_coarse_blocks` covering ``first..half``.

    A block whose bound meets ``delta`` at ``settled`` (an epsilon already in the result) adds
    nothing; the others add their exact epsilons.
    """
    if not math.isfinite(settled):
        return settled
    tail = _COARSE_TAIL_SHARE * delta
    largest = 0.0
    for start, last in _coarse_blocks(first, half):
        pair, extra = coin_block_pair(n_users, flip, start, last, tail, _COARSE_FFT_SHARE * delta)
        if pair.delta_at(max(settled, largest)) + extra > delta:
            largest = max(largest, pair.epsilon(delta - extra))
    return largest


def worst_case_deltas(
    n_users: int,
    flip: float,
    epsilons: np.ndarray,
    *,
    rtol: float,
    atol: float,
    tail_mass: float,
    fft_delta_error: float = 0.0,
) -> tuple[np.ndarray, int]:
    """Upper bounds on ``max_k delta_k`` at each epsilon, each at most ``rtol`` (relative) plus ``atol`` above it.

    Returns the bounds and the last exactly evaluated ``k`` that raised the largest exact delta
    at some epsilon.
    """
    lower = np.zeros(epsilons.size)
    upper = np.zeros(epsilons.size)
    worst_k = 0

    def attempt(first: int, last: int) -> bool:
        nonlocal lower, upper, worst_k
        values = block_pair(n_users, flip, first, last, tail_mass, fft_delta_error).deltas(epsilons)
        if first == last:
            if np.any(values > lower):
                worst_k = first
            lower = np.maximum(lower, values)
        elif not np.all(values <= lower * (1.0 + rtol) + atol):
            return False
        upper = np.maximum(upper, values)
        return True

    cover((n_users - 1) // 2, attempt)
    return np.maximum(upper, lower), worst_k


def worst_case_samples(
    n_users: int,
    flip: float,
    epsilons: np.ndarray,
    *,
    stretch: float,
    rtol: float,
    atol: float,
    tail_mass: float,
    fft_delta_error: float = 0.0,
    work: float | None = None,
) -> np.ndarray:
    """Upper bounds ``u_i`` on ``m(epsilons[i])``, ``m(e) = max_k delta_k(e)``, with little slack above it.

    ``epsilons`` must be increasing. Each ``u_i`` is at most ``max(m(e_i / stretch),
    m(e_i) (1 + rtol), atol)``: the slack is mostly horizontal (the exact maximum at an epsilon
    smaller by the factor ``stretch``, the natural scale of a block bound, which acts like fewer
    users), with a relative ``rtol`` where epsilon is near 0. A block settles when its bound
    (`coin_block_pair`) is within that level of the largest exactly evaluated neighbours at every
    ``e_i``. Blocks are evaluated only up to the first epsilon ``e_J`` where the exact neighbours
    are below ``atol / 10`` (and at the last epsilon): a block settles only if its bound at
    ``e_J`` is at most ``atol``, and since every delta curve is non-increasing that bounds its
    values beyond too (they enter the result as the largest such bound, but at the last epsilon,
    where its own value does: a chord between upper bounds of a convex curve stays above it).

    With a ``work`` budget (as in `worst_case_epsilon`) only ``k = 0`` is seeded, and neighbours
    left when it runs out are covered by `_COARSE_BLOCKS` coin blocks: their bounds join the
    result (still upper bounds, with up to about a percent of slack).
    """
    both = np.concatenate([epsilons, epsilons / stretch])
    size = epsilons.size
    lower, lower_shrunk = np.zeros(size), np.zeros(size)
    upper = np.zeros(size)
    beyond = 0.0  # the largest settled block's bound at the last evaluated epsilon
    at_end = 0.0  # and at the last epsilon (the chords join it to the evaluated ones)
    stop = None  # blocks are evaluated at epsilons[:stop], fixed at the first block
    budget = _Work(work)
    half = (n_users - 1) // 2

    def settle(pair: CountPair, extra: float) -> bool:
        """Whether the block's bound is within the level; if so its values join the result."""
        nonlocal upper, beyond, at_end
        values = pair.deltas(epsilons[:stop]) + extra
        level = np.maximum(np.maximum(lower_shrunk[:stop], lower[:stop] * (1.0 + rtol)), atol)
        if not (np.all(values <= level) and values[-1] <= atol):
            return False
        upper[:stop] = np.maximum(upper[:stop], values)
        beyond = max(beyond, float(values[-1]))
        at_end = max(at_end, float(pair.deltas(epsilons[-1:])[0]) + extra)
        return True

    def attempt(first: int, last: int) -> bool:
        nonlocal lower, lower_shrunk, upper, stop
        if first == last:
            pair = block_pair(n_users, flip, first, last, tail_mass, fft_delta_error)
            budget.spend(first, pair.width)
            values = pair.deltas(both)
            lower = np.maximum(lower, values[:size])
            lower_shrunk = np.maximum(lower_shrunk, values[size:])
            upper = np.maximum(upper, values[:size])
            return True
        if stop is None:  # the first epsilon where the exact neighbours so far are all below atol / 10
            small = np.flatnonzero(lower <= atol / 10)
            stop = int(small[0]) + 1 if small.size else size
        pair, extra = coin_block_pair(n_users, flip, first, last, tail_mass, fft_delta_error)
        budget.spend(first, pair.width)
        return settle(pair, extra)

    try:
        cover(half, attempt, seeds=None if work is None else [0])
    except OutOfWorkError as out:
        if stop is None:
            small = np.flatnonzero(lower <= atol / 10)
            stop = int(small[0]) + 1 if small.size else size
        coarse_fft = max(fft_delta_error, atol / 2)
        rtol, atol = 1.0, 1.0  # every coarse block joins the result, whatever its slack
        for first, last in _coarse_blocks(out.first, half):
            settle(*coin_block_pair(n_users, flip, first, last, tail_mass, coarse_fft))
    if stop is not None:  # a settled block's values beyond the last evaluated epsilon are at most its value there
        upper[stop:-1] = np.maximum(upper[stop:-1], beyond)
        upper[-1] = max(upper[-1], at_end)
    return upper
