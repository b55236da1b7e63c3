"""Tests of the high-dimensional clipped sum and sparse vector aggregation.

Statistical tests: false-alarm rate alpha = 1e-6, fixed seeds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from privsum.accounting import PLDPair, PrivacyGuarantee
from privsum.accounting.budget import per_mechanism_budget
from privsum.clipping import (
    CentralClippedVectorSum,
    CentralSparseAggregation,
    ClippedVectorSum,
    SparseVectorAggregation,
)
from privsum.exceptions import InvalidParameterError
from privsum.shuffle import MessageBatch
from privsum.shuffle.sparse import SparseMessageHistogram
from privsum.testing import ProtocolConformance, assert_same_distribution


def _check_sparse_shapes(protocol, x) -> None:
    assert isinstance(protocol.randomize(x, rng=5), MessageBatch)
    assert isinstance(protocol.sample_view(x, rng=5), SparseMessageHistogram)
    assert np.shape(protocol.run(x, rng=5)) == np.shape(protocol.run(x, rng=5, path="faithful"))


# --------------------------------------------------------------------------- composition
@pytest.mark.parametrize("count", [1, 8, 256])
def test_per_mechanism_budget_never_overshoots(count):
    advanced = per_mechanism_budget(1.0, 1e-6, count, "advanced")
    tight = per_mechanism_budget(1.0, 1e-6, count, "tight")
    for _, _, headline in (advanced, tight):
        assert headline.epsilon <= 1.0 + 1e-12 and headline.delta <= 1e-6 * (1 + 1e-12)
    epsilon0, delta0, headline = tight
    composed = PLDPair.from_guarantee(PrivacyGuarantee(epsilon0, delta0)).self_compose(count)
    assert composed.delta(headline.epsilon) <= 1e-6 * (1 + 1e-9)  # the tight headline is verifiable
    assert tight[0] >= advanced[0] * (1 - 1e-9)


# --------------------------------------------------------------------------- high-dimensional
def _ball(rng: np.random.Generator, n: int, d: int, radius: float = 1.0) -> np.ndarray:
    x = rng.normal(size=(n, d))
    return x * radius * rng.uniform(0, 1, (n, 1)) / np.linalg.norm(x, axis=1, keepdims=True)


def _vector(**changes) -> ClippedVectorSum:
    parameters = {"epsilon": 8.0, "delta": 1e-6, "n_users": 40, "dimension": 3, "radius": 1.0, "levels": 16}
    return ClippedVectorSum.from_privacy(**{**parameters, **changes})


class TestClippedVectorConformance(ProtocolConformance):
    calibration_targets = (
        {"epsilon": 2.0, "delta": 1e-6, "n_users": 500, "dimension": 20, "radius": 1.0},
        {"epsilon": 2.0, "delta": 1e-6, "n_users": 500, "dimension": 20, "radius": 1.0, "calibration": "tight"},
    )

    def make_protocol(self) -> ClippedVectorSum:
        return _vector()

    def make_input(self, rng: np.random.Generator) -> np.ndarray:
        return _ball(rng, 40, 3)

    def test_shapes_and_types(self) -> None:
        _check_sparse_shapes(self.make_protocol(), self.make_input(np.random.default_rng(3)))


def test_vector_privacy_composes_one_clipped_sum_per_coordinate():
    protocol = ClippedVectorSum.from_privacy(epsilon=2.0, delta=1e-6, n_users=1_000, dimension=100, radius=1.0)
    assert protocol.padded_dimension == 128
    event = protocol.event
    assert event.count == 128 and event.event.guarantee == protocol.coordinate.guarantee
    assert protocol.guarantee.epsilon <= 2.0 + 1e-12 and protocol.guarantee.delta <= 1e-6
    assert protocol.coordinate.failure_probability == pytest.approx(0.1 / 256)


def test_vector_analyzer_is_rotation_back_of_the_coordinate_sums():
    protocol = _vector(dimension=5)
    rng = np.random.default_rng(70)
    x = _ball(rng, 40, 5)
    messages = protocol.randomize(x, rng=1)
    columns = protocol.coordinate.analyze(messages)
    d = protocol.padded_dimension
    expected = protocol.rotation.unrotate((protocol.step * (columns[:d] - columns[d:]))[None, :])[0]
    np.testing.assert_allclose(protocol.analyze(messages), expected)


def test_vector_fast_and_faithful_agree_in_distribution():
    protocol = _vector(dimension=2)
    x = _ball(np.random.default_rng(71), 40, 2)
    rng = np.random.default_rng(72)
    scale = protocol.step / math.sqrt(protocol.padded_dimension)  # outputs are integer multiples of this
    fast = np.array([protocol.run(x, rng=rng)[0] for _ in range(600)])
    faithful = np.array([protocol.run(x, rng=rng, path="faithful")[0] for _ in range(600)])
    assert_same_distribution(np.round(fast / scale / 4).astype(int), np.round(faithful / scale / 4).astype(int))


def test_vector_error_is_instance_specific():
    """Small vectors in a large ball: the error follows the data's norm, not the radius."""
    rng = np.random.default_rng(73)
    n, d = 5_000, 16
    x = _ball(rng, n, d, radius=0.01)
    protocol = ClippedVectorSum.from_privacy(epsilon=4.0, delta=1e-6, n_users=n, dimension=d, radius=1.0, levels=2**14)
    errors = [np.linalg.norm(protocol.run(x, rng=rng) - x.sum(axis=0)) for _ in range(5)]
    worst_case = CentralClippedVectorSum(epsilon=4.0, delta=1e-6, clipping_bound=1.0)
    central_errors = [np.linalg.norm(worst_case.release(x) - x.sum(axis=0)) for _ in range(5)]
    assert np.median(errors) < np.median(central_errors)


def test_vector_validation_names_the_parameter():
    protocol = _vector()
    with pytest.raises(InvalidParameterError, match="'x'"):
        protocol.run(np.full((40, 3), 0.9))  # norm above the radius
    with pytest.raises(InvalidParameterError, match="'x'"):
        protocol.run(np.zeros((40, 4)))
    with pytest.raises(InvalidParameterError, match="'calibration'"):
        ClippedVectorSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=40, dimension=3, radius=1.0, calibration="exact")
    with pytest.raises(InvalidParameterError, match="'radius'"):
        ClippedVectorSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=40, dimension=3, radius=0.0)


# --------------------------------------------------------------------------- sparse vector aggregation
def _sparse_input(rng: np.random.Generator, n: int, d: int, max_sparsity: int) -> np.ndarray:
    x = np.zeros((n, d), dtype=np.int64)
    for i, s in enumerate(rng.integers(0, max_sparsity + 1, n)):
        x[i, rng.choice(d, size=s, replace=False)] = 1
    return x


def _sparse(**changes) -> SparseVectorAggregation:
    parameters = {"epsilon": 6.0, "delta": 1e-6, "n_users": 40, "dimension": 4}
    return SparseVectorAggregation.from_privacy(**{**parameters, **changes})


class TestSparseAggregationConformance(ProtocolConformance):
    calibration_targets = (
        {"epsilon": 1.0, "delta": 1e-6, "n_users": 1_000, "dimension": 64},
        {"epsilon": 1.0, "delta": 1e-6, "n_users": 1_000, "dimension": 64, "calibration": "tight"},
    )

    def make_protocol(self) -> SparseVectorAggregation:
        return _sparse()

    def make_input(self, rng: np.random.Generator) -> np.ndarray:
        return _sparse_input(rng, 40, 4, 3)

    def test_shapes_and_types(self) -> None:
        _check_sparse_shapes(self.make_protocol(), self.make_input(np.random.default_rng(3)))


def test_sparse_fast_and_faithful_agree_in_distribution():
    protocol = _sparse()
    x = _sparse_input(np.random.default_rng(80), 40, 4, 3)
    rng = np.random.default_rng(81)
    fast = np.array([protocol.run(x, rng=rng) for _ in range(1_000)])
    faithful = np.array([protocol.run(x, rng=rng, path="faithful") for _ in range(1_000)])
    for k in range(4):
        assert_same_distribution(fast[:, k].astype(int), faithful[:, k].astype(int))


def test_sparse_messages_grow_with_the_users_own_sparsity():
    protocol = SparseVectorAggregation.from_privacy(epsilon=1.0, delta=1e-6, n_users=1_000, dimension=64, method="correlated")
    light = _sparse_input(np.random.default_rng(82), 1_000, 64, 1)
    heavy = np.ones((1_000, 64), dtype=int)
    difference = protocol.average_messages_per_user(heavy) - protocol.average_messages_per_user(light)
    assert difference == pytest.approx(64 - light.sum(axis=1).mean())
    assert protocol.average_messages_per_user(heavy) <= protocol.expected_messages_per_user + 1e-9


def test_sparse_level_selection_drops_rare_dense_users():
    rng = np.random.default_rng(83)
    n, d = 4_000, 64
    x = _sparse_input(rng, n, d, 2)
    x[:3] = 1  # three users with every item: their level is far too small to pay for its noise
    protocol = SparseVectorAggregation.from_privacy(epsilon=2.0, delta=1e-6, n_users=n, dimension=d)
    counts, _ = protocol._columns(x)
    level_counts = counts.sum(axis=0).astype(float)
    _, kept = protocol.combine(level_counts, np.zeros((protocol.n_levels, d)))
    assert kept <= 2
    errors = np.abs(protocol.run(x, rng=rng) - x.sum(axis=0)).max()
    assert errors < 100


def test_sparse_validation_names_the_parameter():
    protocol = _sparse()
    with pytest.raises(InvalidParameterError, match="'x'"):
        protocol.run(np.full((40, 4), 2))
    with pytest.raises(InvalidParameterError, match="'count_fraction'"):
        SparseVectorAggregation.from_privacy(epsilon=1.0, delta=1e-6, n_users=40, dimension=4, count_fraction=1.0)
    with pytest.raises(InvalidParameterError, match="'levels'"):
        SparseVectorAggregation(
            n_users=40, dimension=4, count=protocol.count, levels=protocol.levels[:-1], headline=protocol.headline
        )


def test_central_references_label_the_oracle():
    assert CentralClippedVectorSum(epsilon=1.0, delta=1e-6).guarantee.epsilon == math.inf
    assert CentralSparseAggregation(epsilon=1.0, delta=1e-6).guarantee.epsilon == math.inf
    x = _sparse_input(np.random.default_rng(84), 200, 8, 2)
    released = CentralSparseAggregation(epsilon=1.0, delta=1e-6, sparsity_bound=2).release(x)
    assert released.shape == (8,) and np.abs(released - x.sum(axis=0)).max() < 60
    with pytest.raises(InvalidParameterError, match="'sparsity_bound'"):
        CentralSparseAggregation(epsilon=1.0, delta=1e-6, sparsity_bound=0)
