"""The sign-pattern estimators of RACE regression: Walsh coefficients, the linear sign identity, the Gaussian sign model."""

import math

import numpy as np
import pytest
from scipy import stats

from privsum.lsq import SignedRandomProjection
from privsum.sketches import RACE
from privsum.sketches._signs import (
    SignModel,
    bucket_signs,
    fit_sign_model,
    linear_second_moment,
    shrink_slopes,
    sign_expectations,
    walsh_coefficients,
)
from privsum.sketches.applications import _PADDING_DIMENSION, _embed_data
from privsum.testing import assert_mean, assert_variance

ALPHA = 1e-6


def signs_of(points, family):
    """``(R, n, p)`` signs ``sign(h_rj . v_i)`` computed from the family's hyperplanes (bit set at ``>= 0``)."""
    return np.where(np.einsum("nd,rpd->rnp", points, family.directions) >= 0.0, 1.0, -1.0)


def test_bucket_signs_follow_the_hash_codes():
    """A point's bucket has sign +1 at bit j exactly where ``h_j . v >= 0`` (the family's own codes)."""
    family = SignedRandomProjection(dimension=3, n_repetitions=20, n_bits=5, seed=3)
    points = np.random.default_rng(0).normal(size=(50, 3))
    codes = family.hash_codes(points)  # (n, R)
    assert np.array_equal(bucket_signs(5)[codes], signs_of(points, family).transpose(1, 0, 2))


def test_walsh_coefficients_are_the_sums_of_signs():
    family = SignedRandomProjection(dimension=4, n_repetitions=30, n_bits=4, seed=1)
    points = np.random.default_rng(2).normal(size=(200, 4))
    totals, first, second = walsh_coefficients(RACE(family).update(points).counts, 4)
    signs = signs_of(points, family)
    first_bit, second_bit = np.triu_indices(4, 1)
    assert np.array_equal(totals, np.full(30, 200.0))
    assert np.array_equal(first, signs.sum(axis=1))
    assert np.array_equal(second, (signs[:, :, first_bit] * signs[:, :, second_bit]).sum(axis=1))


def test_released_walsh_coefficients_are_unbiased_with_the_stated_variance():
    """Over 4000 releases each coefficient's mean is the raw one and its noise variance ``2^p sigma^2`` (alpha = 1e-6)."""
    bits, repeats = 3, 4000
    family = SignedRandomProjection(dimension=3, n_repetitions=1, n_bits=bits, seed=4)
    sketch = RACE(family).update(np.random.default_rng(5).normal(size=(40, 3)))
    raw = np.concatenate([part.ravel() for part in walsh_coefficients(sketch.counts, bits)])
    rng = np.random.default_rng(6)
    releases = [sketch.release(0.5, noise_source="numpy", rng=rng) for _ in range(repeats)]
    noisy = np.array([np.concatenate([part.ravel() for part in walsh_coefficients(r.counts, bits)]) for r in releases])
    variance = 2**bits * releases[0].noise_variance()
    alpha = ALPHA / raw.size  # Bonferroni over the coefficients
    for index in range(raw.size):
        assert_mean(noisy[:, index], raw[index], variance=variance, alpha=alpha)
        assert_variance(noisy[:, index], variance, alpha=alpha)
    correlations = np.corrcoef(noisy.T)[np.triu_indices(raw.size, 1)]  # orthogonal sign patterns: uncorrelated
    assert np.all(np.abs(correlations) < stats.norm.isf(alpha / 2) / math.sqrt(repeats))


def test_linear_second_moment_is_unbiased_over_the_hyperplanes():
    """The sign identity: over 400 public seeds the mean estimate is ``sum_i v v^T`` (t-tests, alpha = 1e-6)."""
    rng = np.random.default_rng(7)
    rows = np.column_stack([rng.uniform(-1, 1, size=60), np.ones(60), rng.uniform(-1, 1, size=60)])
    embedded = _embed_data(rows, math.sqrt(3), np.random.default_rng(8), "test")
    expected = rows.T @ rows / 3  # (z / M)(z / M)^T summed
    estimates = []
    for seed in range(400):
        family = SignedRandomProjection(dimension=embedded.shape[1], n_repetitions=20, n_bits=4, seed=seed)
        pairs = walsh_coefficients(RACE(family).update(embedded).counts, 4)[2]
        estimates.append(linear_second_moment(pairs, family.directions[:, :, :3]))
    estimates = np.array(estimates)
    for a, b in zip(*np.triu_indices(3), strict=True):
        assert_mean(estimates[:, a, b], expected[a, b], alpha=ALPHA / 6)
    assert np.allclose(estimates.mean(axis=0), expected, atol=0.1 * np.abs(expected).max())


def test_sign_expectations_match_scipy_normal_probabilities():
    rng = np.random.default_rng(9)
    standard = rng.normal(size=(40, 2))
    correlation = rng.uniform(-0.95, 0.95, size=(40, 1))
    expected = sign_expectations(standard, correlation)
    for (a, b), rho, product in zip(standard, correlation[:, 0], expected.products[:, 0], strict=True):
        both = stats.multivariate_normal([0, 0], [[1, rho], [rho, 1]]).cdf([a, b])  # P[a_j >= 0, a_l >= 0]
        same = both + (1 - stats.norm.cdf(a) - stats.norm.cdf(b) + both)
        assert product == pytest.approx(2 * same - 1, abs=1e-6)
    assert np.allclose(expected.signs, 2 * stats.norm.cdf(standard) - 1)


@pytest.mark.parametrize("padding", [False, True])
def test_sign_model_derivatives_match_finite_differences(padding):
    rng = np.random.default_rng(10)
    hyperplanes = rng.normal(size=(6, 5, 4))
    gram = None
    if padding:
        pads = rng.normal(size=(6, 5, _PADDING_DIMENSION))
        gram = np.einsum("rjd,rld->rjl", pads, pads) / _PADDING_DIMENSION
    model = SignModel(hyperplanes / 2, constant=2, padding_gram=gram, data_bound=2.0)
    parameters = np.concatenate([[100.0], rng.normal(scale=0.3, size=model.n_parameters - 1)])
    _, _, sign_steps, product_steps = model.expectations_with_derivatives(parameters)
    for index in range(1, parameters.size):
        step = np.zeros(parameters.size)
        step[index] = 1e-6
        upper, lower = model.expectations(parameters + step), model.expectations(parameters - step)
        assert np.allclose((upper[1] - lower[1]) / 2e-6, sign_steps[index - 1], atol=1e-7)
        assert np.allclose((upper[2] - lower[2]) / 2e-6, product_steps[index - 1], atol=1e-7)


def test_sign_model_fitted_to_its_own_expectations_returns_its_parameters():
    """Noiseless coefficients from known parameters: the fit recovers the count, mean and covariance."""
    family = SignedRandomProjection(dimension=3, n_repetitions=40, n_bits=6, seed=2)
    model = SignModel(family.directions, constant=1, padding_gram=None, data_bound=math.sqrt(3))
    truth = np.array([500.0, 0.1, 0.4, 0.3, 0.15, 0.2])  # count, mean (x, y), Cholesky factor
    count, signs, products = model.expectations(truth)
    fit = fit_sign_model((np.full(40, count), count * signs, count * products), model, 6, 0.0)
    assert fit.count == pytest.approx(500.0, rel=1e-6)
    _, mean, covariance = model.unpack(truth)
    assert np.allclose(fit.second_moment, np.outer(mean, mean) + covariance, atol=1e-6)


def test_shrunk_second_moment_scales_the_slopes_and_keeps_the_means():
    rng = np.random.default_rng(12)
    rows = np.column_stack([rng.normal(size=(100, 2)), np.ones(100), rng.normal(size=100)])
    rows[:, 3] += rows[:, :2] @ np.array([0.5, -0.2])
    second, mean = rows.T @ rows / 100, rows.mean(axis=0)
    full = np.linalg.lstsq(rows[:, :3], rows[:, 3], rcond=None)[0]
    half = shrink_slopes(second, mean, np.arange(2), 0.5, centred=True)
    shrunk = np.linalg.solve(half[:3, :3], half[:3, 3])
    assert np.allclose(shrunk[:2], 0.5 * full[:2])
    assert shrunk[2] == pytest.approx(mean[3] - shrunk[:2] @ mean[:2])  # the line still passes through the means
    zero = shrink_slopes(second, mean, np.arange(2), 0.0, centred=True)
    assert np.allclose(np.linalg.solve(zero[:3, :3], zero[:3, 3]), [0.0, 0.0, mean[3]])
    assert np.allclose(np.linalg.solve(second[:3, :3], second[:3, 3]), full)  # factor 1: least squares itself
