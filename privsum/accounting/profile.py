"""Exact privacy profiles of mechanisms with discrete, computable output distributions.

For neighbouring datasets ``X, X'`` with output distributions ``P`` and ``Q`` on a common finite
support, the privacy profile is the hockey-stick divergence taken in both directions::

    delta(epsilon) = max( sum_v max(0, P(v) - e^epsilon Q(v)),  sum_v max(0, Q(v) - e^epsilon P(v)) )

and ``epsilon(delta)`` is its exact inverse (the smallest ``epsilon >= 0`` with
``delta(epsilon) <= delta``). Both are computed in closed form from the sorted privacy losses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from privsum._validation import check_delta, check_epsilon, check_integer, check_real, invalid
from privsum.accounting.guarantee import Neighbouring, PrivacyGuarantee

__all__ = ["PrivacyProfile", "randomized_response_profile"]

_MASS_TOLERANCE = 1e-9


@dataclass(frozen=True)
class _Direction:
    """Privacy losses of one direction (upper vs lower), aggregated by distinct loss value."""

    losses: np.ndarray  # ascending, distinct, finite
    suffix_upper: np.ndarray  # suffix_upper[i] = sum of upper mass at losses[j] for j >= i
    suffix_lower: np.ndarray
    infinite_mass: float  # upper mass where lower is zero, plus upper mass outside the support

    @classmethod
    def from_losses(cls, raw: np.ndarray, upper: np.ndarray, lower: np.ndarray, infinite_mass: float) -> _Direction:
        """From the finite losses ``log(upper/lower)`` (any order) and their masses."""
        losses, upper_mass, lower_mass = _sorted_losses(raw, upper, lower)
        suffix_upper = np.append(np.cumsum(upper_mass[::-1])[::-1], 0.0)
        suffix_lower = np.append(np.cumsum(lower_mass[::-1])[::-1], 0.0)
        return cls(losses, suffix_upper, suffix_lower, infinite_mass)

    def delta(self, epsilon: np.ndarray) -> np.ndarray:
        # Points with loss > epsilon contribute upper - e^epsilon * lower.
        first_above = np.searchsorted(self.losses, epsilon, side="right")
        lower = self.suffix_lower[first_above]
        with np.errstate(over="ignore", invalid="ignore"):
            value = np.where(lower > 0, self.suffix_upper[first_above] - np.exp(epsilon) * lower, 0.0)
        return self.infinite_mass + np.maximum(value, 0.0)

    def epsilon(self, delta: float) -> float:
        if self.infinite_mass > delta:
            return math.inf
        if self.delta(np.array(0.0)) <= delta:
            return 0.0
        at_breakpoints = self.delta(self.losses)
        index = int(np.argmax(at_breakpoints <= delta))  # first breakpoint meeting the target
        # On (losses[index-1], losses[index]] the points above epsilon are those with j >= index.
        upper = self.suffix_upper[index]
        lower = self.suffix_lower[index]
        epsilon = math.log((self.infinite_mass + upper - delta) / lower)
        previous = self.losses[index - 1] if index > 0 else 0.0
        epsilon = float(min(max(epsilon, previous, 0.0), self.losses[index]))
        while self.delta(np.array(epsilon)) > delta:  # guard against rounding: never undershoot
            epsilon = math.nextafter(epsilon, math.inf) * (1 + 1e-12)
        return epsilon


def _directions(p: np.ndarray, q: np.ndarray, p_tail: float, q_tail: float) -> tuple[_Direction, _Direction]:
    """Both directions of a pair; the backward losses are the negated forward ones (one logarithm per point)."""
    finite = (p > 0) & (q > 0)
    forward_infinite = math.fsum(p[(p > 0) & (q == 0)]) + p_tail
    backward_infinite = math.fsum(q[(q > 0) & (p == 0)]) + q_tail
    if finite.all():  # the usual case: no copies
        p_finite, q_finite = p, q
    else:
        p_finite, q_finite = p[finite], q[finite]
    with np.errstate(divide="ignore"):
        raw = np.log(p_finite) - np.log(q_finite)
    forward = _Direction.from_losses(raw, p_finite, q_finite, forward_infinite)
    backward = _Direction.from_losses(-raw, q_finite, p_finite, backward_infinite)
    return forward, backward


def _sorted_losses(raw: np.ndarray, upper: np.ndarray, lower: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Losses in ascending order with their masses (equal losses may stay separate: sums are unchanged).

    Monotone likelihood ratios (binomial counts, negative binomials: log-concave views) give losses
    already sorted one way or the other; they are used as they are, without a sort.
    """
    steps = np.diff(raw)
    if np.all(steps >= 0):
        return raw, upper, lower
    if np.all(steps <= 0):
        return raw[::-1], upper[::-1], lower[::-1]
    if raw.size > 2 and np.all(steps[1:] <= 0):  # one leading point, then a monotone run (3NB's reduced pair)
        tail_raw, tail_upper, tail_lower = raw[:0:-1], upper[:0:-1], lower[:0:-1]
        at = int(np.searchsorted(tail_raw, raw[0]))
        return np.insert(tail_raw, at, raw[0]), np.insert(tail_upper, at, upper[0]), np.insert(tail_lower, at, lower[0])
    order = np.argsort(raw, kind="stable")
    return raw[order], upper[order], lower[order]


class PrivacyProfile:
    """Exact privacy profile of one neighbouring pair of discrete output distributions.

    Args:
        p: output probabilities on dataset ``X`` over a finite support (1-D, non-negative).
        q: output probabilities on the neighbour ``X'`` over the same support.
        neighbouring: the relation ``X`` and ``X'`` stand in.
        p_tail: probability mass of ``P`` outside the listed support (a truncated tail); it is
            counted as infinite privacy loss, so the profile stays an upper bound.
        q_tail: the same for ``Q``.

    Privacy:
        The profile is exact for the pair given (up to floating point) and an upper bound when
        tails are truncated. It describes a mechanism only if ``(p, q)`` is its worst-case (or a
        dominating) neighbouring pair; use `PrivacyProfile.worst_case` to take the maximum over
        several candidate pairs and `dominates` to check a dominating pair exactly.

    References:
        Balle & Wang (ICML 2018), privacy profiles; Zhu, Dong & Wang (AISTATS 2022), dominating
        pairs.

    Examples:
        >>> profile = randomized_response_profile(1.0)
        >>> float(profile.delta(1.0)), round(profile.epsilon(0.0), 12)
        (0.0, 1.0)
    """

    def __init__(
        self,
        p: Sequence[float] | np.ndarray,
        q: Sequence[float] | np.ndarray,
        *,
        neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
        p_tail: float = 0.0,
        q_tail: float = 0.0,
    ) -> None:
        owner = "PrivacyProfile"
        self.neighbouring = Neighbouring.parse(neighbouring, owner)
        self.p = _check_pmf(p, "p", owner)
        self.q = _check_pmf(q, "q", owner)
        if self.p.shape != self.q.shape:
            raise invalid("q", owner, f"an array of the same shape as p {self.p.shape}", f"shape {self.q.shape}")
        self.p_tail = check_real(p_tail, "p_tail", owner, low=0.0, high=1.0)
        self.q_tail = check_real(q_tail, "q_tail", owner, low=0.0, high=1.0)
        for name, mass in (("p", self.p.sum() + self.p_tail), ("q", self.q.sum() + self.q_tail)):
            if not (mass <= 1.0 + _MASS_TOLERANCE):
                raise invalid(name, owner, "probabilities summing (with the tail) to at most 1", mass)
        self._forward, self._backward = _directions(self.p, self.q, self.p_tail, self.q_tail)

    @classmethod
    def _trusted(
        cls, p: np.ndarray, q: np.ndarray, *, neighbouring: Neighbouring, p_tail: float = 0.0, q_tail: float = 0.0
    ) -> PrivacyProfile:
        """The same profile without validation, for library code whose pmfs are valid by construction.

        ``p`` and ``q`` must be 1-D float arrays of the same shape with finite, non-negative
        entries, each summing with its tail to at most ``1``; the result equals
        ``PrivacyProfile(p, q, ...)`` (tested).
        """
        profile = cls.__new__(cls)
        profile.neighbouring = neighbouring
        profile.p, profile.q = p, q
        profile.p_tail, profile.q_tail = float(p_tail), float(q_tail)
        profile._forward, profile._backward = _directions(p, q, profile.p_tail, profile.q_tail)
        return profile

    @classmethod
    def worst_case(cls, profiles: Sequence[PrivacyProfile]) -> WorstCaseProfile:
        """The pointwise maximum over several candidate neighbouring pairs."""
        return WorstCaseProfile(profiles)

    @property
    def dominating_pair(self) -> PrivacyProfile:
        """The pair used for composition: this profile itself."""
        return self

    def delta(self, epsilon: float | np.ndarray) -> float | np.ndarray:
        """Smallest delta such that the pair is (epsilon, delta)-indistinguishable (both directions)."""
        values = _epsilon_array(epsilon, "PrivacyProfile.delta")
        result = np.maximum(self._forward.delta(values), self._backward.delta(values))
        return float(result) if np.ndim(epsilon) == 0 else result

    def epsilon(self, delta: float) -> float:
        """Smallest epsilon >= 0 such that the pair is (epsilon, delta)-indistinguishable."""
        delta = check_delta(delta, "PrivacyProfile.epsilon")
        return max(self._forward.epsilon(delta), self._backward.epsilon(delta))

    def guarantee(self, delta: float) -> PrivacyGuarantee:
        """The guarantee ``(epsilon(delta), delta)`` under this profile's relation."""
        return PrivacyGuarantee(self.epsilon(delta), delta, self.neighbouring)

    def breakpoints(self) -> np.ndarray:
        """Epsilon values (>= 0) where either direction's delta curve changes slope."""
        points = np.concatenate([self._forward.losses, self._backward.losses, [0.0]])
        return np.unique(points[points >= 0.0])

    def dominates(self, other: PrivacyProfile | WorstCaseProfile, *, rtol: float = 1e-9) -> bool:
        """Exactly check ``self.delta(e) >= other.delta(e)`` for every ``e >= 0``.

        Between consecutive breakpoints of the two curves, each is ``a - b*exp(e)``, so their
        difference is monotone there; checking at every breakpoint (and at infinity) is exact.
        """
        if not isinstance(other, (PrivacyProfile, WorstCaseProfile)):
            raise invalid("other", "PrivacyProfile.dominates", "a PrivacyProfile or WorstCaseProfile", other)
        rtol = check_real(rtol, "rtol", "PrivacyProfile.dominates", low=0.0, high=1.0, high_open=True)
        grid = np.union1d(self.breakpoints(), other.breakpoints())
        mine, theirs = self.delta(grid), other.delta(grid)
        at_infinity = self.infinite_mass >= other.infinite_mass * (1 - rtol)
        return bool(np.all(mine >= theirs * (1 - rtol)) and at_infinity)

    @property
    def infinite_mass(self) -> float:
        """The limit of ``delta(epsilon)`` as epsilon grows: mass with infinite privacy loss."""
        return max(self._forward.infinite_mass, self._backward.infinite_mass)

    def __repr__(self) -> str:
        return f"PrivacyProfile(support={self.p.size}, neighbouring={self.neighbouring.value!r})"


class WorstCaseProfile:
    """Pointwise maximum of several `PrivacyProfile` objects (several candidate neighbours).

    ``delta`` and ``epsilon`` are exact maxima. For composition a single dominating pair is
    needed: `dominating_pair` returns the candidate that dominates all others (checked exactly)
    or raises if none does.
    """

    def __init__(self, profiles: Sequence[PrivacyProfile]) -> None:
        owner = "WorstCaseProfile"
        try:
            candidates = tuple(profiles)
        except TypeError:
            raise invalid("profiles", owner, "a non-empty sequence of PrivacyProfile", profiles) from None
        if len(candidates) == 0 or not all(isinstance(p, PrivacyProfile) for p in candidates):
            raise invalid("profiles", owner, "a non-empty sequence of PrivacyProfile", profiles)
        relations = {p.neighbouring for p in candidates}
        if len(relations) != 1:
            raise invalid("profiles", owner, "profiles under one neighbouring relation", sorted(r.value for r in relations))
        self.profiles = candidates
        self.neighbouring = relations.pop()

    def delta(self, epsilon: float | np.ndarray) -> float | np.ndarray:
        """Maximum over the candidates of their delta at ``epsilon``."""
        epsilons = _epsilon_array(epsilon, "WorstCaseProfile.delta")
        values = np.max([np.atleast_1d(p.delta(epsilons)) for p in self.profiles], axis=0)
        return float(values[0]) if epsilons.ndim == 0 else values.reshape(epsilons.shape)

    def epsilon(self, delta: float) -> float:
        """Maximum over the candidates of their epsilon at ``delta``."""
        return max(p.epsilon(delta) for p in self.profiles)

    def guarantee(self, delta: float) -> PrivacyGuarantee:
        """The guarantee ``(epsilon(delta), delta)`` under the common relation."""
        return PrivacyGuarantee(self.epsilon(delta), delta, self.neighbouring)

    @property
    def infinite_mass(self) -> float:
        """The largest infinite-loss mass among the candidates."""
        return max(p.infinite_mass for p in self.profiles)

    def breakpoints(self) -> np.ndarray:
        """Union of the candidates' breakpoints."""
        return np.unique(np.concatenate([p.breakpoints() for p in self.profiles]))

    @property
    def dominating_pair(self) -> PrivacyProfile:
        """The candidate whose profile dominates every other candidate's, checked exactly."""
        order = sorted(self.profiles, key=lambda p: -float(p.delta(0.0)))
        for candidate in order:
            if all(candidate.dominates(other) for other in self.profiles if other is not candidate):
                return candidate
        raise invalid(
            "profiles",
            "WorstCaseProfile.dominating_pair",
            "candidates one of which dominates all others (otherwise compose with a guarantee)",
            f"{len(self.profiles)} candidates, none dominating",
        )


def randomized_response_profile(
    epsilon: float, n_categories: int = 2, *, neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE
) -> PrivacyProfile:
    """Exact profile of k-ary randomized response with parameter ``epsilon`` (an epsilon-LDP randomizer).

    The true category is kept with probability ``e^epsilon / (e^epsilon + k - 1)``, otherwise a
    uniform other category is reported. Closed form:
    ``delta(e) = max(0, e^epsilon - e^e) / (e^epsilon + k - 1)``.

    Examples:
        >>> profile = randomized_response_profile(2.0, n_categories=4)
        >>> round(float(profile.delta(1.0)), 6)
        0.449586
    """
    owner = "randomized_response_profile"
    epsilon = check_epsilon(epsilon, owner)
    n_categories = check_integer(n_categories, "n_categories", owner, low=2)
    denominator = math.exp(epsilon) + n_categories - 1
    p = np.full(n_categories, 1.0 / denominator)
    q = p.copy()
    p[0] = math.exp(epsilon) / denominator
    q[1] = math.exp(epsilon) / denominator
    return PrivacyProfile(p, q, neighbouring=neighbouring)


def _check_pmf(values: object, name: str, owner: str) -> np.ndarray:
    array = _real_array(values, name, owner)
    if array.ndim != 1 or array.size == 0:
        raise invalid(name, owner, "a non-empty 1-D array of probabilities", f"shape {array.shape}")
    if not (np.all(np.isfinite(array)) and np.all(array >= 0.0)):
        raise invalid(name, owner, "finite, non-negative probabilities", "an array with negative or non-finite entries")
    return array


def _real_array(values: object, name: str, owner: str) -> np.ndarray:
    """A float array of real numbers (NaN and inf kept for the caller to judge), or the library's error."""
    if isinstance(values, (str, bytes, bool)):
        raise invalid(name, owner, "real numbers", values)
    try:
        array = np.asarray(values)
    except Exception as error:  # ragged lists, ...
        raise invalid(name, owner, "real numbers (a rectangular array)", type(values).__name__) from error
    if array.dtype == bool or not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
        raise invalid(name, owner, "real numbers", f"dtype {array.dtype}")
    return array.astype(float)


def _epsilon_array(epsilon: float | np.ndarray, owner: str) -> np.ndarray:
    values = _real_array(epsilon, "epsilon", owner)
    if not (np.all(values >= 0.0) and not np.any(np.isnan(values))):
        raise invalid("epsilon", owner, "non-negative (not NaN)", epsilon)
    if not np.all(np.isfinite(values)):
        raise invalid("epsilon", owner, "finite", epsilon)
    return values
