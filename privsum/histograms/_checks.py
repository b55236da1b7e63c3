"""Checks every shuffled histogram protocol and its privacy events share."""

from __future__ import annotations

from typing import Any

from privsum._validation import check_delta, check_epsilon, check_integer

__all__ = ["check_delta_field", "check_privacy_target"]


def check_delta_field(instance: Any, owner: str) -> None:
    """Validate a frozen dataclass's ``delta`` field in place: in ``(0, 1)``, as Poisson-noise accounting needs.

    Raises:
        InvalidParameterError: naming ``owner``'s ``delta``.
    """
    object.__setattr__(instance, "delta", check_delta(instance.delta, owner, allow_zero=False))


def check_privacy_target(epsilon: Any, delta: Any, n_users: Any, owner: str) -> tuple[float, float, int]:
    """The ``(epsilon, delta, n_users)`` a ``from_privacy`` calibrates for, each checked.

    Epsilon positive and finite, delta in ``(0, 1)``, at least one user.

    Raises:
        InvalidParameterError: naming ``owner`` and the first parameter out of range.
    """
    epsilon = check_epsilon(epsilon, owner)
    delta = check_delta(delta, owner, allow_zero=False)
    n_users = check_integer(n_users, "n_users", owner, low=1)
    return epsilon, delta, n_users
