import math

import numpy as np
import pytest
from scipy import stats

from privsum import InvalidParameterError
from privsum.accounting import (
    PrivacyProfile,
    shuffle_amplification,
    shuffle_amplification_closed_form,
    shuffle_amplification_delta,
    shuffle_amplification_profile,
)
from privsum.accounting.amplification import _amplified_epsilon


def test_closed_form_golden_value():
    epsilon0, delta, n = 1.0, 1e-6, 100_000
    ratio = (math.e - 1) / (math.e + 1)
    expected = math.log(1 + ratio * (8 * math.sqrt(math.e * math.log(4 / delta)) / math.sqrt(n) + 8 * math.e / n))
    assert shuffle_amplification_closed_form(epsilon0, delta, n).epsilon == pytest.approx(expected, rel=1e-12)


def test_closed_form_refuses_outside_its_domain():
    with pytest.raises(InvalidParameterError, match="'epsilon0'"):
        shuffle_amplification_closed_form(3.0, 1e-6, 1000)


def shuffled_binary_rr_profile(epsilon0, n):
    """Exact view of shuffled binary RR when all other users hold 0."""
    flip = 1 / (1 + math.exp(epsilon0))
    others = stats.binom.pmf(np.arange(n + 1), n - 1, flip)
    p = (1 - flip) * others + flip * np.r_[0.0, others[:-1]]
    q = flip * others + (1 - flip) * np.r_[0.0, others[:-1]]
    return PrivacyProfile(p, q)


@pytest.mark.parametrize(("epsilon0", "n"), [(0.5, 1000), (1.0, 2000), (2.0, 5000)])
def test_numerical_bound_sits_between_binary_rr_and_closed_form(epsilon0, n):
    delta = 1e-6
    numerical = shuffle_amplification_profile(epsilon0, n).epsilon(delta)
    closed = shuffle_amplification_closed_form(epsilon0, delta, n).epsilon
    # Binary RR is one epsilon0-LDP randomizer, so its exact loss is a lower bound on the FMT bound.
    exact_rr = shuffled_binary_rr_profile(epsilon0, n).epsilon(delta)
    assert exact_rr <= numerical <= closed


def test_best_bound_never_exceeds_local_epsilon():
    assert shuffle_amplification(0.05, 1e-6, 10).epsilon <= 0.05


@pytest.mark.parametrize(("epsilon0", "n"), [(math.nan, 100), (-1.0, 100), (1.0, 1), (1.0, 2.5)])
def test_invalid_arguments(epsilon0, n):
    with pytest.raises(InvalidParameterError):
        shuffle_amplification_profile(epsilon0, n)


def _loop_profile(epsilon0, n_users, tail_mass=1e-14):
    """The former per-clone-count loop, kept as the reference of the vectorised profile."""
    clones = stats.binom(n_users - 1, math.exp(-epsilon0))
    c_low, c_high = (int(v) for v in clones.ppf([tail_mass / 4, 1 - tail_mass / 4]))
    keep = math.exp(epsilon0) / (math.exp(epsilon0) + 1.0)
    p_parts, q_parts = [], []
    for c in np.arange(max(c_low - 1, 0), c_high + 2):
        weight = clones.pmf(c)
        half = stats.binom(c, 0.5)
        a_low, a_high = (int(v) for v in half.ppf([tail_mass / 8, 1 - tail_mass / 8]))
        a = np.arange(max(a_low - 1, 0), min(a_high + 1, c) + 2)
        shifted, same = half.pmf(a - 1), half.pmf(a)
        p_parts.append(weight * (keep * shifted + (1 - keep) * same))
        q_parts.append(weight * (keep * same + (1 - keep) * shifted))
    return np.concatenate(p_parts), np.concatenate(q_parts)


@pytest.mark.parametrize(("epsilon0", "n"), [(1.0, 1000), (0.3, 3000), (3.0, 2000), (0.05, 50)])
def test_vectorised_profile_is_bit_identical_to_the_loop(epsilon0, n):
    p, q = _loop_profile(epsilon0, n)
    profile = shuffle_amplification_profile(epsilon0, n)
    np.testing.assert_array_equal(profile.p, p)
    np.testing.assert_array_equal(profile.q, q)


@pytest.mark.parametrize(("epsilon0", "n"), [(1.0, 1000), (1.0, 20_000), (0.3, 5000), (3.0, 20_000), (0.05, 100)])
def test_root_search_matches_the_profile(epsilon0, n):
    """Stated tolerance: epsilon within 1e-6 relative of the profile's exact inverse (the profile
    also truncates tails of ``A``, which moves its delta by ``<= 1e-14``), delta within 1e-12."""
    profile = shuffle_amplification_profile(epsilon0, n)
    for delta in (1e-3, 1e-6, 1e-9):
        expected = min(profile.epsilon(delta), epsilon0)
        assert _amplified_epsilon(epsilon0, n, delta) == pytest.approx(expected, rel=1e-6, abs=1e-12)
    for epsilon in (0.0, 0.01 * epsilon0, 0.1 * epsilon0, 0.5 * epsilon0, epsilon0):
        assert shuffle_amplification_delta(epsilon0, n, epsilon) == pytest.approx(float(profile.delta(epsilon)), abs=1e-12)


def test_root_search_result_is_feasible():
    for epsilon0, n, delta in [(1.0, 10_000, 1e-6), (2.0, 3000, 1e-8), (0.5, 500, 1e-4)]:
        epsilon = _amplified_epsilon(epsilon0, n, delta)
        assert shuffle_amplification_delta(epsilon0, n, epsilon) <= delta
        assert shuffle_amplification_delta(epsilon0, n, epsilon * (1 - 1e-6)) > delta


def test_large_crowds_are_amplified_without_a_loop_over_users():
    guarantee = shuffle_amplification(1.0, 1e-6, 1_000_000)
    assert guarantee.epsilon < shuffle_amplification_closed_form(1.0, 1e-6, 1_000_000).epsilon
    assert guarantee.epsilon < shuffle_amplification(1.0, 1e-6, 100_000).epsilon
