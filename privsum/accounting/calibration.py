"""Calibration: the least noise that meets a target guarantee, found by bisection."""

from __future__ import annotations

import math
from collections.abc import Callable

from privsum._validation import check_choice, check_delta, check_integer, check_real, invalid

__all__ = ["calibrate"]


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
) -> float:
    """Find the least-noise parameter whose delta (at a fixed epsilon) meets ``target_delta``.

    ``delta_at(theta)`` must be monotone in ``theta``: non-increasing when
    ``more_private="increasing"`` (more noise at larger theta), non-decreasing when
    ``"decreasing"``. Bisection keeps one end of the bracket feasible at every step and returns
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

    Raises:
        InvalidParameterError: the most private end of the bracket misses the target.

    Examples:
        >>> import math
        >>> q = calibrate(lambda q: math.exp(-q), target_delta=1e-3, lower=0.0, upper=20.0, more_private="increasing")
        >>> math.exp(-q) <= 1e-3 and q - math.log(1e3) < 1e-4
        True
    """
    owner = "calibrate"
    target_delta = check_delta(target_delta, owner, "target_delta")
    lower = check_real(lower, "lower", owner)
    upper = check_real(upper, "upper", owner, low=lower, low_open=True)
    direction = check_choice(more_private, "more_private", owner, ("increasing", "decreasing"))
    tolerance = check_real(tolerance, "tolerance", owner, low=0.0, low_open=True)
    max_iterations = check_integer(max_iterations, "max_iterations", owner, low=1)
    safe, risky = (upper, lower) if direction == "increasing" else (lower, upper)
    if not delta_at(safe) <= target_delta:
        if caller is not None:
            caller_owner, name, value = caller
            raise invalid(name, caller_owner, "a target this calibration can meet (its most private setting misses it)", value)
        raise invalid("upper" if direction == "increasing" else "lower", owner, "a parameter meeting target_delta", safe)
    if delta_at(risky) <= target_delta:
        return risky
    for _ in range(max_iterations):
        if abs(safe - risky) <= tolerance * max(1.0, abs(safe)):
            break
        middle = 0.5 * (safe + risky)
        if delta_at(middle) <= target_delta:
            safe = middle
        else:
            risky = middle
    if not math.isfinite(safe):  # pragma: no cover - guarded by check_real
        raise invalid("upper", owner, "finite", safe)
    return safe
