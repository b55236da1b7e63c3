"""Means: unbiasedness and variance of the bounded mean, coverage of its interval, the clipped mean, bad input."""

import numpy as np
import pytest
from scipy import stats

from privsum.exceptions import InvalidParameterError
from privsum.means import ClippedMean, ShuffledMean, ShuffledMeanVariance
from privsum.testing.stats import assert_mean

ALPHA = 1e-6


@pytest.fixture(scope="module")
def mean():
    return ShuffledMean.from_privacy(epsilon=1.0, delta=1e-6, n_users=2000, low=-5.0, high=15.0)


def test_levels_keep_rounding_below_one_percent_of_the_noise(mean):
    noise = float(mean.sum_protocol.variance())
    assert 0.25 * mean.n_users <= 0.01 * noise * 1.0001
    assert mean.levels & (mean.levels - 1) == 0
    assert mean.guarantee.epsilon <= 1.0 and mean.guarantee.delta <= 1e-6


def test_mean_is_unbiased_within_its_stated_variance(mean):
    values = np.random.default_rng(0).uniform(-5.0, 15.0, 2000)
    errors = np.array([mean.run(values, rng=seed) - values.mean() for seed in range(150)])
    assert_mean(errors, 0.0, variance=mean.variance(), alpha=ALPHA)
    assert errors.var() <= mean.variance() * 1.5  # a loose upper check (Laplace tails)


def test_interval_covers(mean):
    values = np.full(2000, 3.3)
    misses = sum(
        not (low <= 3.3 <= high) for low, high in (mean.confidence_interval(mean.run(values, rng=s), 0.8) for s in range(100))
    )
    assert misses <= stats.binom.isf(ALPHA, 100, 0.2)  # coverage at least 0.8 (a conservative interval)


def test_non_power_of_two_levels_are_accepted():
    odd = ShuffledMean.from_privacy(epsilon=1.0, delta=1e-6, n_users=100, low=0.0, high=1.0, levels=37)
    assert odd.levels == 37
    assert 0.0 - 1 < odd.run(np.full(100, 0.5), rng=0) < 1.0 + 1


@pytest.mark.parametrize("values", [[1.0, float("nan")], [1.0, 20.0], [[1.0]], ["a"], []])
def test_bad_values_are_refused(mean, values):
    with pytest.raises(InvalidParameterError, match="values"):
        mean.run(values, rng=0)


def test_bad_ranges():
    with pytest.raises(InvalidParameterError, match="high"):
        ShuffledMean.from_privacy(epsilon=1.0, delta=1e-6, n_users=100, low=1.0, high=1.0)
    with pytest.raises(InvalidParameterError, match="upper"):
        ClippedMean.from_privacy(epsilon=1.0, delta=1e-6, n_users=100, low=0.0, upper=float("nan"))
    with pytest.raises(InvalidParameterError, match="levels"):
        ShuffledMean.from_privacy(epsilon=1.0, delta=1e-6, n_users=100, low=0.0, high=1.0, levels=0)


def test_clipped_mean_error_scales_with_the_data_not_the_bound():
    clipped = ClippedMean.from_privacy(epsilon=1.0, delta=1e-6, n_users=5000, low=0.0, upper=3e5, resolution=1.0)
    assert clipped.upper >= 3e5 and clipped.clipped_sum.domain == 2**19  # 3e5 rounded up to a power of two
    values = np.random.default_rng(1).uniform(0.0, 50.0, 5000)
    errors = np.array([clipped.run(values, rng=seed) - values.mean() for seed in range(20)])
    # a full-range Laplace mean has RMSE about sqrt(2) 3e5 / 5000 = 85; clipping near 64 gives well under 1,
    # except when the threshold overshoots (probability at most failure_probability = 0.1 per run)
    assert np.median(np.abs(errors)) < 1.0
    with pytest.raises(InvalidParameterError, match="values"):
        clipped.run(np.array([1.0, 4e6]), rng=0)


def test_mean_and_variance_are_unbiased():
    both = ShuffledMeanVariance.from_privacy(epsilon=1.0, delta=1e-6, n_users=2000, low=0.0, high=10.0)
    assert both.guarantee.epsilon <= 1.0 and both.guarantee.delta <= 1e-6
    values = np.random.default_rng(4).uniform(2.0, 9.0, 2000)
    released = np.array([both.run(values, rng=seed) for seed in range(150)])
    assert_mean(released[:, 0], values.mean(), alpha=ALPHA)
    # the variance's bias correction uses the worst-case rounding: at most (10 / levels)^2 / (4 n) too low
    assert_mean(released[:, 1] + (10.0 / both.levels) ** 2 / (8 * 2000), values.var(), alpha=ALPHA)
