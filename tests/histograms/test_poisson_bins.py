"""Poisson-noise bit sums: conformance, exact law of the view, unbiasedness, intervals, histogram choice."""

import numpy as np
import pytest
from scipy import stats

from privsum.histograms import PoissonNoiseBitSum, ShuffledHistogram
from privsum.testing import ProtocolConformance, assert_mean, assert_same_distribution, assert_variance

ALPHA = 1e-6
N = 200


class TestPoissonConformance(ProtocolConformance):
    calibration_targets = ({"epsilon": 1.0, "delta": 1e-6, "n_users": 50},)

    def make_protocol(self):
        return PoissonNoiseBitSum(n_users=N, noise_mean=30.0, delta=1e-6)

    def make_input(self, rng):
        return rng.integers(0, 2, size=(N, 3))


def test_fast_and_faithful_views_agree_and_are_unbiased():
    protocol = PoissonNoiseBitSum(n_users=N, noise_mean=30.0, delta=1e-6)
    bits = np.random.default_rng(0).integers(0, 2, size=(N, 1))
    fast = np.array([protocol.run(bits, rng=seed)[0] for seed in range(2000)])
    faithful = np.array([protocol.run(bits, rng=10**5 + seed, path="faithful")[0] for seed in range(2000)])
    assert_same_distribution(fast, faithful, alpha=ALPHA)
    assert_mean(fast, bits.sum(), variance=30.0, alpha=ALPHA)
    assert_variance(fast, 30.0, alpha=ALPHA)


def test_intervals_are_exact():
    protocol = PoissonNoiseBitSum(n_users=N, noise_mean=30.0, delta=1e-6)
    half, method = protocol._error_half_width(0.9)
    inside = stats.poisson.cdf(30 + half, 30.0) - stats.poisson.cdf(30 - half - 1, 30.0)
    narrower = stats.poisson.cdf(30 + half - 1, 30.0) - stats.poisson.cdf(30 - half, 30.0)
    assert method == "exact" and inside >= 0.9 > narrower


def test_fewer_participants_weaken_the_guarantee():
    protocol = PoissonNoiseBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=100)
    assert protocol.event_for_participants(50).guarantee.epsilon > protocol.guarantee.epsilon


@pytest.mark.slow
def test_many_categories_under_a_budget_pick_poisson_bins():
    histogram = ShuffledHistogram.from_privacy(
        epsilon=1.0, delta=1e-6, n_users=10_000, categories=range(1000), max_messages_per_user=10
    )
    assert histogram.chosen == "poisson"
    assert histogram.expected_messages_per_user <= 10 and histogram.guarantee.epsilon <= 1.0


@pytest.mark.parametrize("mean", [0.003, 0.3, 4.0, 250.0])
@pytest.mark.parametrize("tail", [1e-3, 1e-9, 1e-40])
def test_message_cap_is_the_poisson_tail_quantile(mean, tail):
    from privsum.histograms.events import poisson_upper_quantile

    cap = poisson_upper_quantile(mean, tail)
    assert stats.poisson.logsf(cap, mean) <= np.log(tail) < stats.poisson.logsf(cap - 1, mean)
    protocol = PoissonNoiseBitSum(n_users=10, noise_mean=10 * mean, delta=1e-6)
    assert protocol.per_sender_message_cap(tail) == 1 + cap
