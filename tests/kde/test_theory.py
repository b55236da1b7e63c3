"""Tests of the closed forms of Theorems 3.2 and 3.3."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from privsum.exceptions import InvalidParameterError
from privsum.kde import gaussian_kde_parameters, seed_composition_epsilon, seed_per_instance_epsilon, sup_rmse_bound


def test_seed_composition_matches_theorem_formula() -> None:
    e0, s, i, slack = 0.01, 2, 300, 1e-7
    expected = e0 * s * (math.exp(e0 * s) - 1) * i + e0 * s * math.sqrt(2 * i * math.log(1 / slack))
    assert seed_composition_epsilon(e0, s, i, slack) == pytest.approx(expected, rel=1e-12)


@given(epsilon=st.floats(0.05, 10.0), repetitions=st.integers(1, 2000), sparsity=st.integers(1, 4))
def test_seed_per_instance_epsilon_never_overshoots(epsilon: float, repetitions: int, sparsity: int) -> None:
    epsilon0 = seed_per_instance_epsilon(epsilon, sparsity, repetitions, 1e-7)
    assert seed_composition_epsilon(epsilon0, sparsity, repetitions, 1e-7) <= epsilon


def test_sup_rmse_bound_formula() -> None:
    value = sup_rmse_bound(bias=0.1, bound=2.0, sparsity=2, n_repetitions=50, instance_rmse=30.0, n_users=100)
    assert value == pytest.approx(math.sqrt(4 * 0.01 + 16 * 16 * 2 * (2 + 0.09) / 50))


def test_gaussian_parameters_follow_theorem_3_3() -> None:
    parameters = gaussian_kde_parameters(0.05, epsilon=2.0, delta=1e-6)
    assert parameters.n_repetitions == 400
    assert parameters.epsilon0 == pytest.approx(2.0 / math.sqrt(400 * math.log(1e6)))
    assert parameters.delta0 == pytest.approx(1e-6 / 800) and parameters.delta_slack == pytest.approx(5e-7)


@pytest.mark.parametrize(
    ("call", "parameter"),
    [
        (lambda: gaussian_kde_parameters(0.0, epsilon=1.0, delta=1e-6), "alpha"),
        (lambda: gaussian_kde_parameters(0.1, epsilon=-1.0, delta=1e-6), "epsilon"),
        (lambda: gaussian_kde_parameters(0.1, epsilon=1.0, delta=0.0), "delta"),
        (lambda: seed_composition_epsilon(0.1, 0, 3, 1e-6), "sparsity"),
        (lambda: sup_rmse_bound(bias=0.0, bound=0.0, sparsity=1, n_repetitions=1, instance_rmse=0.0, n_users=1), "bound"),
    ],
)
def test_validation_names_the_parameter(call, parameter: str) -> None:
    with pytest.raises(InvalidParameterError, match=f"'{parameter}'"):
        call()
