"""Central and non-private baselines. Randomised tests: fixed seeds, alpha = 1e-6."""

import math

import numpy as np
import pytest

from privsum import InvalidParameterError
from privsum.bitsum import CentralGaussianBitSum, CentralLaplaceBitSum, ExactBitSum
from privsum.bitsum.central import _sample_discrete_gaussian
from privsum.shuffle.noise import discrete_laplace_pmf
from privsum.testing import ProtocolConformance, assert_matches_pmf, assert_mean, assert_same_distribution, assert_variance

N = 100


class TestLaplaceConformance(ProtocolConformance):
    calibration_targets = ({"epsilon": 1.0, "n_users": 10}, {"epsilon": 0.2, "n_users": 10, "calibration": "analytic"})

    def make_protocol(self):
        return CentralLaplaceBitSum(n_users=N, scale=2.0, noise_source="numpy")

    def make_input(self, rng):
        return rng.integers(0, 2, size=(N, 4))


class TestGaussianConformance(ProtocolConformance):
    calibration_targets = (
        {"epsilon": 1.0, "delta": 1e-6, "n_users": 10},
        {"epsilon": 0.5, "delta": 1e-6, "n_users": 10, "calibration": "analytic"},
    )

    def make_protocol(self):
        return CentralGaussianBitSum(n_users=N, scale=3.0, delta=1e-6, noise_source="numpy")

    def make_input(self, rng):
        return rng.integers(0, 2, size=(N, 4))


class TestExactConformance(ProtocolConformance):
    def make_protocol(self):
        return ExactBitSum(n_users=N)

    def make_input(self, rng):
        return rng.integers(0, 2, size=(N, 4))


def _dgauss_pmf(support, sigma):
    weights = np.exp(-(support.astype(float) ** 2) / (2 * sigma**2))
    full = np.arange(-60 * int(sigma + 1), 60 * int(sigma + 1) + 1)
    return weights / np.exp(-(full.astype(float) ** 2) / (2 * sigma**2)).sum()


@pytest.mark.parametrize("source", ["numpy", "opendp"])
def test_laplace_noise_is_discrete_laplace(source):
    protocol = CentralLaplaceBitSum(n_users=5, scale=1.5, noise_source=source)
    bits = np.ones((5, 20_000), dtype=int)
    noise = protocol.run(bits, rng=1 if source == "numpy" else None).astype(int) - 5  # OpenDP cannot be seeded
    support = np.arange(-60, 61)
    assert_matches_pmf(noise, support, discrete_laplace_pmf(support, protocol.noise_ratio))
    assert_variance(noise, protocol.variance())


@pytest.mark.parametrize("source", ["numpy", "opendp"])
def test_gaussian_noise_is_discrete_gaussian(source):
    protocol = CentralGaussianBitSum(n_users=5, scale=2.5, delta=1e-6, noise_source=source)
    noise = protocol.run(np.zeros((5, 20_000), dtype=int), rng=2 if source == "numpy" else None).astype(int)
    support = np.arange(-40, 41)
    assert_matches_pmf(noise, support, _dgauss_pmf(support, 2.5))
    assert_mean(noise, 0.0, variance=protocol.variance())
    assert_variance(noise, protocol.variance())


def test_fast_and_faithful_paths_agree_in_distribution():
    protocol = CentralGaussianBitSum(n_users=50, scale=2.0, delta=1e-6, noise_source="numpy")
    bits = np.random.default_rng(3).integers(0, 2, size=(50, 1)).repeat(3000, axis=1)
    fast = protocol.run(bits, rng=4)
    faithful = protocol.run(bits, rng=5, path="faithful")
    assert_same_distribution(fast.astype(int), faithful.astype(int))


def test_guarantees_come_from_opendp_maps():
    laplace = CentralLaplaceBitSum.from_privacy(epsilon=0.7, n_users=10, noise_source="numpy")
    assert abs(laplace.guarantee.epsilon - 0.7) < 1e-12 and laplace.guarantee.delta == 0.0
    tight = CentralGaussianBitSum.from_privacy(epsilon=0.5, delta=1e-6, n_users=10)
    analytic = CentralGaussianBitSum.from_privacy(epsilon=0.5, delta=1e-6, n_users=10, calibration="analytic")
    assert tight.scale < analytic.scale
    assert abs(analytic.scale - math.sqrt(2 * math.log(1.25 / 1e-6)) / 0.5) < 1e-12
    assert tight.guarantee.epsilon <= 0.5 and analytic.guarantee.epsilon <= 0.5
    assert laplace.event_for_participants(1) == laplace.event


def test_exact_sum_is_exact_and_not_private():
    bits = np.random.default_rng(6).integers(0, 2, size=(30, 7))
    np.testing.assert_array_equal(ExactBitSum(n_users=30).run(bits, rng=0), bits.sum(axis=0))
    assert ExactBitSum(n_users=30).guarantee.epsilon == math.inf


def test_validation_names_the_parameter():
    with pytest.raises(InvalidParameterError, match="'epsilon'"):
        CentralGaussianBitSum.from_privacy(epsilon=1.5, delta=1e-6, n_users=10, calibration="analytic")
    with pytest.raises(InvalidParameterError, match="'epsilon'"):
        ExactBitSum.from_privacy(epsilon=1.0, n_users=10)
    with pytest.raises(InvalidParameterError, match="'noise_source'"):
        CentralLaplaceBitSum(n_users=10, scale=1.0, noise_source="urandom")
    with pytest.raises(InvalidParameterError, match="'scale'"):
        CentralLaplaceBitSum(n_users=10, scale=0.0)
    with pytest.raises(InvalidParameterError, match="'sigma'"):
        _sample_discrete_gaussian(np.random.default_rng(0), -1.0, (3,))


def test_central_gaussian_headline_is_met_by_its_exact_pld():
    from privsum.bitsum import CentralGaussianBitSum

    for epsilon in (0.1, 1.0):
        CentralGaussianBitSum.from_privacy(epsilon=epsilon, delta=1e-6, n_users=100, noise_source="numpy").event.check_headline()
