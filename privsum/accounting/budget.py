"""Budget fitting: the per-mechanism guarantee whose ``count``-fold composition meets a target.

`per_mechanism_budget` splits an ``(epsilon, delta)`` budget over ``count`` mechanisms that one
user touches (advanced composition, or the numerical composition of the worst pair's PLD);
`compose_like_budget` states what mechanisms of another guarantee compose to under the same
rule; `ComposedEventWithHeadline` carries such a headline for the accountant. The clipped sums of Dong,
Luo, Fanti, Shi & Yi (CCS 2024) compose their coordinates and levels with it.

References:
    Dwork, Rothblum & Vadhan, "Boosting and Differential Privacy", FOCS 2010.
    Dong, Luo, Fanti, Shi & Yi, "(Almost) Instance-optimal Clipping for Summation Problems in
    the Shuffle Model of Differential Privacy", CCS 2024.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

from privsum._deprecation import moved_attribute_getter
from privsum._validation import check_choice, check_delta, check_epsilon, check_integer, invalid
from privsum.accounting.composition import advanced_composition_epsilon
from privsum.accounting.events import ComposedEvent, GuaranteeEvent, PrivacyEvent
from privsum.accounting.guarantee import PrivacyGuarantee
from privsum.accounting.homogeneous import optimal_composition, optimal_composition_floor
from privsum.accounting.pld import DEFAULT_DISCRETIZATION, PLDPair

__all__ = [
    "BACKING_RTOL",
    "COMPOSITIONS",
    "FIT_RTOL",
    "MAX_FIT_STEPS",
    "START_RTOL",
    "TIGHT_RTOL",
    "ComposedEventWithHeadline",
    "compose_like_budget",
    "composed_epsilon",
    "composed_guarantee",
    "composition_backs",
    "fit_composition",
    "generic_composed_epsilon",
    "largest_composable",
    "largest_feasible",
    "optimal_composed_epsilon",
    "per_mechanism_budget",
]

COMPOSITIONS = ("advanced", "tight")


@dataclass(frozen=True)
class ComposedEventWithHeadline(PrivacyEvent):
    """``count`` mechanisms, each ``event``, touched by one user, with the headline a composition theorem gives.

    Unlike `~privsum.accounting.events.ComposedEvent` (whose guarantee is basic composition of
    the event's), the guarantee is ``headline``, checked on construction to be backed by basic,
    advanced or numerical composition (`composition_backs`). (Called ``CompositionEvent`` before.)

    ``headline`` comes from advanced composition or from the numerical composition of the PLDs
    (`per_mechanism_budget`); `pld` composes ``event``'s PLD ``count`` times (for the accountant).

    Examples:
        >>> from privsum.accounting import GuaranteeEvent
        >>> single = GuaranteeEvent(PrivacyGuarantee(0.1, 1e-9))
        >>> headline = PrivacyGuarantee(advanced_composition_epsilon(0.1, 400, 1e-7), 400e-9 + 1e-7)
        >>> ComposedEventWithHeadline(single, 400, headline).guarantee.epsilon < 400 * 0.1
        True
    """

    event: PrivacyEvent
    count: int
    headline: PrivacyGuarantee

    def __post_init__(self) -> None:
        owner = "ComposedEventWithHeadline"
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

    def worst(epsilon0: float) -> GuaranteeEvent:
        return GuaranteeEvent(PrivacyGuarantee(epsilon0, delta0))

    epsilon0 = fit_composition(
        worst,
        epsilon=epsilon,
        delta=delta,
        delta0=delta0,
        count=count,
        start=epsilon / count,
        rtol=TIGHT_RTOL,
        numerical=True,
        caller=("per_mechanism_budget", "epsilon"),
    )
    epsilon0 = max(epsilon0, epsilon / count)  # basic composition backs epsilon / count whatever the PLD's grid rounds
    achieved = _numerical_composed_epsilon(worst(epsilon0), count, delta)
    return epsilon0, delta0, PrivacyGuarantee(min(achieved, epsilon), delta)


def per_mechanism_budget(
    epsilon: float, delta: float, count: int, composition: str = "advanced"
) -> tuple[float, float, PrivacyGuarantee]:
    """``(epsilon0, delta0, headline)``: ``count`` mechanisms each ``(epsilon0, delta0)``-DP compose to ``headline``.

    The headline is at most ``(epsilon, delta)``.

    ``"advanced"``: the better of basic composition and advanced composition (half of delta as
    the slack ``delta'``). ``"tight"``: the numerical composition of the worst ``(epsilon0,
    delta0)``-DP pair's PLD, ``delta0 = delta/(2 count)``, fitted by `fit_composition` to within
    `TIGHT_RTOL` below ``epsilon`` (it never overshoots).

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


# --------------------------------------------------------------------------- fitting a parameter to k compositions
#: The searches stop once the composed epsilon is within this fraction below the target.
FIT_RTOL = 2e-3
#: The worst-(epsilon0, delta0)-mechanism search only starts the search over an exact profile: coarser.
START_RTOL = 2e-2
#: Steps of one search at most.
MAX_FIT_STEPS = 40
#: `per_mechanism_budget`'s ``"tight"`` search stops within this fraction below the target epsilon.
TIGHT_RTOL = 1e-4


def generic_composed_epsilon(epsilon0: float, delta0: float, count: int, delta: float) -> float:
    """Epsilon at ``delta`` of ``count`` compositions of the worst ``(epsilon0, delta0)`` mechanism (exact)."""
    return optimal_composed_epsilon(PrivacyGuarantee(epsilon0, delta0), count, delta)


def optimal_composed_epsilon(instance: PrivacyGuarantee, count: int, delta: float) -> float:
    """`optimal_composition`'s epsilon, ``inf`` where ``delta`` is at most its floor."""
    if not delta > optimal_composition_floor(instance, count):
        return math.inf
    return optimal_composition(instance, count, delta).epsilon


def largest_feasible(
    composed: Callable[[float], float],
    target: float,
    start: float,
    cap: float,
    slope: float = 1.0,
    *,
    rtol: float = FIT_RTOL,
    centred: bool = False,
    values: dict[float, float] | None = None,
    caller: tuple[str, str] = ("largest_feasible", "target"),
) -> tuple[float, float]:
    """Largest ``epsilon0`` in ``(0, cap]`` with ``composed(epsilon0) <= target``, to a relative tolerance.

    ``composed`` should be non-decreasing (up to small wiggles). Works on ``log composed`` against
    ``log epsilon0``, which is close to a line of slope about 1 (composition scales epsilon0): a
    step of the given ``slope`` from the best feasible point, then regula falsi (Illinois) inside
    the bracket ``[feasible, infeasible]``. Returns the feasible end (a point actually evaluated;
    it stops once the composed epsilon is within ``rtol`` below the target) and the log-log slope
    measured across the final bracket (to start a similar search).

    ``centred=True`` aims every guess at the middle of the accepted band ``[target e^-rtol,
    target]`` (rather than just past the target, to bracket it) and re-measures the slope between
    feasible points: fewer evaluations of an expensive ``composed`` whose small wiggles would
    otherwise make guesses at the band's edge miss it. ``values`` caches ``log composed - log
    target`` by ``log epsilon0`` across searches of the same function. ``caller`` is ``(owner,
    parameter)`` named when no positive ``epsilon0`` is feasible.

    Examples:
        >>> epsilon0, _ = largest_feasible(lambda e0: 10 * e0, 2.0, 1.0, 2.0)
        >>> 10 * epsilon0 <= 2.0 and 10 * epsilon0 > 2.0 * (1 - FIT_RTOL)
        True
    """
    log_target, log_cap = math.log(target), math.log(cap)
    values = {} if values is None else values
    aim = rtol / 2 if centred else 0.0  # guesses aim this far below the target (in log)

    def gap(log_epsilon0: float) -> float:
        if log_epsilon0 not in values:
            values[log_epsilon0] = math.log(max(composed(math.exp(log_epsilon0)), 1e-300)) - log_target
        return values[log_epsilon0]

    low, high = min(math.log(start), log_cap), None
    while gap(low) > 0:  # step down to a feasible start
        high, low = low, low - math.log(4.0)
        if low < log_cap - 60:
            raise invalid(caller[1], caller[0], "large enough for a positive per-instance epsilon", target)
    side, previous_low, repeats = 0, None, 0
    for _ in range(MAX_FIT_STEPS):
        if -gap(low) <= rtol or low >= log_cap or (high is not None and high - low < 1e-7):
            break
        if high is None and centred:  # a secant step to the band's middle, on the slope measured so far
            if previous_low is not None:
                slope = min(max((gap(low) - gap(previous_low)) / (low - previous_low), 0.5), 4.0)
            guess = min(low - (gap(low) + aim) / slope, log_cap)
        elif high is None:  # slope-1 step, a little beyond, to find an infeasible end
            guess = min(low - gap(low) / slope + 1e-4, log_cap)
        else:  # Illinois: damp the end that stayed put (centred: only once it stayed twice in a row)
            damp = 2 if not centred or repeats >= 2 else 1
            g_low = (gap(low) + aim) / (damp if side == 1 else 1)
            g_high = (gap(high) + aim) / (damp if side == -1 else 1)
            guess = (low * g_high - high * g_low) / (g_high - g_low)
            guess = min(max(guess, low + 0.01 * (high - low)), high - 0.01 * (high - low))
        moved = -1 if gap(guess) <= 0 else 1
        repeats = repeats + 1 if moved == side else 1
        if moved < 0:
            previous_low, low, side = low, guess, -1
        else:
            high, side = guess, 1
    if high is not None and high > low:
        slope = max((gap(high) - gap(low)) / (high - low), 0.1)
    return math.exp(low), slope


@functools.lru_cache(maxsize=64)
def composed_guarantee(event: ComposedEvent, delta: float) -> PrivacyGuarantee:
    """Composition at ``delta``, cached: many KDEs share one calibrated bit sum and family size.

    A generic ``(epsilon0, delta0)`` event composes exactly by the optimal composition theorem
    (Kairouz, Oh & Viswanath, ICML 2015); an event with its own privacy-loss distribution by PLD.
    """
    if isinstance(event.event, GuaranteeEvent):
        epsilon = optimal_composed_epsilon(event.event.guarantee, event.count, delta)
    else:
        epsilon = event.pld(event.native_discretization or DEFAULT_DISCRETIZATION).epsilon(delta)
    return PrivacyGuarantee(epsilon, delta, event.neighbouring)


def composed_epsilon(event: PrivacyEvent, count: int, delta: float) -> float:
    """Epsilon at ``delta`` of ``count`` compositions of ``event`` (`composed_guarantee`); ``inf`` where ``event`` has none."""
    if not event.guarantee.is_finite:
        return math.inf
    return composed_guarantee(ComposedEvent(event, count), delta).epsilon


def _numerical_composed_epsilon(event: PrivacyEvent, count: int, delta: float) -> float:
    """Epsilon at ``delta`` of ``count`` compositions of ``event``'s PLD (a generic event's too); ``inf`` where it has none."""
    if not event.guarantee.is_finite:
        return math.inf
    return ComposedEvent(event, count).epsilon(delta)


def largest_composable(
    event_of: Callable[[float], PrivacyEvent],
    count: int,
    epsilon: float,
    delta: float,
    *,
    start: float,
    cap: float,
    slope: float = 1.0,
    rtol: float = FIT_RTOL,
    centred: bool = True,
    numerical: bool = False,
    caller: tuple[str, str] = ("largest_composable", "epsilon"),
) -> float:
    """The largest parameter in ``(0, cap]`` whose event, composed ``count`` times, meets ``(epsilon, delta)``.

    ``event_of`` is the per-mechanism event family (non-decreasing privacy loss in its
    parameter); the composed epsilon at ``delta`` (`composed_epsilon`; ``numerical=True``: by the
    event's PLD even where the event is a generic ``(epsilon0, delta0)`` one) is searched by
    `largest_feasible` from ``start`` and ends within ``rtol`` below ``epsilon``. The result is a
    parameter actually evaluated: its composition meets the target.

    Examples:
        >>> from privsum.accounting import GuaranteeEvent, PrivacyGuarantee
        >>> family = lambda e0: GuaranteeEvent(PrivacyGuarantee(e0, 1e-8))
        >>> e0 = largest_composable(family, 16, 1.0, 1e-6, start=1.0 / 16, cap=1.0)
        >>> composed_epsilon(family(e0), 16, 1e-6) <= 1.0 < 16 * e0
        True
    """
    composition = _numerical_composed_epsilon if numerical else composed_epsilon
    level, _ = largest_feasible(
        lambda parameter: composition(event_of(parameter), count, delta),
        epsilon,
        start,
        cap,
        slope,
        rtol=rtol,
        centred=centred,
        caller=caller,
    )
    return level


def fit_composition(
    event_of: Callable[[float], PrivacyEvent],
    *,
    epsilon: float,
    delta: float,
    delta0: float,
    count: int,
    start: float,
    rtol: float = FIT_RTOL,
    numerical: bool = False,
    caller: tuple[str, str] = ("fit_composition", "epsilon"),
) -> float:
    """The largest ``epsilon0`` whose mechanism ``event_of(epsilon0)``, composed ``count`` times, meets ``(epsilon, delta)``.

    ``event_of(epsilon0)`` is the event of a mechanism calibrated to ``(epsilon0, delta0)``. Two
    stages: the largest ``epsilon0`` whose worst ``(epsilon0, delta0)`` mechanism composes within
    the target (optimal composition, Kairouz, Oh & Viswanath), to `START_RTOL`, from ``start``;
    a mechanism whose event is that worst mechanism (a `GuaranteeEvent`) then gets it to
    ``rtol`` (a pure one, ``delta0 = 0``, by its own ``(epsilon0, 0)`` composition). A
    mechanism with its own privacy-loss distribution is composed by it, searched from there to
    ``rtol`` by a centred search: its composed epsilon (PLD on a grid) is not quite smooth in
    ``epsilon0``, so guesses aim at the middle of the accepted band. ``numerical=True`` composes
    every event by its PLD, a generic ``(epsilon0, delta0)`` one included (the numerical
    composition `per_mechanism_budget`'s ``"tight"`` headline states). The result is an
    ``epsilon0`` actually evaluated: its composition meets the target (it never overshoots).

    Examples:
        >>> from privsum.accounting import GuaranteeEvent, PrivacyGuarantee
        >>> family = lambda e0: GuaranteeEvent(PrivacyGuarantee(e0, 1e-8))
        >>> e0 = fit_composition(family, epsilon=1.0, delta=1e-6, delta0=1e-8, count=16, start=1.0 / 16)
        >>> composed_epsilon(family(e0), 16, 1e-6) <= 1.0 < 16 * e0
        True
    """
    generic_values: dict[float, float] = {}

    def generic_search(begin: float, tolerance: float) -> tuple[float, float]:
        composed = functools.partial(generic_composed_epsilon, delta0=delta0, count=count, delta=delta)
        return largest_feasible(composed, epsilon, begin, epsilon, rtol=tolerance, values=generic_values, caller=caller)

    generic, slope = generic_search(start, START_RTOL)
    instance = event_of(generic)
    if isinstance(instance, GuaranteeEvent) and not numerical:  # the event is the worst mechanism with its headline
        generic, slope = generic_search(generic, rtol)
        instance = event_of(generic)
        if isinstance(instance, GuaranteeEvent) and instance.guarantee.delta == 0.0 and delta0 > 0:
            # a pure mechanism: its event is the worst (epsilon0, 0) mechanism, sharper than (epsilon0, delta0)
            pure, _ = largest_feasible(
                lambda e0: generic_composed_epsilon(e0, 0.0, count, delta), epsilon, generic, epsilon, rtol=rtol, caller=caller
            )
            return pure
        if isinstance(instance, GuaranteeEvent):
            return generic  # nothing sharper to find
    slope = min(max(slope, 1.0), 1.3)
    return largest_composable(
        event_of, count, epsilon, delta, start=generic, cap=epsilon, slope=slope, rtol=rtol, numerical=numerical, caller=caller
    )


#: ``CompositionEvent`` is the deprecated name of `ComposedEventWithHeadline` (removed in the next release).
__getattr__ = moved_attribute_getter(__name__, {"CompositionEvent": __name__ + ":ComposedEventWithHeadline"})
