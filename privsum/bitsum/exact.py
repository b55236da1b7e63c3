"""Exact privacy of the bit-sum protocols' analyzer views.

Every function here computes a privacy profile or a pure-DP bound from the exact distribution
of what the analyzer sees, so that "tight" calibrations can be checked by calling them.
Truncated tails are always counted as infinite privacy loss, so every profile is an upper bound.

* Shuffled randomized response: the view is the count ``C`` of ones among ``n`` reports. The
  adversary knows the other ``n - 1`` bits, ``k`` of them ones:
  ``C = Bin(k, 1-q) + Bin(n-1-k, q) + Bern(q)`` (target bit 0) versus ``+ Bern(1-q)`` (bit 1).
  `rr_profile` is the pair for one ``k``; `rr_worst_case_delta` takes the maximum over *every*
  ``k`` (both directions) in ``O(n * width)`` time.
* Signed-count protocols (3NB, Pure): the view is the pair of counts ``(#(+1), #(-1))``;
  `signed_count_profile` builds the exact two-dimensional pair for 3NB (`signed_count_delta`
  evaluates its delta at one epsilon without building the profile) and `pure_epsilon_bound`
  / `pure_epsilon_on_grid` give the pure-DP privacy loss of the drop-based pure protocol.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict

import numpy as np
from scipy import signal, stats

from privsum._negative_binomial import truncated_negative_binomial
from privsum._validation import check_integer, check_probability, check_real, invalid
from privsum.accounting.guarantee import Neighbouring
from privsum.accounting.profile import PrivacyProfile
from privsum.bitsum._loss_grid import LossGrid

__all__ = [
    "pure_epsilon_bound",
    "pure_epsilon_on_grid",
    "rr_profile",
    "rr_worst_case_delta",
    "signed_count_delta",
    "signed_count_dominating_profile",
    "signed_count_profile",
    "signed_count_profile_grid",
]

# Standard deviations of the others' contribution kept on the grid by rr_worst_case_delta.
_RR_GRID_WIDTH = 40.0
# The recursion over k is re-anchored on an exactly computed pmf this often.
_RR_REANCHOR_EVERY = 128
# Probabilities below this are set to zero (their total is counted in the measured lost mass).
_NEGLIGIBLE = 1e-250
# Longest pmf an exact signed-count profile builds (work and memory are linear in it).
_MAX_PMF_LENGTH = 50_000_000
# Truncated negative-binomial pmfs kept for reuse (calibrations evaluate the same flooding often).
_PMF_CACHE_BYTES = 64 * 2**20
# signed_count_dominating_profile: at least this many exact columns |X1 - X2| <= K, more until the
# noise's pmf ratios beyond K are within a factor e^_RATIO_SPREAD of their limit; bands of X1 about
# 1/2 wide; the most multiply-adds of its convolutions (about 10 s) before it falls back to geometric noise.
_DOMINATING_COLUMNS = 12
_RATIO_SPREAD = 0.008
_BAND_RELATIVE_WIDTH = 2
_MAX_DOMINATING_WORK = 5e10


def _checked_counts(
    owner: str,
    noise_shape: float,
    noise_ratio: float,
    flooding_shape: float,
    flooding_ratio: float,
    tail_mass: float,
    *,
    positive_noise: bool = False,
) -> tuple[float, float, float, float, float]:
    """The two-count pair's parameters, validated in this order (``positive_noise``: ``noise_ratio > 0``)."""
    noise_shape = check_real(noise_shape, "noise_shape", owner, low=0.0, low_open=True)
    noise_ratio = check_probability(noise_ratio, "noise_ratio", owner, allow_zero=not positive_noise)
    flooding_shape = check_real(flooding_shape, "flooding_shape", owner, low=0.0)
    flooding_ratio = check_probability(flooding_ratio, "flooding_ratio", owner)
    tail_mass = check_real(tail_mass, "tail_mass", owner, low=0.0, high=1e-3, low_open=True)
    return noise_shape, noise_ratio, flooding_shape, flooding_ratio, tail_mass


def _flip_probability(value: float, owner: str) -> float:
    return check_real(value, "flip_probability", owner, low=0.0, high=0.5, low_open=True, high_open=True)


def _count_pair(base: np.ndarray, flip: float) -> tuple[np.ndarray, np.ndarray]:
    """``base + Bern(flip)`` and ``base + Bern(1 - flip)`` on the grid of ``base`` plus one point."""
    padded = np.concatenate([base, [0.0]])
    shifted = np.concatenate([[0.0], base])
    return (1.0 - flip) * padded + flip * shifted, flip * padded + (1.0 - flip) * shifted


def rr_profile(n_users: int, flip_probability: float, ones_among_others: int = 0, *, tail_mass: float = 1e-18) -> PrivacyProfile:
    """Exact profile of shuffled binary RR for one configuration of the other users' bits.

    Args:
        n_users: users taking part (the target and ``n_users - 1`` others).
        flip_probability: each report is the bit XOR ``Bern(flip_probability)``, in ``(0, 0.5)``.
        ones_among_others: ``k``, the number of ones among the other users' bits.
        tail_mass: mass of the others' count dropped in each tail (counted as infinite loss).

    Privacy:
        ``P`` is the count when the target holds 0, ``Q`` when it holds 1; replace-one.

    Examples:
        >>> profile = rr_profile(1000, 0.05)
        >>> bool(profile.delta(1.0) < 1e-3)
        True
    """
    owner = "rr_profile"
    n_users = check_integer(n_users, "n_users", owner, low=1)
    flip = _flip_probability(flip_probability, owner)
    k = check_integer(ones_among_others, "ones_among_others", owner, low=0, high=n_users - 1)
    tail_mass = check_real(tail_mass, "tail_mass", owner, low=0.0, high=1e-3, low_open=True)
    base, offset, dropped = _others_count_pmf(n_users - 1 - k, k, flip, tail_mass)
    del offset  # the profile is shift invariant
    p, q = _count_pair(base, flip)
    return PrivacyProfile(p, q, neighbouring=Neighbouring.REPLACE_ONE, p_tail=min(1.0, dropped), q_tail=min(1.0, dropped))


def _others_count_pmf(zeros: int, ones: int, flip: float, tail_mass: float) -> tuple[np.ndarray, int, float]:
    """pmf of ``Bin(zeros, flip) - Bin(ones, flip)`` (the others' count up to the constant ``ones``).

    Returns the pmf on ``offset, offset + 1, ...``, the offset, and an upper bound on the dropped mass.
    """
    up = stats.binom(zeros, flip)
    down = stats.binom(ones, flip)
    up_high = int(up.isf(tail_mass / 2)) + 1 if zeros else 0
    down_high = int(down.isf(tail_mass / 2)) + 1 if ones else 0
    up_pmf = up.pmf(np.arange(up_high + 1))
    down_pmf = down.pmf(np.arange(down_high + 1))
    dropped = (float(up.sf(up_high)) if zeros else 0.0) + (float(down.sf(down_high)) if ones else 0.0)
    return np.convolve(up_pmf, down_pmf[::-1]), -down_high, dropped


def rr_worst_case_delta(
    n_users: int, flip_probability: float, epsilons: float | np.ndarray, *, return_worst_k: bool = False
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Maximum over every configuration of the others' bits of the exact delta of shuffled RR.

    For each ``k = 0, ..., n-1`` (ones among the others) the pmf of the others' count is
    obtained from the previous one by removing one ``+Bern(q)`` (a stable recursive
    deconvolution, since ``q < 1/2``) and adding one ``-Bern(q)``; every
    ``_RR_REANCHOR_EVERY`` steps it is recomputed exactly. By the symmetry ``k <-> n-1-k``
    (which reflects the count and swaps the two directions), ``k <= (n-1)/2`` with both
    directions covers every neighbouring pair. The grid keeps ``40`` standard deviations of the
    others' count on each side; the mass it loses (measured) is added to delta.

    Args:
        n_users: users taking part.
        flip_probability: the RR flip probability in ``(0, 0.5)``.
        epsilons: one or more epsilon values ``>= 0``.
        return_worst_k: also return, for each epsilon, the ``k`` (or ``n-1-k``) attaining the maximum.

    Returns:
        ``max_k delta_k(epsilon)`` for each epsilon (exact up to floating point), and the
        maximising ``k <= (n-1)/2`` if asked.

    Examples:
        >>> worst = rr_worst_case_delta(200, 0.1, [0.5, 1.0])
        >>> bool(worst[0] > worst[1] > 0)
        True
    """
    owner = "rr_worst_case_delta"
    n_users = check_integer(n_users, "n_users", owner, low=1)
    flip = _flip_probability(flip_probability, owner)
    eps = np.atleast_1d(np.asarray(epsilons, dtype=float))
    if not (eps.ndim == 1 and np.all(np.isfinite(eps)) and np.all(eps >= 0)):
        raise invalid("epsilons", owner, "finite values >= 0", epsilons)
    others = n_users - 1
    if others == 0:
        p, q = _count_pair(np.array([1.0]), flip)
        single = _hockey_stick_both(p[None, :], q[None, :], eps).max(axis=0)
        return (single, np.zeros(eps.size, dtype=np.int64)) if return_worst_k else single
    spread = math.sqrt(others * flip * (1 - flip))
    low = max(-(others // 2) - 1, math.floor(-_RR_GRID_WIDTH * spread - 20))
    high = min(others, math.ceil(others * flip + _RR_GRID_WIDTH * spread + 20))
    grid = np.arange(low, high + 1)
    worst = np.zeros(eps.size)
    worst_k = np.zeros(eps.size, dtype=np.int64)
    pmf = np.zeros(grid.size)
    for k in range(others // 2 + 1):
        anchor = k % _RR_REANCHOR_EVERY == 0
        pmf = _exact_on_grid(others - k, k, flip, grid) if anchor else _move_one_report(pmf, flip)
        lost = max(0.0, 1.0 - float(pmf.sum()))
        p, q = _count_pair(pmf, flip)
        current = _hockey_stick_both(p[None, :], q[None, :], eps)[0] + lost
        worse = current > worst
        worst[worse], worst_k[worse] = current[worse], k
    return (worst, worst_k) if return_worst_k else worst


def _exact_on_grid(zeros: int, ones: int, flip: float, grid: np.ndarray) -> np.ndarray:
    """pmf of ``Bin(zeros, flip) - Bin(ones, flip)`` on ``grid`` (terms beyond 45 sd are negligible)."""

    def head(trials: int) -> np.ndarray:
        last = min(trials, math.ceil(trials * flip + 45.0 * math.sqrt(trials * flip * (1 - flip)) + 30))
        return stats.binom.pmf(np.arange(last + 1), trials, flip)

    up, down = head(zeros), head(ones)
    full = np.convolve(up, down[::-1])
    values = np.arange(-(down.size - 1), up.size)
    out = np.zeros(grid.size)
    inside = (values >= grid[0]) & (values <= grid[-1])
    out[values[inside] - grid[0]] = full[inside]
    out[out < _NEGLIGIBLE] = 0.0
    return out


def _move_one_report(pmf: np.ndarray, flip: float) -> np.ndarray:
    """Replace one ``+Bern(flip)`` summand of the distribution by a ``-Bern(flip)`` summand."""
    ratio = flip / (1.0 - flip)
    without = signal.lfilter([1.0 / (1.0 - flip)], [1.0, ratio], pmf)
    without[without < _NEGLIGIBLE] = 0.0  # also flushes subnormals, which are very slow
    moved = (1.0 - flip) * without
    moved[:-1] += flip * without[1:]
    return moved


def _hockey_stick_both(p: np.ndarray, q: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """``max(HS_e(P||Q), HS_e(Q||P))`` for rows of pmfs and each epsilon: shape ``(rows, len(eps))``."""
    scale = np.exp(eps)[None, :, None]
    forward = np.maximum(p[:, None, :] - scale * q[:, None, :], 0.0).sum(axis=2)
    backward = np.maximum(q[:, None, :] - scale * p[:, None, :], 0.0).sum(axis=2)
    return np.maximum(forward, backward)


def signed_count_profile(
    noise_shape: float,
    noise_ratio: float,
    flooding_shape: float,
    flooding_ratio: float,
    *,
    tail_mass: float = 1e-15,
) -> PrivacyProfile:
    """Exact profile of the two-count view ``(S + X1 + X3, X2 + X3)`` versus ``S + 1``.

    ``X1, X2 ~ NB(noise_shape, noise_ratio)`` and ``X3 ~ NB(flooding_shape, flooding_ratio)``
    (papers' ratio parameterisation), independent. This is the analyzer's view of 3NB summed over
    the users; since ``S`` (the others' bits, known to the adversary) enters additively, this one
    pair is the worst case over all neighbouring datasets.

    With ``noise_shape == 1`` (geometric noise, the 3NB default) the two-dimensional pair reduces
    exactly to a one-dimensional one. Write ``m = A - B - S = X1 - X2`` (``DLap(p)``). Given
    ``m``, ``X2 = max(0, -m) + G`` with ``G ~ NB(1, p^2)``, so ``B = max(0, -m) + W`` with
    ``W = G + X3``. For ``m >= 1`` the conditional law of ``B`` is the same under both datasets
    and the privacy loss is ``log p``; for ``m <= 0`` it is ``W`` versus ``W + 1`` and the loss
    is ``log(1/p) + log(W(c)/W(c-1))``, whatever ``m``. Merging outcomes with equal loss leaves
    the profile unchanged, which gives the pair (one point for ``m >= 1``, then ``c`` over the
    support of ``W``)::

        P = [p/(1+p)]  ++ W(c)   / (1+p)
        Q = [1/(1+p)]  ++ p W(c-1) / (1+p)

    Other shapes are computed on the full two-dimensional grid (`signed_count_profile_grid`).
    Truncated tails (at most ``tail_mass`` per variable) are counted as infinite loss.

    Args:
        noise_shape: total shape ``r`` of each of ``X1`` and ``X2`` (``> 0``).
        noise_ratio: their ratio ``p`` in ``[0, 1)``.
        flooding_shape: total shape ``r'`` of the flooding pairs ``X3`` (``>= 0``; ``0`` means none).
        flooding_ratio: their ratio ``p'`` in ``[0, 1)``.
        tail_mass: the mass dropped from each variable's upper tail.

    Examples:
        >>> profile = signed_count_profile(1.0, math.exp(-0.8), 20.0, math.exp(-0.04))
        >>> grid = signed_count_profile_grid(1.0, math.exp(-0.8), 20.0, math.exp(-0.04))
        >>> bool(abs(profile.delta(0.9) - grid.delta(0.9)) < 1e-12)
        True
    """
    owner = "signed_count_profile"
    noise_shape, noise_ratio, flooding_shape, flooding_ratio, tail_mass = _checked_counts(
        owner, noise_shape, noise_ratio, flooding_shape, flooding_ratio, tail_mass, positive_noise=True
    )
    if noise_shape != 1.0:
        return signed_count_profile_grid(noise_shape, noise_ratio, flooding_shape, flooding_ratio, tail_mass=tail_mass)
    p = noise_ratio
    flooding, flooding_tail = _truncated_nb(flooding_shape, flooding_ratio, tail_mass)
    w, hidden_tail = _plus_geometric(flooding, p * p, tail_mass)
    w_tail = min(1.0, hidden_tail + flooding_tail)
    upper = np.concatenate([[p / (1 + p)], np.append(w, 0.0) / (1 + p)])
    lower = np.concatenate([[1 / (1 + p)], p * np.insert(w, 0, 0.0) / (1 + p)])
    return PrivacyProfile(
        upper, lower, neighbouring=Neighbouring.REPLACE_ONE, p_tail=w_tail / (1 + p), q_tail=p * w_tail / (1 + p)
    )


def signed_count_delta(
    noise_ratio: float, flooding_shape: float, flooding_ratio: float, epsilon: float, *, tail_mass: float = 1e-15
) -> float:
    """``signed_count_profile(1.0, noise_ratio, flooding_shape, flooding_ratio).delta(epsilon)``, in one pass.

    Calibration evaluates the profile at one epsilon many times; building a `PrivacyProfile`
    (losses, their order, suffix sums) each time costs ten times more than the hockey-stick sums
    themselves. With ``W`` the pmf of the hidden count (see `signed_count_profile`), the reduced
    pair is ``P = [p, W(0), ..., W(L-1), 0] / (1+p)`` and ``Q = [1, 0, p W(0), ..., p W(L-1)] / (1+p)``,
    so, with ``s = e^epsilon``::

        delta = max( W(0) + sum_c max(0, W(c) - s p W(c-1)) + W_tail,
                     max(0, 1 - s p) + sum_c max(0, p W(c-1) - s W(c)) + p W(L-1) + p W_tail ) / (1 + p)

    (the same sums as the profile's, in another order: equal up to floating-point rounding, a
    relative ``1e-12`` in the tests). Truncated tails count as infinite loss, as in the profile.

    Privacy:
        Replace-one; the exact delta of the same dominating pair as `signed_count_profile`
        (geometric noise, ``noise_shape = 1``), an upper bound where tails are truncated.

    Examples:
        >>> ratio, shape, flooding = math.exp(-0.8), 20.0, math.exp(-0.04)
        >>> fast = signed_count_delta(ratio, shape, flooding, 0.9)
        >>> bool(abs(fast - signed_count_profile(1.0, ratio, shape, flooding).delta(0.9)) < 1e-12)
        True
    """
    owner = "signed_count_delta"
    p = check_probability(noise_ratio, "noise_ratio", owner, allow_zero=False)
    flooding_shape = check_real(flooding_shape, "flooding_shape", owner, low=0.0)
    flooding_ratio = check_probability(flooding_ratio, "flooding_ratio", owner)
    epsilon = check_real(epsilon, "epsilon", owner, low=0.0)
    tail_mass = check_real(tail_mass, "tail_mass", owner, low=0.0, high=1e-3, low_open=True)
    flooding, flooding_tail = _truncated_nb(flooding_shape, flooding_ratio, tail_mass)
    w, hidden_tail = _plus_geometric(flooding, p * p, tail_mass)
    w_tail = min(1.0, hidden_tail + flooding_tail)
    scale = math.exp(epsilon)
    later, earlier = w[1:], w[:-1]
    forward = float(w[0]) + float(np.maximum(later - (scale * p) * earlier, 0.0).sum()) + w_tail
    backward = max(0.0, 1.0 - scale * p) + float(np.maximum(p * earlier - scale * later, 0.0).sum()) + p * (float(w[-1]) + w_tail)
    return max(forward, backward) / (1.0 + p)


def signed_count_dominating_profile(
    noise_shape: float,
    noise_ratio: float,
    flooding_shape: float,
    flooding_ratio: float,
    *,
    tail_mass: float = 1e-15,
    max_exact_support: int = 250_000,
) -> PrivacyProfile:
    """A pair dominating the two-count view of `signed_count_profile` for any noise shape, fast.

    ``noise_shape = 1``: the exact one-dimensional pair. Otherwise the exact two-dimensional pair
    (`signed_count_profile_grid`) when its grid has at most ``max_exact_support`` points; else,
    for log-concave flooding (``flooding_shape >= 1``, ``flooding_ratio > 0``), the **banded
    pair** below; else (no flooding, or an unusually large view) the exact pair of the same view
    with geometric noise of ratio ``noise_ratio * min(1, noise_shape)``.

    The banded pair. Write the view as ``(d, b) = (A - B - S, B)`` and ``N`` for the pmf of
    ``NB(r, p)``, whose ratios ``r_k = N(k)/N(k-1) = p (k - 1 + r)/k`` are monotone in ``k`` with
    limit ``p``. The columns ``|d| <= K`` (``K >= 12``, and ``|1 - r| / (K + 1) <= 0.008`` when
    affordable) are computed exactly (one convolution each:
    ``P(d, b) = sum_j N(j + d) N(j) X3(b - j)``, and ``Q(d, b) = P(d - 1, b)``). Every other
    outcome is bounded by a likelihood-ratio interval:

    * ``d > K``: ``P/Q`` is an average of ``r_k`` over ``k >= K + 1``, so it lies between ``p``
      and ``r_{K+1}``, whatever ``b``; these outcomes form one set.
    * ``d <= -K``: with ``i = X1`` and ``c = b + d``, each term of ``P`` is ``rho(t) / r_k`` times
      a term of ``Q`` (``t = c - i`` the flooding count, ``rho(t) = X3(t)/X3(t - 1)``,
      ``k >= K + 1``); ``rho`` decreases (the flooding is log-concave), so for ``i`` in a band
      ``[i0, i1]`` the ratio lies between ``rho(c - i0) / max(p, r_{K+1})`` and
      ``rho(c - i1) / min(p, r_{K+1})``. Splitting the terms by band (joint convexity) gives one
      set per ``(band, c)``; bands are single values of ``i`` up to 2, then about 1/2 wide.

    The exact columns and the sets are merged on a fine grid of losses by two-point splitting
    (`privsum.bitsum._loss_grid.LossGrid`: a set with losses in an interval is dominated by two
    outcomes at grid losses around it), so the pair has a few thousand points. Terms whose
    partner falls outside the truncated pmfs are dropped and counted as infinite loss, with the
    truncated tails and the lowest ``tail_mass`` of the flooding.

    Against the exact grid (``n = 1000`` users, 500 to 999 participants, three calibrations in
    the tests) the banded pair's epsilon at the calibration delta is at most 0.2% above the exact
    one; with 900 participants: ``1.09978`` (exact ``1.09978``, calibrated for ``1.0``),
    ``0.58521`` (``0.58521``; ``0.5``) and ``0.20438`` (``0.20436``; ``0.161``, communication
    flooding), where geometric noise gives ``1.108``, ``0.607`` and ``0.278``. At the paper's KDE
    setting (``n = 40,000``, 36,000 participants, calibrated epsilon ``0.0163`` at delta
    ``6.5e-10``) it gives ``0.03238`` in about 2 s, against ``0.1217`` for geometric noise; the
    exact grid is out of reach there (billions of points), and the bound moves by less than
    ``1e-8`` relative when ``K`` grows to 40, the bands narrow or the tails shrink tenfold.

    Args:
        noise_shape: total shape ``r > 0`` of each of ``X1`` and ``X2``.
        noise_ratio: their ratio ``p`` in ``(0, 1)``.
        flooding_shape: total shape ``r' >= 0`` of the flooding pairs ``X3``.
        flooding_ratio: their ratio ``p'`` in ``[0, 1)``.
        tail_mass: the mass dropped from each variable's upper tail (and the flooding's lower
            tail in the banded pair), counted as infinite loss.
        max_exact_support: the largest exact grid computed.

    Privacy:
        Replace-one; an upper bound on the profile of the view in both directions (exact for
        ``noise_shape = 1`` and for small grids), up to floating-point rounding (relative
        ``1e-11``); truncated tails counted as infinite loss. A dominating pair, so it composes.

    Examples:
        >>> bound = signed_count_dominating_profile(0.9, math.exp(-0.5), 20.0, math.exp(-0.02), max_exact_support=0)
        >>> exact = signed_count_profile_grid(0.9, math.exp(-0.5), 20.0, math.exp(-0.02))
        >>> bool(exact.delta(0.6) <= bound.delta(0.6) <= exact.delta(0.6) * 1.01)
        True
    """
    owner = "signed_count_dominating_profile"
    noise_shape, noise_ratio, flooding_shape, flooding_ratio, tail_mass = _checked_counts(
        owner, noise_shape, noise_ratio, flooding_shape, flooding_ratio, tail_mass, positive_noise=True
    )
    max_exact_support = check_integer(max_exact_support, "max_exact_support", owner, low=0)
    if noise_shape == 1.0:
        return signed_count_profile(1.0, noise_ratio, flooding_shape, flooding_ratio, tail_mass=tail_mass)
    noise, _ = _truncated_nb(noise_shape, noise_ratio, tail_mass)
    flooding, _ = _truncated_nb(flooding_shape, flooding_ratio, tail_mass)
    if (flooding.size + noise.size) * (2 * noise.size + 1) <= max_exact_support:
        return signed_count_profile_grid(noise_shape, noise_ratio, flooding_shape, flooding_ratio, tail_mass=tail_mass)
    # enough columns that the ratios beyond them are within a factor e^0.008 of p (when the work allows)
    wanted = max(_DOMINATING_COLUMNS, math.ceil(abs(1.0 - noise_shape) / _RATIO_SPREAD) - 1)
    affordable = int(_MAX_DOMINATING_WORK / (flooding.size * noise.size) - 3) // 2
    columns = min(wanted, affordable, noise.size - 1)
    if flooding_shape >= 1.0 and flooding_ratio > 0.0 and columns >= min(_DOMINATING_COLUMNS, noise.size - 1):
        return _banded_profile(noise_shape, noise_ratio, flooding_shape, flooding_ratio, tail_mass, columns)
    geometric_ratio = noise_ratio * min(1.0, noise_shape)
    return signed_count_profile(1.0, geometric_ratio, flooding_shape, flooding_ratio, tail_mass=tail_mass)


def _banded_profile(
    noise_shape: float, noise_ratio: float, flooding_shape: float, flooding_ratio: float, tail_mass: float, columns: int
) -> PrivacyProfile:
    """The banded pair of `signed_count_dominating_profile` (its docstring has the argument)."""
    noise, noise_tail = _truncated_nb(noise_shape, noise_ratio, tail_mass)
    full_flooding, flooding_tail = _truncated_nb(flooding_shape, flooding_ratio, tail_mass)
    start = int(np.searchsorted(np.cumsum(full_flooding), tail_mass))  # below start: mass < tail_mass
    flooding = full_flooding[start:]
    last = noise.size - 1
    grid = LossGrid()
    negligible = tail_mass / (2 * columns + 1)  # each column's kernel drops at most this much of its tail
    length = flooding.size + noise.size - 1  # b - start = 0, 1, ...

    def column(d: int) -> np.ndarray:
        values = np.convolve(flooding, _difference_kernel(noise, d, negligible))
        return np.concatenate([values, np.zeros(length - values.size)])

    previous = column(-columns)
    for d in range(-columns + 1, columns + 1):
        current = column(d)
        grid.add_points(current, previous)
        previous = current
    # r_k = N(k)/N(k-1) for k > columns lies between p and r_{columns+1} (1e-9: the pmf's accuracy).
    first = noise_ratio * (columns + noise_shape) / (columns + 1)
    ratio_low, ratio_high = min(noise_ratio, first) * (1 - 1e-9), max(noise_ratio, first) * (1 + 1e-9)
    suffix = np.append(np.cumsum(noise[::-1])[::-1], 0.0)  # suffix[k] = sum_{i >= k} N(i)
    suffix_short = np.append(np.cumsum(noise[-2::-1])[::-1], [0.0, 0.0])  # the same without N(last)
    index = np.arange(noise.size)
    lower_q = noise * suffix[np.minimum(index + columns + 1, last + 1)]  # i -> N(i) sum_{k > i + K} N(k)
    lower_p = noise * suffix_short[np.minimum(index + columns, last + 1)]  # i -> N(i) sum_{i+K <= k < last} N(k)
    flooding_mass = math.fsum(flooding)
    upper_p, upper_q = flooding_mass * math.fsum(lower_q), flooding_mass * math.fsum(lower_p)
    grid.add(np.array([upper_p]), np.array([upper_q]), math.log(ratio_low), math.log(ratio_high))
    _add_lower_bands(grid, flooding, start, lower_p, lower_q, flooding_shape, flooding_ratio, (ratio_low, ratio_high))
    # mass outside the truncation, the kernels' dropped tails, and the terms dropped for a missing partner
    dropped = 2 * noise_tail + flooding_tail + 2 * tail_mass + float(noise[-1])
    return grid.profile(dropped + float(flooding[0]) * math.fsum(lower_p), dropped + float(flooding[-1]) * math.fsum(lower_q))


def _difference_kernel(noise: np.ndarray, d: int, negligible: float) -> np.ndarray:
    """``j -> N(j + d) N(j)``, the weight of ``X2 = j`` in the column ``X1 - X2 = d``, less a tail of mass ``<= negligible``."""
    last = noise.size - 1
    kernel = np.zeros(noise.size)
    j = np.arange(max(0, -d), min(last, last - d) + 1)
    kernel[j] = noise[j + d] * noise[j]
    beyond = np.cumsum(kernel[::-1])[::-1]  # beyond[j] = mass at j and above
    return kernel[: max(1, int(np.searchsorted(-beyond, -negligible, side="right")))]


def _add_lower_bands(
    grid: LossGrid,
    flooding: np.ndarray,
    start: int,
    lower_p: np.ndarray,
    lower_q: np.ndarray,
    flooding_shape: float,
    flooding_ratio: float,
    ratios: tuple[float, float],
) -> None:
    """The outcomes ``d <= -K``, one set per band of ``X1`` and value of ``c = b + d``.

    ``P`` drops the terms with the flooding at ``start`` (their ``Q`` partner is truncated),
    ``Q`` those with the flooding at its last value.
    """
    end = start + flooding.size - 1
    without_first, without_last = flooding.copy(), flooding.copy()
    without_first[0], without_last[-1] = 0.0, 0.0
    ratio_low, ratio_high = ratios
    band_start, size = 0, int(np.flatnonzero(lower_p).max(initial=-1)) + 1
    while band_start < size:
        band_end = min(size, band_start + max(1, band_start // _BAND_RELATIVE_WIDTH))  # exclusive
        p = np.convolve(without_first, lower_p[band_start:band_end])  # index: c - start - band_start
        q = np.concatenate([[0.0], np.convolve(without_last, lower_q[band_start:band_end])])[: p.size]
        c = np.arange(p.size) + start + band_start
        t_high = np.clip(c - band_start, start + 1, end).astype(float)  # rho(t) decreases in t
        t_low = np.clip(c - band_end + 1, start + 1, end).astype(float)
        low = np.log(_flooding_ratio(t_high, flooding_shape, flooding_ratio) * (1 - 1e-9)) - math.log(ratio_high)
        high = np.log(_flooding_ratio(t_low, flooding_shape, flooding_ratio) * (1 + 1e-9)) - math.log(ratio_low)
        grid.add(p, q, low, high)
        band_start = band_end


def _flooding_ratio(t: np.ndarray, shape: float, ratio: float) -> np.ndarray:
    """``X3(t)/X3(t-1) = p' (t - 1 + r')/t`` for ``X3 ~ NB(r', p')``, decreasing in ``t >= 1`` when ``r' >= 1``."""
    return ratio * (t - 1.0 + shape) / t


def signed_count_profile_grid(
    noise_shape: float,
    noise_ratio: float,
    flooding_shape: float,
    flooding_ratio: float,
    *,
    tail_mass: float = 1e-15,
    max_support: int = 20_000_000,
) -> PrivacyProfile:
    """The same pair as `signed_count_profile`, computed on the full two-dimensional grid.

    The pmf of ``(B, A - B - S)`` is built where each of ``X1, X2, X3`` is below its
    ``1 - tail_mass`` quantile; the rest (at most ``3 tail_mass``) is counted as infinite loss.
    Works for any ``noise_shape`` (needed when fewer users than calibrated take part); raises if
    the grid would exceed ``max_support`` points.

    Examples:
        >>> profile = signed_count_profile_grid(0.5, 0.4, 5.0, 0.8)
        >>> bool(0.0 < profile.delta(1.0) < 1.0)
        True
    """
    owner = "signed_count_profile_grid"
    noise_shape, noise_ratio, flooding_shape, flooding_ratio, tail_mass = _checked_counts(
        owner, noise_shape, noise_ratio, flooding_shape, flooding_ratio, tail_mass
    )
    noise, noise_tail = _truncated_nb(noise_shape, noise_ratio, tail_mass)
    flooding, flooding_tail = _truncated_nb(flooding_shape, flooding_ratio, tail_mass)
    support = (flooding.size + noise.size) * (2 * noise.size + 1)
    if not support <= max_support:
        raise invalid("noise_ratio", owner, f"small enough for an exact grid of at most {max_support} points", noise_ratio)
    joint = _two_count_pmf(noise, flooding)  # rows: b = X2 + X3; column j: d = X1 - X2 = j - K
    # P: target bit 0 (d); Q: target bit 1 (d + 1).
    p = np.concatenate([joint, np.zeros((joint.shape[0], 1))], axis=1).ravel()
    q = np.concatenate([np.zeros((joint.shape[0], 1)), joint], axis=1).ravel()
    dropped = min(1.0, 2.0 * noise_tail + flooding_tail)
    return PrivacyProfile(p, q, neighbouring=Neighbouring.REPLACE_ONE, p_tail=dropped, q_tail=dropped)


def _plus_geometric(pmf: np.ndarray, ratio: float, tail_mass: float) -> tuple[np.ndarray, float]:
    """pmf of ``X + G`` with ``G ~ NB(1, ratio)`` (geometric), on ``X``'s support extended by ``G``'s window.

    ``G``'s pmf is ``(1 - a) a^g``, so ``W(c) = a W(c-1) + (1 - a) pmf(c)``: an O(length) recursion
    of non-negative terms (no cancellation), exact for the untruncated ``G`` on the window. The
    window extends ``pmf`` by ``m`` points with ``a^(m+1) <= tail_mass``; the mass beyond it is at
    most ``P(G > m) = a^(m+1)``, returned as the dropped mass.
    """
    if ratio == 0.0:
        return pmf.copy(), 0.0
    extra = max(0, math.ceil(math.log(tail_mass) / math.log(ratio)) - 1)
    if not pmf.size + extra <= _MAX_PMF_LENGTH:
        raise invalid("noise_ratio", "signed_count_profile", f"small enough for a pmf of at most {_MAX_PMF_LENGTH} points", ratio)
    padded = np.concatenate([pmf, np.zeros(extra)])
    return signal.lfilter([1.0 - ratio], [1.0, -ratio], padded), ratio ** (extra + 1)


def _truncated_nb(shape: float, ratio: float, tail_mass: float) -> tuple[np.ndarray, float]:
    """pmf of ``NB(shape, ratio)`` on ``0..L`` (read-only, cached) and an upper bound ``<= tail_mass`` on ``P(X > L)``.

    `privsum._negative_binomial.truncated_negative_binomial`: the values are accurate to a relative
    ``1e-12``, and the bound on the dropped mass holds up to that accuracy.
    """
    key = (float(shape), float(ratio), float(tail_mass))
    cached = _NB_CACHE.get(key)
    if cached is None:
        cached = _NB_CACHE.put(key, _truncated_nb_uncached(*key))
    return cached


def _truncated_nb_uncached(shape: float, ratio: float, tail_mass: float) -> tuple[np.ndarray, float]:
    if shape == 0.0 or ratio == 0.0:
        pmf, dropped = np.array([1.0]), 0.0
    else:
        truncated = truncated_negative_binomial(shape, ratio, tail_mass, _MAX_PMF_LENGTH)
        if truncated is None:
            expected = f"small enough for a pmf of at most {_MAX_PMF_LENGTH} points"
            raise invalid("flooding_ratio", "signed_count_profile", expected, ratio)
        pmf, dropped = truncated
    pmf.setflags(write=False)
    return pmf, dropped


class _PmfCache:
    """Least-recently-used truncated pmfs, at most ``max_bytes`` of arrays in all (larger ones are not kept)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[float, float, float], tuple[np.ndarray, float]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: tuple[float, float, float]) -> tuple[np.ndarray, float] | None:
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: tuple[float, float, float], value: tuple[np.ndarray, float]) -> tuple[np.ndarray, float]:
        size = value[0].nbytes
        if size > self.max_bytes // 4:
            return value
        with self._lock:
            if key not in self._entries:
                self._entries[key] = value
                self._bytes += size
            while self._bytes > self.max_bytes:
                _, (dropped, _) = self._entries.popitem(last=False)
                self._bytes -= dropped.nbytes
        return value

    def cache_clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)


_NB_CACHE = _PmfCache(_PMF_CACHE_BYTES)


def _two_count_pmf(noise: np.ndarray, flooding: np.ndarray) -> np.ndarray:
    """``M[b, d + K] = P(X2 + X3 = b, X1 - X2 = d)`` for truncated pmfs (K = len(noise) - 1).

    With ``s = X2``: ``M[b, d] = sum_s flooding[b - s] * noise[s + d] * noise[s]``.
    """
    k = noise.size - 1
    rows = flooding.size + k
    joint = np.zeros((rows, 2 * k + 1))
    for d in range(-k, k + 1):
        s = np.arange(max(0, -d), min(k, k - d) + 1)
        weights = np.zeros(k + 1)
        weights[s] = noise[s + d] * noise[s]
        joint[:, d + k] = np.convolve(flooding, weights)[:rows]
    return joint


def pure_epsilon_bound(drop_probability: float, noise_shape: float, noise_ratio: float) -> float:
    """Upper bound on the exact pure epsilon of the drop-based signed-count protocol (attained if it is the first term).

    The view is ``(A, B) = (K + X1 + X3, X2 + X3)`` with ``K ~ Bin(s, 1-q)`` for ``s`` ones
    among the users (the target's bit is dropped with probability ``q``),
    ``X1, X2 ~ NB(r, a)``, ``X3`` any independent flooding. Changing the target's bit from 0 to 1
    turns ``P(a, b)`` into ``q P(a, b) + (1-q) P(a-1, b)``. Hence

    * ``P / P' <= 1/q``, with equality at ``a = 0`` (so this term is attained for every ``s``);
    * ``P' / P <= q + (1-q) sup_m P(X1 = m-1)/P(X1 = m) = q + (1-q) / (min(r, 1) a)``,

    because ``P(a-1, b)`` is a mixture of the same terms as ``P(a, b)`` with ``X1`` shifted by one.
    The exact epsilon is therefore ``max(log(1/q), log(q + (1-q)/(min(r,1) a)))`` whenever the
    first term is the larger (then it is attained); otherwise the value is an upper bound.

    Examples:
        >>> q = math.exp(-1.0)
        >>> round(pure_epsilon_bound(q, 1.0, (1 - q) / (math.e - q)), 9)
        1.0
    """
    owner = "pure_epsilon_bound"
    q = check_probability(drop_probability, "drop_probability", owner)
    r = check_real(noise_shape, "noise_shape", owner, low=0.0, low_open=True)
    a = check_probability(noise_ratio, "noise_ratio", owner)
    if q == 0.0 or a == 0.0:
        return math.inf
    return max(-math.log(q), math.log(q + (1.0 - q) / (min(r, 1.0) * a)))


def pure_epsilon_on_grid(
    n_users: int,
    drop_probability: float,
    noise_shape: float,
    noise_ratio: float,
    flooding_shape: float = 0.0,
    flooding_ratio: float = 0.0,
    *,
    tail_mass: float = 1e-12,
) -> float:
    """Maximum absolute log-ratio of the pure protocol's view over a truncated grid, worst case over ``s``.

    Computes the exact two-count pmf for every number ``s = 0..n-1`` of ones among the other
    users, target bit 0 versus 1, on the grid where every noise variable is below its
    ``1 - tail_mass`` quantile, and returns the largest ``|log P(v)/P'(v)|`` found (``inf`` if
    the supports differ on the grid). A grid maximum is a *lower* bound on the true pure epsilon;
    tests compare it with `pure_epsilon_bound`, the upper bound, to verify the latter exactly.

    Examples:
        >>> q, a = math.exp(-1.0), 0.25
        >>> grid = pure_epsilon_on_grid(4, q, 1.0, a)
        >>> bool(abs(grid - pure_epsilon_bound(q, 1.0, a)) < 1e-9)
        True
    """
    owner = "pure_epsilon_on_grid"
    n_users = check_integer(n_users, "n_users", owner, low=1, high=200)
    q = check_probability(drop_probability, "drop_probability", owner)
    noise, _ = _truncated_nb(check_real(noise_shape, "noise_shape", owner, low=0.0, low_open=True), noise_ratio, tail_mass)
    flooding, _ = _truncated_nb(check_real(flooding_shape, "flooding_shape", owner, low=0.0), flooding_ratio, tail_mass)
    # Points with both counts <= limit involve no truncated term: the pmf there is exact.
    limit = noise.size - 1 if flooding.size == 1 else min(noise.size, flooding.size) - 1
    worst = 0.0
    for ones in range(n_users):
        sent = stats.binom.pmf(np.arange(ones + 1), ones, 1.0 - q)
        view = _dropped_view(sent, noise, flooding)[: limit + 1, : limit + 1]
        target_one = q * view
        target_one[1:] += (1.0 - q) * view[:-1]
        if np.any((view > 0) != (target_one > 0)):
            return math.inf
        positive = view > 0
        ratio = np.abs(np.log(view[positive]) - np.log(target_one[positive]))
        worst = max(worst, float(ratio.max()))
    return worst


def _dropped_view(sent: np.ndarray, noise: np.ndarray, flooding: np.ndarray) -> np.ndarray:
    """``V[a, b] = P(K + X1 + X3 = a, X2 + X3 = b)`` on the truncated grid (exact there)."""
    plus = np.convolve(sent, noise)  # K + X1
    size_a = plus.size + flooding.size - 1
    size_b = noise.size + flooding.size - 1
    view = np.zeros((size_a, size_b))
    for t, weight in enumerate(flooding):
        if weight == 0.0:
            continue
        view[t : t + plus.size, t : t + noise.size] += weight * np.outer(plus, noise)
    return view
