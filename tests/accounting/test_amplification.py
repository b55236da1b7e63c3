import math

import numpy as np
import pytest
from scipy import stats

from privsum import InvalidParameterError
from privsum.accounting import (
    PrivacyProfile,
    shuffle_amplification,
    shuffle_amplification_closed_form,
    shuffle_amplification_profile,
)


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
