"""NaN-safe parameter checks with one error-message template.

Every check is written as ``if not (condition): raise`` so that NaN fails it. Numbers are
converted (and their conversion checked) before any arithmetic: a Python integer too large for
a float (``10**400``) is refused, never an ``OverflowError``.

Supported privacy parameters: a calibration target or local randomizer parameter ``epsilon`` is
a real number in ``(0, MAX_EPSILON]``. Above `MAX_EPSILON` (100) a mechanism offers no meaningful
privacy and ``e^epsilon`` overflows double precision in intermediate terms (near 710), so such
values are refused with a clear error instead; ``inf`` ("no privacy") is accepted only where
documented. A reported `~privsum.accounting.PrivacyGuarantee` may hold any epsilon in
``[0, inf]`` (a composition may legitimately exceed 100, and ``0`` is reportable where achieved).
"""

from __future__ import annotations

import contextlib
import math
import numbers
from collections.abc import Iterator
from typing import Any

import numpy as np

from privsum.exceptions import InvalidParameterError

__all__ = [
    "MAX_EPSILON",
    "MAX_INT64",
    "as_array",
    "check_array",
    "check_choice",
    "check_delta",
    "check_epsilon",
    "check_integer",
    "check_integer_array",
    "check_probability",
    "check_real",
    "invalid",
    "refusals_as",
]


#: Largest integer `check_integer` accepts unless told otherwise (numpy's int64 maximum).
MAX_INT64 = 2**63 - 1
#: Largest epsilon accepted as a calibration target or randomizer parameter (see the module docstring).
MAX_EPSILON = 100.0


def invalid(name: str, owner: str, constraint: str, value: Any) -> InvalidParameterError:
    """Build the one error message used across the library (its parts kept in ``error.refusal``)."""
    error = InvalidParameterError(f"The {name!r} parameter of {owner} must be {constraint}. Got {value!r} instead.")
    error.refusal = (name, owner, constraint, value)  # type: ignore[attr-defined]
    return error


@contextlib.contextmanager
def refusals_as(
    owner: str, renamed: dict[str, str] | None = None, *, derived_from: tuple[str, Any] | None = None
) -> Iterator[None]:
    """Re-raise a helper's refusal as ``owner``'s, naming the parameter the caller passed.

    A public entry that delegates (``ClippedVectorSum.from_privacy`` to ``ClippedSum.from_privacy``)
    wraps the call: a refusal by another owner is re-raised under ``owner``, its parameter
    renamed by ``renamed`` (``{"domain": "levels"}``); a parameter the caller never passed (a
    derived per-coordinate epsilon) is reported as ``derived_from = (name, value)``, the caller's
    parameter it was derived from.
    """
    try:
        yield
    except InvalidParameterError as error:
        refusal = getattr(error, "refusal", None)
        if refusal is None or refusal[1] == owner:
            raise
        name, _, constraint, value = refusal
        if renamed is not None and name in renamed:
            raise invalid(renamed[name], owner, constraint, value) from None
        if derived_from is not None:
            caller_name, caller_value = derived_from
            raise invalid(caller_name, owner, f"such that the derived {name!r} is {constraint}", caller_value) from None
        raise invalid(name, owner, constraint, value) from None


def _as_real(value: Any, name: str, owner: str, constraint: str = "a real number") -> float:
    """``float(value)`` for a real number (bools refused); too large for a float: refused, never an OverflowError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise invalid(name, owner, constraint, value)
    try:
        return float(value)
    except (OverflowError, ValueError, TypeError):
        raise invalid(name, owner, constraint, _short(value)) from None


def _short(value: Any) -> Any:
    """``value`` for an error message: a huge integer is shown by its size, not its 400 digits."""
    if isinstance(value, numbers.Integral) and abs(int(value)) >= 10**30:
        return f"an integer of {len(str(abs(int(value))))} digits"
    return value


def _interval(low: float, high: float, low_open: bool, high_open: bool) -> str:
    """``[low, high]`` with the brackets a finite real number can meet (an infinite end is always open)."""
    left = "(" if low_open or low == -math.inf else "["
    right = ")" if high_open or high == math.inf else "]"
    return f"{left}{low:g}, {high:g}{right}"


def check_real(
    value: Any,
    name: str,
    owner: str,
    *,
    low: float = -math.inf,
    high: float = math.inf,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as a finite float inside the given interval, or raise."""
    constraint = f"a finite real number in {_interval(low, high, low_open, high_open)}"
    number = _as_real(value, name, owner, constraint)
    above = number > low if low_open else number >= low
    below = number < high if high_open else number <= high
    if not (math.isfinite(number) and above and below):
        raise invalid(name, owner, constraint, value)
    return number


def check_integer(value: Any, name: str, owner: str, *, low: int = 0, high: float = MAX_INT64) -> int:
    """Return ``value`` as an int in ``[low, high]`` (by default at most `MAX_INT64`: every size fits numpy), or raise."""
    shown_high = "2^63 - 1" if high == MAX_INT64 else (f"{high:g}" if isinstance(high, float) else str(high))
    constraint = f"an integer in [{low}, {shown_high}]" if high < math.inf else f"an integer >= {low}"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise invalid(name, owner, constraint, value)
    if not (low <= int(value) <= high):
        raise invalid(name, owner, constraint, _short(value))
    return int(value)


def check_probability(value: Any, name: str, owner: str, *, allow_zero: bool = True, allow_one: bool = False) -> float:
    """Return a probability in ``[0, 1)`` (endpoints controlled by the flags), or raise."""
    return check_real(value, name, owner, low=0.0, high=1.0, low_open=not allow_zero, high_open=not allow_one)


def check_epsilon(
    value: Any,
    owner: str,
    name: str = "epsilon",
    *,
    allow_infinite: bool = False,
    allow_zero: bool = False,
    high: float = MAX_EPSILON,
) -> float:
    """Return a privacy parameter epsilon in ``(0, high]`` (``[0, high]`` with ``allow_zero``, ``inf`` with ``allow_infinite``).

    The default ``high`` is `MAX_EPSILON`; a reported guarantee passes ``high=inf``.
    """
    interval = _interval(0.0, high, not allow_zero, False)
    constraint = f"a real number in {interval}" + (" or inf" if allow_infinite else "")
    number = _as_real(value, name, owner, constraint)
    if allow_infinite and number == math.inf:
        return number
    above = number >= 0.0 if allow_zero else number > 0.0
    if not (math.isfinite(number) and above and number <= high):
        raise invalid(name, owner, constraint, value)
    return number


def check_delta(value: Any, owner: str, name: str = "delta", *, allow_zero: bool = True) -> float:
    """Return a privacy parameter delta in ``[0, 1)`` (``(0, 1)`` without ``allow_zero``), or raise."""
    return check_probability(value, name, owner, allow_zero=allow_zero)


def check_privacy_request(
    epsilon: float, delta: float, n_users: int, owner: str, *, least_users: int = 1
) -> tuple[float, float, int]:
    """``(epsilon, delta, n_users)`` of a ``from_privacy`` call, checked: ``epsilon > 0``, ``0 < delta < 1``, enough users."""
    return (
        check_epsilon(epsilon, owner),
        check_delta(delta, owner, allow_zero=False),
        check_integer(n_users, "n_users", owner, low=least_users),
    )


def check_choice(value: Any, name: str, owner: str, choices: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``choices``, or raise."""
    if not (isinstance(value, str) and value in choices):
        raise invalid(name, owner, "one of " + ", ".join(repr(c) for c in choices), value)
    return value


def as_array(values: Any, name: str, owner: str) -> np.ndarray:
    """``np.asarray(values)``, raising the library's error where numpy cannot build an array (ragged lists, ...)."""
    try:
        return np.asarray(values)
    except Exception as error:  # numpy raises ValueError, TypeError, OverflowError, ... here
        raise invalid(name, owner, "array-like (a rectangular array)", type(values).__name__) from error


def check_integer_array(values: Any, name: str, owner: str, *, ndim: int | None = 1, low: int | None = None) -> np.ndarray:
    """Return ``values`` as an int64 array of integer dtype (floats and bools refused, never rounded), or raise.

    An empty array of any numeric dtype is accepted (``[]`` is a float array to numpy).
    """
    array = as_array(values, name, owner)
    if ndim is not None and array.ndim != ndim:
        raise invalid(name, owner, f"a {ndim}-D integer array", f"shape {array.shape}")
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise invalid(name, owner, "an integer array", f"dtype {array.dtype}")
    if not array.size and not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
        raise invalid(name, owner, "an integer array", f"dtype {array.dtype}")
    if array.size and array.dtype == np.uint64 and not (array.max() <= np.iinfo(np.int64).max):
        raise invalid(name, owner, "integers below 2**63", int(array.max()))
    if low is not None and array.size and not (array.min() >= low):
        raise invalid(name, owner, f"integers >= {low}", int(array.min()))
    return array.astype(np.int64, copy=False)


def check_array(
    values: Any,
    name: str,
    owner: str,
    *,
    ndim: int | tuple[int, ...] | None = None,
    low: float | None = None,
    high: float | None = None,
    integer: bool = False,
) -> np.ndarray:
    """Return ``values`` as a finite numeric array, checking shape, domain and integrality.

    Values outside ``[low, high]`` raise: nothing is silently clipped.
    """
    array = as_array(values, name, owner)
    if array.dtype == bool:
        array = array.astype(np.int64)
    if not np.issubdtype(array.dtype, np.number) or np.issubdtype(array.dtype, np.complexfloating):
        raise invalid(name, owner, "an array of real numbers", f"an array of dtype {array.dtype}")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else ndim
        if array.ndim not in allowed:
            raise invalid(name, owner, f"an array with ndim in {allowed}", f"shape {array.shape}")
    if array.size and not np.all(np.isfinite(array)):
        raise invalid(name, owner, "finite (no NaN or inf)", "an array with non-finite entries")
    fractional = integer and array.size and not np.issubdtype(array.dtype, np.integer)
    if fractional and not np.all(array == np.round(array)):
        raise invalid(name, owner, "integer-valued", "an array with non-integer entries")
    if low is not None and array.size and not (array.min() >= low):
        raise invalid(name, owner, f"within [{low:g}, {high if high is not None else math.inf:g}]", f"minimum {array.min()!r}")
    if high is not None and array.size and not (array.max() <= high):
        raise invalid(name, owner, f"within [{low if low is not None else -math.inf:g}, {high:g}]", f"maximum {array.max()!r}")
    if fractional:
        array = array.astype(np.int64)  # integer-valued and inside [low, high] (callers bound it to int64)
    return array
