"""LSH families: collision-probability formulas against Monte Carlo (alpha = 1e-6, fixed seeds)."""

import math

import numpy as np
import pytest

from privsum.exceptions import InvalidParameterError
from privsum.lsq import L2LSH, SignedRandomProjection, family_from_spec, l2_lsh_collision_probability, srp_collision_probability
from privsum.testing import assert_mean

REPETITIONS = 40_000


def collisions(codes):
    return (codes[0] == codes[1]).astype(float)


@pytest.mark.parametrize("distance", [0.3, 1.0, 2.5, 6.0])
def test_l2_lsh_lattice_collision_probability_matches_monte_carlo(distance):
    family = L2LSH(dimension=4, n_repetitions=REPETITIONS, bucket_width=1.5, n_buckets=2, seed=int(distance * 10))
    direction = np.array([1.0, -2.0, 0.5, 1.0]) / np.linalg.norm([1.0, -2.0, 0.5, 1.0])
    points = np.vstack([np.full(4, 0.2), np.full(4, 0.2) + distance * direction])
    p = float(l2_lsh_collision_probability(distance, 1.5))
    assert float(family.kernel(points[:1], points[1:])[0, 0]) == pytest.approx(p)
    assert_mean(collisions(family.lattice_codes(points)), p, variance=p * (1 - p))


@pytest.mark.parametrize("distance", [0.5, 2.0, 8.0])
def test_folded_l2_lsh_collides_with_probability_k_plus_one_minus_k_over_q(distance):
    family = L2LSH(dimension=2, n_repetitions=REPETITIONS, bucket_width=1.0, n_buckets=4, seed=7)
    points = np.array([[0.0, 0.0], [distance, 0.0]])
    k = float(l2_lsh_collision_probability(distance, 1.0))
    expected = k + (1 - k) / 4
    assert float(family.expected_product(points[:1], points[1:])[0, 0]) == pytest.approx(expected)
    assert abs(expected - k) <= family.bias
    assert_mean(collisions(family.hash_codes(points)), expected, variance=expected * (1 - expected))
    # f^T g is the collision indicator, so the LSQ product has the same mean.
    product = (family.f(points[:1]) * family.g(points[1:])).sum(axis=2)[0]
    assert np.array_equal(product, collisions(family.hash_codes(points)))


def test_distinct_lattice_codes_fold_uniformly():
    family = L2LSH(dimension=1, n_repetitions=REPETITIONS, n_buckets=8, seed=3)
    codes = np.array([[5], [-1_000_003]], dtype=np.int64).repeat(REPETITIONS, axis=1)
    from privsum.lsq.lsh import fold_codes

    folded = fold_codes(codes, family.multipliers, family.increments, family.bucket_bits)
    assert_mean(collisions(folded), 1 / 8, variance=(1 / 8) * (7 / 8))


@pytest.mark.parametrize(("angle", "bits"), [(0.2, 1), (1.0, 1), (math.pi / 2, 3), (2.5, 2), (0.7, 4)])
def test_srp_collision_probability_matches_monte_carlo(angle, bits):
    family = SignedRandomProjection(dimension=3, n_repetitions=REPETITIONS, n_bits=bits, seed=bits)
    points = np.array([[2.0, 0.0, 0.0], [0.5 * math.cos(angle), 0.5 * math.sin(angle), 0.0]])
    p = (1 - angle / math.pi) ** bits
    assert float(family.kernel(points[:1], points[1:])[0, 0]) == pytest.approx(p)
    assert float(srp_collision_probability(angle, bits)) == pytest.approx(p)
    assert_mean(collisions(family.hash_codes(points)), p, variance=p * (1 - p))


def test_l2_collision_formula_limits():
    assert float(l2_lsh_collision_probability(0.0, 1.0)) == 1.0
    values = l2_lsh_collision_probability(np.linspace(0.01, 50, 200), 1.0)
    assert np.all(np.diff(values) < 0) and values[-1] > 0  # monotone decreasing, positive


def test_spec_round_trip_and_fingerprint():
    family = L2LSH(dimension=3, n_repetitions=4, bucket_width=0.7, n_buckets=16, seed=2)
    rebuilt = family_from_spec(family.spec())
    assert rebuilt == family and rebuilt.fingerprint() == family.fingerprint()
    assert L2LSH(dimension=3, n_repetitions=4, bucket_width=0.7, n_buckets=16, seed=3).fingerprint() != family.fingerprint()


@pytest.mark.parametrize(
    ("build", "name"),
    [
        (lambda: L2LSH(dimension=2, n_repetitions=3, n_buckets=12), "n_buckets"),
        (lambda: L2LSH(dimension=2, n_repetitions=3, n_buckets=1), "n_buckets"),
        (lambda: L2LSH(dimension=2, n_repetitions=3, bucket_width=0.0), "bucket_width"),
        (lambda: SignedRandomProjection(dimension=2, n_repetitions=3, n_bits=0), "n_bits"),
        (lambda: SignedRandomProjection(dimension=2, n_repetitions=3, n_bits=21), "n_bits"),
        (lambda: SignedRandomProjection(dimension=2, n_repetitions=3).hash_codes(np.zeros((1, 2))), "points"),
        (lambda: L2LSH(dimension=2, n_repetitions=3).hash_codes(np.array([[np.nan, 0.0]])), "points"),
        (lambda: L2LSH(dimension=2, n_repetitions=3, bucket_width=1e-300).hash_codes(np.ones((1, 2))), "points"),
        (lambda: l2_lsh_collision_probability(-1.0, 1.0), "distance"),
        (lambda: srp_collision_probability(4.0, 1), "angle"),
        (lambda: family_from_spec({"family": "Nope"}), "spec"),
    ],
)
def test_validation_names_the_parameter(build, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}'"):
        build()
