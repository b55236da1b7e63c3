"""Fast Walsh–Hadamard transform, randomized rotations and the fast JL transform."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.linalg import hadamard

from privsum.exceptions import InvalidParameterError
from privsum.lsq import FastJLT, RandomizedHadamard, fast_walsh_hadamard, next_power_of_two
from privsum.testing import assert_mean


@pytest.mark.parametrize("dimension", [1, 2, 3, 5, 8, 13, 64, 100])
def test_matches_the_dense_sylvester_matrix_with_padding(dimension):
    rows = np.random.default_rng(dimension).normal(size=(7, dimension))
    order = next_power_of_two(dimension)
    padded = np.zeros((7, order))
    padded[:, :dimension] = rows
    assert np.allclose(fast_walsh_hadamard(rows), padded @ hadamard(order).T)
    assert np.allclose(fast_walsh_hadamard(rows, normalized=True), padded @ hadamard(order).T / np.sqrt(order))


def test_vectorised_over_leading_axes():
    values = np.random.default_rng(0).normal(size=(2, 3, 8))
    assert np.allclose(fast_walsh_hadamard(values)[1, 2], fast_walsh_hadamard(values[1, 2]))


finite = st.floats(-1e3, 1e3, allow_nan=False)


@given(arrays(float, st.tuples(st.integers(1, 4), st.integers(1, 20)), elements=finite), st.integers(0, 2**32))
def test_rotation_is_orthogonal_and_invertible(points, seed):
    rotation = RandomizedHadamard(dimension=points.shape[1], seed=seed)
    rotated = rotation.rotate(points)
    assert np.allclose(np.linalg.norm(rotated, axis=1), np.linalg.norm(points, axis=1), rtol=1e-9, atol=1e-9)
    assert np.allclose(rotated @ rotated.T, points @ points.T, rtol=1e-9, atol=1e-6)
    assert np.allclose(rotation.unrotate(rotated), points, atol=1e-9)


def test_fast_jlt_preserves_squared_norm_in_expectation():
    x = np.random.default_rng(1).normal(size=(1, 50))
    squared = [np.sum(FastJLT(input_dimension=50, output_dimension=8, seed=s).transform(x) ** 2) for s in range(3000)]
    assert_mean(squared, float(np.sum(x**2)))


def test_validation():
    with pytest.raises(InvalidParameterError, match="'values'"):
        fast_walsh_hadamard([1.0, np.nan])
    with pytest.raises(InvalidParameterError, match="'values'"):
        fast_walsh_hadamard(np.zeros((2, 0)))
    with pytest.raises(InvalidParameterError, match="'output_dimension'"):
        FastJLT(input_dimension=5, output_dimension=9)
    with pytest.raises(InvalidParameterError, match="'points'"):
        RandomizedHadamard(dimension=3).rotate(np.zeros((1, 4)))
    with pytest.raises(InvalidParameterError, match="'value'"):
        next_power_of_two(0)
