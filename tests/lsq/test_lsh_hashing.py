"""L2-LSH hashing in place: the codes equal the documented formula on every internal path (exact)."""

import numpy as np
import pytest

from privsum.exceptions import InvalidParameterError
from privsum.lsq import L2LSH, SignedRandomProjection
from privsum.lsq.lsh import fold_codes


def formula_codes(family, points, rows=slice(None)):
    """``floor((w_i^T x + b_i) / r)`` with a true division, the projection from the same BLAS product.

    ``rows`` selects repetitions before the product, as ``repetitions=`` does: BLAS may round a product
    over a subset of rows differently in the last bit, which moves codes near 2^57 by one.
    """
    projections = (family.directions[rows] @ points.T).T
    values = (projections + family.offsets[rows]) / family.bucket_width
    floored = np.floor(values)
    assert np.all(np.abs(floored) < 2.0**62)
    return floored.astype(np.int64)


@pytest.mark.parametrize(
    ("width", "n_buckets", "scale"),
    [
        (4.0, 1024, 1.0),  # power-of-two width: the product by 1/r
        (0.37, 2, 3.0),  # any other width: the division
        (2.0**-3, 2**30, 50.0),
        (1e-3, 2, 1e13),  # codes near 2^57: beyond the float-to-int shortcut (2^50)
        (3.0, 64, 1e-300),  # tiny inputs: codes 0 or -1
    ],
)
def test_lattice_and_hash_codes_equal_the_formula(width, n_buckets, scale):
    family = L2LSH(dimension=5, n_repetitions=37, bucket_width=width, n_buckets=n_buckets, seed=11)
    points = np.random.default_rng(3).standard_normal((2_001, 5)) * scale
    expected = formula_codes(family, points)
    assert np.array_equal(family.lattice_codes(points), expected)
    folded = fold_codes(expected, family.multipliers, family.increments, family.bucket_bits)
    assert np.array_equal(family.hash_codes(points), folded)
    subset = [3, 0, 36]
    expected_subset = formula_codes(family, points, rows=subset)
    folded_subset = fold_codes(
        expected_subset, family.multipliers[subset], family.increments[subset], family.bucket_bits
    )
    assert np.array_equal(family.hash_codes(points, repetitions=subset), folded_subset)


def test_a_loose_norm_bound_falls_back_to_scanning_the_codes():
    family = L2LSH(dimension=2, n_repetitions=1, bucket_width=1.0, n_buckets=1024, seed=5)
    w = family.directions[0]
    points = 1e17 * np.array([[-w[1], w[0]], [w[1], -w[0]]])  # orthogonal to w: small codes, huge norm
    expected = formula_codes(family, points)
    assert np.abs(expected).max() < 2**50
    assert np.array_equal(family.lattice_codes(points), expected)


def test_codes_do_not_depend_on_memory_layout_or_dtype():
    family = L2LSH(dimension=4, n_repetitions=9, bucket_width=1.5, n_buckets=32, seed=2)
    points = np.random.default_rng(4).standard_normal((300, 4))
    reference = family.hash_codes(points)
    assert np.array_equal(family.hash_codes(np.asfortranarray(points)), reference)
    assert np.array_equal(
        family.hash_codes(points.astype(np.float32).astype(np.float64)), family.hash_codes(points.astype(np.float32))
    )
    assert family.hash_codes(points[:0]).shape == (0, 9)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("order", ["C", "F"])
def test_non_finite_points_raise_on_the_fast_validation_path(bad, order):
    points = np.ones((50, 3), order=order)
    points[17, 2] = bad
    for family in (
        L2LSH(dimension=3, n_repetitions=4, seed=0),
        SignedRandomProjection(dimension=3, n_repetitions=4, seed=0),
    ):
        with pytest.raises(InvalidParameterError, match="'points'"):
            family.hash_codes(points)


def test_huge_finite_points_are_accepted_when_their_squares_overflow():
    family = SignedRandomProjection(dimension=2, n_repetitions=3, seed=0)
    points = np.array([[1e200, -1e200], [3.0, 1e-300]])  # sum of squares is inf: the general check decides
    assert family.check_points(points) is not None
    assert family.hash_codes(points).shape == (2, 3)
    with pytest.raises(InvalidParameterError, match="'points'"):
        L2LSH(dimension=3, n_repetitions=2).hash_codes(np.ones((4, 2)))  # wrong dimension
