import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from privsum import InvalidParameterError
from privsum.accounting import PrivacyProfile, WorstCaseProfile, randomized_response_profile


def rr_closed_form(epsilon0, categories, epsilon):
    return max(0.0, math.exp(epsilon0) - math.exp(epsilon)) / (math.exp(epsilon0) + categories - 1)


@given(
    epsilon0=st.floats(0.01, 8.0),
    categories=st.integers(2, 50),
    fraction=st.floats(0.0, 1.5),
)
@settings(max_examples=200, deadline=None)
def test_k_ary_rr_profile_matches_closed_form(epsilon0, categories, fraction):
    profile = randomized_response_profile(epsilon0, categories)
    epsilon = fraction * epsilon0
    assert profile.delta(epsilon) == pytest.approx(rr_closed_form(epsilon0, categories, epsilon), rel=1e-9, abs=1e-15)
    assert profile.delta(epsilon0) <= 1e-15  # exactly 0 up to floating-point rounding
    if fraction < 1.0:
        assert profile.delta(epsilon) > 0.0


@given(epsilon0=st.floats(0.05, 6.0), categories=st.integers(2, 20), target=st.floats(1e-9, 0.3))
@settings(max_examples=200, deadline=None)
def test_epsilon_is_the_exact_inverse_of_delta(epsilon0, categories, target):
    profile = randomized_response_profile(epsilon0, categories)
    epsilon = profile.epsilon(target)
    assert profile.delta(epsilon) <= target
    # Closed-form inverse: e^eps = e^eps0 - target * (e^eps0 + k - 1).
    inverse = math.log(max(math.exp(epsilon0) - target * (math.exp(epsilon0) + categories - 1), 1.0))
    assert epsilon == pytest.approx(max(inverse, 0.0), abs=1e-9)


def test_profile_takes_both_directions():
    p, q = np.array([0.5, 0.5, 0.0]), np.array([0.25, 0.5, 0.25])
    profile = PrivacyProfile(p, q)
    # Forward: 0.5 - e^eps 0.25 at the first point; backward: mass 0.25 where p = 0 (infinite loss).
    assert profile.delta(0.0) == pytest.approx(0.25)
    assert profile.delta(5.0) == pytest.approx(0.25)
    assert profile.epsilon(0.25) == 0.0
    assert profile.epsilon(0.2) == math.inf


def test_truncated_tail_counts_as_infinite_loss():
    p = np.array([0.6, 0.3])
    q = np.array([0.3, 0.6])
    profile = PrivacyProfile(p, q, p_tail=0.1, q_tail=0.1)
    assert profile.delta(10.0) == pytest.approx(0.1)
    assert profile.delta(0.0) == pytest.approx(0.1 + 0.3)


def test_shuffled_binary_rr_profile_against_bruteforce():
    n, flip = 30, 0.1
    rng_free_pmf = stats.binom.pmf(np.arange(n + 1), n - 1, flip)
    p = (1 - flip) * rng_free_pmf + flip * np.r_[0.0, rng_free_pmf[:-1]]
    q = flip * rng_free_pmf + (1 - flip) * np.r_[0.0, rng_free_pmf[:-1]]
    profile = PrivacyProfile(p, q)
    for epsilon in (0.0, 0.3, 1.0, 2.0):
        brute = max(np.maximum(p - math.exp(epsilon) * q, 0).sum(), np.maximum(q - math.exp(epsilon) * p, 0).sum())
        assert profile.delta(epsilon) == pytest.approx(brute, rel=1e-10, abs=1e-18)


def test_worst_case_and_dominating_pair():
    strong, weak = randomized_response_profile(1.0), randomized_response_profile(2.0)
    worst = WorstCaseProfile([strong, weak])
    assert worst.delta(0.5) == weak.delta(0.5)
    assert worst.epsilon(1e-3) == weak.epsilon(1e-3)
    assert weak.dominates(strong) and not strong.dominates(weak)
    assert worst.dominating_pair is weak


def test_no_dominating_pair_raises():
    # Crossing curves: a pure mechanism with large epsilon vs a smooth one with large delta at 0.
    a = randomized_response_profile(3.0)
    b = PrivacyProfile(np.array([0.75, 0.25]), np.array([0.25, 0.75]), p_tail=0.0)
    c = PrivacyProfile(np.array([0.5, 0.5, 0.0]), np.array([0.49, 0.5, 0.01]))
    with pytest.raises(InvalidParameterError, match="'profiles'.*dominates"):
        _ = WorstCaseProfile([a, b, c]).dominating_pair


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"p": [0.5, -0.1], "q": [0.5, 0.5]}, "p"),
        ({"p": [0.5, math.nan], "q": [0.5, 0.5]}, "p"),
        ({"p": [0.5, 0.5], "q": [0.5]}, "q"),
        ({"p": [0.9, 0.9], "q": [0.5, 0.5]}, "p"),
        ({"p": [0.5, 0.5], "q": [0.5, 0.5], "p_tail": -0.1}, "p_tail"),
    ],
)
def test_invalid_profiles_raise(kwargs, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter"):
        PrivacyProfile(**kwargs)


@pytest.mark.parametrize("epsilon", [math.nan, -0.1, math.inf])
def test_invalid_query_raises(epsilon):
    with pytest.raises(InvalidParameterError, match="'epsilon'"):
        randomized_response_profile(1.0).delta(epsilon)


@pytest.mark.parametrize("delta", [math.nan, -0.1, 1.0])
def test_invalid_delta_query_raises(delta):
    with pytest.raises(InvalidParameterError, match="'delta'"):
        randomized_response_profile(1.0).epsilon(delta)


@pytest.mark.parametrize("bad", ["", 0j, [0.5, "a"], [[0.5], [0.5, 0.5]], None, True, {"a": 1}])
def test_profile_refuses_non_real_probabilities_naming_them(bad):
    with pytest.raises(InvalidParameterError, match="'p'"):
        PrivacyProfile(bad, [0.5, 0.5])


@pytest.mark.parametrize("bad", ["", {}, None, 1j, [0.1, "x"], -1.0, float("nan"), float("inf")])
def test_delta_refuses_bad_epsilon_naming_it(bad):
    profile = PrivacyProfile([0.5, 0.5], [0.25, 0.75])
    for owner in (profile, WorstCaseProfile([profile])):
        with pytest.raises(InvalidParameterError, match="'epsilon'"):
            owner.delta(bad)


def test_worst_case_delta_keeps_the_shape_of_epsilon():
    profile = PrivacyProfile([0.5, 0.5], [0.25, 0.75])
    grid = np.array([[0.0, 0.1], [0.2, 0.3]])
    assert np.array_equal(WorstCaseProfile([profile]).delta(grid), profile.delta(grid))


def test_dominates_and_worst_case_validate_their_arguments():
    profile = PrivacyProfile([0.5, 0.5], [0.25, 0.75])
    with pytest.raises(InvalidParameterError, match="'other'"):
        profile.dominates(None)
    with pytest.raises(InvalidParameterError, match="'rtol'"):
        profile.dominates(profile, rtol=-1.0)
    for profiles in (None, 3, [], [profile, "profile"]):
        with pytest.raises(InvalidParameterError, match="'profiles'"):
            WorstCaseProfile(profiles)
