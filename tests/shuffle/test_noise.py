import numpy as np
import pytest

from privsum import InvalidParameterError
from privsum.shuffle.noise import (
    discrete_laplace_pmf,
    discrete_laplace_variance,
    negative_binomial_variance,
    sample_discrete_laplace,
    sample_negative_binomial,
)
from privsum.testing import assert_matches_pmf, assert_mean, assert_variance


@pytest.mark.parametrize(("shape", "ratio"), [(1.0, 0.3), (0.01, 0.9), (5.0, 0.05)])
def test_negative_binomial_uses_the_ratio_parameterisation(shape, ratio):
    draws = sample_negative_binomial(np.random.default_rng(0), shape, ratio, 200_000)
    variance = negative_binomial_variance(shape, ratio)
    assert_mean(draws, shape * ratio / (1 - ratio), variance=variance)
    assert_variance(draws, variance)


def test_sum_of_per_user_shares_is_discrete_laplace():
    generator = np.random.default_rng(1)
    n_users, ratio, trials = 50, 0.6, 40_000
    plus = sample_negative_binomial(generator, 1.0 / n_users, ratio, (trials, n_users)).sum(axis=1)
    minus = sample_negative_binomial(generator, 1.0 / n_users, ratio, (trials, n_users)).sum(axis=1)
    support = np.arange(-60, 61)
    assert_matches_pmf(np.clip(plus - minus, -60, 60), support, discrete_laplace_pmf(support, ratio))
    assert_variance(plus - minus, discrete_laplace_variance(ratio))


def test_discrete_laplace_sampler():
    draws = sample_discrete_laplace(np.random.default_rng(2), 0.4, 100_000)
    support = np.arange(-30, 31)
    assert_matches_pmf(np.clip(draws, -30, 30), support, discrete_laplace_pmf(support, 0.4))


@pytest.mark.parametrize(("shape", "ratio", "name"), [(0.0, 0.5, "shape"), (1.0, 1.0, "ratio"), (1.0, np.nan, "ratio")])
def test_invalid_noise_parameters(shape, ratio, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}'"):
        sample_negative_binomial(np.random.default_rng(0), shape, ratio, 3)
