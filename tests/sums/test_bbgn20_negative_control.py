"""BBGN20's total noise has the discrete Laplace variance; the public code's parameterisation fails that test (issue 7).

Each user adds ``NB(1/n, a) - NB(1/n, a)`` in the ratio parameterisation (``a = e^{-epsilon/Delta}``),
so the n users' noise sums to ``DLap(a)``, of variance ``2a/(1-a)^2``. numpy's
``negative_binomial(r, p)`` takes the *success probability* ``p = 1 - a``; the public code passed
``a`` itself, which gives variance ``2(1-a)/a^2`` in total: almost no noise when ``a`` is near 1.
Statistical tests use privsum.testing (false-alarm rate alpha = 1e-6) and fixed seeds.
"""

import dataclasses
import math

import numpy as np
import pytest

from privsum.shuffle.noise import discrete_laplace_pmf, discrete_laplace_variance
from privsum.sums import MultiMessageSum
from privsum.testing import assert_matches_pmf, assert_mean, assert_variance

N_USERS, DOMAIN, EPSILON, N_INSTANCES = 100, 10, 1.0, 20_000
# Three shares keep the run small; the share count does not enter the noise law tested here.
PROTOCOL = dataclasses.replace(
    MultiMessageSum.from_privacy(epsilon=EPSILON, delta=1e-6, n_users=N_USERS, domain=DOMAIN), n_shares=3
)
RATIO = math.exp(-EPSILON / DOMAIN)
INPUTS = np.random.default_rng(0).integers(0, DOMAIN + 1, size=(N_USERS, N_INSTANCES))


@pytest.fixture(scope="module")
def total_noise():
    """One run over many independent instances: each instance's estimate minus its exact sum."""
    estimates = PROTOCOL.run(INPUTS, rng=1)
    return np.rint(estimates - INPUTS.sum(axis=0)).astype(np.int64)


def public_code_total_noise(rng: np.random.Generator) -> np.ndarray:
    """The users' noise with the ratio passed where numpy expects the success probability, summed per instance."""
    first = rng.negative_binomial(1.0 / N_USERS, RATIO, size=(N_USERS, N_INSTANCES))
    second = rng.negative_binomial(1.0 / N_USERS, RATIO, size=(N_USERS, N_INSTANCES))
    return (first - second).sum(axis=0)


def test_the_protocol_uses_the_ratio_for_its_epsilon():
    assert PROTOCOL.noise_ratio == pytest.approx(RATIO)
    assert PROTOCOL.variance() == pytest.approx(discrete_laplace_variance(RATIO))


def test_total_noise_has_the_discrete_laplace_mean_variance_and_law(total_noise):
    target = discrete_laplace_variance(RATIO)  # about 199 at a = e^{-0.1}
    assert_mean(total_noise, 0.0, variance=target)
    assert_variance(total_noise, target)
    support = np.arange(-400, 401)
    assert_matches_pmf(total_noise, support, discrete_laplace_pmf(support, RATIO))


def test_negative_control_the_public_codes_parameterisation_fails():
    wrong = public_code_total_noise(np.random.default_rng(2))
    assert np.var(wrong) < 0.01 * discrete_laplace_variance(RATIO)  # near zero: 2(1-a)/a^2 is about 0.23
    with pytest.raises(AssertionError):
        assert_variance(wrong, discrete_laplace_variance(RATIO))
    assert_variance(wrong, 2 * (1 - RATIO) / RATIO**2)  # what that code actually adds
