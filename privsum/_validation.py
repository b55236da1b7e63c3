"""NaN-safe parameter checks with one error-message template.

Every check is written as ``if not (condition): raise`` so that NaN fails it.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from privsum.exceptions import InvalidParameterError

__all__ = [
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
]


def invalid(name: str, owner: str, constraint: str, value: Any) -> InvalidParameterError:
    """Build the one error message used across the library."""
    return InvalidParameterError(f"The {name!r} parameter of {owner} must be {constraint}. Got {value!r} instead.")


def _as_real(value: Any, name: str, owner: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise invalid(name, owner, "a real number", value)
    return float(value)


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
    number = _as_real(value, name, owner)
    left = "(" if low_open else "["
    right = ")" if high_open else "]"
    constraint = f"a finite real number in {left}{low:g}, {high:g}{right}"
    above = number > low if low_open else number >= low
    below = number < high if high_open else number <= high
    if not (math.isfinite(number) and above and below):
        raise invalid(name, owner, constraint, value)
    return number


def check_integer(value: Any, name: str, owner: str, *, low: int = 0, high: float = math.inf) -> int:
    """Return ``value`` as an int in ``[low, high]``, or raise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise invalid(name, owner, f"an integer in [{low}, {high:g}]", value)
    if not (low <= int(value) <= high):
        raise invalid(name, owner, f"an integer in [{low}, {high:g}]", value)
    return int(value)


def check_probability(value: Any, name: str, owner: str, *, allow_zero: bool = True, allow_one: bool = False) -> float:
    """Return a probability in ``[0, 1)`` (endpoints controlled by the flags), or raise."""
    return check_real(value, name, owner, low=0.0, high=1.0, low_open=not allow_zero, high_open=not allow_one)


def check_epsilon(value: Any, owner: str, name: str = "epsilon", *, allow_infinite: bool = False) -> float:
    """Return a privacy parameter epsilon > 0 (finite unless ``allow_infinite``), or raise."""
    number = _as_real(value, name, owner)
    if allow_infinite and number == math.inf:
        return number
    return check_real(number, name, owner, low=0.0, low_open=True)


def check_delta(value: Any, owner: str, name: str = "delta", *, allow_zero: bool = True) -> float:
    """Return a privacy parameter delta in ``[0, 1)`` (``(0, 1)`` without ``allow_zero``), or raise."""
    return check_probability(value, name, owner, allow_zero=allow_zero)


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
    if integer and array.size and not np.issubdtype(array.dtype, np.integer):
        if not np.all(array == np.round(array)):
            raise invalid(name, owner, "integer-valued", "an array with non-integer entries")
        array = array.astype(np.int64)
    if low is not None and array.size and not (array.min() >= low):
        raise invalid(name, owner, f"within [{low:g}, {high if high is not None else math.inf:g}]", f"minimum {array.min()!r}")
    if high is not None and array.size and not (array.max() <= high):
        raise invalid(name, owner, f"within [{low if low is not None else -math.inf:g}, {high:g}]", f"maximum {array.max()!r}")
    return array
