"""Checks and steps every summation protocol applies to its users' inputs (sums, clipped sums, vector sums).

Top-level so that any layer may share them: a non-empty input, a warning when fewer users take part than the
protocol was calibrated for, and unbiased randomized rounding.
"""

from __future__ import annotations

import warnings

import numpy as np

from privsum._validation import invalid
from privsum.exceptions import PrivacyLeakWarning

__all__ = ["check_has_users", "check_participant_limit", "randomized_round", "warn_if_fewer"]


def check_has_users(array: np.ndarray, owner: str) -> None:
    """Raise unless the array holds at least one user (first axis) and one entry."""
    if array.ndim == 0 or array.shape[0] == 0 or array.size == 0:
        raise invalid("x", owner, "a non-empty array (at least one user)", f"shape {array.shape}")


def warn_if_fewer(n_seen: int, n_users: int, owner: str) -> None:
    """Warn with `PrivacyLeakWarning` when ``n_seen < n_users`` users take part (the guarantee is weaker)."""
    if n_seen < n_users:
        warnings.warn(
            f"{owner} was calibrated for n_users={n_users} but {n_seen} users took part; "
            f"the guarantee is weaker: see event_for_participants({n_seen}).",
            PrivacyLeakWarning,
            stacklevel=4,
        )


def randomized_round(scaled: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Round each entry of ``scaled`` (>= 0) down or up, up with probability equal to its fractional part.

    Unbiased: ``E[result] = scaled``; the variance of one entry is ``f (1 - f)`` with ``f`` its fractional part.
    """
    floor = np.floor(scaled)
    return (floor + (rng.random(scaled.shape) < scaled - floor)).astype(np.int64)


def check_participant_limit(n_participants: int, n_users: int, owner: str, sized_for_users: str | None) -> None:
    """Warn when fewer than ``n_users`` take part; raise when more do if something is sized for ``n_users``.

    ``sized_for_users`` names what is (for example ``"the modulus is sized for them"``); ``None``: more are fine.
    """
    if sized_for_users is not None and n_participants > n_users:
        raise invalid("x", owner, f"at most n_users={n_users} users ({sized_for_users})", f"{n_participants}")
    warn_if_fewer(n_participants, n_users, owner)
