"""Privacy events: immutable records of what a mechanism's privacy accounting needs.

Protocols describe themselves with events; the accountant composes events and never calls a
protocol. Every event knows its neighbouring relation, a headline `PrivacyGuarantee` (used by
closed-form composition) and a `PLDPair` (used by numerical composition).
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass, field

from privsum._validation import check_delta, check_integer, check_real, invalid
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

    def epsilon(self, delta: float) -> float:
        """Tightest epsilon this event alone supports at ``delta`` (numerical)."""
        return self.pld().epsilon(delta)


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
        return repeated_composition(self.event.guarantee, self.count)

    @property
    def neighbouring(self) -> Neighbouring:
        """The event's relation (known even when ``count`` deltas sum past 1 and `guarantee` is vacuous)."""
        return self.event.neighbouring

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


@dataclass(frozen=True)
class DiscreteGaussianEvent(PrivacyEvent):
    """The discrete Gaussian mechanism with scale ``sigma`` on an integer query of given sensitivity.

    ``headline`` is a guarantee it satisfies (e.g. from OpenDP's zCDP conversion; `check_headline`
    verifies it against the exact PLD); numerical
    composition uses the mechanism's exact privacy-loss distribution from ``dp-accounting``,
    which composes far better than the headline.

    Privacy:
        Neighbours change the query by at most ``sensitivity`` (the headline's relation).

    References:
        Canonne, Kamath & Steinke, *The Discrete Gaussian for Differential Privacy* (NeurIPS 2020).

    Examples:
        >>> event = DiscreteGaussianEvent(10.0, PrivacyGuarantee(0.6, 1e-6))
        >>> bool(event.pld().epsilon(1e-6) <= 0.6)
        True
    """

    sigma: float
    headline: PrivacyGuarantee
    sensitivity: int = 1

    def __post_init__(self) -> None:
        owner = "DiscreteGaussianEvent"
        check_real(self.sigma, "sigma", owner, low=0.0, low_open=True)
        check_integer(self.sensitivity, "sensitivity", owner, low=1)
        if not isinstance(self.headline, PrivacyGuarantee):
            raise invalid("headline", owner, "a PrivacyGuarantee", self.headline)

    def check_headline(self) -> None:
        """Raise unless the mechanism's exact PLD meets the headline (costly for large ``sigma``)."""
        if self.headline.is_finite:
            achieved = self.pld().delta(self.headline.epsilon)
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
        pld = pld_library().from_discrete_gaussian_mechanism(
            self.sigma, sensitivity=self.sensitivity, value_discretization_interval=discretization
        )
        return PLDPair(pld, pld)
