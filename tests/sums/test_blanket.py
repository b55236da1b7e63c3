"""Tests of the privacy-blanket real sum (BBGN19). Statistical tests: false-alarm rate alpha = 1e-6, fixed seeds."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from privsum.accounting import PrivacyProfile, ProfileEvent, WorstCaseProfile
from privsum.exceptions import InvalidParameterError
from privsum.sums import BlanketRealSum, analytic_blanket_epsilon, analytic_blanket_probability, blanket_profile
from privsum.testing import ProtocolConformance, assert_mean, assert_same_distribution, assert_variance


class TestBlanketConformance(ProtocolConformance):
    calibration_targets = ({"epsilon": 1.0, "delta": 1e-6, "n_users": 2_000},)

    def make_protocol(self) -> BlanketRealSum:
        return BlanketRealSum(n_users=200, precision=4, blanket_probability=0.3, delta=1e-3)

    def make_input(self, rng: np.random.Generator) -> np.ndarray:
        return rng.random((200, 3))


def _exact_histogram_distribution(user_distributions: list[np.ndarray]) -> dict[tuple[int, ...], float]:
    """Distribution of the histogram of independent categorical messages (brute force)."""
    states = {tuple([0] * user_distributions[0].size): 1.0}
    for distribution in user_distributions:
        following: dict[tuple[int, ...], float] = {}
        for state, mass in states.items():
            for value, p in enumerate(distribution):
                if p > 0:
                    key = tuple(c + (i == value) for i, c in enumerate(state))
                    following[key] = following.get(key, 0.0) + mass * p
        states = following
    return states


@pytest.mark.parametrize("gamma", [0.2, 0.6])
def test_profile_dominates_the_exact_histogram_view_for_small_n(gamma):
    n_values, n_users = 3, 5

    def message_distribution(value: int) -> np.ndarray:
        distribution = np.full(n_values, gamma / n_values)
        distribution[value] += 1 - gamma
        return distribution

    exact = []
    for others in itertools.product(range(n_values), repeat=n_users - 1):
        if list(others) != sorted(others):
            continue  # the view is symmetric in the other users
        rest = [message_distribution(v) for v in others]
        first = _exact_histogram_distribution([*rest, message_distribution(0)])
        second = _exact_histogram_distribution([*rest, message_distribution(1)])
        support = sorted(set(first) | set(second))
        exact.append(PrivacyProfile([first.get(h, 0.0) for h in support], [second.get(h, 0.0) for h in support]))
    bound = blanket_profile(gamma, n_values, n_users)
    assert bound.dominates(WorstCaseProfile(exact))
    # and it is not loose by much at this size: the worst exact pair is within a factor 2 in delta at eps=0.5
    assert bound.delta(0.5) <= 2 * WorstCaseProfile(exact).delta(0.5) + 1e-12


def test_tight_calibration_beats_analytic_and_is_verifiable():
    tight = BlanketRealSum.from_privacy(epsilon=0.8, delta=1e-6, n_users=5_000, precision=5)
    analytic = BlanketRealSum.from_privacy(epsilon=0.8, delta=1e-6, n_users=5_000, precision=5, calibration="analytic")
    assert tight.blanket_probability < analytic.blanket_probability
    assert isinstance(tight.event, ProfileEvent)
    assert tight.profile.delta(0.8) <= 1e-6
    assert tight.guarantee.epsilon <= 0.8
    # the calibrated gamma is (almost) the least: 1% less noise misses the target
    assert blanket_profile(tight.blanket_probability * 0.99, 6, 5_000).delta(0.8) > 1e-6


@given(
    epsilon=st.floats(0.05, 5.9),
    delta=st.floats(1e-12, 0.4),
    size=st.integers(1, 500),
    n_users=st.integers(2, 10**7),
    samples=st.integers(1, 5),
)
def test_analytic_inverse_never_overshoots(epsilon, delta, size, n_users, samples):
    gamma = analytic_blanket_probability(epsilon, delta, size=size, n_users=n_users, samples=samples)
    if gamma <= 1:
        assert analytic_blanket_epsilon(gamma, delta, size=size, n_users=n_users, samples=samples) <= epsilon * (1 + 1e-9)


def test_unbiased_with_the_stated_variance():
    protocol = BlanketRealSum(n_users=500, precision=6, blanket_probability=0.2, delta=1e-6)
    rng = np.random.default_rng(10)
    x = rng.random(500)
    estimates = np.array([protocol.run(x, rng=rng)[0] for _ in range(3_000)])
    variance = float(protocol.variance(x)[0])
    assert_mean(estimates, x.sum(), variance=variance)
    assert_variance(estimates, variance)
    assert variance <= protocol.variance()


def test_fast_and_faithful_paths_agree_in_distribution():
    protocol = BlanketRealSum(n_users=100, precision=3, blanket_probability=0.4, delta=1e-6)
    x = np.linspace(0, 1, 100)
    rng = np.random.default_rng(11)
    values = np.arange(4)
    fast = [protocol.sample_view(x, rng=rng).counts[0] @ values for _ in range(2_000)]
    faithful = [protocol.view(protocol.shuffle(protocol.randomize(x, rng=rng), rng=rng)).counts[0] @ values for _ in range(2_000)]
    assert_same_distribution(np.array(fast), np.array(faithful))


def test_default_precision_grows_with_n():
    small = BlanketRealSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1_000, calibration="analytic")
    large = BlanketRealSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1_000_000, calibration="analytic")
    assert large.precision > small.precision


def test_validation_names_the_parameter():
    protocol = BlanketRealSum(n_users=10, precision=2, blanket_probability=0.5, delta=1e-6)
    with pytest.raises(InvalidParameterError, match="'x'"):
        protocol.run(np.full(10, 1.5))
    with pytest.raises(InvalidParameterError, match="'x'"):
        protocol.run(np.full((10, 2, 2), 0.5))
    with pytest.raises(InvalidParameterError, match="'n_participants'"):
        protocol.event_for_participants(0)
    with pytest.raises(InvalidParameterError, match="'precision'"):
        BlanketRealSum(n_users=10, precision=0, blanket_probability=0.5, delta=1e-6)
    with pytest.raises(InvalidParameterError, match="'blanket_probability'"):
        BlanketRealSum(n_users=10, precision=2, blanket_probability=math.nan, delta=1e-6)
    with pytest.raises(InvalidParameterError, match="'delta'"):
        BlanketRealSum(n_users=10, precision=2, blanket_probability=0.5, delta=0.0)
    with pytest.raises(InvalidParameterError, match="'calibration'"):
        BlanketRealSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=100, calibration="exact")
    with pytest.raises(InvalidParameterError, match="'epsilon'"):
        BlanketRealSum.from_privacy(epsilon=-1.0, delta=1e-6, n_users=100)
    with pytest.raises(InvalidParameterError, match="'epsilon'"):
        BlanketRealSum.from_privacy(epsilon=7.0, delta=1e-6, n_users=100, calibration="analytic")


def test_clip_is_explicit():
    clipped = BlanketRealSum(n_users=10, precision=2, blanket_probability=0.5, delta=1e-6, clip=True)
    messages = clipped.randomize(np.full(10, 2.0), rng=0)
    assert messages.values.max() <= 2


# ----------------------------------------------------------------- dropouts
def test_fewer_participants_weaken_the_guarantee_and_warn():
    from privsum import PrivacyLeakWarning
    from privsum.sums import blanket_profile

    protocol = BlanketRealSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=5_000)
    fewer = protocol.event_for_participants(1_000)
    independent = blanket_profile(protocol.blanket_probability, protocol.precision + 1, 1_000).epsilon(1e-6)
    assert fewer.guarantee.epsilon == pytest.approx(independent) and independent > protocol.guarantee.epsilon
    assert protocol.event_for_participants(5_000) == protocol.event
    assert protocol.event_for_participants(9_000) == protocol.event  # more never hurts
    with pytest.warns(PrivacyLeakWarning, match="event_for_participants"):
        protocol.run(np.full(1_000, 0.5), rng=0)


def test_analytic_accounting_for_fewer_participants_uses_the_closed_form():
    protocol = BlanketRealSum.from_privacy(epsilon=0.5, delta=1e-6, n_users=100_001, calibration="analytic", precision=10)
    fewer = protocol.event_for_participants(50_001)
    expected = analytic_blanket_epsilon(protocol.blanket_probability, 1e-6, size=10, n_users=50_001)
    assert fewer.guarantee.epsilon == pytest.approx(expected) and expected > 0.5


def test_more_participants_keep_the_estimate_unbiased():
    protocol = BlanketRealSum(n_users=200, precision=4, blanket_probability=0.3, delta=1e-6)
    x = np.random.default_rng(3).random(500)
    estimates = np.array([protocol.run(x, rng=seed)[0] for seed in range(400)])
    assert_mean(estimates, x.sum(), variance=float(protocol.variance(x)[0]))
