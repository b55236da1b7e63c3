"""Privacy events: immutable records of what a mechanism's privacy accounting needs.

Protocols describe themselves with events; the accountant composes events and never calls a
protocol. Every event knows its neighbouring relation, a headline `PrivacyGuarantee` (used by
closed-form composition) and a `PLDPair` (used by numerical composition).
"""

from __future__ import annotations

import abc
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from privsum._validation import check_delta, check_integer, check_real, invalid, refusals_as
from privsum.accounting.composition import parallel_composition, repeated_composition
from privsum.accounting.guarantee import Neighbouring, PrivacyGuarantee
from privsum.accounting.pld import DEFAULT_DISCRETIZATION, PLDPair, pld_library
from privsum.accounting.profile import PrivacyProfile, WorstCaseProfile

__all__ = ["ComposedEvent", "GuaranteeEvent", "ParallelEvent", "PrivacyEvent", "ProfileEvent", "RelationEvent"]

# A profile may exceed its headline delta by this relative amount only through float rounding.
_HEADLINE_RTOL = 1e-9


class PrivacyEvent(abc.ABC):
    """Base class of privacy events."""

    @property
    @abc.abstractmethod
    def guarantee(self) -> PrivacyGuarantee:
        """The headline (epsilon, delta) guarantee of one occurrence of the event."""

    @property
    def neighbouring(self) -> Neighbouring:
        """The neighbouring relation of the guarantee."""
        return self.guarantee.neighbouring

    @abc.abstractmethod
    def pld(self, discretization: float = DEFAULT_DISCRETIZATION) -> PLDPair:
        """Privacy-loss distributions of the event for numerical composition."""

    @property
    def native_discretization(self) -> float | None:
        """A PLD discretisation at which the event's losses are exact (a sampled envelope's step), or ``None``."""
        return None

    def epsilon(self, delta: float) -> float:
        """Tightest epsilon this event alone supports at ``delta`` (numerical, at the native discretisation if any)."""
        return self.pld(self.native_discretization or DEFAULT_DISCRETIZATION).epsilon(delta)


@dataclass(frozen=True)
class GuaranteeEvent(PrivacyEvent):
    """A mechanism known only to satisfy an (epsilon, delta) guarantee.

    Examples:
        >>> GuaranteeEvent(PrivacyGuarantee(1.0, 1e-6)).guarantee.epsilon
        1.0
    """

    headline: PrivacyGuarantee

    def __post_init__(self) -> None:
        if not isinstance(self.headline, PrivacyGuarantee):
            raise invalid("headline", "GuaranteeEvent", "a PrivacyGuarantee", self.headline)

    @property
    def guarantee(self) -> PrivacyGuarantee:
        return self.headline

    def pld(self, discretization: float = DEFAULT_DISCRETIZATION) -> PLDPair:
        with refusals_as("GuaranteeEvent", {"guarantee": "headline"}):
            return PLDPair.from_guarantee(self.headline, discretization=discretization)


@dataclass(frozen=True)
class ProfileEvent(PrivacyEvent):
    """A mechanism with an exact privacy profile and the headline guarantee it was calibrated to.

    Construction checks that the profile meets the headline: ``profile.delta(epsilon) <= delta``.

    Examples:
        >>> from privsum.accounting import randomized_response_profile
        >>> event = ProfileEvent.at_delta(randomized_response_profile(1.0), 0.0)
        >>> round(event.guarantee.epsilon, 9)
        1.0
    """

    profile: PrivacyProfile | WorstCaseProfile
    headline: PrivacyGuarantee

    def __post_init__(self) -> None:
        owner = "ProfileEvent"
        if not isinstance(self.profile, (PrivacyProfile, WorstCaseProfile)):
            raise invalid("profile", owner, "a PrivacyProfile or WorstCaseProfile", self.profile)
        if not isinstance(self.headline, PrivacyGuarantee):
            raise invalid("headline", owner, "a PrivacyGuarantee", self.headline)
        if self.headline.neighbouring != self.profile.neighbouring:
            raise invalid("headline", owner, f"under the profile's relation {self.profile.neighbouring.value!r}", self.headline)
        if self.headline.is_finite:
            achieved = self.profile.delta(self.headline.epsilon)
            if not achieved <= self.headline.delta * (1 + _HEADLINE_RTOL) + 1e-300:
                raise invalid("headline", owner, f"met by the profile (its delta at epsilon is {achieved:.6g})", self.headline)

    @classmethod
    def at_delta(cls, profile: PrivacyProfile | WorstCaseProfile, delta: float) -> ProfileEvent:
        """The event whose headline is ``(profile.epsilon(delta), delta)``."""
        delta = check_delta(delta, "ProfileEvent.at_delta")
        return cls(profile, profile.guarantee(delta))

    @property
    def guarantee(self) -> PrivacyGuarantee:
        return self.headline

    @property
    def native_discretization(self) -> float | None:
        return getattr(self.profile, "loss_step", None)

    def pld(self, discretization: float = DEFAULT_DISCRETIZATION) -> PLDPair:
        return PLDPair.from_profile(self.profile, discretization=discretization)

    def epsilon(self, delta: float) -> float:
        return self.profile.epsilon(delta)


@dataclass(frozen=True)
class ComposedEvent(PrivacyEvent):
    """``count`` sequential runs of the same event on the same users.

    Examples:
        >>> ComposedEvent(GuaranteeEvent(PrivacyGuarantee(0.5, 1e-8)), 4).guarantee
        PrivacyGuarantee(epsilon=2.0, delta=4e-08, neighbouring='replace-one')
    """

    event: PrivacyEvent
    count: int

    def __post_init__(self) -> None:
        if not isinstance(self.event, PrivacyEvent):
            raise invalid("event", "ComposedEvent", "a PrivacyEvent", self.event)
        check_integer(self.count, "count", "ComposedEvent", low=1)

    @property
    def guarantee(self) -> PrivacyGuarantee:
        with refusals_as("ComposedEvent"):
            return repeated_composition(self.event.guarantee, self.count)

    @property
    def neighbouring(self) -> Neighbouring:
        """The event's relation (known even when ``count`` deltas sum past 1 and `guarantee` is vacuous)."""
        return self.event.neighbouring

    @property
    def native_discretization(self) -> float | None:
        return self.event.native_discretization

    def pld(self, discretization: float = DEFAULT_DISCRETIZATION) -> PLDPair:
        return self.event.pld(discretization).self_compose(self.count)


@dataclass(frozen=True)
class RelationEvent(PrivacyEvent):
    """``event`` stated under ``neighbouring``, a relation whose pairs are all pairs of the event's relation.

    The mechanism and its privacy-loss distributions are unchanged: a dominating pair for every
    pair of the wider relation dominates every pair of the narrower one (`Neighbouring.implies`).

    Examples:
        >>> event = RelationEvent(GuaranteeEvent(PrivacyGuarantee(1.0, 1e-7)), "zero-out")
        >>> event.guarantee
        PrivacyGuarantee(epsilon=1.0, delta=1e-07, neighbouring='zero-out')
    """

    event: PrivacyEvent
    relation: Neighbouring | str

    def __post_init__(self) -> None:
        owner = "RelationEvent"
        if not isinstance(self.event, PrivacyEvent):
            raise invalid("event", owner, "a PrivacyEvent", self.event)
        relation = Neighbouring.parse(self.relation, owner)
        if not self.event.neighbouring.implies(relation):
            raise invalid("relation", owner, f"a relation {self.event.neighbouring.value!r} implies", relation.value)
        object.__setattr__(self, "relation", relation)

    @property
    def guarantee(self) -> PrivacyGuarantee:
        return self.event.guarantee.under(self.relation)

    @property
    def native_discretization(self) -> float | None:
        return self.event.native_discretization

    def pld(self, discretization: float = DEFAULT_DISCRETIZATION) -> PLDPair:
        return self.event.pld(discretization)


@dataclass(frozen=True)
class ParallelEvent(PrivacyEvent):
    """Mechanisms on disjoint parts of the users (parallel composition).

    ``parts_per_user`` is how many parts one neighbouring change can touch: 1 under add/remove
    (and under replace-one when a user's part is public and fixed), 2 under replace-one when the
    part depends on the user's value.

    Examples:
        >>> event = ParallelEvent((GuaranteeEvent(PrivacyGuarantee(1.0, 1e-7)),) * 3, parts_per_user=2)
        >>> event.guarantee
        PrivacyGuarantee(epsilon=2.0, delta=2e-07, neighbouring='replace-one')
    """

    events: Sequence[PrivacyEvent] = field(default_factory=tuple)
    parts_per_user: int = 1

    def __post_init__(self) -> None:
        owner = "ParallelEvent"
        try:
            events = tuple(self.events)
        except TypeError:
            raise invalid("events", owner, "a non-empty sequence of PrivacyEvent", self.events) from None
        if len(events) == 0 or not all(isinstance(e, PrivacyEvent) for e in events):
            raise invalid("events", owner, "a non-empty sequence of PrivacyEvent", self.events)
        object.__setattr__(self, "events", events)
        check_integer(self.parts_per_user, "parts_per_user", owner, low=1)

    @property
    def guarantee(self) -> PrivacyGuarantee:
        return parallel_composition([e.guarantee for e in self.events], parts_per_user=self.parts_per_user)

    def pld(self, discretization: float = DEFAULT_DISCRETIZATION) -> PLDPair:
        if all(e == self.events[0] for e in self.events):
            single = self.events[0].pld(discretization)
        else:
            worst = parallel_composition([e.guarantee for e in self.events])
            single = PLDPair.from_guarantee(worst, discretization=discretization)
        return single.self_compose(self.parts_per_user)


#: Largest discrete Gaussian ``sigma`` (and sensitivity) an event accepts: its exact privacy-loss
#: distribution has about ``23 sigma`` atoms, so larger scales would cost unbounded time and memory.
MAX_DISCRETE_GAUSSIAN_SIGMA = 1e4
#: Smallest ``sigma``: below it the noise is a point mass in double precision.
MIN_DISCRETE_GAUSSIAN_SIGMA = 1e-2
# Above this sigma the exact PLD check of a headline the zCDP bound does not back is skipped (too costly).
_EXACT_CHECK_SIGMA = 200.0


@dataclass(frozen=True)
class DiscreteGaussianEvent(PrivacyEvent):
    """The discrete Gaussian mechanism with scale ``sigma`` on an integer query of given sensitivity.

    ``headline`` is a guarantee it satisfies, and construction verifies it: it must be backed by
    the mechanism's ``rho = sensitivity^2 / (2 sigma^2)`` zero-concentrated DP (the tight
    Renyi-to-(epsilon, delta) conversion of Canonne, Kamath & Steinke), or, for ``sigma`` up
    to 200, by the mechanism's exact privacy-loss distribution. A headline that neither backs
    is refused: an event never carries a claim its parameters do not support. `at_delta`
    computes a headline. Numerical composition uses the exact privacy-loss distribution from
    ``dp-accounting``, which composes far better than the headline.

    Privacy:
        Neighbours change the query by at most ``sensitivity`` (the headline's relation).

    References:
        Canonne, Kamath & Steinke, *The Discrete Gaussian for Differential Privacy* (NeurIPS 2020).

    Examples:
        >>> event = DiscreteGaussianEvent(10.0, PrivacyGuarantee(0.6, 1e-6))
        >>> bool(event.pld().epsilon(1e-6) <= 0.6)
        True
        >>> DiscreteGaussianEvent.at_delta(10.0, 1e-6).guarantee.epsilon <= 0.6
        True
    """

    sigma: float
    headline: PrivacyGuarantee
    sensitivity: int = 1

    def __post_init__(self) -> None:
        owner = "DiscreteGaussianEvent"
        sigma = _check_sigma(self.sigma, owner)
        object.__setattr__(self, "sigma", sigma)
        check_integer(self.sensitivity, "sensitivity", owner, low=1, high=int(MAX_DISCRETE_GAUSSIAN_SIGMA))
        if not isinstance(self.headline, PrivacyGuarantee):
            raise invalid("headline", owner, "a PrivacyGuarantee", self.headline)
        if self.headline.is_finite and not self._backed_by_zcdp(self.headline):
            if sigma > _EXACT_CHECK_SIGMA:
                bound = self._zcdp_delta(self.headline.epsilon)
                raise invalid(
                    "headline",
                    owner,
                    f"backed by the mechanism's zCDP (its delta bound at epsilon is {bound:.6g})",
                    self.headline,
                )
            self.check_headline()

    @classmethod
    def at_delta(cls, sigma: float, delta: float, sensitivity: int = 1) -> DiscreteGaussianEvent:
        """The event whose headline is the least epsilon the zCDP bound backs at ``delta`` (in ``(0, 1)``)."""
        owner = "DiscreteGaussianEvent.at_delta"
        sigma = _check_sigma(sigma, owner)
        delta = check_delta(delta, owner, allow_zero=False)
        sensitivity = check_integer(sensitivity, "sensitivity", owner, low=1, high=int(MAX_DISCRETE_GAUSSIAN_SIGMA))
        rho = sensitivity**2 / (2.0 * sigma**2)
        low, high = 0.0, rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta)) + 1.0  # the classical bound backs high
        for _ in range(200):
            middle = (low + high) / 2.0
            low, high = (low, middle) if _zcdp_delta(rho, middle) <= delta else (middle, high)
        return cls(sigma, PrivacyGuarantee(high, delta), sensitivity)

    def _zcdp_delta(self, epsilon: float) -> float:
        return _zcdp_delta(self.sensitivity**2 / (2.0 * self.sigma**2), epsilon)

    def _backed_by_zcdp(self, headline: PrivacyGuarantee) -> bool:
        return self._zcdp_delta(headline.epsilon) <= headline.delta

    def check_headline(self) -> None:
        """Raise unless the mechanism's exact PLD meets the headline (costly for large ``sigma``)."""
        if self.headline.is_finite:
            truncation = max(math.ceil(11.6 * self.sigma), self.sensitivity)
            loss_span = self.sensitivity * (self.sensitivity + 2 * truncation) / (2.0 * self.sigma**2)
            interval = max(DEFAULT_DISCRETIZATION, loss_span / 2**20)  # bounded work; coarser stays pessimistic
            if interval > 1.0:
                raise invalid("headline", "DiscreteGaussianEvent", "backed by the mechanism's zCDP bound", self.headline)
            achieved = self.pld(interval).delta(self.headline.epsilon)
            if not achieved <= self.headline.delta * (1 + 1e-6) + 1e-15:
                raise invalid(
                    "headline",
                    "DiscreteGaussianEvent",
                    f"met by the mechanism (its delta at epsilon is {achieved:.6g})",
                    self.headline,
                )

    @property
    def guarantee(self) -> PrivacyGuarantee:
        return self.headline

    def pld(self, discretization: float = DEFAULT_DISCRETIZATION) -> PLDPair:
        interval = check_real(discretization, "discretization", "DiscreteGaussianEvent.pld", low=1e-6, high=1.0)
        truncation = max(math.ceil(11.6 * self.sigma), self.sensitivity)  # dp-accounting's 1e-30 tail, at least the shift
        pld = pld_library().from_discrete_gaussian_mechanism(
            self.sigma, sensitivity=self.sensitivity, truncation_bound=truncation, value_discretization_interval=interval
        )
        return PLDPair(pld, pld)


def _check_sigma(sigma: object, owner: str) -> float:
    return check_real(sigma, "sigma", owner, low=MIN_DISCRETE_GAUSSIAN_SIGMA, high=MAX_DISCRETE_GAUSSIAN_SIGMA)


def _zcdp_delta(rho: float, epsilon: float) -> float:
    """Smallest delta the ``rho``-zCDP conversion gives at ``epsilon`` (an upper bound on the true delta).

    ``delta = min over alpha > 1 of exp((alpha - 1)(alpha rho - epsilon)) / (alpha - 1) * (1 - 1/alpha)^alpha``
    (Canonne, Kamath & Steinke, NeurIPS 2020, their conversion from Renyi DP). Any ``alpha`` gives a
    valid bound, so an inexact minimisation only loosens it; the search runs over ``log(alpha - 1)``.
    """

    def log_delta(log_excess: float) -> float:
        alpha = 1.0 + math.exp(log_excess)
        return (alpha - 1.0) * (alpha * rho - epsilon) - log_excess + alpha * math.log1p(-1.0 / alpha)

    grid = np.linspace(-30.0, 30.0, 241)
    values = [log_delta(x) for x in grid]
    best = int(np.argmin(values))
    left, right = grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]
    for _ in range(100):  # golden-section search inside the bracketing grid cells (log_delta is convex in alpha)
        first, second = left + 0.382 * (right - left), left + 0.618 * (right - left)
        left, right = (left, second) if log_delta(first) <= log_delta(second) else (first, right)
    return min(1.0, math.exp(min(values[best], log_delta((left + right) / 2.0))))
