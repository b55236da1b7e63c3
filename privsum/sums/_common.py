"""Helpers shared by the summation protocols: input checks, randomized rounding, instance layout."""

from __future__ import annotations

from typing import Any

import numpy as np

from privsum._validation import check_array, invalid

__all__ = ["as_user_matrix", "integer_inputs", "randomized_round", "real_inputs"]


def as_user_matrix(array: np.ndarray) -> np.ndarray:
    """View a ``(n_users,)`` or ``(n_users, n_instances)`` array as ``(n_users, n_instances)``."""
    return array.reshape(array.shape[0], -1)


def check_user_count(array: np.ndarray, n_users: int, owner: str) -> None:
    """Raise unless the first axis has exactly ``n_users`` rows (the randomizer is calibrated for them)."""
    if array.shape[0] != n_users:
        raise invalid(
            "x", owner, f"an array with n_users={n_users} rows (the protocol is calibrated for them)", f"{array.shape[0]} rows"
        )


def real_inputs(x: Any, owner: str, *, n_users: int, clip: bool, ndim: int | tuple[int, ...] = (1, 2)) -> np.ndarray:
    """Validate values in ``[0, 1]`` (clipped only when ``clip`` is set) as a float array."""
    if clip:
        array = check_array(x, "x", owner, ndim=ndim).astype(float)
        array = np.clip(array, 0.0, 1.0)
    else:
        array = check_array(x, "x", owner, ndim=ndim, low=0.0, high=1.0).astype(float)
    check_user_count(array, n_users, owner)
    return array


def integer_inputs(x: Any, owner: str, *, n_users: int, domain: int, clip: bool) -> np.ndarray:
    """Validate integers in ``{0..domain}`` (clipped only when ``clip`` is set) as ``(n_users, n_instances)``."""
    if clip:
        array = check_array(x, "x", owner, ndim=(1, 2), integer=True)
        array = np.clip(array, 0, domain)
    else:
        array = check_array(x, "x", owner, ndim=(1, 2), low=0, high=domain, integer=True)
    check_user_count(array, n_users, owner)
    return as_user_matrix(array.astype(np.int64))


def randomized_round(scaled: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Round each entry of ``scaled`` (>= 0) down or up, up with probability equal to its fractional part.

    Unbiased: ``E[result] = scaled``; the variance of one entry is ``f (1 - f)`` with ``f`` its fractional part.
    """
    floor = np.floor(scaled)
    return (floor + (rng.random(scaled.shape) < scaled - floor)).astype(np.int64)
