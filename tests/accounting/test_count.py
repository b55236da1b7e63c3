"""A ``count`` never expands into lists: closed forms equal to the old list-based results."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privsum import BudgetExceededError, InvalidParameterError
from privsum.accounting import (
    ComposedEvent,
    GuaranteeEvent,
    PLDPair,
    PrivacyAccountant,
    PrivacyGuarantee,
    ProfileEvent,
    advanced_composition_epsilon,
    basic_composition,
    parallel_composition,
    randomized_response_profile,
)
from privsum.accounting._certified_composition import chernoff_window as _chernoff_window
from privsum.accounting.composition import exact_weighted_sum, repeated_composition
from tests.accounting.references import pure_composition_epsilon

epsilons = st.floats(min_value=1e-6, max_value=5.0, allow_nan=False)
deltas = st.floats(min_value=0.0, max_value=1e-4, allow_nan=False)
counts = st.integers(min_value=1, max_value=300)


def _old_basic_epsilon(ledger, delta):
    """The list-based implementation the closed form replaces."""
    headlines = [g for g, count in ledger for _ in range(count)]
    if math.fsum(g.delta for g in headlines) > delta:
        return math.inf
    return math.fsum(g.epsilon for g in headlines)


def _old_basic_delta(ledger, epsilon):
    headlines = [g for g, count in ledger for _ in range(count)]
    return math.fsum(g.delta for g in headlines) if math.fsum(g.epsilon for g in headlines) <= epsilon else 1.0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(min_value=0.0, max_value=1e3, allow_nan=False), counts), min_size=1, max_size=6))
def test_exact_weighted_sum_is_fsum_of_the_expanded_list(terms):
    expanded = [value for value, count in terms for _ in range(count)]
    assert exact_weighted_sum(terms) == math.fsum(expanded)


@settings(max_examples=100, deadline=None)
@given(epsilons, st.floats(min_value=0.0, max_value=1e-3, allow_nan=False), counts)
def test_repeated_and_composed_event_equal_the_list_form(epsilon, delta, count):
    guarantee = PrivacyGuarantee(epsilon, delta)
    expected = basic_composition([guarantee] * count)
    assert repeated_composition(guarantee, count) == expected
    assert ComposedEvent(GuaranteeEvent(guarantee), count).guarantee == expected
    assert parallel_composition([guarantee, PrivacyGuarantee(epsilon / 2, 0.0)], parts_per_user=count) == expected


def test_repeated_composition_refuses_deltas_summing_past_one():
    with pytest.raises(InvalidParameterError, match="'count' parameter of repeated_composition .* below 1"):
        repeated_composition(PrivacyGuarantee(0.1, 1e-3), 1000)
    with pytest.raises(InvalidParameterError, match="count"):
        repeated_composition(PrivacyGuarantee(0.1, 1e-3), 0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(epsilons, deltas, counts), min_size=1, max_size=4), st.floats(min_value=1e-6, max_value=0.5))
def test_accountant_basic_totals_equal_the_list_based_results(entries, delta):
    accountant = PrivacyAccountant()
    ledger = []
    for epsilon, entry_delta, count in entries:
        guarantee = PrivacyGuarantee(epsilon, entry_delta)
        accountant.compose(GuaranteeEvent(guarantee), count=count)
        ledger.append((guarantee, count))
    assert accountant.epsilon(delta, method="basic") == _old_basic_epsilon(ledger, delta)
    total_epsilon = math.fsum(g.epsilon * 1.0 for g, c in ledger for _ in range(c))
    for epsilon in (total_epsilon, total_epsilon * 0.5):
        assert accountant.delta(epsilon, method="basic") == _old_basic_delta(ledger, epsilon)


def test_huge_counts_use_closed_forms():
    accountant = PrivacyAccountant()
    accountant.compose(GuaranteeEvent(PrivacyGuarantee(1e-5, 1e-18)), count=10**9)
    assert accountant.epsilon(1e-6, method="basic") == float(10**9 * Fraction(1e-5))
    assert accountant.delta(1e4 + 1, method="basic") == exact_weighted_sum([(1e-18, 10**9)])
    advanced = accountant.epsilon(1e-6, method="advanced")
    slack = 1e-6 - exact_weighted_sum([(1e-18, 10**9)])
    assert advanced == pytest.approx(advanced_composition_epsilon(1e-5, 10**9, slack), rel=1e-12)
    within = PrivacyAccountant(budget=PrivacyGuarantee(1e4, 0.0))
    within.compose(GuaranteeEvent(PrivacyGuarantee(1e-5)), count=10**9)  # pure total exactly 1e4
    over = PrivacyAccountant(budget=PrivacyGuarantee(9999.0, 0.0))
    with pytest.raises(BudgetExceededError):
        over.compose(GuaranteeEvent(PrivacyGuarantee(1e-5)), count=10**9)


def test_pld_self_composition_of_a_billion_events_declines_where_it_cannot_certify():
    """At 10^9 compositions the FFT's certified round-off swamps delta = 1e-6: the PLD declines and
    "best" reports the exact composition (checked against scipy's binomial sums, not privsum)."""
    once = PLDPair.from_guarantee(PrivacyGuarantee(1e-4, 0.0))
    billion = once.self_compose(10**9)
    assert billion.epsilon(1e-6) == math.inf
    assert billion.delta_floor > 1e-6
    loose = billion.epsilon(0.05)  # far above the error bound: a certified, finite answer
    assert pure_composition_epsilon(1e-4, 10**9, 0.05) <= loose < advanced_composition_epsilon(1e-4, 10**9, 0.05)
    accountant = PrivacyAccountant()
    accountant.compose(GuaranteeEvent(PrivacyGuarantee(1e-4)), count=10**9)
    assert accountant.epsilon(1e-6, method="pld") == math.inf
    exact = pure_composition_epsilon(1e-4, 10**9, 1e-6)  # 19.423656, issue 31
    assert exact <= accountant.epsilon(1e-6) <= exact * (1 + 1e-9)


@pytest.mark.parametrize(("epsilon0", "count"), [(0.02, 4097), (0.02, 3 * 4096)])
def test_large_count_pld_is_certified_and_close_to_exact(epsilon0, count):
    """The certified FFT power: never below the exact composition (binomial sums), within 1e-3 of it at delta >= 1e-6."""
    pair = PLDPair.from_profile(randomized_response_profile(epsilon0)).self_compose(count)
    for delta in (1e-3, 1e-6):
        exact = pure_composition_epsilon(epsilon0, count, delta)
        assert exact <= pair.epsilon(delta) <= exact * (1 + 1e-3)


def test_chernoff_window_holds_all_but_the_tail_mass():
    probs = np.array([0.2, 0.5, 0.3])
    count = 60
    exact = np.array([1.0])
    for _ in range(count):
        exact = np.convolve(exact, probs)
    low, high = _chernoff_window(probs, count, 1e-12)
    assert exact[:low].sum() + exact[high + 1 :].sum() <= 1e-12
    assert 0 < low < high < 2 * count


def test_best_falls_back_when_the_pld_would_be_too_large_and_pld_raises():
    accountant = PrivacyAccountant()
    accountant.compose(ProfileEvent.at_delta(randomized_response_profile(0.5), 0.0), count=10**9)
    with pytest.raises(InvalidParameterError, match="count"):
        accountant.epsilon(1e-6, method="pld")
    optimal, advanced = accountant.epsilon(1e-6, method="optimal"), accountant.epsilon(1e-6, method="advanced")
    assert optimal < advanced  # the exact composition of the headline (0.5, 0) beats advanced composition
    assert accountant.epsilon(1e-6) == min(optimal, advanced)


def test_counts_near_the_int64_limit_fall_back_to_the_closed_forms_without_overflow():
    """A composed PLD whose loss indices would leave int64 is declined; "best" reports the closed forms."""
    accountant = PrivacyAccountant()
    accountant.compose(GuaranteeEvent(PrivacyGuarantee(1e-12, 1e-25)), count=2**62)
    epsilon = accountant.epsilon(1e-6)
    assert 0.0 < epsilon <= accountant.epsilon(1e-6, method="advanced")
    assert accountant.min_delta() == pytest.approx(2**62 * 1e-25, rel=1e-9)


def test_a_vacuous_repeated_guarantee_names_the_count():
    event = ComposedEvent(GuaranteeEvent(PrivacyGuarantee(0.1, 1e-9)), 10**12)
    with pytest.raises(InvalidParameterError, match="'count' parameter of ComposedEvent"):
        _ = event.guarantee
