"""The float64 fast path of the KDE rounding: float64 phase, float32 cosine of the reduced angle."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import privsum.kde._rounding as rounding
from privsum.bitsum import ExactBitSum
from privsum.kde import ShuffledKDE
from privsum.lsq import FastJLT, RandomFourierFeatures
from privsum.testing import assert_mean

# The float32 probabilities' share of the stated error; float32 uniforms add their 2^-24 grid.
PROBABILITY_ERROR = rounding.FLOAT64_PROBABILITY_ERROR - 2.0**-24


def _exact_probabilities(family, points, repetitions=None):
    return 0.5 * (1.0 + family.f(points, repetitions=repetitions).reshape(points.shape[0], -1) / family.bound)


@pytest.mark.parametrize("scale", [1.0, 30.0, 1000.0])  # angles up to about 10**4 turns
@pytest.mark.parametrize("repetitions", [None, slice(5, 70)])
def test_probabilities_are_within_the_stated_error(scale, repetitions):
    family = RandomFourierFeatures(dimension=768, n_repetitions=96, bandwidth=0.1, seed=2)
    points = np.random.default_rng(3).standard_normal((120, 768)) * (scale / math.sqrt(768))
    fast = rounding.fourier_probabilities(family, points, repetitions, rounding.Workspace())
    exact = _exact_probabilities(family, points, repetitions)
    assert fast.dtype == np.float32 and fast.shape == exact.shape
    assert np.max(np.abs(fast.astype(np.float64) - exact)) <= PROBABILITY_ERROR


def test_projected_family_probabilities_are_within_the_stated_error():
    projection = FastJLT(input_dimension=40, output_dimension=16, seed=1)
    family = RandomFourierFeatures(dimension=40, n_repetitions=30, seed=4, projection=projection)
    points = np.random.default_rng(5).standard_normal((50, 40))
    fast = rounding.fourier_probabilities(family, points, None, rounding.Workspace())
    assert np.max(np.abs(fast - _exact_probabilities(family, points))) <= PROBABILITY_ERROR


def test_fast_rounding_differs_from_exact_probabilities_only_where_the_uniform_falls_between():
    """With the same float32 uniforms ``U`` (on the 2^-24 grid), ``U < p_fast`` and ``U < p_exact``
    differ only if ``U`` lies between the two, which has probability at most ``|p_fast - p_exact| +
    2^-24`` per entry; the number of differing bits is then at most a Poisson count of that mean
    (one-sided, alpha = 1e-6)."""
    family = RandomFourierFeatures(dimension=64, n_repetitions=500, seed=6)
    points = np.random.default_rng(7).standard_normal((2000, 64)) / 8.0
    fast = rounding.round_to_bits(family, points, np.random.default_rng(8), None, rounding.Workspace())
    exact_probabilities = _exact_probabilities(family, points)
    uniforms = np.random.default_rng(8).random(exact_probabilities.shape, dtype=np.float32)
    exact = uniforms.astype(np.float64) < exact_probabilities
    probabilities = rounding.fourier_probabilities(family, points, None, rounding.Workspace())
    mean_differences = float((np.abs(probabilities - exact_probabilities) + 2.0**-24).sum())
    limit = stats.poisson.isf(1e-6, mean_differences)
    assert int(np.count_nonzero(fast != exact)) <= limit


def test_fast_rounding_is_unbiased_for_the_exact_features():
    """Each bit has mean (1 + f/R)/2 of the float64 features (alpha = 1e-6 over all entries)."""
    family = RandomFourierFeatures(dimension=3, n_repetitions=6, seed=9)
    points = np.random.default_rng(10).standard_normal((3, 3))
    expected = _exact_probabilities(family, points)
    rng = np.random.default_rng(11)
    workspace = rounding.Workspace()
    draws = np.array([rounding.round_to_bits(family, points, rng, None, workspace).copy() for _ in range(5000)])
    for user in range(3):
        for column in range(6):
            p = expected[user, column]
            assert_mean(draws[:, user, column], p, variance=p * (1 - p), alpha=1e-6 / 18)


def test_exact_precision_is_accepted_and_keeps_the_familys_values():
    family = RandomFourierFeatures(dimension=3, n_repetitions=4, seed=1)
    kde = ShuffledKDE(family=family, bitsum=ExactBitSum(n_users=5), precision="exact")
    bits = kde.round_to_bits(np.zeros((5, 3)), np.random.default_rng(0))
    assert bits.shape == (5, 4) and set(np.unique(bits)) <= {0, 1}


@pytest.mark.parametrize("repetitions", [None, slice(30, 470)])
def test_blocked_rounding_equals_rounding_the_whole_array_at_once(repetitions):
    """The rounding runs on cache-sized blocks of rows; with the same uniforms (drawn in row-major
    order: float32 for ``"float64"``, float64 for ``"exact"``) the bits are those of comparing the
    whole arrays at once."""
    family = RandomFourierFeatures(dimension=20, n_repetitions=500, seed=12)
    points = np.random.default_rng(13).standard_normal((300, 20))  # several blocks of rows
    assert points.shape[0] * 500 > 2 * rounding.CACHE_BLOCK_ENTRIES
    fast = rounding.round_to_bits(family, points, np.random.default_rng(14), repetitions, rounding.Workspace())
    probabilities = rounding.fourier_probabilities(family, points, repetitions, rounding.Workspace())
    uniforms = np.random.default_rng(14).random(probabilities.shape, dtype=np.float32)
    assert np.array_equal(uniforms * 2**24, np.floor(uniforms * 2**24))  # the 2^-24 grid: P(U < p) = ceil(p 2^24) / 2^24
    assert np.array_equal(fast, (uniforms < probabilities).astype(np.int8))
    workspace = rounding.Workspace()
    exact = rounding.round_to_bits(family, points, np.random.default_rng(14), repetitions, workspace, "exact")
    features = family.f(points, repetitions=repetitions).reshape(points.shape[0], -1)
    threshold = np.random.default_rng(14).random(features.shape) * (2 * family.bound) - family.bound
    assert np.array_equal(exact, (threshold < features).astype(np.int8))
