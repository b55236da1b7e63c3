"""A certified privacy bound for the correlated-noise sum at any number of levels, and its flooding calibration.

`CorrelatedNoiseSum.verify` composes, for every pair of rounded values, the exact 2-D central
block with the shifted triple counts: at ``D = 100`` levels the block alone needs billions of
grid cells and there are 5,050 pairs. This module bounds every pair at once with one
composition of one-dimensional pieces.

**Neighbouring relation and threat model.** Replace-one: one user's rounded value ``v`` in
``{0..D}`` is replaced by ``w``; the adversary sees the shuffled multiset (the message counts) of
one instance, with every other user's data fixed and known; trusted shuffler; all ``n_users``
take part (shapes are the calibrated totals).

**The latents.** The view is a fixed linear map of independent noise counts plus the data:
``U = A + P`` messages ``+1`` and ``V = B + P`` messages ``-1`` from the central block (``A, B``
i.i.d. ``Geom(a)`` = ``NB(1, a)``, ``P`` the pairs' ``NB(r_p, rho)``) and ``T_k`` triples of each
kind ``k = +-2..+-D``. Replacing ``v`` by ``w`` moves the view exactly as shifting the latents
by ``s(v, w) = rep(w) - rep(v)`` does (`CorrelatedNoiseSum.shift`): ``(g1, g2)`` on ``(U, V)``
and ``s_k`` on ``T_k``. The view of ``w`` is therefore the same map applied to the shifted
latents, and its privacy profile is at most that of the latent pair (post-processing).

**The central block in one dimension.** For i.i.d. geometrics, ``Dif = A - B ~ DLap(a)`` and
``M = min(A, B) ~ Geom(a^2)`` are independent (``P(A - B = d, min = m) = (1 - a)^2 a^(2m + |d|)``
factorises). ``(U, V)`` is in bijection with ``(Dif, Y)``, ``Y = min(U, V) = M + P``:
``U = Y + max(Dif, 0)``, ``V = Y + max(-Dif, 0)``. The shift ``(g1, g2)`` maps ``(Dif, Y)`` to
``(Dif + g1 - g2, Y + c(Dif))`` with ``c(d) = min(max(d, 0) + g1, max(-d, 0) + g2)``, which lies
between ``min(g1, g2)`` and ``max(g1, g2)``. Conditioning on the first coordinate, the
hockey-stick divergence of the block at ``e^eps`` is
``sum_d f(d) HS_{e^(eps - l(d))}(g || g(. - c))``, with ``f`` the DLap pmf and ``l(d)`` its loss;
if a pair ``W_Y`` dominates ``Y`` against ``Y + c`` for every ``c`` in the range (at every
``eps``, both directions), the block is dominated by the product ``DLap(g1 - g2) x W_Y``.

**Domination by the largest shift.** ``DLap``, ``NB(r, p)`` with ``r >= 1`` and their sums are
log-concave, so their location families have monotone likelihood ratios: the most powerful test
of ``X`` against ``X + m`` is a threshold on ``x`` for every ``m > 0``, and its power grows with
``m``. Hence the trade-off curve of ``(X, X + m)`` lies above that of ``(X, X + M)`` for
``0 <= m <= M``, and ``(X + m, X)`` is ``(X, X - m)`` moved; so the profile of ``X`` against
``X + M`` in both directions dominates every shift ``|m| <= M`` in both directions.

**The bound.** Let ``Dmax = D`` (``|g1 - g2| = |w - v| <= D``), ``H`` the largest ``|g1|, |g2|``
over all pairs, ``M_k`` the largest ``|s_k|`` and ``K`` the most triple kinds any one pair shifts.
``W_Y`` is the profile of ``Y`` against ``Y + H``; ``W`` is a symmetric dominating pair of the
pointwise maximum of the profiles of ``T_k`` against ``T_k + M_k`` over all kinds (Zhu, Dong &
Wang, AISTATS 2022; `privsum.accounting.envelope`). Every pair's latent pair is then dominated by
``DLap(D) x W_Y x W^K`` (domination is preserved by products; kinds a pair does not shift are
identities, dominated by ``W``), whose PLD composes with the certified FFT error carried into
delta (`privsum.accounting.PLDPair`). Truncated tails count as infinite loss. The tests check
this bound against `CorrelatedNoiseSum.verify` for every ``D <= 8`` tested.

References:
    Ghazi, Kumar, Manurangsi, Pagh & Sinha, "Differentially private aggregation in the shuffle
    model: almost central accuracy in almost a single message", ICML 2021; Zhu, Dong & Wang,
    "Optimal Accounting of Differential Privacy via Characteristic Function", AISTATS 2022.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from privsum._validation import check_integer, check_real, invalid
from privsum.accounting import PLDPair, PrivacyProfile
from privsum.accounting.calibration import bisect_last
from privsum.accounting.envelope import symmetric_pair_from_samples
from privsum.shuffle.noise import discrete_laplace_pmf, negative_binomial_truncated

__all__ = [
    "CERTIFIED_MAX_LEVELS",
    "COMMUNICATION_VARIANCE_FACTOR",
    "LOSS_STEP",
    "MAX_PMF_LENGTH",
    "MAX_TOTAL_LENGTH",
    "MAX_VARIANCE_FACTOR",
    "ShiftStructure",
    "certified_pld",
    "communication_flooding",
    "flooding_messages",
    "noisiest_ratio",
    "scaled_flooding",
    "shift_structure",
]

#: Discretisation of every privacy loss in the certified bound (a power of two: the envelope's losses are exact).
LOSS_STEP = 2.0**-14
#: Most levels the certified bound handles (the pairs are enumerated once to find ``K``, ``H`` and ``M_k``).
CERTIFIED_MAX_LEVELS = 1024
#: ``flooding="communication"``: the default central-noise variance allowed over the paper's, and the largest accepted.
COMMUNICATION_VARIANCE_FACTOR = 1.1
MAX_VARIANCE_FACTOR = 16.0
_TAIL = 1e-14
# Profile mass above the envelope's last sample is counted as infinite loss; the samples stop once
# every profile's finite part above them is below this (composed K times, far below any target).
_ENVELOPE_FINITE_FLOOR = 1e-15
# The samples are every multiple of LOSS_STEP while the finite part is above this, then every
# _COARSE_STRIDE-th (the chords there lie at most the finite part above the curve).
_FINE_FLOOR = 1e-12
_COARSE_STRIDE = 64
# Shapes tried by the flooding search (at least 1: log-concavity), and its resolution on log(kappa).
SEARCH_SHAPES = (4.0, 8.0, 16.0, 32.0)
_LOG_KAPPA_TOLERANCE = 0.02
#: Longest pmf of one noise count the bound builds (to its 1e-14 tail): the work bound of
#: `certified_pld` and of the search.
MAX_PMF_LENGTH = 2**22
#: Most pmf entries over all triple kinds (the counts are built one at a time).
MAX_TOTAL_LENGTH = 2**26
# The least kappa the search halves to.
_MIN_KAPPA = 0.5


@dataclass(frozen=True)
class ShiftStructure:
    """The largest latent shifts over all pairs of rounded values in ``{0..levels}`` (see the module).

    Attributes:
        levels: ``D``.
        central_shift: ``H``, the largest ``|g1|`` or ``|g2|`` of the central block's shift.
        kind_shifts: ``M_k`` for ``k = 2..D`` then ``k = -2..-D``: the largest ``|s_k|``.
        kinds_per_pair: ``K``, the most triple kinds with a non-zero shift in one pair.
    """

    levels: int
    central_shift: int
    kind_shifts: tuple[int, ...]
    kinds_per_pair: int

    def ratio_shift(self, size: int) -> int:
        """The larger of ``M_size`` and ``M_-size`` (kinds ``+-size`` share one ratio)."""
        half = self.levels - 1
        return max(self.kind_shifts[size - 2], self.kind_shifts[half + size - 2])


@functools.lru_cache(maxsize=32)
def shift_structure(levels: int) -> ShiftStructure:
    """`ShiftStructure` of ``levels``, from the latent representation of every rounded value."""
    from privsum.sums._correlated_verification import representation  # the triples' tree (imports this module)

    levels = check_integer(levels, "levels", "shift_structure", low=1, high=CERTIFIED_MAX_LEVELS)
    kinds = [("t", k) for k in range(2, levels + 1)] + [("t", -k) for k in range(2, levels + 1)]
    columns = {key: j for j, key in enumerate(["+", "-", *kinds])}
    table = np.zeros((levels + 1, len(columns)), dtype=np.int64)
    for value in range(levels + 1):
        for key, coefficient in representation(value).items():
            table[value, columns[key]] = coefficient
    spread = table.max(axis=0) - table.min(axis=0)  # max over pairs of |rep(w) - rep(v)|, per latent
    most = 0
    for value in range(levels):
        differs = table[value + 1 :, 2:] != table[value, 2:]
        most = max(most, int(differs.sum(axis=1).max()))
    return ShiftStructure(levels, int(max(spread[0], spread[1])), tuple(int(s) for s in spread[2:]), most)


def _shift_curve(pmf: np.ndarray, tail: float, shift: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The exact profile (both directions) of ``X`` against ``X + shift``, sampled (`_sample_indices`).

    Returns the sample indices (multiples of `LOSS_STEP`), the profile there, and the last index
    of the fine part. Mass beyond the pmf is infinite loss. Only the samples are kept: the
    envelope is built from one count at a time.
    """
    p = np.concatenate([pmf, np.zeros(shift)])
    q = np.concatenate([np.zeros(shift), pmf])
    both = (p > 0) & (q > 0)
    largest = float(np.abs(np.log(p[both]) - np.log(q[both])).max(initial=0.0))
    profile = PrivacyProfile(p, q, p_tail=tail, q_tail=tail)

    def finite_part(steps: int) -> float:
        return float(profile.delta(steps * LOSS_STEP)) - profile.infinite_mass

    indices, fine = _sample_indices(finite_part, math.ceil(largest / LOSS_STEP))
    return indices, np.atleast_1d(profile.delta(indices * LOSS_STEP)), fine


def _envelope_pld(curves: list[tuple[np.ndarray, np.ndarray, int]]) -> PLDPair:
    """PLD of a symmetric pair dominating the pointwise maximum of sampled profiles (both directions, every epsilon).

    The common grid is every multiple of `LOSS_STEP` up to the largest fine part, then every
    `_COARSE_STRIDE`-th up to the largest last sample; a profile is read at its last sample at or
    below each grid point (an upper bound: profiles do not increase). Between grid points the
    pair's curve is the chord, above the (convex) maximum; the last grid value becomes the pair's
    infinite-loss mass, an upper bound beyond it.
    """
    fine = max(curve[2] for curve in curves)
    top = max(int(curve[0][-1]) for curve in curves)
    grid = np.concatenate([np.arange(fine + 1), np.arange(fine + _COARSE_STRIDE, top + 1, _COARSE_STRIDE)])
    deltas = np.zeros(grid.size)
    for indices, values, _ in curves:
        at_or_below = np.searchsorted(indices, grid, side="right") - 1
        np.maximum(deltas, values[at_or_below], out=deltas)
    envelope = symmetric_pair_from_samples(grid * LOSS_STEP, np.minimum(deltas, 1.0), loss_step=LOSS_STEP)
    return PLDPair.from_profile(envelope, discretization=LOSS_STEP)


def _sample_indices(finite_part: Callable[[int], float], largest: int) -> tuple[np.ndarray, int]:
    """Sample points in units of `LOSS_STEP` and the last fine one: every one up to where the finite part is below
    `_FINE_FLOOR`, then every `_COARSE_STRIDE`-th up to where it is below `_ENVELOPE_FINITE_FLOOR` (or past
    the largest loss). Both ends are multiples of `_COARSE_STRIDE`, so the coarse points continue the fine grid."""
    fine = _COARSE_STRIDE
    while fine < largest and finite_part(fine) > _FINE_FLOOR:
        fine *= 2
    top = fine
    while top < largest and finite_part(top) > _ENVELOPE_FINITE_FLOOR:
        top *= 2
    top = min(top, _COARSE_STRIDE * (largest // _COARSE_STRIDE + 1))
    fine = min(fine, top)
    indices = np.concatenate([np.arange(fine + 1), np.arange(fine + _COARSE_STRIDE, top + 1, _COARSE_STRIDE)])
    return indices, fine


def _difference_pld(central_ratio: float, shift: int) -> PLDPair:
    """``DLap(a)`` against ``DLap(a) + shift``, tails beyond ``|d| > L`` (mass at most `_TAIL`) as infinite loss."""
    log_ratio = math.log(central_ratio)
    half = max(1, math.ceil((math.log(_TAIL) + math.log1p(central_ratio) - math.log(2.0)) / log_ratio))
    support = np.arange(-half, half + shift + 1)
    base = discrete_laplace_pmf(support, central_ratio)
    p = np.where(support <= half, base, 0.0)
    q = np.where(support >= shift - half, discrete_laplace_pmf(support - shift, central_ratio), 0.0)
    tail = 2.0 * central_ratio ** (half + 1) / (1.0 + central_ratio)
    return PLDPair.from_distributions(p, q, p_tail=tail, q_tail=tail, discretization=LOSS_STEP)


def _minimum_pair_pmf(central_ratio: float, pair_shape: float, pair_ratio: float) -> tuple[np.ndarray, float]:
    """pmf of ``Y = Geom(a^2) + NB(r_p, rho)`` (the block's second coordinate) and the mass beyond it.

    The geometric convolution is the recursion ``H(e) = p(e) + a^2 H(e - 1)`` (non-negative terms);
    the window stops where the geometric's tail ``a^(2(k+1))`` is below `_TAIL`.
    """
    from scipy.signal import lfilter

    pairs, pairs_tail = negative_binomial_truncated(pair_shape, pair_ratio, _TAIL)
    squared = central_ratio**2
    extra = max(1, math.ceil(math.log(_TAIL) / math.log(squared)))
    padded = np.concatenate([pairs, np.zeros(extra)])
    pmf = (1.0 - squared) * lfilter([1.0], [1.0, -squared], padded)
    return np.maximum(pmf, 0.0), pairs_tail + squared ** (extra + 1)


def certified_pld(
    levels: int,
    central_ratio: float,
    pair_shape: float,
    pair_ratio: float,
    triple_shape: float,
    triple_ratios: tuple[float, ...],
) -> PLDPair:
    """A PLD pair dominating every neighbouring pair of the count view (see the module): ``DLap(D) x W_Y x W^K``.

    Raises:
        InvalidParameterError: a shape below 1 (the bound needs log-concave counts), more than
            `CERTIFIED_MAX_LEVELS` levels, or a ratio so close to 1 that a pmf would exceed
            `MAX_PMF_LENGTH` entries (checked before any is built).
    """
    owner = "CorrelatedNoiseSum.certified_delta"
    levels = check_integer(levels, "levels", owner, low=1, high=CERTIFIED_MAX_LEVELS)
    for name, shape in (("pair_shape", pair_shape), ("triple_shape", triple_shape)):
        check_real(shape, name, owner, low=1.0)
    expected = f"small enough for the certified bound (each count's pmf at most {MAX_PMF_LENGTH} entries)"
    if not math.log(_TAIL) / math.log(central_ratio) <= MAX_PMF_LENGTH:  # the DLap's and Geom(a^2)'s half-widths
        raise invalid("central_ratio", owner, expected, central_ratio)
    if not _count_length(pair_shape, pair_ratio) <= MAX_PMF_LENGTH:
        raise invalid("pair_ratio", owner, expected, pair_ratio)
    if not _count_length(triple_shape, max(triple_ratios, default=0.0)) <= MAX_PMF_LENGTH:
        raise invalid("triple_ratios", owner, expected, max(triple_ratios))
    structure = shift_structure(levels)
    lengths = {ratio: _count_length(triple_shape, ratio) for ratio, _ in _distinct_triple_counts(structure, triple_ratios)}
    if not sum(lengths.values()) <= MAX_TOTAL_LENGTH:
        total = f"small enough for the certified bound (at most {MAX_TOTAL_LENGTH} pmf entries over all triple kinds)"
        raise invalid("triple_ratios", owner, total, f"{len(lengths)} ratios, {sum(lengths.values()):.3g} entries")
    pld = _difference_pld(central_ratio, levels)
    if structure.central_shift > 0:
        pmf, tail = _minimum_pair_pmf(central_ratio, pair_shape, pair_ratio)
        pld = pld.compose(_envelope_pld([_shift_curve(pmf, tail, structure.central_shift)]))
    if structure.kinds_per_pair == 0:
        return pld
    curves: dict[tuple[float, int], tuple[np.ndarray, np.ndarray, int]] = {}
    for ratio, shift in _distinct_triple_counts(structure, triple_ratios):
        pmf, tail = negative_binomial_truncated(triple_shape, ratio, _TAIL)
        curves[ratio, shift] = _shift_curve(pmf, tail, shift)
    triples = _envelope_pld(list(curves.values()))
    return pld.compose(triples.self_compose(structure.kinds_per_pair))


def _distinct_triple_counts(structure: ShiftStructure, triple_ratios: tuple[float, ...]) -> list[tuple[float, int]]:
    """The distinct ``(ratio, M_k)`` of the shifted triple kinds (kinds ``+-i`` share ``triple_ratios[i - 2]``)."""
    distinct = {}
    for index, shift in enumerate(structure.kind_shifts):
        if shift > 0:
            distinct[triple_ratios[index % (structure.levels - 1)], shift] = None
    return list(distinct)


def noisiest_ratio(paper_ratio: float, factor: float) -> float:
    """The largest ``a`` with ``2a/(1-a)^2 <= factor 2a0/(1-a0)^2`` (closed form; at least ``a0``)."""
    variance = factor * 2.0 * paper_ratio / (1.0 - paper_ratio) ** 2
    ratio = (variance + 1.0 - math.sqrt(2.0 * variance + 1.0)) / variance
    return max(paper_ratio, min(ratio, math.nextafter(1.0, 0.0)))


def _count_length(shape: float, ratio: float) -> float:
    """Entries of the truncated pmf of ``NB(shape, ratio)`` (`negative_binomial_truncated` at `_TAIL`), before building it."""
    from scipy import stats

    return float(stats.nbinom(shape, 1.0 - ratio).isf(_TAIL)) + 2.0


def fits_work_bound(pair_shape: float, pair_ratio: float, triple_shape: float, triple_ratios: tuple[float, ...]) -> bool:
    """Whether every flooding count's pmf has at most `MAX_PMF_LENGTH` entries (checked before any pmf is built)."""
    longest = max(_count_length(pair_shape, pair_ratio), _count_length(triple_shape, max(triple_ratios, default=0.0)))
    return longest <= MAX_PMF_LENGTH


def _ratio_for_sd(shape: float, sd: float) -> float:
    """The ``NB(shape, ratio)`` ratio with standard deviation ``sd`` (``shape p / (1-p)^2 = sd^2``)."""
    variance = sd * sd
    gap = (-shape + math.sqrt(shape * shape + 4.0 * variance * shape)) / (2.0 * variance)
    return 1.0 - gap


def scaled_flooding(levels: int, shape: float, kappa: float) -> dict[str, object]:
    """Flooding whose counts' standard deviations are ``kappa`` times the largest shift each must hide.

    Pairs: ``sd(NB(shape, rho)) = kappa H``; triples of size ``|i|``: ``kappa max(M_i, M_-i)``.
    """
    structure = shift_structure(levels)
    ratios = tuple(_ratio_for_sd(shape, kappa * max(1, structure.ratio_shift(size))) for size in range(2, levels + 1))
    return {
        "pair_shape": shape,
        "pair_ratio": _ratio_for_sd(shape, kappa * max(1, structure.central_shift)),
        "triple_shape": shape,
        "triple_ratios": ratios,
    }


def flooding_messages(levels: int, flooding: dict[str, object]) -> float:
    """Expected flooding messages over all users: ``2 r_p rho/(1-rho) + sum over kinds 3 r_t p_i/(1-p_i)``."""
    pair_ratio = float(flooding["pair_ratio"])  # type: ignore[arg-type]
    total = 2.0 * float(flooding["pair_shape"]) * pair_ratio / (1.0 - pair_ratio)  # type: ignore[arg-type]
    shape = float(flooding["triple_shape"])  # type: ignore[arg-type]
    for ratio in flooding["triple_ratios"]:  # type: ignore[attr-defined]
        total += 2 * 3 * shape * ratio / (1.0 - ratio)
    return total


def communication_flooding(
    epsilon: float, delta: float, levels: int, central_ratio: float
) -> tuple[dict[str, object], PLDPair] | None:
    """The flooding with the fewest expected messages whose certified delta at ``epsilon`` meets ``delta``.

    The family is `scaled_flooding`: one shape ``r`` for pairs and triples (in `SEARCH_SHAPES`)
    and one ``kappa``. For each shape, `_least_kappa` brackets the least ``kappa`` whose
    `certified_pld` meets the target by doubling or halving (from 64, then from a quarter of
    the previous shape's), then bisects on ``log(kappa)`` to within 2% (the messages grow with ``kappa``);
    shapes stop two past the best. Every point returned was evaluated and met the target.
    ``None`` if no shape meets it while the pmfs fit `MAX_PMF_LENGTH`. A function of public
    parameters only: callers cache it (`privsum.accounting.cache`).
    """
    best: tuple[dict[str, object], PLDPair] | None = None
    best_messages, worse_in_a_row, start = math.inf, 0, math.log(64.0)
    for shape in SEARCH_SHAPES:
        bound = best_messages

        def admissible(log_kappa: float, shape: float = shape, bound: float = bound) -> bool:
            """Small enough to certify here, and cheaper than the best so far."""
            flooding = scaled_flooding(levels, shape, math.exp(log_kappa))
            return fits_work_bound(**flooding) and flooding_messages(levels, flooding) < bound  # type: ignore[arg-type]

        def feasible(log_kappa: float, shape: float = shape) -> tuple[dict[str, object], PLDPair] | None:
            flooding = scaled_flooding(levels, shape, math.exp(log_kappa))
            pld = certified_pld(levels, central_ratio, **flooding)  # type: ignore[arg-type]
            return (flooding, pld) if pld.delta(epsilon) <= delta else None

        found, least = _least_kappa(feasible, admissible, start)
        start = least - math.log(4.0)  # warm start below: the next shape's least kappa is near, cheaper ones are below
        messages = flooding_messages(levels, found[0]) if found is not None else math.inf
        if messages < best_messages:
            best, best_messages, worse_in_a_row = found, messages, 0
        else:
            worse_in_a_row += 1
            if worse_in_a_row == 2:
                break
    return best


def _least_kappa(feasible: Callable[[float], Any], admissible: Callable[[float], bool], start: float) -> tuple[Any, float]:
    """The feasible point at the least ``log(kappa)`` found (or ``None``) and that ``log(kappa)`` (or ``start``).

    Bracketing from ``start``: halve while feasible (down to `_MIN_KAPPA`), or double until
    feasible while `admissible` (small enough and cheaper than the best), the last try at the
    largest admissible ``kappa``; then bisection.
    """
    step = math.log(2.0)
    found = feasible(start) if admissible(start) else None
    if found is not None:
        low, high = start - step, start
        while low > math.log(_MIN_KAPPA) and (point := feasible(low)) is not None:
            low, high, found = low - step, low, point
    else:
        low, high = start, start + step
        while True:
            if not admissible(high):  # the last try: the most flooding still admissible
                high = bisect_last(admissible, low, high, tolerance=1e-3)  # the largest admissible
                if high <= low or (found := feasible(high)) is None:
                    return None, start
                break
            if (found := feasible(high)) is not None:
                break
            low, high = high, high + step
    while high - low > _LOG_KAPPA_TOLERANCE:
        middle = 0.5 * (low + high)
        point = feasible(middle)  # cheaper than the feasible high end: admissible
        if point is None:
            low = middle
        else:
            high, found = middle, point
    return found, high
