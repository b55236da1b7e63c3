"""Closed-form composition theorems.

Each function takes guarantees under one neighbouring relation and returns the composed
guarantee under the same relation; mixing relations raises.

References:
    Wagner, "Learning from End User Data with Shuffled Differential Privacy over Kernel
    Densities", ICLR 2025.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from fractions import Fraction

from privsum._validation import check_delta, check_epsilon, check_integer, invalid
from privsum.accounting.guarantee import Neighbouring, PrivacyGuarantee

__all__ = [
    "advanced_composition",
    "advanced_composition_epsilon",
    "basic_composition",
    "drift_term",
    "exact_weighted_sum",
    "parallel_composition",
    "pure_composition",
    "repeated_composition",
    "zero_out_to_replace_one",
]


def _common_relation(guarantees: Sequence[PrivacyGuarantee], owner: str) -> Neighbouring:
    if not isinstance(guarantees, Sequence) or isinstance(guarantees, (str, bytes)):
        raise invalid("guarantees", owner, "a non-empty sequence of PrivacyGuarantee", type(guarantees).__name__)
    if len(guarantees) == 0:
        raise invalid("guarantees", owner, "a non-empty sequence of PrivacyGuarantee", guarantees)
    for guarantee in guarantees:
        if not isinstance(guarantee, PrivacyGuarantee):
            raise invalid("guarantees", owner, "a sequence of PrivacyGuarantee", guarantee)
    relations = {g.neighbouring for g in guarantees}
    if len(relations) != 1:
        raise invalid("guarantees", owner, "guarantees under one neighbouring relation", sorted(r.value for r in relations))
    return relations.pop()


def basic_composition(guarantees: Sequence[PrivacyGuarantee]) -> PrivacyGuarantee:
    """Sequential composition: ``(sum epsilon_j, sum delta_j)``.

    Privacy:
        Holds for adaptive composition of mechanisms run on the same dataset.

    References:
        Dwork & Roth, *The Algorithmic Foundations of Differential Privacy*, Thm 3.16.

    Examples:
        >>> basic_composition([PrivacyGuarantee(1.0, 1e-6), PrivacyGuarantee(0.5, 0.0)])
        PrivacyGuarantee(epsilon=1.5, delta=1e-06, neighbouring='replace-one')
    """
    relation = _common_relation(guarantees, "basic_composition")
    epsilon = math.fsum(g.epsilon for g in guarantees)
    delta = math.fsum(g.delta for g in guarantees)
    if not delta < 1.0:
        raise invalid("guarantees", "basic_composition", "deltas summing to less than 1", delta)
    return PrivacyGuarantee(epsilon, delta, relation)


def exact_weighted_sum(terms: Iterable[tuple[float, int]]) -> float:
    """``sum_j count_j * value_j`` for ``(value, count)`` pairs, correctly rounded, without repeating terms.

    Equal, bit for bit, to ``math.fsum`` over the list in which each ``value`` is repeated ``count``
    times (both are the float nearest the exact sum), in time independent of the counts: the sum
    is computed exactly in rationals. Infinite values give ``inf`` (values are non-negative here).

    Examples:
        >>> exact_weighted_sum([(0.1, 10), (1e-12, 3)]) == math.fsum([0.1] * 10 + [1e-12] * 3)
        True
        >>> exact_weighted_sum([(0.1, 10**12)])
        100000000000.0
    """
    total = Fraction(0)
    infinite = False
    for value, count in terms:
        if count == 0:
            continue
        if math.isinf(value):
            infinite = True
        else:
            total += Fraction(value) * count
    return math.inf if infinite else float(total)


def repeated_composition(guarantee: PrivacyGuarantee, count: int) -> PrivacyGuarantee:
    """`basic_composition` of ``count`` copies of ``guarantee``, without building the list.

    The same numbers as ``basic_composition([guarantee] * count)`` (bit for bit) in constant
    time, so ``count`` may be ``10**9`` or more.

    Examples:
        >>> repeated_composition(PrivacyGuarantee(0.5, 1e-8), 4)
        PrivacyGuarantee(epsilon=2.0, delta=4e-08, neighbouring='replace-one')
    """
    owner = "repeated_composition"
    if not isinstance(guarantee, PrivacyGuarantee):
        raise invalid("guarantee", owner, "a PrivacyGuarantee", guarantee)
    count = check_integer(count, "count", owner, low=1)
    epsilon = exact_weighted_sum([(guarantee.epsilon, count)])
    delta = exact_weighted_sum([(guarantee.delta, count)])
    if not delta < 1.0:
        raise invalid("count", owner, f"small enough that count * delta ({guarantee.delta!r}) is below 1", count)
    return PrivacyGuarantee(epsilon, delta, guarantee.neighbouring)


def pure_composition(guarantees: Sequence[PrivacyGuarantee]) -> PrivacyGuarantee:
    """Composition of pure-DP guarantees: ``(sum epsilon_j, 0)``; every input must have delta 0.

    Examples:
        >>> pure_composition([PrivacyGuarantee(0.25, 0.0)] * 4)
        PrivacyGuarantee(epsilon=1.0, delta=0.0, neighbouring='replace-one')
    """
    _common_relation(guarantees, "pure_composition")
    for guarantee in guarantees:
        if not guarantee.is_pure:
            raise invalid("guarantees", "pure_composition", "pure guarantees (delta == 0)", guarantee)
    return basic_composition(guarantees)


def parallel_composition(guarantees: Sequence[PrivacyGuarantee], *, parts_per_user: int = 1) -> PrivacyGuarantee:
    """Mechanisms on disjoint parts of the data.

    Under add/remove one user touches one part, giving ``(max epsilon_j, max delta_j)``. Under
    replace-one a user whose value moves to another part touches two parts: pass
    ``parts_per_user=2`` and the worst part is composed that many times (basic composition).

    Privacy:
        Each part must be a mechanism of only its own users' data.

    Examples:
        >>> parallel_composition([PrivacyGuarantee(1.0, 1e-6), PrivacyGuarantee(0.5, 1e-7)])
        PrivacyGuarantee(epsilon=1.0, delta=1e-06, neighbouring='replace-one')
    """
    relation = _common_relation(guarantees, "parallel_composition")
    parts_per_user = check_integer(parts_per_user, "parts_per_user", "parallel_composition", low=1)
    worst = PrivacyGuarantee(max(g.epsilon for g in guarantees), max(g.delta for g in guarantees), relation)
    return repeated_composition(worst, parts_per_user)


def zero_out_to_replace_one(guarantee: PrivacyGuarantee) -> PrivacyGuarantee:
    """The replace-one guarantee a zero-out guarantee gives: ``(2 epsilon, (1 + e^epsilon) delta)``.

    Replacing ``x`` by ``x'`` is two zero-out steps (``x -> null -> x'``): group privacy of size 2.

    Examples:
        >>> zero_out_to_replace_one(PrivacyGuarantee(0.5, 0.0, "zero-out"))
        PrivacyGuarantee(epsilon=1.0, delta=0.0, neighbouring='replace-one')
    """
    owner = "zero_out_to_replace_one"
    if not isinstance(guarantee, PrivacyGuarantee) or guarantee.neighbouring != Neighbouring.ZERO_OUT:
        raise invalid("guarantee", owner, "a PrivacyGuarantee under 'zero-out'", guarantee)
    no_guarantee = PrivacyGuarantee(math.inf, 1 - 1e-16, Neighbouring.REPLACE_ONE)
    if not guarantee.is_finite or guarantee.epsilon > 700.0:
        return no_guarantee
    delta = (1.0 + math.exp(guarantee.epsilon)) * guarantee.delta
    return PrivacyGuarantee(2.0 * guarantee.epsilon, delta, Neighbouring.REPLACE_ONE) if delta < 1.0 else no_guarantee


def advanced_composition_epsilon(epsilon0: float, count: int, delta_slack: float) -> float:
    """The epsilon of `advanced_composition`: ``eps0*sqrt(2k log(1/delta')) + k*eps0*(e^eps0 - 1)``."""
    owner = "advanced_composition"
    epsilon0 = check_epsilon(epsilon0, owner, "epsilon0")
    count = check_integer(count, "count", owner, low=1)
    delta_slack = check_delta(delta_slack, owner, "delta_slack", allow_zero=False)
    return epsilon0 * math.sqrt(2.0 * count * math.log(1.0 / delta_slack)) + count * drift_term(epsilon0)


def drift_term(epsilon0: float) -> float:
    """``epsilon0 (e^epsilon0 - 1)``, the per-mechanism drift of advanced composition (``inf`` past float range).

    Examples:
        >>> round(drift_term(0.1), 6), drift_term(1000.0)
        (0.010517, inf)
    """
    return epsilon0 * math.expm1(epsilon0) if epsilon0 < 700.0 else math.inf


def advanced_composition(guarantee: PrivacyGuarantee, count: int, delta_slack: float) -> PrivacyGuarantee:
    """Advanced composition of ``count`` mechanisms, each ``(epsilon0, delta0)``-DP.

    Returns ``(epsilon0*sqrt(2k log(1/delta')) + k*epsilon0*(e^epsilon0 - 1), k*delta0 + delta')``.

    Privacy:
        Adaptive composition, any neighbouring relation (kept from the input).

    References:
        Dwork, Rothblum & Vadhan (FOCS 2010); the form of Theorem 3.2 of Wagner (ICLR 2025)

    Examples:
        >>> g = advanced_composition(PrivacyGuarantee(0.1, 1e-8), count=100, delta_slack=1e-6)
        >>> round(g.epsilon, 4), g.delta
        (6.3082, 2e-06)
    """
    if not isinstance(guarantee, PrivacyGuarantee):
        raise invalid("guarantee", "advanced_composition", "a PrivacyGuarantee", guarantee)
    epsilon = advanced_composition_epsilon(guarantee.epsilon, count, delta_slack)
    delta = count * guarantee.delta + delta_slack
    if not delta < 1.0:
        raise invalid("delta_slack", "advanced_composition", "small enough that k*delta0 + delta' < 1", delta_slack)
    return PrivacyGuarantee(epsilon, delta, guarantee.neighbouring)
