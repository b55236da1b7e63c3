"""A dominating pair for the pointwise maximum of several privacy profiles.

When a mechanism has several candidate neighbouring pairs and none of them dominates the others
at every epsilon (shuffled randomized response is the example: the worst configuration of the
other users' bits depends on epsilon), the pointwise maximum of their privacy profiles is still
a privacy profile, and it has a dominating pair of distributions whose privacy-loss
distribution composes exactly (Zhu, Dong & Wang, "Optimal Accounting of Differential Privacy via
Characteristic Function", AISTATS 2022).

`symmetric_pair_from_samples` builds such a pair from samples of the maximum profile. Write
``x = e^epsilon``. Every hockey-stick curve ``x -> HS_x(P || Q)`` is convex and non-increasing
on ``x >= 0``, and so is a maximum of such curves; hence the piecewise-linear interpolation
of the samples (the chords) lies **above** the maximum between consecutive sample points, and
equals it at the samples. A piecewise-linear convex curve ``h`` with slopes ``s_0 <= ... <= s_G``
(``s_G = 0`` after the last sample, where ``h`` equals the infinite-loss mass ``eta``) is the
hockey-stick curve of the discrete pair with, at each interior breakpoint ``x_i``, ``Q``-mass
``s_i - s_{i-1}`` and ``P``-mass ``x_i (s_i - s_{i-1})``, plus ``eta`` of ``P`` where ``Q`` is
zero. Mirroring it (swap ``P`` and ``Q``) and putting the remaining mass at loss zero gives a
*symmetric* pair, so both directions are dominated with one privacy-loss distribution; the
remaining mass is non-negative because the maximum of symmetric families of curves is convex
across ``x = 1`` (checked, and the construction raises otherwise).
"""

from __future__ import annotations

import math

import numpy as np

from privsum._validation import invalid
from privsum.accounting.guarantee import Neighbouring
from privsum.accounting.profile import PrivacyProfile

__all__ = ["SampledEnvelope", "symmetric_pair_from_samples"]

# Tolerated negative leftover mass (float rounding of the slopes), reported as an error beyond it.
_MASS_SLACK = 1e-10
# Relative flattening of the steepest realisable slope past epsilon 0 (room for float rounding).
_SLOPE_MARGIN = 1e-6


class SampledEnvelope(PrivacyProfile):
    """The pair of `symmetric_pair_from_samples`, with the exact privacy loss of each support point.

    Attributes:
        losses: the privacy loss ``log(p/q)`` of each support point, exactly the sample epsilon it
            sits at (``+-inf`` where one side is zero), so that a privacy-loss distribution can be
            built without recomputing (and rounding) the logarithms.
        loss_step: a power of two of which every sample epsilon but the ``extra`` ones is a
            multiple, or ``None``: a privacy-loss distribution discretised at this step represents
            those losses exactly (`privsum.accounting.pld.PLDPair.from_profile`).
    """

    losses: np.ndarray
    loss_step: float | None


def symmetric_pair_from_samples(
    epsilons: np.ndarray,
    deltas: np.ndarray,
    *,
    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
    loss_step: float | None = None,
) -> SampledEnvelope:
    """The symmetric pair whose profile is the chord interpolation (in ``e^epsilon``) of the samples.

    Args:
        epsilons: strictly increasing, starting at ``0``; beyond the last one the sampled profile
            must be constant (every privacy loss is at most the last epsilon).
        deltas: upper bounds on the maximum profile (both directions) at ``epsilons``; a sample
            above the lower convex hull of the others is replaced by the hull's chord (valid:
            a chord between upper bounds of a convex curve lies above it), and samples below the
            line through the first one with slope ``-(1 - delta(0)) / 2`` in ``e^epsilon`` (the
            steepest a symmetric pair's curve can fall past 0) are raised to it.
        neighbouring: the relation of the profiles.
        loss_step: a power of two of which most ``epsilons`` are exact multiples (recorded as the
            pair's natural discretisation), or ``None``.

    Returns:
        A `SampledEnvelope` (a `PrivacyProfile`) whose ``delta`` is at least every sample at its
        epsilon and the chord between samples, in both directions; its `dominating_pair` is itself.

    Privacy:
        If the samples are upper bounds on a convex maximum profile, the returned pair dominates
        every profile in the maximum (at every epsilon, both directions), so PLD composition of
        the pair is a valid (pessimistic) composition of the mechanism.

    References:
        Zhu, Dong & Wang, "Optimal Accounting of Differential Privacy via Characteristic
        Function", AISTATS 2022.

    Examples:
        >>> from privsum.accounting import randomized_response_profile
        >>> rr = randomized_response_profile(1.0)
        >>> grid = np.linspace(0.0, 1.0, 11)
        >>> pair = symmetric_pair_from_samples(grid, rr.delta(grid))
        >>> bool(abs(pair.delta(0.5) - rr.delta(0.5)) < 1e-12 and pair.delta(1.0) < 1e-12)
        True
    """
    owner = "symmetric_pair_from_samples"
    eps = np.asarray(epsilons, dtype=float)
    values = np.array(deltas, dtype=float)
    if eps.ndim != 1 or eps.size < 2 or eps[0] != 0.0 or not np.all(np.diff(eps) > 0) or not np.all(np.isfinite(eps)):
        raise invalid("epsilons", owner, "a strictly increasing 1-D array starting at 0", epsilons)
    if values.shape != eps.shape or not np.all(np.isfinite(values)) or np.any(values < 0) or np.any(values > 1):
        raise invalid("deltas", owner, f"{eps.size} values in [0, 1]", deltas)
    if loss_step is not None and not (loss_step > 0 and math.frexp(loss_step)[0] == 0.5):
        raise invalid("loss_step", owner, "None or a positive power of two", loss_step)
    x = np.exp(eps)
    p_mass, q_mass, eta, leftover = _chord_masses(x, values)
    if leftover < -_MASS_SLACK:
        # A symmetric pair's curve falls at most (1 - delta(0)) / 2 per unit of e^epsilon past 0 (its
        # mass is 1); upper bounds can be steeper there: raise them to that line, a hair flatter so
        # that float rounding of the masses cannot exceed 1 (still upper bounds).
        line = values[0] - 0.5 * (1.0 - values[0]) * (1.0 - _SLOPE_MARGIN) * (x - 1.0)
        p_mass, q_mass, eta, leftover = _chord_masses(x, np.maximum(values, line))
    if leftover < -_MASS_SLACK:  # pragma: no cover - the line above makes the masses fit
        expected = "samples of a symmetric convex profile (the pair's mass exceeds 1)"
        raise invalid("deltas", owner, expected, f"excess {-leftover:.3g}")
    leftover = max(leftover, 0.0)
    # Support: [P-only eta] + breakpoints (loss > 0) + [loss 0] + mirrored breakpoints + [Q-only eta].
    p = np.concatenate([[eta], p_mass[::-1], [leftover], q_mass, [0.0]])
    q = np.concatenate([[0.0], q_mass[::-1], [leftover], p_mass, [eta]])
    losses = np.concatenate([[math.inf], eps[1:][::-1], [0.0], -eps[1:], [-math.inf]])  # log(p/q), exactly
    keep = (p > 0) | (q > 0)
    profile = SampledEnvelope(p[keep], q[keep], neighbouring=neighbouring)
    profile.losses, profile.loss_step = losses[keep], loss_step
    return profile


def _chord_masses(x: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
    """The masses at the breakpoints of the samples' convex interpolation (``P``'s, ``Q``'s), ``eta``, the leftover."""
    convex = _convex_non_increasing(x, values)
    slopes = np.diff(convex) / np.diff(x)
    jumps = np.diff(np.append(slopes, 0.0))  # at x[1..G]; slope after the last sample is 0
    jumps = np.maximum(jumps, 0.0)  # exact zero where float rounding left a tiny negative
    q_mass = jumps
    p_mass = x[1:] * jumps
    eta = float(convex[-1])
    return p_mass, q_mass, eta, 1.0 - eta - float(p_mass.sum()) - float(q_mass.sum())


def _convex_non_increasing(x: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The lower convex hull of the samples, then its running minimum: still an upper bound.

    A sample above the chord between two others is replaced by that chord: a chord between two
    upper bounds of a convex curve lies above the curve, so dropping a sample point never breaks
    the bound, and the lower hull is the tightest convex interpolation of the samples. Where the
    hull would increase it is held at its minimum, which is still above the (non-increasing)
    profile; the result is convex and non-increasing.
    """
    hull = [0]
    for i in range(1, values.size):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            # b lies on or above the chord from a to i: drop it
            if (values[b] - values[a]) * (x[i] - x[a]) >= (values[i] - values[a]) * (x[b] - x[a]):
                hull.pop()
            else:
                break
        hull.append(i)
    return np.minimum.accumulate(np.interp(x, x[hull], values[hull]))
