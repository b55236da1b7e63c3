"""How the clipped sums spend a target budget on their summation instances, and check a budget back.

`ClippedSum` runs every sub-domain instance at the budget of one part a change touches
(`sub_domain_instances`). `ClippedVectorSum` and `SparseVectorAggregation` compose a per-coordinate
budget over the coordinates a user touches (`composition_for` names how, advanced or numerical
composition; the split itself is `privsum.accounting.budget`). The sparse aggregation splits each
sparsity level's budget between its user count and its coordinates (`split_level_budget`), checks
a given headline against its protocols (`levels_back_headline`) and recomposes what fewer
participants achieve (`level_event_for_participants`).
"""

from __future__ import annotations

from privsum._validation import check_choice
from privsum.accounting import GuaranteeEvent, Neighbouring, ParallelEvent, PrivacyEvent, PrivacyGuarantee, basic_composition
from privsum.accounting.budget import BACKING_RTOL, compose_like_budget, composition_backs, per_mechanism_budget
from privsum.clipping.instances import InstanceProtocol, basic_or_none, choose_instance, parallel_event_or_none

__all__ = [
    "CALIBRATIONS",
    "INSTANCE_MARGIN",
    "composition_for",
    "instance_at",
    "level_event_for_participants",
    "levels_back_headline",
    "split_level_budget",
    "sub_domain_instances",
]

#: How a vector clipped sum may compose its per-coordinate budget: advanced composition or numerically.
CALIBRATIONS = ("analytic", "tight")
#: Instances run a hair inside their budget: BBGN20 recomputes its epsilon and delta in floating point (relative error ~1e-12).
INSTANCE_MARGIN = 1 - 1e-9


def composition_for(calibration: str, owner: str) -> str:
    """The `privsum.accounting.budget` composition of a ``calibration`` request (``"analytic"``: ``"advanced"``)."""
    calibration = check_choice(calibration, "calibration", owner, CALIBRATIONS)
    return "advanced" if calibration == "analytic" else "tight"


def instance_at(
    epsilon: float, delta: float, *, n_users: int, domain: int, method: str, max_correlated_domain: int = 64
) -> InstanceProtocol:
    """`choose_instance` at ``(epsilon, delta)`` shrunk by `INSTANCE_MARGIN`, so its recomputed guarantee stays within them."""
    return choose_instance(
        epsilon=epsilon * INSTANCE_MARGIN,
        delta=delta * INSTANCE_MARGIN,
        n_users=n_users,
        domain=domain,
        method=method,
        max_correlated_domain=max_correlated_domain,
    )


def sub_domain_instances(
    epsilon: float, delta: float, *, n_users: int, domain: int, method: str, max_correlated_domain: int
) -> tuple[InstanceProtocol, ...]:
    """One instance per sub-domain ``j`` of ``{0..U}`` (domain ``2^j``), each at ``(epsilon, delta)``, the budget of one part."""
    return tuple(
        instance_at(epsilon, delta, n_users=n_users, domain=2**j, method=method, max_correlated_domain=max_correlated_domain)
        for j in range(domain.bit_length())
    )


def split_level_budget(
    epsilon: float, delta: float, n_users: int, dimension: int, composition: str, count_fraction: float, method: str
) -> tuple[InstanceProtocol, list[InstanceProtocol], PrivacyGuarantee]:
    """The count protocol, every level's coordinate protocol and the headline, for a replace-one ``(epsilon, delta)``.

    A change touches two levels (parallel composition), so each gets ``(epsilon/2, delta/2)``:
    ``count_fraction`` of it for the user count, the rest for a block of ``min(2^j, d)`` touched
    coordinates, composed to a per-coordinate budget by ``composition`` (`per_mechanism_budget`).
    """
    level_epsilon, level_delta = epsilon / 2, delta / 2 * (1 - 1e-9)
    count_epsilon, count_delta = count_fraction * level_epsilon, count_fraction * level_delta
    block_epsilon, block_delta = level_epsilon - count_epsilon, level_delta - count_delta
    count = instance_at(count_epsilon, count_delta, n_users=n_users, domain=1, method=method)
    levels, level_guarantees = [], []
    for j in range(max(1, dimension - 1).bit_length() + 1):
        epsilon0, delta0, block = per_mechanism_budget(block_epsilon, block_delta, min(2**j, dimension), composition)
        levels.append(instance_at(epsilon0, delta0, n_users=n_users, domain=1, method=method))
        level_guarantees.append(basic_composition([count.guarantee, block]))
    headline = ParallelEvent(tuple(GuaranteeEvent(g) for g in level_guarantees), parts_per_user=2).guarantee
    return count, levels, headline


def levels_back_headline(
    headline: PrivacyGuarantee, count: InstanceProtocol, levels: tuple[InstanceProtocol, ...], dimension: int
) -> bool:
    """Whether every level (its count and its ``min(2^j, d)`` touched coordinates) fits half the headline.

    A user's change touches two levels (parallel composition, ``parts_per_user=2``); in each, the
    count protocol and the level protocol over the touched coordinates compose basically.
    """
    count_guarantee = count.guarantee
    if not headline.is_finite:
        return True
    if not (headline.neighbouring == Neighbouring.REPLACE_ONE and count_guarantee.is_finite):
        return False
    half = (headline.epsilon / 2.0 - count_guarantee.epsilon, headline.delta / 2.0 - count_guarantee.delta)
    if not (half[0] > 0.0 and half[1] >= 0.0):
        return False
    target = PrivacyGuarantee(half[0] * (1.0 + BACKING_RTOL), min(half[1] * (1.0 + BACKING_RTOL), 1.0 - 1e-12))
    for j, level in enumerate(levels):
        touched = min(2**j, dimension)
        single = level.guarantee
        pld = GuaranteeEvent(single).pld if single.is_finite else None
        if not composition_backs(single, touched, target, None if pld is None else lambda p=pld, t=touched: p().self_compose(t)):
            return False
    return True


def level_event_for_participants(
    count: InstanceProtocol,
    levels: tuple[InstanceProtocol, ...],
    headline: PrivacyGuarantee,
    *,
    dimension: int,
    composition: str,
    n_participants: int,
) -> PrivacyEvent:
    """Composed as `split_level_budget` composed the headline, from the instances' own `event_for_participants`.

    Per level, the count's guarantee plus (basic composition) the level's coordinate guarantee
    composed over ``min(2^j, d)`` coordinates with the headline's slack (`compose_like_budget`);
    the levels in parallel, two per change. No guarantee (``epsilon = inf``) where a delta would reach 1.
    """
    count_achieved = count.event_for_participants(n_participants).guarantee
    block_delta = headline.delta / 2 - count.guarantee.delta  # each level's coordinate budget
    level_events = []
    for j, protocol in enumerate(levels):
        achieved = protocol.event_for_participants(n_participants).guarantee
        block = compose_like_budget(achieved, min(2**j, dimension), protocol.guarantee, block_delta, composition)
        level_events.append(GuaranteeEvent(basic_or_none(count_achieved, block)))
    return GuaranteeEvent(parallel_event_or_none(tuple(level_events), parts_per_user=2).guarantee)
