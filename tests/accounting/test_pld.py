import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from privsum.accounting import (
    PLDPair,
    PrivacyGuarantee,
    PrivacyProfile,
    advanced_composition_epsilon,
    randomized_response_profile,
)


@given(epsilon0=st.floats(0.01, 1.0), count=st.integers(2, 400), exponent=st.integers(3, 10))
@settings(max_examples=40, deadline=None)
def test_pld_composition_never_worse_than_advanced(epsilon0, count, exponent):
    delta = 10.0**-exponent
    composed = PLDPair.from_profile(randomized_response_profile(epsilon0)).self_compose(count)
    if math.isinf(composed.epsilon(delta)):  # it declines only where its certified round-off reaches delta
        assert delta < composed.delta_floor and composed.absolute_error > 0
        return
    assert composed.epsilon(delta) <= advanced_composition_epsilon(epsilon0, count, delta) + 1e-9
    assert composed.epsilon(delta) <= count * epsilon0 + count * 1e-4 + 1e-9  # basic, up to one interval per run


def exact_composed_rr_delta(epsilon0, count, epsilon):
    """k-fold binary RR: the privacy loss is eps0 * (2*Bin(k, p) - k) with p = e^eps0/(1+e^eps0)."""
    keep = math.exp(epsilon0) / (1 + math.exp(epsilon0))
    successes = np.arange(count + 1)
    p = stats.binom.pmf(successes, count, keep)
    q = stats.binom.pmf(successes, count, 1 - keep)
    return np.maximum(p - math.exp(epsilon) * q, 0).sum()


@pytest.mark.parametrize(("epsilon0", "count"), [(0.5, 10), (0.1, 100), (1.0, 3)])
def test_pld_is_pessimistic_and_close_to_exact(epsilon0, count):
    composed = PLDPair.from_profile(randomized_response_profile(epsilon0)).self_compose(count)
    for epsilon in (0.5, 1.0, 2.0):
        exact = exact_composed_rr_delta(epsilon0, count, epsilon)
        estimate = composed.delta(epsilon)
        assert estimate >= exact * (1 - 1e-9)
        # Pessimistic rounding moves each loss up by at most one interval (1e-4) per composition.
        assert estimate <= exact_composed_rr_delta(epsilon0, count, epsilon - 1e-4 * count) * (1 + 1e-9)


def test_asymmetric_pair_reports_worse_direction():
    p, q = np.array([0.7, 0.3, 0.0]), np.array([0.4, 0.5, 0.1])
    profile = PrivacyProfile(p, q)
    pld = PLDPair.from_profile(profile)
    for epsilon in (0.0, 0.2, 0.6):
        assert pld.delta(epsilon) >= profile.delta(epsilon) - 1e-12


def test_from_guarantee_composition_beats_basic():
    pld = PLDPair.from_guarantee(PrivacyGuarantee(0.1, 1e-9)).self_compose(100)
    assert pld.epsilon(1e-6) < 10.0
    assert pld.epsilon(1e-6) < advanced_composition_epsilon(0.1, 100, 1e-6 - 100e-9)
