"""Central Gaussian and exact vector sums: calibration, sensitivity, unbiasedness, variance, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privsum.accounting import GaussianEvent, gaussian_delta, gaussian_sigma
from privsum.exceptions import InvalidParameterError
from privsum.sums import CentralGaussianVectorSum, ExactVectorSum
from privsum.sums.central_vector import NORM_RTOL
from privsum.testing.stats import assert_mean, assert_variance


def unit_vectors(n: int, d: int, seed: int = 0) -> np.ndarray:
    points = np.random.default_rng(seed).normal(size=(n, d))
    return points / np.linalg.norm(points, axis=1, keepdims=True)


@pytest.mark.parametrize(("neighbouring", "factor"), [("replace-one", 2.0), ("add-remove", 1.0), ("zero-out", 1.0)])
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0])
def test_calibration_is_the_exact_analytic_gaussian(neighbouring: str, factor: float, epsilon: float) -> None:
    protocol = CentralGaussianVectorSum.from_privacy(
        epsilon=epsilon, delta=1e-6, n_users=10, dimension=5, norm_bound=1.5, neighbouring=neighbouring
    )
    assert protocol.sensitivity == factor * 1.5 * (1 + NORM_RTOL)
    assert protocol.sigma == gaussian_sigma(epsilon, 1e-6, sensitivity=factor * 1.5 * (1 + NORM_RTOL))
    achieved = protocol.guarantee
    assert achieved.epsilon <= epsilon and achieved.delta == 1e-6 and achieved.neighbouring.value == neighbouring
    assert gaussian_delta(achieved.epsilon, sigma=protocol.sigma, sensitivity=protocol.sensitivity) <= 1e-6
    assert isinstance(protocol.event, GaussianEvent) and protocol.event_for_participants(3) == protocol.event


def test_release_is_unbiased_with_the_stated_variance() -> None:
    protocol = CentralGaussianVectorSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=50, dimension=4, norm_bound=1.0)
    x = unit_vectors(50, 4)
    rng = np.random.default_rng(1)
    releases = np.stack([protocol.run(x, rng=rng) for _ in range(4000)])
    errors = releases - x.sum(axis=0)
    assert_mean(errors, 0.0, variance=protocol.variance())
    assert_variance(errors, protocol.variance())


def test_streamed_chunks_give_the_same_release() -> None:
    protocol = CentralGaussianVectorSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=30, dimension=3, norm_bound=1.0)
    x = unit_vectors(30, 3)
    whole = protocol.run(x, rng=5)
    streamed = protocol.run(iter([x[:10], x[10:]]), rng=5)
    np.testing.assert_allclose(streamed, whole, rtol=1e-12)


def test_exact_sum_and_communication() -> None:
    x = unit_vectors(20, 6)
    exact = ExactVectorSum.from_privacy(n_users=20, dimension=6, norm_bound=1.0)
    np.testing.assert_allclose(exact.run(x), x.sum(axis=0))
    assert math.isinf(exact.guarantee.epsilon) and exact.variance() == 0.0
    assert exact.expected_messages_per_user == 6.0 and exact.bits_per_message() == 3 + 64


@pytest.mark.parametrize(
    ("x", "fragment"),
    [
        (np.full((3, 2), 1.0), "L2 norm at most"),
        (np.array([[np.nan, 0.0]]), "finite"),
        (np.zeros((3, 5)), "shape"),
        (np.zeros((0, 2)), "shape"),
        (np.zeros(2), "ndim"),
    ],
)
def test_bad_vectors_are_refused_naming_x(x: np.ndarray, fragment: str) -> None:
    protocol = CentralGaussianVectorSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=3, dimension=2, norm_bound=1.0)
    with pytest.raises(InvalidParameterError, match=f"'x' parameter.*{fragment}"):
        protocol.run(x, rng=0)
    with pytest.raises(InvalidParameterError, match="'x' parameter"):
        ExactVectorSum(n_users=3, dimension=2).run(x)


@pytest.mark.parametrize(
    ("keywords", "name"),
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"delta": 0.0}, "delta"),
        ({"norm_bound": 0.0}, "norm_bound"),
        ({"dimension": 0}, "dimension"),
        ({"n_users": 0}, "n_users"),
        ({"neighbouring": "swap"}, "neighbouring"),
    ],
)
def test_bad_calibration_parameters_are_named(keywords: dict, name: str) -> None:
    arguments = {"epsilon": 1.0, "delta": 1e-6, "n_users": 3, "dimension": 2, "norm_bound": 1.0, **keywords}
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter"):
        CentralGaussianVectorSum.from_privacy(**arguments)


def test_exact_sum_refuses_a_finite_epsilon() -> None:
    with pytest.raises(InvalidParameterError, match="'epsilon' parameter of ExactVectorSum.from_privacy"):
        ExactVectorSum.from_privacy(epsilon=1.0, n_users=3, dimension=2, norm_bound=1.0)
