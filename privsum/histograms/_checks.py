"""Checks every shuffled histogram protocol and its privacy events share."""

from __future__ import annotations

from typing import Any

from privsum._validation import check_delta, check_epsilon, check_integer, check_real

__all__ = ["MAX_SKETCH_ROWS", "check_delta_field", "check_privacy_target", "check_sketch_request"]

#: Most hash rows a count sketch may have.
MAX_SKETCH_ROWS = 512


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


def check_sketch_request(
    epsilon: Any, delta: Any, n_users: Any, rows: Any, max_messages_per_user: Any, owner: str
) -> tuple[float, float, int, int, float]:
    """The ``(epsilon, delta, n_users, rows, budget)`` a sketch's ``from_privacy`` calibrates for, each checked.

    The target as `check_privacy_target`; ``rows`` in ``[1, MAX_SKETCH_ROWS]``; the budget
    ``max_messages_per_user`` positive.

    Raises:
        InvalidParameterError: naming ``owner`` and the first parameter out of range.
    """
    epsilon, delta, n_users = check_privacy_target(epsilon, delta, n_users, owner)
    rows = check_integer(rows, "rows", owner, low=1, high=MAX_SKETCH_ROWS)
    budget = check_real(max_messages_per_user, "max_messages_per_user", owner, low=0.0, low_open=True)
    return epsilon, delta, n_users, rows, budget
