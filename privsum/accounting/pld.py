"""Numerical composition of privacy-loss distributions (PLDs) with ``dp-accounting``.

A `PLDPair` holds the PLD of each direction of a neighbouring pair (``P`` vs ``Q`` and ``Q`` vs
``P``); composing two pairs composes each direction, and the reported delta or epsilon is the
maximum of the two. All PLDs are built with pessimistic discretisation, so every number is an
upper bound on the true privacy loss.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.pld.common import DifferentialPrivacyParameters

from privsum._validation import check_delta, check_integer, check_real, invalid
from privsum.accounting.guarantee import PrivacyGuarantee
from privsum.accounting.profile import PrivacyProfile

__all__ = ["DEFAULT_DISCRETIZATION", "PLDPair"]

DEFAULT_DISCRETIZATION = 1e-4


@dataclass(frozen=True)
class PLDPair:
    """Privacy-loss distributions of both directions of a (possibly composed) neighbouring pair.

    Examples:
        >>> from privsum.accounting import randomized_response_profile
        >>> once = PLDPair.from_profile(randomized_response_profile(0.5))
        >>> twice = once.self_compose(2)
        >>> 0.99 < twice.epsilon(1e-9) <= 1.0 + 1e-3
        True
    """

    forward: pld_lib.PrivacyLossDistribution
    backward: pld_lib.PrivacyLossDistribution

    @classmethod
    def from_profile(cls, profile: PrivacyProfile, *, discretization: float = DEFAULT_DISCRETIZATION) -> PLDPair:
        """PLDs of the profile's (dominating) pair, pessimistically discretised."""
        pair = profile.dominating_pair
        return cls.from_distributions(pair.p, pair.q, p_tail=pair.p_tail, q_tail=pair.q_tail, discretization=discretization)

    @classmethod
    def from_distributions(
        cls,
        p: np.ndarray,
        q: np.ndarray,
        *,
        p_tail: float = 0.0,
        q_tail: float = 0.0,
        discretization: float = DEFAULT_DISCRETIZATION,
    ) -> PLDPair:
        """PLDs of a neighbouring pair given as probability arrays on a common support.

        The caller vouches that ``(p, q)`` is a dominating pair; masses outside the support
        (``p_tail``, ``q_tail``) count as infinite loss.
        """
        interval = check_real(discretization, "discretization", "PLDPair.from_distributions", low=0.0, low_open=True)
        p = np.asarray(p, dtype=float).ravel()
        q = np.asarray(q, dtype=float).ravel()
        if p.shape != q.shape:
            raise invalid("q", "PLDPair.from_distributions", f"an array of the same size as p ({p.size})", q.size)
        return cls(_one_direction(p, q, p_tail, interval), _one_direction(q, p, q_tail, interval))

    @classmethod
    def from_guarantee(cls, guarantee: PrivacyGuarantee, *, discretization: float = DEFAULT_DISCRETIZATION) -> PLDPair:
        """The PLD of the worst mechanism that is (epsilon, delta)-DP (symmetric)."""
        if not guarantee.is_finite:
            raise invalid("guarantee", "PLDPair.from_guarantee", "a guarantee with finite epsilon", guarantee)
        parameters = DifferentialPrivacyParameters(guarantee.epsilon, guarantee.delta)
        pld = pld_lib.from_privacy_parameters(parameters, value_discretization_interval=discretization)
        return cls(pld, pld)

    def compose(self, other: PLDPair) -> PLDPair:
        """Composition with another pair, direction by direction."""
        return PLDPair(self.forward.compose(other.forward), self.backward.compose(other.backward))

    def self_compose(self, count: int) -> PLDPair:
        """``count``-fold composition with itself."""
        count = check_integer(count, "count", "PLDPair.self_compose", low=1)
        if count == 1:
            return self
        forward = self.forward.self_compose(count)
        backward = forward if self.backward is self.forward else self.backward.self_compose(count)
        return PLDPair(forward, backward)

    def delta(self, epsilon: float) -> float:
        """Upper bound on delta at ``epsilon`` (maximum over both directions)."""
        epsilon = check_real(epsilon, "epsilon", "PLDPair.delta", low=0.0)
        return float(min(1.0, max(self.forward.get_delta_for_epsilon(epsilon), self.backward.get_delta_for_epsilon(epsilon))))

    def epsilon(self, delta: float) -> float:
        """Upper bound on epsilon at ``delta`` (maximum over both directions, at least 0)."""
        delta = check_delta(delta, "PLDPair.epsilon")
        values = [self.forward.get_epsilon_for_delta(delta), self.backward.get_epsilon_for_delta(delta)]
        return float(max(0.0, *values))


def _one_direction(upper: np.ndarray, lower: np.ndarray, upper_tail: float, interval: float) -> pld_lib.PrivacyLossDistribution:
    """Pessimistic PLD of ``upper`` vs ``lower``, vectorised.

    Losses are rounded up to multiples of ``interval``; upper mass where lower is zero, and the
    upper mass outside the support (``upper_tail``), become infinite loss.
    """
    finite = (upper > 0) & (lower > 0)
    infinite_mass = float(upper[(upper > 0) & (lower == 0)].sum()) + upper_tail
    losses = np.log(upper[finite]) - np.log(lower[finite])
    rounded, inverse = np.unique(np.ceil(losses / interval).astype(np.int64), return_inverse=True)
    masses = np.bincount(inverse.ravel(), weights=upper[finite], minlength=rounded.size)
    rounded_pmf = dict(zip(rounded.tolist(), masses.tolist(), strict=True))
    return pld_lib.PrivacyLossDistribution.create_from_rounded_probability(
        rounded_pmf, infinite_mass, interval, pessimistic_estimate=True
    )
