"""LSQ families: unbiasedness of f(x)^T g(y), bounds, shapes, validation (alpha = 1e-6, fixed seeds)."""

import math

import numpy as np
import pytest

from privsum.exceptions import InvalidParameterError
from privsum.lsq import L2LSH, FastJLT, IdentityFeatures, RandomFourierFeatures, RandomSigns, SignedRandomProjection
from privsum.testing import assert_mean

PAIRS = [  # (x, y) in R^3
    (np.array([0.0, 0.0, 0.0]), np.array([0.0, 0.0, 0.0])),
    (np.array([0.1, -0.2, 0.3]), np.array([0.4, 0.1, -0.1])),
    (np.array([0.6, 0.0, 0.0]), np.array([-0.6, 0.2, 0.1])),
]


def products(family, x, y):
    """The per-repetition products f_i(x)^T g_i(y), i.i.d. over i."""
    return (family.f(x[None, :]) * family.g(y[None, :])).sum(axis=2)[0]


@pytest.mark.parametrize("bandwidth", [0.5, 1.0, 3.0])
def test_rff_is_unbiased_for_the_gaussian_kernel(bandwidth):
    family = RandomFourierFeatures(dimension=3, n_repetitions=20_000, bandwidth=bandwidth, seed=11)
    for x, y in PAIRS:
        k = math.exp(-np.sum((x - y) ** 2) / bandwidth**2)
        assert float(family.kernel(x, y)[0, 0]) == pytest.approx(k, rel=1e-12)
        assert_mean(products(family, x, y), k, variance=1 - k**2 + k**4 / 2)


def test_rff_bandwidth_one_is_the_papers_kernel_and_bound_holds():
    family = RandomFourierFeatures(dimension=3, n_repetitions=50, seed=0)
    x, y = PAIRS[2]
    assert float(family.kernel(x, y)[0, 0]) == pytest.approx(math.exp(-np.sum((x - y) ** 2)))
    features = family.f(np.random.default_rng(0).normal(size=(100, 3)) * 10)
    assert features.shape == (100, 50, 1)
    assert np.abs(features).max() <= family.bound
    assert (family.n_coordinates, family.sparsity, family.bias) == (1, 1, 0.0)
    assert family.bound == pytest.approx(math.sqrt(2))


def test_rff_with_projection_is_unbiased_for_the_projected_kernel():
    projection = FastJLT(input_dimension=3, output_dimension=2, seed=5)
    family = RandomFourierFeatures(dimension=3, n_repetitions=20_000, seed=2, projection=projection)
    x, y = PAIRS[1]
    k = float(family.kernel(x, y)[0, 0])
    px, py = projection.transform(x), projection.transform(y)
    assert k == pytest.approx(math.exp(-np.sum((px - py) ** 2)))
    assert_mean(products(family, x, y), k, variance=1 - k**2 + k**4 / 2)


def test_random_signs_are_unbiased_for_the_inner_product():
    family = RandomSigns(dimension=3, n_repetitions=20_000, seed=3)
    assert np.all(products(family, *PAIRS[0]) == 0.0)  # zero variance: check exactly
    for x, y in PAIRS[1:]:
        xy = float(x @ y)
        variance = (x @ x) * (y @ y) + xy**2 - 2 * np.sum(x**2 * y**2)
        assert_mean(products(family, x, y), xy, variance=variance)
    unit = np.array([1.0, 1.0, 1.0]) / math.sqrt(3)
    assert np.abs(family.f(unit)).max() <= family.bound + 1e-12
    assert (family.n_coordinates, family.sparsity, family.bias) == (1, 1, 0.0)


def test_identity_family_is_exact():
    family = IdentityFeatures(dimension=3)
    x, y = PAIRS[1]
    assert float(products(family, x, y)[0]) == pytest.approx(float(x @ y))
    assert (family.n_coordinates, family.bound, family.sparsity) == (3, 1.0, 3)


@pytest.mark.parametrize(
    "family",
    [
        RandomFourierFeatures(dimension=3, n_repetitions=7, seed=1),
        RandomSigns(dimension=3, n_repetitions=7, seed=1),
        L2LSH(dimension=3, n_repetitions=7, n_buckets=8, seed=1),
        SignedRandomProjection(dimension=3, n_repetitions=7, n_bits=3, seed=1),
    ],
    ids=lambda f: type(f).__name__,
)
def test_shapes_chunks_seed_and_sparsity(family):
    points = np.random.default_rng(1).normal(size=(5, 3)) * 0.3
    full = family.f(points)
    assert full.shape == (5, 7, family.n_coordinates)
    chunked = np.concatenate([family.f(points, repetitions=slice(0, 3)), family.f(points, repetitions=slice(3, 7))], axis=1)
    assert np.array_equal(full, chunked)
    assert np.array_equal(family.f(points, repetitions=np.array([6, 0])), full[:, [6, 0]])
    assert np.array_equal(family.g(points[0]), full[:1])  # a single point
    assert np.all((full != 0).sum(axis=2) <= family.sparsity)
    assert np.abs(full).max() <= family.bound + 1e-12


def test_public_randomness_is_fixed_by_the_seed():
    points = np.random.default_rng(0).normal(size=(4, 3))
    first = RandomFourierFeatures(dimension=3, n_repetitions=5, seed=9).f(points)
    assert np.array_equal(first, RandomFourierFeatures(dimension=3, n_repetitions=5, seed=9).f(points))
    assert not np.array_equal(first, RandomFourierFeatures(dimension=3, n_repetitions=5, seed=10).f(points))


@pytest.mark.parametrize(
    ("build", "name"),
    [
        (lambda: RandomFourierFeatures(dimension=3, n_repetitions=5, bandwidth=0.0), "bandwidth"),
        (lambda: RandomFourierFeatures(dimension=3, n_repetitions=5, bandwidth=-1.0), "bandwidth"),
        (lambda: RandomFourierFeatures(dimension=3, n_repetitions=5, bandwidth=float("nan")), "bandwidth"),
        (lambda: RandomFourierFeatures(dimension=0, n_repetitions=5), "dimension"),
        (lambda: RandomFourierFeatures(dimension=3, n_repetitions=0), "n_repetitions"),
        (lambda: RandomFourierFeatures(dimension=3, n_repetitions=5, seed=-1), "seed"),
        (
            lambda: RandomFourierFeatures(
                dimension=3, n_repetitions=5, projection=FastJLT(input_dimension=4, output_dimension=2)
            ),
            "projection",
        ),
        (lambda: RandomSigns(dimension=3, n_repetitions=5, norm_bound=0.0), "norm_bound"),
        (lambda: IdentityFeatures(dimension=2.5), "dimension"),
    ],
)
def test_invalid_parameters_name_the_parameter(build, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}'"):
        build()


def test_invalid_points_name_the_parameter():
    rff = RandomFourierFeatures(dimension=3, n_repetitions=5)
    with pytest.raises(InvalidParameterError, match="'points'"):
        rff.f(np.array([[0.0, np.nan, 1.0]]))
    with pytest.raises(InvalidParameterError, match="'points'"):
        rff.f(np.zeros((2, 4)))
    with pytest.raises(InvalidParameterError, match="'points'"):
        rff.f(np.zeros((2, 3, 1)))
    with pytest.raises(InvalidParameterError, match="'points'"):
        rff.f([["a", "b", "c"]])
    with pytest.raises(InvalidParameterError, match="'repetitions'"):
        rff.f(np.zeros((1, 3)), repetitions=np.array([5]))
    with pytest.raises(InvalidParameterError, match="'y'"):
        rff.kernel(np.zeros((1, 3)), np.full((1, 3), np.inf))
    with pytest.raises(InvalidParameterError, match="'points'"):  # outside the declared domain: never clipped
        RandomSigns(dimension=3, n_repetitions=2).f(np.array([[1.0, 1.0, 0.0]]))
