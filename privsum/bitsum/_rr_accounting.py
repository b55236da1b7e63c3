"""Randomized response's worst case over every neighbour: the exact headline, the profile and the tight flip search.

`~privsum.bitsum.rr.RRBitSum` composes by the pair dominating its worst-case profile and calibrates
by the searches here; `privsum.bitsum._rr_worst_case` holds the block bounds they rest on.

References:
    Wagner, "Learning from End User Data with Shuffled Differential Privacy over Kernel
    Densities", ICLR 2025.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from privsum._validation import check_array, check_delta, check_integer, check_real, invalid
from privsum.accounting.calibration import calibrate
from privsum.accounting.envelope import SampledEnvelope, symmetric_pair_from_samples
from privsum.accounting.events import ProfileEvent
from privsum.accounting.guarantee import Neighbouring
from privsum.accounting.profile import PrivacyProfile
from privsum.bitsum._rr_pairs import count_pair, largest_crowd, window_points
from privsum.bitsum._rr_worst_case import OutOfWorkError, meets_target, worst_case_deltas, worst_case_epsilon, worst_case_samples
from privsum.exceptions import InvalidParameterError

__all__ = ["rr_worst_case_delta_bound", "rr_worst_case_epsilon", "rr_worst_case_profile", "worst_case_event"]

_SMALLEST_FLIP = 1e-12
# A verified delta may exceed its target only by float rounding.
VERIFIED_RTOL = 1e-9


def verified_worst_case_profile(n_users: int, flip: float, delta: float, epsilon: float, bound: float) -> PrivacyProfile:
    """`rr_worst_case_profile` with an absolute slack of ``1e-3 delta`` and the sample at ``epsilon`` at most ``bound``.

    ``bound`` must be an upper bound on every neighbour's delta at ``epsilon``, already proved by
    the caller (the calibration's verification, or the verified epsilon at ``delta``).
    """
    atol = _profile_atol(delta)
    crowd = _computed_crowd(n_users, flip, _profile_tail(atol))
    grid, upper = _regular_samples(crowd, flip, atol, _PROFILE_RESOLUTION, _ENVELOPE_STRETCH, _ENVELOPE_RTOL)
    return _envelope(grid, upper, np.array([epsilon]), np.array([bound]))


def worst_case_event(n_users: int, flip: float, delta: float) -> ProfileEvent:
    """The worst-case profile's event with the headline the profile itself gives at ``delta``.

    The same pair as `RRBitSum.event`'s but without the verified headline sample (so without its
    search over every neighbour for the headline): for calibrations that only compose it.
    """
    atol = _profile_atol(delta)
    crowd = _computed_crowd(n_users, flip, _profile_tail(atol))
    grid, upper = _regular_samples(crowd, flip, atol, _PROFILE_RESOLUTION, _ENVELOPE_STRETCH, _ENVELOPE_RTOL)
    return ProfileEvent.at_delta(_envelope(grid, upper, np.zeros(0), np.zeros(0)), delta)


def _profile_atol(delta: float) -> float:
    return min(1e-3, _PROFILE_ATOL_SHARE * delta)


# ---------------------------------------------------------------------------------------------
# Worst case over every neighbour (privsum.bitsum._rr_worst_case): a few neighbours evaluated
# exactly, the rest covered by blocks, each bounded by ONE pair (that of n - m users), so only a
# few hundred pairs are evaluated at any n.
# ---------------------------------------------------------------------------------------------

# Mass cut from each tail of each binomial (Bernstein's inequality); it is added to delta.
_TAIL_MASS = 1e-30
# Relative slack of the worst-case epsilon and deltas above the exact maximum over k.
_BOUND_RTOL = 1e-9
# Slack of the worst-case profile's samples (`rr_worst_case_profile`): at most the exact maximum
# at an epsilon smaller by this factor, or (near epsilon 0) this relative amount above it.
_ENVELOPE_STRETCH = 1.0025
_ENVELOPE_RTOL = 5e-3
# Epsilon step of the worst-case profile's samples (`rr_worst_case_profile`'s default): a power of
# two, so that its multiples are exact and the profile's privacy-loss distribution is exact at it.
_PROFILE_RESOLUTION = 2.0**-10
# Absolute slack of an RRBitSum event's profile samples, as a share of its delta.
_PROFILE_ATOL_SHARE = 1e-3
# Work (binomial-window points over the pairs evaluated) of a protocol's headline epsilon and of
# a worst-case profile: the worst case to 1e-9 (headline) or to the profile's slack while it
# suffices, a bound with up to about a percent of slack beyond (very large n q (1-q)).
_HEADLINE_WORK = 4e6
_PROFILE_WORK = 4e6
# Widest binomial window (points; 8 MiB of float64) a worst-case computation builds. RRBitSum's
# headline and profile for a larger crowd (n q (1 - q) above about 3 10^9 at delta = 1e-8) are
# those of the largest crowd within it, an upper bound (`_computed_crowd`); the functions exact
# to 1e-9 refuse such crowds.
_WIDEST_WINDOW = 2**20
# Widest window of a protocol's worst-case profile: the samples of a larger crowd (n q (1 - q)
# above about 5 10^8) would take minutes, so its event is the verified headline as a generic
# (epsilon, delta) pair.
_PROFILE_WIDEST_WINDOW = 2**19
# Work of the tight calibration's check over every neighbour; beyond it the headline decides.
_VERIFY_WORK = 4e6
# Steps of the headline-decided calibration before it settles for the epsilon-LDP flip.
_HEADLINE_STEPS = 16


def rr_worst_case_delta_bound(
    n_users: int, flip_probability: float, epsilons: float | np.ndarray, *, return_worst_k: bool = False
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Upper bound, within a relative ``1e-9``, on the worst-case delta of shuffled RR over every neighbour.

    Same quantity as `privsum.bitsum.exact.rr_worst_case_delta` (the reference, which visits
    every ``k``), computed from a few hundred pairs instead of ``n / 2``.

    Privacy:
        Replace-one. Block bound (proved): for ``k`` in ``[a, a + m]`` write
        ``n-1-k = (n-1-a-m) + (a+m-k)`` and ``k = a + (k-a)``: the others' count is that of
        ``n - m`` users with ``a`` ones among the others plus an independent count, a Markov
        kernel applied to both distributions of the pair. The hockey-stick divergence is an
        f-divergence, so by the data-processing inequality ``delta_k(e) <= delta^(n-m)_a(e)`` for
        every ``e`` and both directions. Symmetry ``k <-> n-1-k`` (reflect the count, swap
        directions) leaves ``k <= (n-1)/2``. Every neighbour is either evaluated exactly or in a
        block whose bound is within ``1e-9`` (relative) of an exactly evaluated neighbour at every
        epsilon, and those bounds enter the result, so it is an upper bound on the exact maximum.
        Binomial tails beyond a Bernstein radius (at most ``1e-30`` per side) are counted as
        infinite loss.

    Args:
        n_users: users taking part.
        flip_probability: the RR flip probability in ``(0, 0.5)``.
        epsilons: one or more epsilon values ``>= 0``.
        return_worst_k: also return the ``k <= (n-1)/2`` of the exactly evaluated neighbour that
            last raised the maximum.

    Examples:
        >>> bound = rr_worst_case_delta_bound(100_000, 3.4e-4, [0.7, 1.0])
        >>> bool(bound[0] > bound[1] > 0)
        True
    """
    owner = "rr_worst_case_delta_bound"
    n_users = check_integer(n_users, "n_users", owner, low=1)
    if not isinstance(return_worst_k, (bool, np.bool_)):
        raise invalid("return_worst_k", owner, "True or False", return_worst_k)
    flip = _checked_flip(flip_probability, owner)
    eps = _checked_epsilons(epsilons, owner)
    n_users = _check_computable(n_users, flip, _TAIL_MASS, owner)
    upper, worst_k = worst_case_deltas(n_users, flip, eps, rtol=_BOUND_RTOL, atol=4 * _TAIL_MASS, tail_mass=_TAIL_MASS)
    return (upper, np.full(eps.size, worst_k, dtype=np.int64)) if return_worst_k else upper


def rr_worst_case_epsilon(n_users: int, flip_probability: float, delta: float) -> float:
    """Upper bound, within a relative ``1e-9``, on ``max_k epsilon_k(delta)`` over every neighbour ``k``.

    ``max_k delta_k(e) <= delta`` holds exactly when ``e >= epsilon_k(delta)`` for every ``k``, so
    this is the smallest epsilon the worst case backs at ``delta`` (rounded up). Same block bound
    as `rr_worst_case_delta_bound` (a pair dominating a block has a larger ``epsilon(delta)``);
    blocks large enough also keep part of the noise of the users the bound drops (each report
    is a fair coin with probability ``2q``, whatever the bit: joint convexity of the hockey-stick
    divergence over which reports are coins). One neighbour's epsilon needs no convolution (its
    count is log-concave, so the hockey-stick sums are prefix and suffix sums at a crossing
    found by search), but the number of neighbours to evaluate exactly grows with ``n`` (about
    ``sqrt(n)``): at 10^6 users and ``q = 1/4`` this takes seconds. `RRBitSum`'s headline bounds
    the work instead (and its slack, stated there).

    Raises:
        InvalidParameterError: ``n_users`` so large that a binomial window of the others' count
            would pass 2^20 points (``n q (1-q)`` above about 2 10^9).

    Args:
        n_users: users taking part.
        flip_probability: the RR flip probability in ``(0, 0.5)``.
        delta: the delta in ``(0, 1)``.

    Examples:
        >>> epsilon = rr_worst_case_epsilon(2000, 0.02, 1e-6)
        >>> bool(rr_worst_case_delta_bound(2000, 0.02, epsilon)[0] <= 1e-6 * (1 + 1e-9))
        True
    """
    owner = "rr_worst_case_epsilon"
    n_users = check_integer(n_users, "n_users", owner, low=1)
    flip = _checked_flip(flip_probability, owner)
    delta = check_delta(delta, owner, allow_zero=False)
    return _verified_epsilon(_check_computable(n_users, flip, _bound_tail(delta), owner), flip, delta)


def rr_worst_case_profile(
    n_users: int,
    flip_probability: float,
    *,
    atol: float = 1e-15,
    resolution: float = _PROFILE_RESOLUTION,
    epsilons: Any = (),
    stretch: float = _ENVELOPE_STRETCH,
    rtol: float = _ENVELOPE_RTOL,
) -> PrivacyProfile:
    """A symmetric pair dominating shuffled RR's profile for **every** neighbour, both directions.

    The maximum ``m(e)`` over every ``k`` (ones among the others) and both directions of the
    exact ``delta_k(e)`` is sampled on a grid of epsilons (step ``resolution``, from 0 to the
    largest possible privacy loss ``log((1-q)/q)``, plus any ``epsilons`` given): every sample is
    an upper bound on ``m`` and at most ``max(m(e / stretch), m(e) (1 + rtol), atol)``. The slack
    is a block bound's natural one (dropping users acts like shrinking epsilon); composing the
    pair costs about half of ``max(stretch - 1, rtol)`` in the composed epsilon. The pair whose
    profile is the chord interpolation of the samples is built by
    `privsum.accounting.envelope.symmetric_pair_from_samples`. Its profile is at least every
    ``delta_k`` at every epsilon (chords of a convex curve lie above it), and its privacy-loss
    distribution composes RR by its worst case (`RRBitSum.event`).

    Args:
        n_users: users taking part.
        flip_probability: the RR flip probability in ``(0, 0.5)``.
        atol: absolute slack accepted in each sample (half for the blocks, half for the error
            bound of FFT convolutions, both counted in full).
        resolution: epsilon step of the samples; a power of two (the default, 2^-10) makes them exact
            multiples, so that the pair's privacy-loss distribution at that step is exact.
        epsilons: extra sample points, where the sample is tight to a relative ``1e-9`` (plus
            ``1e-6 atol``): a tighter upper bound than the grid's (lowering one sample of a convex
            curve keeps the chords convex and above the curve).
        stretch: the horizontal slack factor, at least 1 (see above).
        rtol: the relative slack, at least 0 (see above).

    Privacy:
        Replace-one, one instance; the pair dominates every neighbouring pair of the count view.

    References:
        Zhu, Dong & Wang, "Optimal Accounting of Differential Privacy via Characteristic
        Function", AISTATS 2022 (profiles and dominating pairs).

    Examples:
        >>> from privsum.bitsum.exact import rr_worst_case_delta
        >>> pair = rr_worst_case_profile(300, 0.05, epsilons=[0.7])
        >>> exact = rr_worst_case_delta(300, 0.05, 0.7)[0]
        >>> bool(exact <= pair.delta(0.7) <= exact * (1 + 1e-2) + 1e-15)
        True
    """
    owner = "rr_worst_case_profile"
    n_users = check_integer(n_users, "n_users", owner, low=1)
    flip = _checked_flip(flip_probability, owner)
    atol = check_real(atol, "atol", owner, low=0.0, high=1e-3, low_open=True)
    resolution = check_real(resolution, "resolution", owner, low=1e-6, high=0.1)
    stretch = check_real(stretch, "stretch", owner, low=1.0, high=2.0)
    rtol = check_real(rtol, "rtol", owner, low=0.0, high=1.0)
    extra = _checked_epsilons(epsilons, owner) if np.size(epsilons) else np.zeros(0)
    largest_loss = _largest_loss(flip)
    if math.ceil(largest_loss / resolution) > 1_000_000:
        raise invalid("resolution", owner, f"coarse enough for at most 10^6 samples up to epsilon {largest_loss:.3g}", resolution)
    n_users = _check_computable(n_users, flip, min(_profile_tail(atol), _TAIL_MASS, atol * 1e-9), owner)
    grid, upper = _regular_samples(n_users, flip, atol, resolution, stretch, rtol)
    extra = extra[extra < largest_loss]
    tight = np.zeros(0)
    if extra.size:  # the requested points to within a relative 1e-9: tighter upper bounds join the samples
        tight, _ = worst_case_deltas(
            n_users, flip, extra, rtol=_BOUND_RTOL, atol=atol * 1e-6, tail_mass=min(_TAIL_MASS, atol * 1e-9)
        )
    return _envelope(grid, upper, extra, tight)


def _largest_loss(flip: float) -> float:
    """Every likelihood ratio of the count view is below ``e^`` this."""
    return math.log((1.0 - flip) / flip) + 1e-9


@functools.lru_cache(maxsize=32)
def _regular_samples(
    n_users: int, flip: float, atol: float, resolution: float, stretch: float, rtol: float
) -> tuple[np.ndarray, np.ndarray]:
    """The worst case's upper bounds on the grid of step ``resolution`` from 0 to the largest loss (read-only, cached)."""
    grid = resolution * np.arange(math.ceil(_largest_loss(flip) / resolution) + 1)  # exact multiples of the step
    upper = worst_case_samples(
        n_users,
        flip,
        grid,
        stretch=stretch,
        rtol=rtol,
        atol=atol / 2,
        tail_mass=_profile_tail(atol),
        fft_delta_error=atol / 2,
        work=_PROFILE_WORK,
    )
    grid.setflags(write=False)
    upper.setflags(write=False)
    return grid, upper


def _envelope(grid: np.ndarray, upper: np.ndarray, points: np.ndarray, bounds: np.ndarray) -> SampledEnvelope:
    """The symmetric pair of the samples, with upper bounds ``bounds`` at ``points`` as further samples.

    Every sample is an upper bound on the maximum profile at its epsilon, so adding proved bounds
    at more points keeps the chords above it (where a point is already on the grid, the smaller
    of the two bounds is kept). The grid's step, when a power of two, is the pair's loss step.
    """
    step = float(grid[1] - grid[0])
    inside = points < grid[-1]  # beyond the last sample the profile is constant already
    points, bounds = points[inside], bounds[inside]
    merged = np.union1d(grid, points)
    samples = np.ones(merged.size)
    samples[np.searchsorted(merged, grid)] = upper
    at = np.searchsorted(merged, points)
    samples[at] = np.minimum(samples[at], bounds)
    return symmetric_pair_from_samples(
        merged,
        np.minimum(samples, 1.0),
        neighbouring=Neighbouring.REPLACE_ONE,
        loss_step=step if math.frexp(step)[0] == 0.5 else None,
    )


def _profile_tail(atol: float) -> float:
    """Tail mass of the profile's pairs: tiny, since their cut is the profile's mass of infinite loss (a delta floor)."""
    return min(_TAIL_MASS, atol * 1e-6)


def _checked_flip(value: float, owner: str) -> float:
    return check_real(value, "flip_probability", owner, low=0.0, high=0.5, low_open=True, high_open=True)


def _checked_epsilons(epsilons: float | np.ndarray, owner: str) -> np.ndarray:
    if isinstance(epsilons, bool):
        raise invalid("epsilons", owner, "finite values >= 0", epsilons)
    eps = np.atleast_1d(check_array(epsilons, "epsilons", owner, ndim=(0, 1))).astype(float)
    if not (eps.ndim == 1 and np.all(np.isfinite(eps)) and np.all(eps >= 0)):
        raise invalid("epsilons", owner, "finite values >= 0", epsilons)
    return eps


def _bound_tail(delta: float) -> float:
    """Tail mass of the pairs checked against ``delta``: their cut (four tails) costs at most ``4e-12 delta``."""
    return min(1e-20, 1e-12 * delta)


def meets_flip_target(n_users: int, flip: float, epsilon: float, delta: float) -> tuple[bool, int, float]:
    """Whether every neighbour's delta at ``epsilon`` is at most ``delta`` (up to float rounding).

    Returns ``(meets, k, bound)``: a violating ``k`` when it does not meet the target, and
    ``bound``, an upper bound on every neighbour's delta at ``epsilon`` when it does (the largest
    bound of the settled blocks and exactly evaluated neighbours).

    Raises:
        OutOfWorkError: the check needs more than `_VERIFY_WORK`.
    """
    tail = _bound_tail(delta)
    crowd = _computed_crowd(n_users, flip, tail)
    return meets_target(crowd, flip, epsilon, delta * (1 + VERIFIED_RTOL), tail_mass=tail, work=_VERIFY_WORK)


def tight_flip_probability(epsilon: float, delta: float, n_users: int) -> tuple[float, float]:
    """Least ``q`` (within a relative ``1e-6`` of ``log q``) against a growing set of neighbours, verified over all of them.

    Returns ``(q, bound)``: ``bound`` is an upper bound on every neighbour's delta at
    ``epsilon``, at most ``delta (1 + 1e-9)`` (``delta`` itself for the epsilon-LDP flip).
    """
    local = 1.0 / (1.0 + math.exp(epsilon))  # epsilon-LDP: meets any delta
    tail = _bound_tail(delta)
    n_users = _computed_crowd(n_users, local, tail)  # every q searched is below local: narrower windows
    candidates = {0}
    log_start = None
    for _ in range(40):

        def delta_at(log_flip: float, ks: frozenset[int] = frozenset(candidates)) -> float:
            flip = math.exp(log_flip)
            return max(count_pair(n_users - 1 - k, k, flip, tail).delta_at(epsilon) for k in ks)

        lowest = math.log(_SMALLEST_FLIP) if log_start is None else log_start  # more neighbours need at least as much noise
        try:
            log_flip = calibrate(
                delta_at, target_delta=delta, lower=lowest, upper=math.log(local), more_private="increasing", method="illinois"
            )
        except InvalidParameterError:  # delta below the numerical accuracy of the bound: epsilon-LDP meets any delta
            return local * (1.0 + 1e-12), delta  # rounded towards more privacy: its local epsilon is below epsilon
        flip = min(math.exp(log_flip), local)
        try:
            meets, violating_k, bound = meets_flip_target(n_users, flip, epsilon, delta)
        except OutOfWorkError:  # too many neighbours to verify one by one: the budgeted headline decides
            return _headline_flip_probability(epsilon, delta, n_users, flip), delta
        if meets:
            return flip, bound
        candidates.add(violating_k)
        log_start = log_flip
    raise RuntimeError("RRBitSum: tight calibration did not converge; use calibration='analytic'")  # pragma: no cover


def _headline_flip_probability(epsilon: float, delta: float, n_users: int, flip: float) -> float:
    """A ``q`` at least ``flip`` whose headline (`headline_epsilon`) is at most ``epsilon``, near the least such.

    Every neighbour's delta at the headline, hence at ``epsilon``, is then at most ``delta``.
    ``flip`` must be a lower bound (tight against some neighbours). The headline's slack (about a
    percent at most) makes ``q`` up to a few percent larger than the tight one. Steps up scale
    ``q`` by the squared ratio of the headline to the target (epsilon falls about as
    ``1/sqrt(q)`` here); once a ``q`` meets the target, bisection (in ``log q``) narrows the gap
    to a relative ``1e-3`` within `_HEADLINE_STEPS` headlines in all.
    """
    local = 1.0 / (1.0 + math.exp(epsilon))
    low, high = flip, None  # low misses the target (or is the lower bound); high meets it
    for _ in range(_HEADLINE_STEPS):
        if high is None:
            trial = flip
        elif high <= low * (1.0 + 1e-3):
            break
        else:
            trial = math.sqrt(low * high)
        headline = headline_epsilon(n_users, trial, delta)
        if headline <= epsilon:
            high = trial
        else:
            low = trial
            if high is None:
                if flip >= local:
                    break
                flip = min(local, flip * max(1.0 + 1e-3, (headline / epsilon) ** 2))
    if high is None:
        return local * (1.0 + 1e-12)  # epsilon-LDP, rounded towards more privacy: meets any delta
    return high


def _verified_epsilon(n_users: int, flip: float, delta: float, work: float | None = None) -> float:
    """Smallest epsilon (rounded up) whose worst-case delta over every neighbour is at most ``delta``.

    Within a relative ``1e-9`` without a ``work`` budget; with one, an upper bound whose slack
    grows only when the budget does not suffice (`privsum.bitsum._rr_worst_case.worst_case_epsilon`).
    Never above the local epsilon ``log((1-q)/q)`` (every neighbour's privacy loss is below it).
    """
    shuffled = worst_case_epsilon(n_users, flip, delta, rtol=_BOUND_RTOL, tail_mass=_bound_tail(delta), work=work)
    return min(shuffled, _largest_loss(flip))


def headline_epsilon(n_users: int, flip: float, delta: float) -> float:
    """A protocol's headline: `_verified_epsilon` within the work of `_HEADLINE_WORK`, for at most `_computed_crowd` users."""
    return _verified_epsilon(_computed_crowd(n_users, flip, _bound_tail(delta)), flip, delta, _HEADLINE_WORK)


def _computed_crowd(n_users: int, flip: float, tail_mass: float) -> int:
    """The users a protocol's worst case is computed for: ``n_users``, or fewer where its windows would be too wide.

    Fewer users bound more (the block bound: ``n`` users' count is that of fewer plus an
    independent count), so the result stays an upper bound; it stops falling with ``n``.
    """
    return min(n_users, largest_crowd(flip, tail_mass, _WIDEST_WINDOW))


def profile_computable(n_users: int, flip: float, delta: float) -> bool:
    """Whether a protocol's worst-case profile is built for this crowd (windows within `_PROFILE_WIDEST_WINDOW`)."""
    return window_points(n_users - 1, flip, _profile_tail(_profile_atol(delta))) <= _PROFILE_WIDEST_WINDOW


def _check_computable(n_users: int, flip: float, tail_mass: float, owner: str) -> int:
    """``n_users`` if the exact worst case's windows fit `_WIDEST_WINDOW` points, else an error naming it."""
    largest = largest_crowd(flip, tail_mass, _WIDEST_WINDOW)
    if n_users > largest:
        raise invalid(
            "n_users",
            owner,
            f"at most {largest} at flip_probability={flip:.6g} (the exact worst case's binomial windows "
            f"would exceed {_WIDEST_WINDOW} points; RRBitSum bounds larger crowds by this one)",
            n_users,
        )
    return n_users
