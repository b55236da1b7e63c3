"""The optimal composition of identical (epsilon0, delta0) guarantees against exact references."""

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privsum import InvalidParameterError
from privsum.accounting import (
    PLDPair,
    PrivacyGuarantee,
    advanced_composition_epsilon,
    optimal_composition,
    optimal_composition_delta,
    optimal_composition_floor,
)


def exact_delta(epsilon0: float, delta0: float, count: int, epsilon: float) -> float:
    """The hockey-stick divergence of the k-fold product of the four-outcome pair, in 50 digits, term by term."""
    with mpmath.workdps(50):
        e0 = mpmath.mpf(epsilon0)
        high, low = mpmath.e**e0 / (1 + mpmath.e**e0), 1 / (1 + mpmath.e**e0)
        total = mpmath.mpf(0)
        for lows in range(count + 1):
            if (count - 2 * lows) * e0 > epsilon:
                weight = mpmath.binomial(count, lows)
                first, second = high ** (count - lows) * low**lows, high**lows * low ** (count - lows)
                total += weight * (first - mpmath.e ** mpmath.mpf(epsilon) * second)
        kept = (1 - mpmath.mpf(delta0)) ** count
        return float(1 - kept + kept * total)


def brute_force_delta(epsilon0: float, delta0: float, count: int, epsilon: float) -> float:
    """The same divergence from the explicit product distribution (every outcome sequence, small k)."""
    high, low = math.exp(epsilon0) / (1 + math.exp(epsilon0)), 1 / (1 + math.exp(epsilon0))
    first = np.array([delta0, (1 - delta0) * high, (1 - delta0) * low, 0.0])
    second = first[::-1].copy()
    p, q = np.array([1.0]), np.array([1.0])
    for _ in range(count):
        p, q = np.outer(p, first).ravel(), np.outer(q, second).ravel()
    return float(np.maximum(p - math.exp(epsilon) * q, 0.0).sum())


@pytest.mark.parametrize(("epsilon0", "delta0", "count"), [(0.3, 0.0, 3), (1.0, 1e-3, 4), (0.05, 1e-2, 5), (2.0, 0.0, 2)])
@pytest.mark.parametrize("epsilon", [0.0, 0.1, 0.6, 2.0, 4.5])
def test_delta_equals_the_product_distribution(epsilon0, delta0, count, epsilon):
    reference = brute_force_delta(epsilon0, delta0, count, epsilon)
    got = optimal_composition_delta(PrivacyGuarantee(epsilon0, delta0), count, epsilon)
    assert reference - 1e-15 <= got <= reference + 1e-9 * max(reference, 1.0)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    epsilon0=st.floats(1e-4, 3.0),
    delta0=st.sampled_from([0.0, 1e-12, 1e-8, 1e-5]),
    count=st.integers(1, 300),
    fraction=st.floats(0.0, 1.0),
)
def test_delta_is_never_below_the_exact_value_and_within_the_margin(epsilon0, delta0, count, fraction):
    epsilon = fraction * count * epsilon0
    reference = exact_delta(epsilon0, delta0, count, epsilon)
    got = optimal_composition_delta(PrivacyGuarantee(epsilon0, delta0), count, epsilon)
    assert reference <= got <= reference + 2e-10 + 1e-9 * reference


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    epsilon0=st.floats(1e-3, 2.0),
    delta0=st.sampled_from([0.0, 1e-10, 1e-8]),
    count=st.integers(1, 400),
    delta=st.sampled_from([1e-7, 1e-5, 1e-3]),
)
def test_epsilon_meets_delta_and_is_the_least_such(epsilon0, delta0, count, delta):
    guarantee = PrivacyGuarantee(epsilon0, delta0)
    if not delta > optimal_composition_floor(guarantee, count):
        with pytest.raises(InvalidParameterError, match="'delta' parameter of optimal_composition"):
            optimal_composition(guarantee, count, delta)
        return
    epsilon = optimal_composition(guarantee, count, delta).epsilon
    assert exact_delta(epsilon0, delta0, count, epsilon) <= delta
    if epsilon > 0:  # a little less epsilon misses delta (exactly): the result is tight
        assert exact_delta(epsilon0, delta0, count, epsilon * (1 - 1e-6) - 1e-9) > delta * (1 - 1e-6)


@pytest.mark.parametrize(("epsilon0", "delta0", "count"), [(0.1, 1e-8, 100), (0.01, 1e-10, 768), (1.0, 0.0, 384), (2.0, 1e-7, 3)])
def test_never_above_the_pld_composition_or_advanced_composition(epsilon0, delta0, count):
    guarantee, delta = PrivacyGuarantee(epsilon0, delta0), 1e-5
    optimal = optimal_composition(guarantee, count, delta).epsilon
    pld = PLDPair.from_guarantee(guarantee).self_compose(count).epsilon(delta)
    assert optimal <= pld * (1 + 1e-9)
    assert pld - optimal <= 0.01 * pld + 1e-3  # the PLD is the same pair, discretised pessimistically
    if delta > count * delta0:
        assert optimal <= advanced_composition_epsilon(epsilon0, count, delta - count * delta0)


def test_one_mechanism_is_its_own_guarantee():
    guarantee = PrivacyGuarantee(0.7, 1e-6)
    assert optimal_composition_delta(guarantee, 1, 0.7) == pytest.approx(1e-6, rel=1e-9)
    assert optimal_composition(guarantee, 1, 1e-6 * (1 + 1e-6)).epsilon <= 0.7


def test_large_counts_are_fast_and_match_the_central_limit():
    """k = 10^12 runs of (1e-6, 0): the loss is about Normal(k eps0^2/2, k eps0^2), so eps(delta) is close to
    the Gaussian mechanism's with mu = sqrt(k) eps0 = 1."""
    from privsum.accounting import gaussian_epsilon

    epsilon = optimal_composition(PrivacyGuarantee(1e-6, 0.0), 10**12, 1e-6).epsilon
    assert epsilon == pytest.approx(gaussian_epsilon(1e-6, sigma=1.0, sensitivity=1.0), rel=1e-3)


def test_floor_and_errors_name_the_parameter():
    assert optimal_composition_floor(PrivacyGuarantee(1.0, 1e-8), 100) == pytest.approx(1 - (1 - 1e-8) ** 100, rel=1e-9)
    with pytest.raises(InvalidParameterError, match="'count' parameter of optimal_composition"):
        optimal_composition(PrivacyGuarantee(1.0, 1e-8), 0, 1e-6)
    with pytest.raises(InvalidParameterError, match="'guarantee' parameter of optimal_composition_delta"):
        optimal_composition_delta((1.0, 1e-8), 3, 0.5)
    with pytest.raises(InvalidParameterError, match="'epsilon' parameter of optimal_composition_delta"):
        optimal_composition_delta(PrivacyGuarantee(1.0, 1e-8), 3, -1.0)
    with pytest.raises(InvalidParameterError, match="'delta' parameter of optimal_composition"):
        optimal_composition(PrivacyGuarantee(1.0, 1e-3), 10, 1e-3)


@pytest.mark.parametrize("count", [3, 100, 1000])
@pytest.mark.parametrize("epsilon0", [1e-6, 1e-3, 0.1, 1.0, 5.0, 40.0])
def test_binomial_masses_are_within_the_margin_of_exact_sums(count, epsilon0):
    from privsum.accounting.homogeneous import _CDF_MARGIN, _piece

    low = 1 / (1 + math.exp(epsilon0))
    spread = math.sqrt(count * low * (1 - low))
    with mpmath.workdps(40):
        b = mpmath.mpf(low)
        pmf = [mpmath.binomial(count, i) * b**i * (1 - b) ** (count - i) for i in range(count + 1)]
        for index in sorted({0, int(count * low), min(count - 1, int(count * low + 2 * spread)), count // 2 - 1}):
            first, second = _piece(index, epsilon0, count)
            exact_first, exact_second = float(sum(pmf[: index + 1])), float(sum(pmf[count - index :]))
            assert abs(first - exact_first) <= 0.01 * _CDF_MARGIN * exact_first + 1e-300
            assert abs(second - exact_second) <= 0.01 * _CDF_MARGIN * exact_second + 1e-300


def test_the_accountant_composes_a_composed_event_by_its_runs():
    from privsum.accounting import ComposedEvent, GuaranteeEvent, PrivacyAccountant

    instance = PrivacyGuarantee(0.05, 1e-10)
    accountant = PrivacyAccountant()
    accountant.compose(ComposedEvent(GuaranteeEvent(instance), 100), count=3)
    expected = optimal_composition(instance, 300, 1e-6).epsilon
    assert accountant.epsilon(1e-6, method="optimal") == expected
    assert accountant.epsilon(1e-6) <= expected


@pytest.mark.parametrize(
    ("epsilon0", "delta0", "count"),
    [(0.01, 0.0, 10**4), (0.01, 1e-15, 10**5), pytest.param(1e-4, 0.0, 10**7, marks=pytest.mark.slow)],
)
def test_at_large_counts_optimal_is_exact_and_the_pld_never_below_it(epsilon0, delta0, count):
    """Beyond the small counts above: both against scipy's binomial tails (`tests.accounting.references`)."""
    from tests.accounting.references import homogeneous_epsilon

    guarantee = PrivacyGuarantee(epsilon0, delta0)
    pld = PLDPair.from_guarantee(guarantee).self_compose(count)
    for delta in (1e-6, 1e-9):
        reference = homogeneous_epsilon(epsilon0, delta0, count, delta)
        optimal = optimal_composition(guarantee, count, delta).epsilon
        assert reference <= optimal <= reference * (1 + 1e-8)
        assert optimal <= pld.epsilon(delta)  # certified (inf where it declines)
