"""Privacy events of histograms and sketches: bins changed together, and Poisson-noised counters.

A histogram's or a sketch's view is a product of independent per-bin (per-cell) views, and a
neighbouring change alters a few bins by one bit (one message) each: `BinsEvent` composes the
per-bin event over exactly those bins. `PoissonCounterEvent` is the exact pair of one counter that
receives ``Pois(lambda)`` noise messages.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats

from privsum._validation import check_integer, check_real, invalid
from privsum.accounting.calibration import calibrate
from privsum.accounting.composition import repeated_composition
from privsum.accounting.events import PrivacyEvent
from privsum.accounting.guarantee import Neighbouring, PrivacyGuarantee
from privsum.accounting.pld import DEFAULT_DISCRETIZATION, PLDPair
from privsum.histograms._checks import check_delta_field

__all__ = [
    "HISTOGRAM_RELATIONS",
    "MAX_BINS_PER_CHANGE",
    "MAX_NOISE_MEAN",
    "BinsEvent",
    "PoissonCounterEvent",
    "RoundsEvent",
    "calibrated_noise_mean",
    "least_noise_mean",
    "poisson_upper_quantile",
]

#: Neighbouring relations a shuffled histogram is accounted under, and how many bins one change touches.
HISTOGRAM_RELATIONS = {Neighbouring.REPLACE_ONE: 2, Neighbouring.ZERO_OUT: 1}
#: Most bins one change may touch in a `BinsEvent` (a sketch with 512 rows).
MAX_BINS_PER_CHANGE = 1024
#: Largest Poisson mean per counter accepted (its pmf is tabulated over about ``20 sqrt(mean)`` points).
MAX_NOISE_MEAN = 1e8
# Mass left outside the tabulated support of each distribution (counted as infinite loss).
_TAIL = 1e-15


@dataclass(frozen=True)
class BinsEvent(PrivacyEvent):
    """One neighbouring change that alters the input of ``bins_per_change`` independent bins by one bit each.

    The view is the product of independent per-bin views (every message carries its bin and
    each bin's randomness is its own), so the privacy-loss distribution of a change is the
    convolution of the changed bins' losses; unchanged bins have identical laws on both sides
    and add nothing. Writing ``(P, Q)`` for one bin's pair (bit 1 versus bit 0, the bin's event
    holding the PLDs of both directions, ``P||Q`` and ``Q||P``):

    * replace-one (``bins_per_change = 2m``): a user moving from ``a`` to ``b`` takes a 1 out of
      bin ``a`` and puts one in bin ``b``, so half the changed bins go ``1 -> 0`` and half
      ``0 -> 1``. The loss is that of ``P^m x Q^m`` against ``Q^m x P^m``, whose two directions
      have the same distribution: the forward PLD composed ``m`` times convolved with the
      backward PLD composed ``m`` times. This is exact for an exact per-bin pair (3NB, the
      Poisson counters), and an upper bound for a dominating one (RR's symmetric envelope).
      Histograms: ``m = 1`` (two bins, whatever the number of categories); a count sketch of
      ``R`` rows: ``m = R`` (rows where both items share a cell change less, which a product with
      fewer components never exceeds).
    * zero-out (``bins_per_change = m``): ``m`` bins each lose a 1; both directions of the
      ``m``-fold composition are kept and the worse one is reported.

    The headline epsilon at ``delta`` is the smaller of this numerical composition's and basic
    composition's (when the latter's delta fits).

    Examples:
        >>> from privsum.accounting import GuaranteeEvent
        >>> bin_event = GuaranteeEvent(PrivacyGuarantee(0.5, 1e-7))
        >>> event = BinsEvent(bin_event, 2, Neighbouring.REPLACE_ONE, delta=1e-6)
        >>> bool(event.guarantee.epsilon <= 1.0)
        True
    """

    bin_event: PrivacyEvent
    bins_per_change: int
    relation: Neighbouring
    delta: float

    def __post_init__(self) -> None:
        owner = "BinsEvent"
        if not isinstance(self.bin_event, PrivacyEvent):
            raise invalid("bin_event", owner, "a PrivacyEvent", self.bin_event)
        check_integer(self.bins_per_change, "bins_per_change", owner, low=1, high=MAX_BINS_PER_CHANGE)
        relation = Neighbouring.parse(self.relation, owner, allowed=tuple(HISTOGRAM_RELATIONS))
        object.__setattr__(self, "relation", relation)
        if relation == Neighbouring.REPLACE_ONE and self.bins_per_change % 2:
            raise invalid(
                "bins_per_change", owner, "even under replace-one (as many bins lose a 1 as gain one)", self.bins_per_change
            )
        if not self.bin_event.neighbouring.implies(Neighbouring.REPLACE_ONE):
            raise invalid("bin_event", owner, "a replace-one event of one bin", self.bin_event.neighbouring.value)
        check_delta_field(self, owner)

    @property
    def native_discretization(self) -> float | None:
        return self.bin_event.native_discretization

    def pld(self, discretization: float = DEFAULT_DISCRETIZATION) -> PLDPair:
        single = self.bin_event.pld(discretization)
        if self.relation != Neighbouring.REPLACE_ONE:
            return single.self_compose(self.bins_per_change)
        half = self.bins_per_change // 2
        errors = (single.absolute_error, single.relative_error)
        losing = PLDPair(single.forward, single.forward, *errors).self_compose(half)
        if single.backward is single.forward:
            gaining = losing
        else:
            gaining = PLDPair(single.backward, single.backward, *errors).self_compose(half)
        mixed = losing.compose(gaining)  # PLDPair's composition: its numerical error is carried
        return PLDPair(mixed.forward, mixed.forward, mixed.absolute_error, mixed.relative_error)

    @functools.cached_property
    def guarantee(self) -> PrivacyGuarantee:
        numerical = self.pld(self.native_discretization or DEFAULT_DISCRETIZATION).epsilon(self.delta)
        basic = repeated_composition(self.bin_event.guarantee, self.bins_per_change)
        epsilon = min(numerical, basic.epsilon) if basic.delta <= self.delta else numerical
        return PrivacyGuarantee(epsilon, self.delta, self.relation)


@dataclass(frozen=True)
class PoissonCounterEvent(PrivacyEvent):
    """One counter of the shuffled view holding ``c + N`` versus ``c + 1 + N``, with ``N ~ Pois(noise_mean)``.

    Privacy:
        Replace-one, for one counter, against an adversary who knows every other user's message
        (so ``c``). The pair ``(Pois(lambda), 1 + Pois(lambda))`` is the exact pair of the view
        in either direction; its privacy-loss distributions are computed from the pmfs on a
        support holding all but ``1e-15`` of each distribution's mass, the rest counted as
        infinite loss (an upper bound). ``N + 1`` at 0 has probability 0: its loss is infinite,
        which the PLD carries.

    Examples:
        >>> event = PoissonCounterEvent(noise_mean=60.0, delta=1e-6)
        >>> bool(0.5 < event.guarantee.epsilon < 1.0)
        True
    """

    noise_mean: float
    delta: float

    def __post_init__(self) -> None:
        owner = "PoissonCounterEvent"
        object.__setattr__(
            self, "noise_mean", check_real(self.noise_mean, "noise_mean", owner, low=0.0, high=MAX_NOISE_MEAN, low_open=True)
        )
        check_delta_field(self, owner)

    @functools.lru_cache(maxsize=8)  # noqa: B019 - frozen, hashable and small: the cache is bounded
    def pld(self, discretization: float = DEFAULT_DISCRETIZATION) -> PLDPair:
        noise = stats.poisson(self.noise_mean)
        low, high = int(noise.ppf(_TAIL)), int(noise.isf(_TAIL)) + 1
        support = np.arange(low, high + 2)
        without = noise.pmf(support)
        with_one = noise.pmf(support - 1)
        return PLDPair.from_distributions(
            without,
            with_one,
            p_tail=float(noise.cdf(low - 1) + noise.sf(high + 1)),
            q_tail=float(noise.cdf(low - 2) + noise.sf(high)),
            discretization=discretization,
        )

    @functools.cached_property
    def guarantee(self) -> PrivacyGuarantee:
        return PrivacyGuarantee(self.pld().epsilon(self.delta), self.delta, Neighbouring.REPLACE_ONE)


@dataclass(frozen=True)
class RoundsEvent(PrivacyEvent):
    """Rounds run one after the other on the same users, each round's event fixed before the run.

    The privacy-loss distribution is the convolution of the rounds' (sequential composition of
    their dominating pairs). It holds when a round's mechanism is chosen from an earlier round's
    output (adaptive composition), provided every choice is dominated by the same pair: e.g. a
    counting round over candidates found by a first round, whose per-bin noise does not depend on
    which candidates were found. The headline epsilon at ``delta`` is the smaller of this
    numerical composition's and basic composition's (when the latter's delta fits).

    References:
        Dong, Roth & Su, "Gaussian differential privacy", JRSS B 2022 (adaptive composition of
        trade-off functions, which the composed privacy-loss distributions represent).

    Examples:
        >>> first = PoissonCounterEvent(noise_mean=60.0, delta=1e-7)
        >>> both = RoundsEvent((first, first), delta=1e-6)
        >>> bool(first.guarantee.epsilon < both.guarantee.epsilon <= 2 * first.guarantee.epsilon)
        True
    """

    events: tuple[PrivacyEvent, ...]
    delta: float

    def __post_init__(self) -> None:
        owner = "RoundsEvent"
        events = tuple(self.events) if isinstance(self.events, (list, tuple)) else ()
        if not events or not all(isinstance(event, PrivacyEvent) for event in events):
            raise invalid("events", owner, "a non-empty sequence of PrivacyEvent", self.events)
        if not all(event.neighbouring.implies(Neighbouring.REPLACE_ONE) for event in events):
            raise invalid("events", owner, "replace-one events", [event.neighbouring.value for event in events])
        object.__setattr__(self, "events", events)
        check_delta_field(self, owner)

    def pld(self, discretization: float = DEFAULT_DISCRETIZATION) -> PLDPair:
        composed = self.events[0].pld(discretization)
        for event in self.events[1:]:
            composed = composed.compose(event.pld(discretization))
        return composed

    @functools.cached_property
    def guarantee(self) -> PrivacyGuarantee:
        numerical = self.pld().epsilon(self.delta)
        parts = [event.guarantee for event in self.events]
        basic_delta = sum(part.delta for part in parts)
        basic = sum(part.epsilon for part in parts) if basic_delta <= self.delta else math.inf
        return PrivacyGuarantee(min(numerical, basic), self.delta, Neighbouring.REPLACE_ONE)


def least_noise_mean(delta_at_epsilon: Callable[[float], float], epsilon: float, delta: float, owner: str) -> float:
    """The least Poisson mean in ``[1e-2, MAX_NOISE_MEAN)`` whose ``delta_at_epsilon(mean)`` meets ``delta``.

    ``delta_at_epsilon`` maps a noise mean to the delta (at the caller's ``epsilon``) of the
    privacy event it calibrates; it must decrease as the mean grows. Illinois search on
    ``log(mean)`` to a relative tolerance of 1e-3; the caller checks the headline it returns.

    Raises:
        InvalidParameterError: naming ``owner``'s ``epsilon`` when no mean in range meets the target.
    """
    log_mean = calibrate(
        lambda log_mean: delta_at_epsilon(math.exp(log_mean)),
        target_delta=delta,
        lower=math.log(1e-2),
        upper=math.log(MAX_NOISE_MEAN) - 1e-9,
        more_private="increasing",
        tolerance=1e-3,
        caller=(owner, "epsilon", epsilon),
        method="illinois",
    )
    return math.exp(log_mean)


def calibrated_noise_mean(epsilon: float, delta: float, cells_per_change: int, owner: str) -> float:
    """The least Poisson mean per counter meeting (epsilon, delta) when ``cells_per_change`` counters change together.

    One counter: its own pair (both directions). An even number ``2m``: the replace-one
    `BinsEvent` (``m`` counters lose a message, ``m`` gain one). Illinois search on ``log(mean)``
    against the numerically composed delta at ``epsilon``; the result is checked against the
    headline before it is returned.

    Raises:
        InvalidParameterError: naming ``owner``'s ``epsilon`` when no mean up to `MAX_NOISE_MEAN`
            meets the target, or ``cells_per_change`` odd and above 1.
    """
    cells_per_change = check_integer(cells_per_change, "cells_per_change", owner, low=1, high=MAX_BINS_PER_CHANGE)
    if cells_per_change > 1 and cells_per_change % 2:
        raise invalid("cells_per_change", owner, "1 or even (replace-one moves messages between counters)", cells_per_change)

    def event_for(noise_mean: float) -> PrivacyEvent:
        counter = PoissonCounterEvent(noise_mean=noise_mean, delta=delta)
        return counter if cells_per_change == 1 else BinsEvent(counter, cells_per_change, Neighbouring.REPLACE_ONE, delta)

    noise_mean = least_noise_mean(lambda mean: event_for(mean).pld().delta(epsilon), epsilon, delta, owner)
    achieved = event_for(noise_mean).guarantee.epsilon
    if not achieved <= epsilon:
        raise invalid("epsilon", owner, f"met by the calibrated noise (got {achieved:.6g})", epsilon)
    return noise_mean


def poisson_upper_quantile(mean: float, tail_probability: float) -> int:
    """The smallest integer ``c`` with ``P(Pois(mean) > c) <= tail_probability`` (by the log survival function).

    Examples:
        >>> poisson_upper_quantile(0.3, 1e-6)
        5
    """
    log_tail = math.log(tail_probability)
    low, high = -1, max(1, math.ceil(mean))
    while stats.poisson.logsf(high, mean) > log_tail:  # doubling: the tail decays faster than geometrically
        low, high = high, 2 * high + 1
    while high - low > 1:  # invariant: sf(low) > tail >= sf(high)
        middle = (low + high) // 2
        low, high = (low, middle) if stats.poisson.logsf(middle, mean) <= log_tail else (middle, high)
    return high
