"""Amplification by shuffling for an epsilon0-LDP local randomizer.

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

from privsum._validation import check_delta, check_epsilon, check_integer, check_real, invalid
from privsum.accounting.guarantee import Neighbouring, PrivacyGuarantee
from privsum.accounting.profile import PrivacyProfile

__all__ = [
    "shuffle_amplification",
    "shuffle_amplification_closed_form",
    "shuffle_amplification_delta",
    "shuffle_amplification_profile",
]

#: Relative tolerance of `shuffle_amplification`'s root search on epsilon.
_EPSILON_RTOL = 1e-10


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
    from scipy import stats

    c_values, weights = _clone_counts(epsilon0, n_users, tail_mass)
    keep = math.exp(epsilon0) / (math.exp(epsilon0) + 1.0)
    a_low, a_high = (v.astype(np.int64) for v in stats.binom.ppf([[tail_mass / 8], [1 - tail_mass / 8]], c_values, 0.5))
    starts = np.maximum(a_low - 1, 0)
    lengths = np.minimum(a_high + 1, c_values) + 2 - starts  # first coordinate A + D or A + 1 - D
    segment = np.repeat(np.arange(c_values.size), lengths)
    a = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths) + starts[segment]
    c, weight = c_values[segment], weights[segment]
    shifted, same = stats.binom.pmf(a - 1, c, 0.5), stats.binom.pmf(a, c, 0.5)
    p = weight * (keep * shifted + (1 - keep) * same)
    q = weight * (keep * same + (1 - keep) * shifted)
    return PrivacyProfile(p, q, p_tail=max(0.0, 1.0 - p.sum()), q_tail=max(0.0, 1.0 - q.sum()))


def _clone_counts(epsilon0: float, n_users: int, tail_mass: float) -> tuple[np.ndarray, np.ndarray]:
    """The values of ``C ~ Bin(n-1, e^-e0)`` kept (all but tails of mass ``<= tail_mass / 2``) and their probabilities."""
    from scipy import stats

    clones = stats.binom(n_users - 1, math.exp(-epsilon0))
    c_low, c_high = (int(v) for v in clones.ppf([tail_mass / 4, 1 - tail_mass / 4]))
    c_values = np.arange(max(c_low - 1, 0), c_high + 2)
    return c_values, clones.pmf(c_values)


def shuffle_amplification_delta(epsilon0: float, n_users: int, epsilon: float, *, tail_mass: float = 1e-14) -> float:
    """Hockey-stick divergence at ``epsilon`` of the FMT21 dominating pair, without building the pair.

    For each clone count ``c`` the privacy loss of the outcome ``(c, a)`` increases with ``a``,
    so ``P - e^epsilon Q`` is positive exactly above one threshold ``a*(c, epsilon)``, and its sum
    there is a combination of two binomial survival functions of ``Bin(c, 1/2)``. The values of
    ``C`` outside the kept range (mass ``<= tail_mass / 2``) count as infinite loss, so this is an
    upper bound on the pair's divergence; the pair is symmetric (swap ``P`` and ``Q`` and map
    ``a -> c + 1 - a``), so one direction is the profile. Cost: ``O(sqrt(n))`` survival functions.

    Examples:
        >>> d = shuffle_amplification_delta(1.0, 10_000, 0.2)
        >>> bool(abs(d - shuffle_amplification_profile(1.0, 10_000).delta(0.2)) < 1e-12)
        True
    """
    owner = "shuffle_amplification_delta"
    epsilon0 = check_epsilon(epsilon0, owner, "epsilon0")
    n_users = check_integer(n_users, "n_users", owner, low=2)
    epsilon = check_real(epsilon, "epsilon", owner, low=0.0)
    tail_mass = check_real(tail_mass, "tail_mass", owner, low=0.0, high=1e-3, low_open=True)
    c_values, weights = _clone_counts(epsilon0, n_users, tail_mass)
    return _pair_delta(epsilon0, c_values, weights, epsilon)


def _pair_delta(epsilon0: float, c_values: np.ndarray, weights: np.ndarray, epsilon: float) -> float:
    from scipy import stats

    tail = max(0.0, 1.0 - math.fsum(weights))
    if epsilon >= epsilon0:
        return tail  # every finite loss is at most epsilon0
    keep = math.exp(epsilon0) / (math.exp(epsilon0) + 1.0)
    growth = math.exp(epsilon)
    # loss(a) > epsilon  <=>  r = a / (c - a + 1) > ratio  <=>  a > ratio (c + 1) / (1 + ratio)
    ratio = (growth * keep - (1 - keep)) / (keep - growth * (1 - keep))
    first = np.floor(ratio * (c_values + 1) / (1 + ratio)).astype(np.int64) + 1
    # sum over a >= first of pmf(a - 1) and of pmf(a): survival functions at first - 2 and first - 1
    below, at = stats.binom.sf(first - 2, c_values, 0.5), stats.binom.sf(first - 1, c_values, 0.5)
    upper = keep * below + (1 - keep) * at
    lower = keep * at + (1 - keep) * below
    return tail + float(np.sum(weights * np.maximum(upper - growth * lower, 0.0)))


def _amplified_epsilon(epsilon0: float, n_users: int, delta: float, tail_mass: float = 1e-14) -> float:
    """Smallest epsilon (to a relative ``1e-10``, rounded up) whose pair divergence meets ``delta``.

    Brent's method on ``log delta(epsilon) - log delta`` (about ten evaluations), then the root
    is moved up until it is feasible, so the result never undershoots.
    """
    from scipy import optimize

    c_values, weights = _clone_counts(epsilon0, n_users, tail_mass)

    def excess(epsilon: float) -> float:
        return math.log(max(_pair_delta(epsilon0, c_values, weights, epsilon), 1e-300)) - math.log(delta)

    if excess(epsilon0) > 0:
        return math.inf
    if excess(0.0) <= 0:
        return 0.0
    step = _EPSILON_RTOL * epsilon0
    root = optimize.brentq(excess, 0.0, epsilon0, xtol=step, rtol=_EPSILON_RTOL)
    feasible = min(root + step, epsilon0)
    while excess(feasible) > 0:
        step *= 2.0
        feasible = min(root + step, epsilon0)
    return feasible


def shuffle_amplification(epsilon0: float, delta: float, n_users: int) -> PrivacyGuarantee:
    """The tighter of the numerical and closed-form FMT21 bounds at ``delta``.

    The numerical bound is the smallest epsilon whose `shuffle_amplification_delta` meets
    ``delta`` (Brent's method to a relative ``1e-10``, returning a feasible point), in about ten
    evaluations of ``O(sqrt(n))`` survival functions each; it agrees with
    ``shuffle_amplification_profile(epsilon0, n_users).epsilon(delta)`` (a test checks a relative
    ``1e-6``) without building the profile's ``O(n)`` outcomes.

    Examples:
        >>> shuffle_amplification(1.0, 1e-6, 10_000).epsilon < 0.4
        True
    """
    owner = "shuffle_amplification"
    delta = check_delta(delta, owner, allow_zero=False)
    epsilon0 = check_epsilon(epsilon0, owner, "epsilon0")
    n_users = check_integer(n_users, "n_users", owner, low=2)
    numerical = _amplified_epsilon(epsilon0, n_users, delta)
    try:
        closed = shuffle_amplification_closed_form(epsilon0, delta, n_users).epsilon
    except ValueError:
        closed = math.inf
    return PrivacyGuarantee(min(numerical, closed, epsilon0), delta, Neighbouring.REPLACE_ONE)
