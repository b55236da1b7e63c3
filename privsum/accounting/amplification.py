"""Amplification by shuffling for an epsilon0-LDP local randomizer (SPEC section 1.5).

Two bounds of Feldman, McMillan & Talwar, "Hiding Among the Clones" (FOCS 2021):

* `shuffle_amplification_closed_form`: their closed form,
  ``epsilon = log(1 + (e^e0 - 1)/(e^e0 + 1) * (8 sqrt(e^e0 log(4/delta))/sqrt(n) + 8 e^e0/n))``,
  valid when ``e0 <= log(n / (16 log(2/delta)))``.
* `shuffle_amplification_profile`: the exact profile of their dominating pair
  ``P = (A + D, C - A + 1 - D)`` versus ``Q = (A + 1 - D, C - A + D)`` with
  ``C ~ Bin(n-1, e^-e0)``, ``A ~ Bin(C, 1/2)``, ``D ~ Bern(e^e0 / (e^e0 + 1))``; any ``(epsilon,
  delta)`` it certifies holds for the shuffled output of every epsilon0-LDP randomizer.

Privacy:
    Replace-one neighbours; the adversary sees the shuffled multiset of all ``n`` reports; each
    report comes from an epsilon0-LDP randomizer with independent randomness (trusted shuffler).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from privsum._validation import check_delta, check_epsilon, check_integer, check_real, invalid
from privsum.accounting.guarantee import Neighbouring, PrivacyGuarantee
from privsum.accounting.profile import PrivacyProfile

__all__ = ["shuffle_amplification", "shuffle_amplification_closed_form", "shuffle_amplification_profile"]


def shuffle_amplification_closed_form(epsilon0: float, delta: float, n_users: int) -> PrivacyGuarantee:
    """Closed-form amplification-by-shuffling bound (FMT21 Theorem 3.1).

    Raises:
        InvalidParameterError: ``epsilon0`` exceeds ``log(n / (16 log(2/delta)))``, where the bound
            is not proven.

    Examples:
        >>> g = shuffle_amplification_closed_form(1.0, 1e-6, 100_000)
        >>> round(g.epsilon, 4)
        0.0726
    """
    owner = "shuffle_amplification_closed_form"
    epsilon0 = check_epsilon(epsilon0, owner, "epsilon0")
    delta = check_delta(delta, owner, allow_zero=False)
    n_users = check_integer(n_users, "n_users", owner, low=2)
    limit = math.log(n_users / (16.0 * math.log(2.0 / delta))) if n_users > 16.0 * math.log(2.0 / delta) else -math.inf
    if not epsilon0 <= limit:
        raise invalid("epsilon0", owner, f"at most log(n / (16 log(2/delta))) = {limit:.4g}", epsilon0)
    ratio = math.expm1(epsilon0) / (math.exp(epsilon0) + 1.0)
    inner = 8.0 * math.sqrt(math.exp(epsilon0) * math.log(4.0 / delta)) / math.sqrt(n_users) + 8.0 * math.exp(epsilon0) / n_users
    return PrivacyGuarantee(math.log1p(ratio * inner), delta, Neighbouring.REPLACE_ONE)


def shuffle_amplification_profile(epsilon0: float, n_users: int, *, tail_mass: float = 1e-14) -> PrivacyProfile:
    """Exact profile of the FMT21 dominating pair for ``n_users`` epsilon0-LDP reports.

    The outcome is indexed by ``(C, first coordinate)``; values of ``C`` and ``A`` whose
    probability lies in tails of total mass ``<= tail_mass`` are dropped and counted as infinite
    privacy loss, so the profile is an upper bound.

    Examples:
        >>> profile = shuffle_amplification_profile(1.0, 10_000)
        >>> profile.epsilon(1e-6) < shuffle_amplification_closed_form(1.0, 1e-6, 10_000).epsilon
        True
    """
    owner = "shuffle_amplification_profile"
    epsilon0 = check_epsilon(epsilon0, owner, "epsilon0")
    n_users = check_integer(n_users, "n_users", owner, low=2)
    tail_mass = check_real(tail_mass, "tail_mass", owner, low=0.0, high=1e-3, low_open=True)
    clones = stats.binom(n_users - 1, math.exp(-epsilon0))
    c_low, c_high = (int(v) for v in clones.ppf([tail_mass / 4, 1 - tail_mass / 4]))
    c_values = np.arange(max(c_low - 1, 0), c_high + 2)
    keep = math.exp(epsilon0) / (math.exp(epsilon0) + 1.0)
    p_parts, q_parts = [], []
    for c in c_values:
        weight = clones.pmf(c)
        half = stats.binom(c, 0.5)
        a_low, a_high = (int(v) for v in half.ppf([tail_mass / 8, 1 - tail_mass / 8]))
        a = np.arange(max(a_low - 1, 0), min(a_high + 1, c) + 2)  # first coordinate A + D or A + 1 - D
        shifted, same = half.pmf(a - 1), half.pmf(a)
        p_parts.append(weight * (keep * shifted + (1 - keep) * same))
        q_parts.append(weight * (keep * same + (1 - keep) * shifted))
    p, q = np.concatenate(p_parts), np.concatenate(q_parts)
    return PrivacyProfile(p, q, p_tail=max(0.0, 1.0 - p.sum()), q_tail=max(0.0, 1.0 - q.sum()))


def shuffle_amplification(epsilon0: float, delta: float, n_users: int) -> PrivacyGuarantee:
    """The tighter of the numerical and closed-form FMT21 bounds at ``delta``.

    Examples:
        >>> shuffle_amplification(1.0, 1e-6, 10_000).epsilon < 0.4
        True
    """
    owner = "shuffle_amplification"
    delta = check_delta(delta, owner, allow_zero=False)
    numerical = shuffle_amplification_profile(epsilon0, n_users).epsilon(delta)
    try:
        closed = shuffle_amplification_closed_form(epsilon0, delta, n_users).epsilon
    except ValueError:
        closed = math.inf
    return PrivacyGuarantee(min(numerical, closed, epsilon0), delta, Neighbouring.REPLACE_ONE)
