"""Helpers shared by the summation protocols: input checks, randomized rounding, instance layout."""

from __future__ import annotations

from typing import Any

import numpy as np

from privsum._user_inputs import check_has_users, randomized_round, warn_if_fewer
from privsum._validation import check_array, check_integer, check_privacy_request, invalid

__all__ = ["as_user_matrix", "check_sum_request", "integer_inputs", "randomized_round", "real_inputs", "warn_if_fewer"]


def as_user_matrix(array: np.ndarray) -> np.ndarray:
    """View a ``(n_users,)`` or ``(n_users, n_instances)`` array as ``(n_users, n_instances)``."""
    return array.reshape(array.shape[0], -1)


def check_sum_request(
    epsilon: float, delta: float, n_users: int, domain: int, owner: str, *, least_users: int = 1
) -> tuple[float, float, int, int]:
    """``(epsilon, delta, n_users, domain)`` of an integer sum's ``from_privacy``, checked (``delta > 0``)."""
    epsilon, delta, n_users = check_privacy_request(epsilon, delta, n_users, owner, least_users=least_users)
    return epsilon, delta, n_users, check_integer(domain, "domain", owner, low=1)


def check_user_count(array: np.ndarray, n_users: int, owner: str) -> None:
    """Raise unless the first axis has exactly ``n_users`` rows (the randomizer is calibrated for them)."""
    if array.shape[0] != n_users:
        raise invalid(
            "x", owner, f"an array with n_users={n_users} rows (the protocol is calibrated for them)", f"{array.shape[0]} rows"
        )


def real_inputs(
    x: Any, owner: str, *, n_users: int | None = None, clip: bool, ndim: int | tuple[int, ...] = (1, 2)
) -> np.ndarray:
    """Validate values in ``[0, 1]`` (clipped only when ``clip`` is set) as a float array.

    With ``n_users`` the array must have exactly that many rows; ``None`` accepts any number.
    """
    if clip:
        array = check_array(x, "x", owner, ndim=ndim).astype(float)
        array = np.clip(array, 0.0, 1.0)
    else:
        array = check_array(x, "x", owner, ndim=ndim, low=0.0, high=1.0).astype(float)
    check_has_users(array, owner)
    if n_users is not None:
        check_user_count(array, n_users, owner)
    return array


def integer_inputs(x: Any, owner: str, *, n_users: int | None = None, domain: int, clip: bool) -> np.ndarray:
    """Validate integers in ``{0..domain}`` (clipped only when ``clip`` is set) as ``(n_users, n_instances)``.

    With ``n_users`` the array must have exactly that many rows; ``None`` accepts any number.
    """
    if clip:
        array = check_array(x, "x", owner, ndim=(1, 2), integer=True)
        array = np.clip(array, 0, domain)
    else:
        array = check_array(x, "x", owner, ndim=(1, 2), low=0, high=domain, integer=True)
    check_has_users(array, owner)
    if n_users is not None:
        check_user_count(array, n_users, owner)
    return as_user_matrix(array.astype(np.int64))


def wire_coordinates(dimension: int, n_instances: int | None, owner: str) -> int:
    """A vector sum's wire instances: its ``dimension`` coordinates (a different ``n_instances`` is refused)."""
    if n_instances is not None and n_instances != dimension:
        raise invalid("n_instances", owner, f"None or the dimension {dimension}", n_instances)
    return dimension
