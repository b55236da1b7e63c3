"""Randomized response calibrated for ``k`` compositions: the flip probability searched directly.

The composed epsilon of ``k`` runs of `~privsum.bitsum.rr.RRBitSum` (each composed by its
worst-case profile over every neighbour) depends on the flip probability alone, so
`RRBitSum.calibrate_for_compositions` searches it rather than a per-instance epsilon.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from privsum.accounting.budget import largest_composable
from privsum.accounting.events import ProfileEvent
from privsum.accounting.gaussian import gaussian_epsilon, gaussian_sigma
from privsum.bitsum._rr_accounting import worst_case_event
from privsum.exceptions import InvalidParameterError

if TYPE_CHECKING:
    from privsum.bitsum.rr import RRBitSum

__all__ = ["calibrated_for_compositions", "flip_for_compositions"]

# The level 1/q - 2 of the smallest flip probability tried, and the composed epsilon's first guess
# of log-log slope against it (epsilon0 ~ 1/sqrt(n q)).
_LARGEST_FLIP_LEVEL = 1e12
_FLIP_LEVEL_SLOPE = 0.5
# The search starts this factor below the Gaussian estimate's level (more noise: usually feasible).
_FLIP_START_MARGIN = 0.95
# Relative step of the Gaussian estimate's slope.
_SLOPE_STEP = 1.01


def calibrated_for_compositions(
    cls: type[RRBitSum],
    *,
    calibration: str = "tight",
    composition: str = "profile",
    start: float | None = None,
    **target: Any,
) -> RRBitSum | None:
    """`RRBitSum.calibrate_for_compositions`: the least flip probability (`flip_for_compositions`), or ``None``.

    ``None`` (the generic search) for ``calibration="analytic"`` or ``composition="guarantee"``
    (RR then composes as a generic ``(epsilon, delta)`` mechanism). ``start`` (a per-instance
    epsilon) is not used: the flip search starts from its own Gaussian estimate.
    """
    del start
    if calibration != "tight" or composition != "profile":
        return None
    if target.get("caller") is None:
        target["caller"] = (f"{cls.__name__}.calibrate_for_compositions", "epsilon")
    flip = flip_for_compositions(**target)
    return cls(n_users=target["n_users"], flip_probability=flip, delta=target["instance_delta"])


def flip_for_compositions(
    *, n_users: int, epsilon: float, delta: float, instance_delta: float, compositions: int, caller: tuple[str, str]
) -> float:
    """Tight RR: the least flip probability whose worst-case profile, composed ``compositions`` times, meets the target.

    A calibration per ``epsilon0`` (`privsum.accounting.budget.fit_composition`) would search the flip probability for
    each ``epsilon0`` it tries and verify it over every neighbour; the composed epsilon depends on
    the flip probability alone, so this searches it directly, with the level ``1/q - 2`` (which
    grows with the privacy loss) in the role of ``epsilon0``, by the centred search to within
    `~privsum.accounting.budget.FIT_RTOL` below the target, from just below the level the central limit theorem
    suggests (`_gaussian_flip_estimate`). Only the protocol it returns verifies its headline
    ``(epsilon0, delta0)`` over every neighbour.
    """

    def event_at(level: float) -> ProfileEvent:
        return worst_case_event(n_users, 1.0 / (level + 2.0), instance_delta)

    start = max(_FLIP_START_MARGIN * (1.0 / _gaussian_flip_estimate(epsilon, delta, n_users, compositions) - 2.0), 1e-9)
    slope = _gaussian_level_slope(start, delta, n_users, compositions)
    level = largest_composable(
        event_at, compositions, epsilon, delta, start=start, cap=_LARGEST_FLIP_LEVEL, slope=slope, caller=caller
    )
    return 1.0 / (level + 2.0)


def _gaussian_level_slope(level: float, delta: float, n_users: int, count: int) -> float:
    """The log-log slope of the composed epsilon in the level ``1/q - 2`` were RR's count Gaussian (a first step's guess).

    Falls back to `_FLIP_LEVEL_SLOPE` where the Gaussian composition has no finite epsilon.
    """

    def composed(at: float) -> float:
        flip = 1.0 / (at + 2.0)
        per_run = (1.0 - 2.0 * flip) / math.sqrt(max(n_users - 1, 1) * flip * (1.0 - flip))
        return gaussian_epsilon(delta, sigma=1.0 / (per_run * math.sqrt(count)), sensitivity=1.0)

    try:
        low, high = composed(level), composed(level * _SLOPE_STEP)
    except InvalidParameterError:
        return _FLIP_LEVEL_SLOPE
    if not (0.0 < low < high < math.inf):
        return _FLIP_LEVEL_SLOPE
    return math.log(high / low) / math.log(_SLOPE_STEP)


def _gaussian_flip_estimate(epsilon: float, delta: float, n_users: int, count: int) -> float:
    """The flip probability for which ``count`` runs of RR meet ``(epsilon, delta)`` if RR's count were Gaussian.

    Each run's count moves by ``1 - 2q`` with variance ``(n-1) q (1-q)``: a Gaussian mechanism of
    ``mu = (1-2q) / sqrt((n-1) q (1-q))``; ``count`` of them compose to ``sqrt(count) mu``, which
    the analytic Gaussian (`~privsum.accounting.gaussian.gaussian_sigma`) fixes. An estimate (the
    count is not Gaussian), used only to start the search.
    """
    per_run = 1.0 / (gaussian_sigma(epsilon, delta, sensitivity=1.0) * math.sqrt(count))
    scaled = per_run**2 * max(n_users - 1, 1)  # (1 - 2q)^2 = scaled q (1 - q)
    return 0.5 * (1.0 - math.sqrt(1.0 - 4.0 / (4.0 + scaled)))
