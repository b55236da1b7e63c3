"""KDE over vector sums: exact centroid scores, feature norm bounds, the joint sum over classes, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privsum.exceptions import InvalidParameterError
from privsum.kde.joint import JointClassKDE, skellam_fast_sum
from privsum.kde.vector import VectorSumKDE, feature_norm_bound
from privsum.lsq import IdentityFeatures, RandomFourierFeatures, RandomSigns
from privsum.sums import CentralGaussianVectorSum, ExactVectorSum, SkellamVectorSum
from privsum.testing.stats import assert_mean


def unit_vectors(n: int, d: int, seed: int = 0) -> np.ndarray:
    points = np.random.default_rng(seed).normal(size=(n, d))
    return points / np.linalg.norm(points, axis=1, keepdims=True)


def test_identity_features_give_the_exact_centroid_score() -> None:
    x, queries = unit_vectors(200, 5), unit_vectors(7, 5, seed=1)
    kde = VectorSumKDE.from_privacy(
        family=IdentityFeatures(dimension=5), protocol=ExactVectorSum, epsilon=math.inf, delta=0.0, n_users=200
    )
    np.testing.assert_allclose(kde.run(x)(queries), queries @ x.mean(axis=0), rtol=1e-12)


@pytest.mark.parametrize(
    "family",
    [
        RandomFourierFeatures(dimension=4, n_repetitions=16, seed=0),
        RandomSigns(dimension=4, n_repetitions=8, seed=0),
        IdentityFeatures(dimension=4),
        IdentityFeatures(dimension=4, n_repetitions=3),
    ],
)
def test_features_stay_within_the_stated_norm_bound(family) -> None:
    x = unit_vectors(500, 4)
    kde = VectorSumKDE(
        family=family,
        vector_sum=ExactVectorSum(
            n_users=500, dimension=family.n_repetitions * family.n_coordinates, norm_bound=feature_norm_bound(family)
        ),
    )
    norms = np.linalg.norm(kde.features(x), axis=1)
    assert norms.max() <= feature_norm_bound(family)
    if isinstance(family, RandomFourierFeatures):
        assert feature_norm_bound(family) == pytest.approx(math.sqrt(2 * 16), rel=2e-6)


def test_private_release_is_unbiased_with_the_protocol_guarantee() -> None:
    x = unit_vectors(100, 3)
    kde = VectorSumKDE.from_privacy(
        family=IdentityFeatures(dimension=3), protocol=CentralGaussianVectorSum, epsilon=1.0, delta=1e-6, n_users=100
    )
    rng = np.random.default_rng(2)
    coefficients = np.stack([kde.run(x, rng=rng).coefficients.ravel() for _ in range(3000)])
    assert_mean(coefficients[:, 0] - x.sum(axis=0)[0], 0.0, variance=kde.vector_sum.variance())
    released = kde.run(x, rng=0)
    assert released.guarantee == kde.guarantee and kde.guarantee.epsilon <= 1.0
    assert kde.vector_sum.norm_bound == feature_norm_bound(IdentityFeatures(dimension=3))


def test_joint_sum_recovers_every_class_and_its_size_exactly_without_noise() -> None:
    family = IdentityFeatures(dimension=3)
    x, labels = unit_vectors(90, 3), np.repeat([0, 1, 2], 30)
    joint = JointClassKDE.from_privacy(
        family=family, n_classes=3, protocol=ExactVectorSum, epsilon=math.inf, delta=0.0, n_users=90
    )
    densities, sizes = joint.run(x, labels)
    assert sizes.tolist() == [30, 30, 30]
    queries = unit_vectors(4, 3, seed=3)
    for c in range(3):
        np.testing.assert_allclose(densities[c](queries), queries @ x[labels == c].mean(axis=0), rtol=1e-12)


def test_joint_sum_norm_bound_covers_features_and_count() -> None:
    family = RandomFourierFeatures(dimension=2, n_repetitions=8, seed=0)
    joint = JointClassKDE.from_privacy(
        family=family, n_classes=4, protocol=CentralGaussianVectorSum, epsilon=1.0, delta=1e-6, n_users=50
    )
    bound = feature_norm_bound(family)
    assert joint.count_weight == bound / 2
    assert joint.vector_sum.norm_bound == pytest.approx(math.hypot(bound, bound / 2))
    assert joint.vector_sum.dimension == 4 * (8 + 1)
    assert joint.guarantee.epsilon <= 1.0


def test_joint_sum_is_calibrated_for_the_exact_shift_of_a_point_and_label_change() -> None:
    """Replace-one of (point, label): max(2F, sqrt(2) sqrt(F^2 + w^2)), not twice the row norm."""
    family = RandomFourierFeatures(dimension=2, n_repetitions=8, seed=0)
    common = {"family": family, "n_classes": 4, "epsilon": 1.0, "delta": 1e-6, "n_users": 60}
    bound = feature_norm_bound(family)
    central = JointClassKDE.from_privacy(**common, protocol=CentralGaussianVectorSum)
    exact = max(2 * bound, math.sqrt(2) * math.hypot(bound, bound / 2))
    assert central.vector_sum.sensitivity == pytest.approx(exact, rel=1e-9)
    generic = CentralGaussianVectorSum.from_privacy(
        epsilon=1.0, delta=1e-6, n_users=60, dimension=4 * 9, norm_bound=central.vector_sum.norm_bound
    )
    assert central.vector_sum.sigma < generic.sigma / 1.1  # about 10.6% less noise at w = F/2
    skellam = JointClassKDE.from_privacy(**common, protocol=SkellamVectorSum)
    assert skellam.vector_sum.label_rows == 4 and skellam.vector_sum.count_weight == bound / 2
    x, labels = unit_vectors(60, 2), np.arange(60) % 4
    densities, sizes = skellam.run(x, labels, rng=0)  # the joint's rows pass the labelled-row check
    assert len(densities) == 4 and sizes.shape == (4,)


def test_vector_kde_refuses_mismatched_protocols() -> None:
    family = IdentityFeatures(dimension=3)
    with pytest.raises(InvalidParameterError, match="'vector_sum' parameter of VectorSumKDE.*dimension"):
        VectorSumKDE(family=family, vector_sum=ExactVectorSum(n_users=5, dimension=4))
    with pytest.raises(InvalidParameterError, match="'vector_sum' parameter of VectorSumKDE.*norm_bound"):
        VectorSumKDE(family=family, vector_sum=ExactVectorSum(n_users=5, dimension=3, norm_bound=0.5))
    with pytest.raises(InvalidParameterError, match="'vector_sum' parameter"):
        VectorSumKDE(family=family, vector_sum="gaussian")
    with pytest.raises(InvalidParameterError, match="'protocol' parameter"):
        VectorSumKDE.from_privacy(family=family, protocol=object, epsilon=1.0, delta=1e-6, n_users=3)


def test_points_outside_the_family_domain_are_refused() -> None:
    kde = VectorSumKDE.from_privacy(
        family=IdentityFeatures(dimension=2), protocol=CentralGaussianVectorSum, epsilon=1.0, delta=1e-6, n_users=3
    )
    with pytest.raises(InvalidParameterError, match="'x' parameter.*norm"):
        kde.run(np.array([[3.0, 0.0]]), rng=0)
    with pytest.raises(InvalidParameterError, match="'x' parameter"):
        kde.run(np.zeros((0, 2)), rng=0)


@pytest.mark.parametrize("labels", [np.array([0, 1, 3]), np.array([0, 1]), np.array([0.0, 1.0, 1.0]), np.array([-1, 0, 1])])
def test_joint_sum_refuses_bad_labels(labels: np.ndarray) -> None:
    joint = JointClassKDE.from_privacy(
        family=IdentityFeatures(dimension=2), n_classes=3, protocol=ExactVectorSum, epsilon=math.inf, delta=0.0, n_users=3
    )
    with pytest.raises(InvalidParameterError, match="'labels' parameter of JointClassKDE"):
        joint.run(unit_vectors(3, 2), labels)


def test_joint_skellam_sum_streams_the_fast_path_exactly() -> None:
    family = IdentityFeatures(dimension=3)
    x, labels = unit_vectors(60, 3), np.repeat([0, 1], 30)
    joint = JointClassKDE.from_privacy(family=family, n_classes=2, protocol=SkellamVectorSum, epsilon=2.0, delta=1e-6, n_users=60)
    rows = np.concatenate(list(joint._rows(x, labels)))
    one_chunk = skellam_fast_sum(joint.vector_sum, iter([rows]), np.random.default_rng(4))
    np.testing.assert_array_equal(one_chunk, joint.vector_sum.run(rows, rng=np.random.default_rng(4)))
    densities, sizes = joint.run(x, labels, rng=0)
    assert joint.guarantee.epsilon <= 2.0 and len(densities) == 2 and sizes.min() >= 1


def test_joint_skellam_sum_is_unbiased_over_chunks() -> None:
    family = IdentityFeatures(dimension=2)
    x, labels = unit_vectors(40, 2), np.repeat([0, 1], 20)
    joint = JointClassKDE.from_privacy(family=family, n_classes=2, protocol=SkellamVectorSum, epsilon=2.0, delta=1e-6, n_users=40)
    rows = np.concatenate(list(joint._rows(x, labels)))
    rng = np.random.default_rng(5)
    releases = np.stack([skellam_fast_sum(joint.vector_sum, iter([rows[:15], rows[15:]]), rng) for _ in range(2000)])
    for coordinate in range(rows.shape[1]):
        assert_mean(releases[:, coordinate], rows[:, coordinate].sum())
