"""An in-memory cache of calibration and accounting results, shared across classes and fits.

Calibrations (the least noise meeting a target guarantee) and the guarantees of calibrated
protocols are deterministic functions of public parameters, and costly: a tight calibration
evaluates many privacy profiles. `cached_calibration` remembers each result under a key made
of the function and *every* argument, each with its type (so ``True`` and ``1``, or ``1`` and
``1.0``, never share an entry), and returns the identical object on a repeated call. The cache
is bounded (least recently used entries are evicted) and lives in memory only.

Privacy:
    Sharing is safe because cached results are immutable (frozen dataclasses, guarantees) and
    are computed from public parameters only, never from users' data or randomness. A call
    whose arguments cannot be hashed is computed without the cache; a call that raises is not
    cached (the next call raises again).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, NamedTuple, TypeVar

__all__ = ["CacheInfo", "cached_calibration", "calibration_cache_info", "clear_calibration_cache"]

#: Entries kept at most (each is one calibrated protocol or one guarantee: small).
MAX_ENTRIES = 512

Result = TypeVar("Result")

_entries: OrderedDict[Hashable, Any] = OrderedDict()
_lock = threading.Lock()
_counts = {"hits": 0, "misses": 0}


class CacheInfo(NamedTuple):
    """Hits, misses and current size of the calibration cache."""

    hits: int
    misses: int
    size: int
    max_entries: int


def _typed(value: Any) -> tuple[type, Any]:
    """``value`` with its type, recursively inside tuples (so ``(True,)`` and ``(1,)`` differ too)."""
    if isinstance(value, tuple):
        return (type(value), tuple(_typed(item) for item in value))
    return (type(value), value)


def _key(function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Hashable | None:
    """The cache key, or ``None`` when an argument cannot be hashed."""
    key = (function, tuple(_typed(a) for a in args), tuple(sorted((name, _typed(v)) for name, v in kwargs.items())))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def cached_calibration(function: Callable[..., Result], /, *args: Any, **kwargs: Any) -> Result:
    """``function(*args, **kwargs)``, computed once per distinct (function, typed arguments).

    Examples:
        >>> calls = []
        >>> def calibrate_noise(epsilon, *, n_users):
        ...     calls.append(epsilon)
        ...     return (epsilon, n_users)
        >>> first = cached_calibration(calibrate_noise, 1.0, n_users=10)
        >>> cached_calibration(calibrate_noise, 1.0, n_users=10) is first, len(calls)
        (True, 1)
        >>> _ = cached_calibration(calibrate_noise, 1, n_users=10)  # an int is another key
        >>> len(calls)
        2
    """
    key = _key(function, args, kwargs)
    if key is None:
        return function(*args, **kwargs)
    with _lock:
        if key in _entries:
            _entries.move_to_end(key)
            _counts["hits"] += 1
            return _entries[key]
    result = function(*args, **kwargs)  # outside the lock: calibrations may nest
    with _lock:
        _counts["misses"] += 1
        result = _entries.setdefault(key, result)  # a concurrent identical call keeps the first result
        _entries.move_to_end(key)
        while len(_entries) > MAX_ENTRIES:
            _entries.popitem(last=False)
    return result


def calibration_cache_info() -> CacheInfo:
    """Hits, misses and size of the cache."""
    with _lock:
        return CacheInfo(_counts["hits"], _counts["misses"], len(_entries), MAX_ENTRIES)


def clear_calibration_cache() -> None:
    """Forget every cached result (and reset the counts)."""
    with _lock:
        _entries.clear()
        _counts["hits"] = _counts["misses"] = 0
