"""Tests of the BBGN20 multi-message sum. Statistical tests: false-alarm rate alpha = 1e-6, fixed seeds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privsum.exceptions import InvalidParameterError
from privsum.shuffle import MessageBatch
from privsum.shuffle.noise import discrete_laplace_pmf, discrete_laplace_variance
from privsum.sums import MAX_MODULUS, MultiMessageSum, divisible_laplace_epsilon, supported_security_bits
from privsum.sums.split_and_mix import share_distance_bound
from privsum.testing import ProtocolConformance, assert_matches_pmf, assert_mean, assert_same_distribution, assert_variance


def _protocol(**changes) -> MultiMessageSum:
    parameters = {"n_users": 50, "domain": 4, "noise_ratio": 0.6, "n_shares": 3, "modulus": 512, "share_security_bits": 20.0}
    return MultiMessageSum(**{**parameters, **changes})


class TestMultiMessageConformance(ProtocolConformance):
    calibration_targets = ({"epsilon": 1.0, "delta": 1e-6, "n_users": 1_000, "domain": 4},)

    def make_protocol(self) -> MultiMessageSum:
        return _protocol()

    def make_input(self, rng: np.random.Generator) -> np.ndarray:
        return rng.integers(0, 5, size=(50, 2))


@pytest.mark.parametrize("path", ["fast", "faithful"])
def test_noise_is_discrete_laplace(path):
    """Not the public code's ~zero noise: the error has the DLap law, mean 0 and variance 2a/(1-a)^2."""
    protocol = _protocol()
    rng = np.random.default_rng(40)
    x = rng.integers(0, 5, size=50)
    errors = np.array([protocol.run(x, rng=rng, path=path)[0] - x.sum() for _ in range(4_000)]).astype(int)
    assert_mean(errors, 0.0, variance=protocol.variance())
    assert_variance(errors, discrete_laplace_variance(0.6))
    support = np.arange(-80, 81)
    assert_matches_pmf(errors, support, discrete_laplace_pmf(support, 0.6))


def test_fast_and_faithful_agree_and_shares_look_uniform():
    protocol = _protocol(modulus=256)
    x = np.arange(50) % 5
    rng = np.random.default_rng(41)
    fast = np.array([protocol.sample_view(x, rng=rng).counts[0, :8].sum() for _ in range(2_000)])
    faithful = np.array(
        [protocol.view(protocol.shuffle(protocol.randomize(x, rng=rng), rng=rng)).counts[0, :8].sum() for _ in range(2_000)]
    )
    assert_same_distribution(fast, faithful)
    assert_mean(fast, 150 * 8 / 256, variance=150 * (8 / 256) * (1 - 8 / 256))


def test_guarantee_states_its_parts():
    protocol = MultiMessageSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1_000, domain=8)
    assert math.isclose(protocol.epsilon, 1.0)
    assert protocol.guarantee.delta <= 1e-6 * (1 + 1e-9)
    assert protocol.modulus >= 1_000 * 8
    assert protocol.expected_messages_per_user == protocol.n_shares
    assert protocol.bits_per_message() == math.ceil(math.log2(protocol.modulus))


def test_validation_names_the_parameter():
    protocol = _protocol()
    with pytest.raises(InvalidParameterError, match="'x'"):
        protocol.run(np.full(50, 5))
    with pytest.raises(InvalidParameterError, match="'modulus'"):
        _protocol(modulus=100)
    with pytest.raises(InvalidParameterError, match="'modulus'"):
        _protocol(modulus=MAX_MODULUS * 2)
    with pytest.raises(InvalidParameterError, match="'n_shares'"):
        _protocol(n_shares=1)
    with pytest.raises(InvalidParameterError, match="'view'"):
        protocol.analyze(MessageBatch(np.zeros(1, dtype=int), np.array([600]), n_instances=1))
    with pytest.raises(InvalidParameterError, match="'n_users'"):
        MultiMessageSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=10**6, domain=1024)
    with pytest.raises(InvalidParameterError, match="'calibration'"):
        MultiMessageSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=100, calibration="tight")


# ----------------------------------------------------------------- dropouts
def test_fewer_participants_epsilon_is_the_noise_present():
    """m of n users leave NB(m/n, a) - NB(m/n, a); for Delta = 1 the worst ratio is P(0)/P(1), summed directly here."""
    from scipy import stats

    from privsum import PrivacyLeakWarning

    protocol = MultiMessageSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1_000, domain=1)
    share = 0.3
    nb = stats.nbinom(share, 1 - protocol.noise_ratio)
    j = np.arange(0, 4_000)
    at_zero, at_one = float((nb.pmf(j) ** 2).sum()), float((nb.pmf(j + 1) * nb.pmf(j)).sum())
    fewer = protocol.event_for_participants(300)
    assert fewer.guarantee.epsilon == pytest.approx(math.log(at_zero / at_one), rel=1e-9)
    assert fewer.guarantee.epsilon > protocol.guarantee.epsilon and fewer.guarantee.delta > protocol.guarantee.delta
    assert protocol.event_for_participants(1_000) == protocol.event
    bbgn = supported_security_bits(protocol.n_shares, protocol.modulus, 300)
    chi_square = -math.log2(share_distance_bound(300, protocol.n_shares, protocol.modulus))
    backed = min(protocol.share_security_bits, max(bbgn, chi_square))
    expected_delta = (1 + math.exp(fewer.guarantee.epsilon)) * 2.0**-backed
    assert fewer.guarantee.delta == pytest.approx(min(expected_delta, 1 - 1e-16), rel=1e-9)
    with pytest.raises(InvalidParameterError, match="'n_participants'"):
        protocol.event_for_participants(1_001)
    with pytest.warns(PrivacyLeakWarning):
        protocol.run(np.ones(300, dtype=int), rng=0)


def test_fewer_participants_noise_follows_the_divisible_law():
    from scipy import stats

    protocol = MultiMessageSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=100, domain=1)
    x = np.zeros(50, dtype=int)
    with pytest.warns(Warning):
        noise = np.array([protocol.run(x, rng=seed)[0] for seed in range(3_000)]).astype(int)
    nb = stats.nbinom(0.5, 1 - protocol.noise_ratio)
    support = np.arange(-40, 41)
    j = np.arange(0, 400)
    pmf = np.array([(nb.pmf(j + abs(k)) * nb.pmf(j)).sum() for k in support])
    assert_matches_pmf(noise, support, pmf)


def test_larger_epsilon_for_larger_sensitivity_and_fewer_users():
    from privsum.sums.multi_message import divisible_laplace_epsilon

    ratio = math.exp(-0.25)
    values = [divisible_laplace_epsilon(share, ratio, 4) for share in (1.0, 0.8, 0.4, 0.1)]
    assert values[0] == pytest.approx(1.0) and values == sorted(values)
    assert divisible_laplace_epsilon(0.5, ratio, 1) < divisible_laplace_epsilon(0.5, ratio, 2)


@given(share=st.floats(0.05, 0.95), log_ratio=st.floats(0.05, 3.0), sensitivity=st.integers(1, 6))
@settings(max_examples=40, deadline=None)
def test_divisible_laplace_epsilon_is_the_worst_window_of_the_noise(share, log_ratio, sensitivity):
    """The closed form P(0)/P(sensitivity) equals the worst ratio over every window, by brute force with scipy."""
    from scipy import stats

    ratio = math.exp(-log_ratio)
    nb = stats.nbinom(share, 1 - ratio)
    support = np.arange(0, int(nb.isf(1e-25)) + 60)
    pmf = nb.pmf(support)
    window = 40
    difference = np.array([np.dot(pmf[k:], pmf[: pmf.size - k]) for k in range(window + sensitivity + 1)])  # P(D = k)
    both_sides = np.concatenate([difference[:0:-1], difference])  # k = -(W+s)..(W+s)
    logs = np.log(both_sides)
    worst = max(float(np.max(np.abs(logs[c:] - logs[: logs.size - c]))) for c in range(1, sensitivity + 1))
    assert divisible_laplace_epsilon(share, ratio, sensitivity) == pytest.approx(worst, rel=1e-9)
