"""Calibration: the least noise that meets a target guarantee (bisection or regula falsi), and plain bisection."""

from __future__ import annotations

import math
from collections.abc import Callable

from privsum._validation import check_choice, check_delta, check_integer, check_real, invalid

__all__ = ["CALIBRATION_METHODS", "bisect_last", "calibrate"]

#: Bracketing searches `calibrate` runs: ``"bisection"`` halves the bracket; ``"illinois"`` is
#: regula falsi (Illinois variant) on ``log delta``, which needs far fewer evaluations of a smooth
#: profile. Both keep one feasible end and return it.
CALIBRATION_METHODS = ("bisection", "illinois")
# Illinois guesses stay this fraction of the bracket away from its ends.
_GUARD = 0.01


def calibrate(
    delta_at: Callable[[float], float],
    *,
    target_delta: float,
    lower: float,
    upper: float,
    more_private: str,
    tolerance: float = 1e-6,
    max_iterations: int = 200,
    caller: tuple[str, str, object] | None = None,
    method: str = "bisection",
    delta_rtol: float = 0.0,
) -> float:
    """Find the least-noise parameter whose delta (at a fixed epsilon) meets ``target_delta``.

    ``delta_at(theta)`` must be monotone in ``theta``: non-increasing when
    ``more_private="increasing"`` (more noise at larger theta), non-decreasing when
    ``"decreasing"``. The search keeps one end of the bracket feasible at every step and returns
    that end, so the result never overshoots: ``delta_at(result) <= target_delta``.

    Args:
        delta_at: the privacy profile as a function of the noise parameter.
        target_delta: the delta to meet.
        lower: one end of the bracket.
        upper: the other end; the most private end must meet the target.
        more_private: ``"increasing"`` or ``"decreasing"``.
        tolerance: stop when the bracket is narrower than ``tolerance * max(1, |theta|)``.
        max_iterations: bisection steps at most.
        caller: ``(owner, name, value)`` of the public entry and the parameter its caller passed
            (e.g. ``("RRBitSum", "delta", 1e-300)``): a target the bracket cannot meet is then
            refused naming them, never this helper's ``upper``/``lower``.
        method: ``"bisection"`` (the midpoint of the bracket) or ``"illinois"`` (the zero of the
            secant of ``log delta_at`` across the bracket, Illinois-damped, kept 1% of the bracket
            away from its ends; two steps in a row that do not halve the bracket are followed by a
            bisection step, so it never needs more than about three times bisection's evaluations): the same
            guarantee, typically a third to a half of the evaluations on a smooth profile.
        delta_rtol: also stop once the feasible end's delta is within this fraction below the
            target (``target * (1 - delta_rtol) <= delta <= target``); ``0`` stops on ``tolerance`` only.

    Raises:
        InvalidParameterError: the most private end of the bracket misses the target.

    Examples:
        >>> import math
        >>> q = calibrate(lambda q: math.exp(-q), target_delta=1e-3, lower=0.0, upper=20.0, more_private="increasing")
        >>> math.exp(-q) <= 1e-3 and q - math.log(1e3) < 1e-4
        True
    """
    owner = "calibrate"
    if not callable(delta_at):
        raise invalid("delta_at", owner, "a callable delta_at(parameter)", delta_at)
    named = isinstance(caller, tuple) and len(caller) == 3 and all(isinstance(part, str) for part in caller[:2])
    if not (caller is None or named):
        raise invalid("caller", owner, "None or a tuple (owner, name, value) with owner and name strings", caller)
    target_delta = check_delta(target_delta, owner, "target_delta")
    lower = check_real(lower, "lower", owner)
    upper = check_real(upper, "upper", owner, low=lower, low_open=True)
    direction = check_choice(more_private, "more_private", owner, ("increasing", "decreasing"))
    tolerance = check_real(tolerance, "tolerance", owner, low=0.0, low_open=True)
    max_iterations = check_integer(max_iterations, "max_iterations", owner, low=1)
    method = check_choice(method, "method", owner, CALIBRATION_METHODS)
    delta_rtol = check_real(delta_rtol, "delta_rtol", owner, low=0.0, high=1.0, high_open=True)
    safe, risky = (upper, lower) if direction == "increasing" else (lower, upper)
    safe_delta = delta_at(safe)
    if not safe_delta <= target_delta:
        if caller is not None:
            caller_owner, name, value = caller
            raise invalid(name, caller_owner, "a target this calibration can meet (its most private setting misses it)", value)
        raise invalid("upper" if direction == "increasing" else "lower", owner, "a parameter meeting target_delta", safe)
    risky_delta = delta_at(risky)
    if risky_delta <= target_delta:
        return risky
    log_target = math.log(max(target_delta, 1e-300))
    safe_gap, risky_gap = _log_gap(safe_delta, log_target), _log_gap(risky_delta, log_target)
    kept = None  # the end an Illinois step left in place ("safe" or "risky")
    slow_steps = 0  # Illinois steps in a row that did not halve the bracket; two are followed by a bisection step
    for _ in range(max_iterations):
        width = abs(safe - risky)
        if width <= tolerance * max(1.0, abs(safe)):
            break
        if delta_rtol > 0.0 and safe_delta >= target_delta * (1.0 - delta_rtol):
            break
        if method == "bisection" or slow_steps >= 2 or not risky_gap > safe_gap:
            middle = 0.5 * (safe + risky)
        else:  # safe_gap <= 0 < risky_gap: the secant's zero, as a fraction of the way to risky
            fraction = -safe_gap / (risky_gap - safe_gap)
            middle = safe + min(max(fraction, _GUARD), 1.0 - _GUARD) * (risky - safe)
        middle_delta = delta_at(middle)
        if middle_delta <= target_delta:
            safe, safe_delta, safe_gap = middle, middle_delta, _log_gap(middle_delta, log_target)
            if kept == "risky":
                risky_gap /= 2.0  # Illinois: the end kept twice in a row is damped
            kept = "risky"
        else:
            risky, risky_gap = middle, _log_gap(middle_delta, log_target)
            if kept == "safe":
                safe_gap /= 2.0
            kept = "safe"
        slow_steps = slow_steps + 1 if abs(safe - risky) > 0.5 * width and slow_steps < 2 else 0
    if not math.isfinite(safe):  # pragma: no cover - guarded by check_real
        raise invalid("upper", owner, "finite", safe)
    return safe


def bisect_last(predicate: Callable[[float], bool], low: float, high: float, *, tolerance: float) -> float:
    """The largest point found in ``[low, high)`` where ``predicate`` holds: bisection to ``tolerance``.

    ``predicate`` should hold up to some point and fail past it. ``low`` is taken to hold (it is
    returned, never evaluated, when nothing above it holds) and ``high`` to fail; the bracket is
    halved, keeping the end where ``predicate`` holds, until it is at most ``tolerance`` wide (or
    no float lies between its ends).

    Examples:
        >>> point = bisect_last(lambda x: x * x <= 2.0, 1.0, 2.0, tolerance=1e-9)
        >>> point * point <= 2.0 and 2.0 - point * point < 1e-8
        True
    """
    owner = "bisect_last"
    if not callable(predicate):
        raise invalid("predicate", owner, "a callable predicate(point)", predicate)
    low = check_real(low, "low", owner)
    high = check_real(high, "high", owner)
    tolerance = check_real(tolerance, "tolerance", owner, low=0.0, low_open=True)
    while high - low > tolerance:
        middle = 0.5 * (low + high)
        if not low < middle < high:
            break
        if predicate(middle):
            low = middle
        else:
            high = middle
    return low


def _log_gap(delta: float, log_target: float) -> float:
    """``log(delta / target)``, finite (a zero delta counts as ``1e-300``)."""
    return math.log(max(delta, 1e-300)) - log_target
