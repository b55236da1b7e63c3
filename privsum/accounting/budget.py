"""Budget fitting: the per-mechanism guarantee whose ``count``-fold composition meets a target.

`per_mechanism_budget` splits an ``(epsilon, delta)`` budget over ``count`` mechanisms that one
user touches (advanced composition, or the numerical composition of the worst pair's PLD);
`compose_like_budget` states what mechanisms of another guarantee compose to under the same
rule; `CompositionEvent` carries such a headline for the accountant. The clipped sums of Dong,
Luo, Fanti, Shi & Yi (CCS 2024) compose their coordinates and levels with it.

References:
    Dwork, Rothblum & Vadhan, "Boosting and Differential Privacy", FOCS 2010.
    Dong, Luo, Fanti, Shi & Yi, "(Almost) Instance-optimal Clipping for Summation Problems in
    the Shuffle Model of Differential Privacy", CCS 2024.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from privsum._validation import check_choice, check_delta, check_epsilon, check_integer, invalid
from privsum.accounting.calibration import calibrate
from privsum.accounting.composition import advanced_composition_epsilon
from privsum.accounting.events import PrivacyEvent
from privsum.accounting.guarantee import PrivacyGuarantee
from privsum.accounting.pld import DEFAULT_DISCRETIZATION, PLDPair

__all__ = [
    "BACKING_RTOL",
    "COMPOSITIONS",
    "CompositionEvent",
    "compose_like_budget",
    "composition_backs",
    "per_mechanism_budget",
]

COMPOSITIONS = ("advanced", "tight")


@dataclass(frozen=True)
class CompositionEvent(PrivacyEvent):
    """``count`` mechanisms, each ``event``, touched by one user, with the headline a composition theorem gives.

    ``headline`` comes from advanced composition or from the numerical composition of the PLDs
    (`per_mechanism_budget`); `pld` composes ``event``'s PLD ``count`` times (for the accountant).

    Examples:
        >>> from privsum.accounting import GuaranteeEvent
        >>> single = GuaranteeEvent(PrivacyGuarantee(0.1, 1e-9))
        >>> headline = PrivacyGuarantee(advanced_composition_epsilon(0.1, 400, 1e-7), 400e-9 + 1e-7)
        >>> CompositionEvent(single, 400, headline).guarantee.epsilon < 400 * 0.1
        True
    """

    event: PrivacyEvent
    count: int
    headline: PrivacyGuarantee

    def __post_init__(self) -> None:
        owner = "CompositionEvent"
        if not isinstance(self.event, PrivacyEvent):
            raise invalid("event", owner, "a PrivacyEvent", self.event)
        check_integer(self.count, "count", owner, low=1)
        if not isinstance(self.headline, PrivacyGuarantee) or self.headline.neighbouring != self.event.neighbouring:
            raise invalid("headline", owner, "a PrivacyGuarantee under the event's relation", self.headline)
        if not composition_backs(self.event.guarantee, self.count, self.headline, self.pld):
            raise invalid("headline", owner, f"backed by composing the event {self.count} times", self.headline)

    @property
    def guarantee(self) -> PrivacyGuarantee:
        return self.headline

    def pld(self, discretization: float = DEFAULT_DISCRETIZATION) -> PLDPair:
        return self.event.pld(discretization).self_compose(self.count)


# Relative float rounding allowed between a headline and the composition bound it was computed from.
BACKING_RTOL = 1e-12


def composition_backs(
    single: PrivacyGuarantee, count: int, headline: PrivacyGuarantee, pld: Callable[[], PLDPair] | None = None
) -> bool:
    """Whether ``count`` mechanisms, each ``single``-DP, are ``headline``-DP: basic, advanced or numerical composition.

    Basic composition (``count * epsilon``, ``count * delta``) and advanced composition (at the
    slack ``headline.delta - count * delta``) are checked in closed form; otherwise ``pld()`` (the
    composed privacy-loss distributions) must meet the headline. An infinite headline is always
    backed.
    """
    if not headline.is_finite:
        return True
    if not single.is_finite:
        return False
    scale = 1.0 + BACKING_RTOL
    if headline.epsilon * scale >= count * single.epsilon and headline.delta * scale >= count * single.delta:
        return True
    slack = headline.delta - count * single.delta
    if slack > 0.0 and headline.epsilon * scale >= advanced_composition_epsilon(single.epsilon, count, slack):
        return True
    return pld is not None and pld().delta(headline.epsilon) <= headline.delta * (1.0 + 1e-9)


def _advanced_budget(epsilon: float, delta: float, count: int) -> tuple[float, float, PrivacyGuarantee]:
    """Largest per-mechanism epsilon0 (delta split in half: slack, and ``count`` equal shares) by the better of basic/advanced."""
    slack, delta0 = delta / 2, delta / 2 / count
    basic = epsilon / count
    if advanced_composition_epsilon(basic, count, slack) <= epsilon:  # advanced is never worse here: search upwards
        lower, upper = basic, epsilon
        for _ in range(100):
            middle = (lower + upper) / 2
            lower, upper = (middle, upper) if advanced_composition_epsilon(middle, count, slack) <= epsilon else (lower, middle)
        return lower, delta0, PrivacyGuarantee(advanced_composition_epsilon(lower, count, slack), count * delta0 + slack)
    return basic, delta / count, PrivacyGuarantee(basic * count, delta)


def _tight_budget(epsilon: float, delta: float, count: int) -> tuple[float, float, PrivacyGuarantee]:
    """Largest per-mechanism epsilon0 (``delta0 = delta/(2 count)``) whose ``count``-fold PLD composition meets the target."""
    delta0 = delta / 2 / count

    def delta_at(epsilon0: float) -> float:
        return PLDPair.from_guarantee(PrivacyGuarantee(epsilon0, delta0)).self_compose(count).delta(epsilon)

    epsilon0 = calibrate(
        delta_at,
        target_delta=delta,
        lower=epsilon / count,
        upper=epsilon,
        more_private="decreasing",
        tolerance=1e-4,
        caller=("ClippedVectorSum", "delta", delta),
    )
    achieved = PLDPair.from_guarantee(PrivacyGuarantee(epsilon0, delta0)).self_compose(count).epsilon(delta)
    return epsilon0, delta0, PrivacyGuarantee(min(achieved, epsilon), delta)


def per_mechanism_budget(
    epsilon: float, delta: float, count: int, composition: str = "advanced"
) -> tuple[float, float, PrivacyGuarantee]:
    """``(epsilon0, delta0, headline)``: ``count`` mechanisms each ``(epsilon0, delta0)``-DP compose to ``headline``.

    The headline is at most ``(epsilon, delta)``.

    ``"advanced"``: the better of basic composition and advanced composition (half of delta as
    the slack ``delta'``). ``"tight"``: the numerical composition of the worst ``(epsilon0,
    delta0)``-DP pair's PLD (optimal for generic mechanisms), ``delta0 = delta/(2 count)``, bisection
    that never overshoots.

    Examples:
        >>> e0, d0, headline = per_mechanism_budget(1.0, 1e-6, 64, "advanced")
        >>> e1, _, tight = per_mechanism_budget(1.0, 1e-6, 64, "tight")
        >>> headline.epsilon <= 1.0 and tight.epsilon <= 1.0 and e1 > e0
        True
    """
    owner = "per_mechanism_budget"
    epsilon = check_epsilon(epsilon, owner)
    delta = check_delta(delta, owner, allow_zero=False)
    count = check_integer(count, "count", owner, low=1)
    composition = check_choice(composition, "composition", owner, COMPOSITIONS)
    if count == 1:
        return epsilon, delta, PrivacyGuarantee(epsilon, delta)
    return _advanced_budget(epsilon, delta, count) if composition == "advanced" else _tight_budget(epsilon, delta, count)


def compose_like_budget(
    per_mechanism: PrivacyGuarantee, count: int, calibrated: PrivacyGuarantee, budget_delta: float, composition: str
) -> PrivacyGuarantee:
    """``count`` mechanisms, each ``per_mechanism``-DP, composed as `per_mechanism_budget` composed the calibrated ones.

    ``calibrated`` is one mechanism's guarantee as calibrated and ``budget_delta`` the composed
    delta the budget spent; the slack ``budget_delta - count * calibrated.delta`` (advanced
    composition's ``delta'``, or the share of delta the numerical composition keeps) is kept, and
    the composed delta is ``count * per_mechanism.delta + slack``. ``"advanced"``: the better of
    basic and advanced composition at that slack; ``"tight"``: the numerical composition of the
    worst ``per_mechanism``-DP pair's PLD (and basic composition, the better). One mechanism
    (``count = 1``) is ``per_mechanism`` itself. No guarantee (``epsilon = inf``) where the delta
    would reach 1.

    Examples:
        >>> e0, d0, headline = per_mechanism_budget(1.0, 1e-6, 64, "advanced")
        >>> same = compose_like_budget(PrivacyGuarantee(e0, d0), 64, PrivacyGuarantee(e0, d0), headline.delta, "advanced")
        >>> bool(abs(same.epsilon - headline.epsilon) < 1e-12), bool(abs(same.delta - headline.delta) < 1e-18)
        (True, True)
        >>> worse = compose_like_budget(PrivacyGuarantee(2 * e0, d0), 64, PrivacyGuarantee(e0, d0), headline.delta, "advanced")
        >>> worse.epsilon > headline.epsilon
        True
    """
    owner = "compose_like_budget"
    count = check_integer(count, "count", owner, low=1)
    composition = check_choice(composition, "composition", owner, COMPOSITIONS)
    if count == 1:
        return per_mechanism
    slack = max(0.0, budget_delta - count * calibrated.delta)
    delta = count * per_mechanism.delta + slack
    if not (math.isfinite(per_mechanism.epsilon) and delta < 1.0):
        return PrivacyGuarantee(math.inf, min(delta, 1 - 1e-16), per_mechanism.neighbouring)
    epsilon = count * per_mechanism.epsilon
    if composition == "advanced" and slack > 0:
        epsilon = min(epsilon, advanced_composition_epsilon(per_mechanism.epsilon, count, slack))
    elif composition == "tight":
        epsilon = min(epsilon, PLDPair.from_guarantee(per_mechanism).self_compose(count).epsilon(delta))
    return PrivacyGuarantee(epsilon, delta, per_mechanism.neighbouring)
