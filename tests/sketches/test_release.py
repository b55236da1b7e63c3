"""Private RACE release: noise scale R/epsilon (add/remove) or 2R/epsilon (replace-one), never R/(N epsilon)."""

import math

import numpy as np
import pytest

from privsum.accounting import GuaranteeEvent, Neighbouring, PrivacyAccountant, PrivacyGuarantee
from privsum.exceptions import InvalidParameterError
from privsum.lsq import L2LSH
from privsum.shuffle.noise import discrete_laplace_pmf, discrete_laplace_variance
from privsum.sketches import RACE, ReleasedRACE, noise_scale
from privsum.testing import assert_matches_pmf, assert_mean, assert_variance

ROWS, WIDTH, N_POINTS = 100, 512, 5000
FAMILY = L2LSH(dimension=2, n_repetitions=ROWS, bucket_width=1.0, n_buckets=WIDTH, seed=4)
SKETCH = RACE(FAMILY).update(np.random.default_rng(0).normal(size=(N_POINTS, 2)))


@pytest.mark.parametrize(("relation", "per_row"), [("add-remove", 1), ("replace-one", 2)])
@pytest.mark.parametrize("epsilon", [0.5, 4.0])
def test_noise_scale_and_variance_per_counter(relation, per_row, epsilon):
    released = SKETCH.release(epsilon, neighbouring=relation, noise_source="numpy", rng=17)
    scale = per_row * ROWS / epsilon
    assert released.noise_scale == pytest.approx(scale)
    noise = (released.counts - SKETCH.counts).ravel()
    exact = discrete_laplace_variance(math.exp(-1.0 / scale))
    assert released.noise_variance() == pytest.approx(exact)
    assert abs(exact - 2 * scale**2) <= 1 / 6 + 1e-9  # discrete Laplace variance = 2 scale^2 - 1/6 + O(scale^-2)
    assert_mean(noise, 0.0, variance=exact)
    assert_variance(noise, exact)
    assert_variance(noise, 2 * scale**2)  # within statistical error of the continuous Laplace's 2 scale^2
    wrong = 2 * (per_row * ROWS / (N_POINTS * epsilon)) ** 2  # the public code's R/(N epsilon)
    with pytest.raises(AssertionError):
        assert_variance(noise, wrong)


def test_noise_follows_the_discrete_laplace_pmf():
    released = SKETCH.release(20.0, noise_source="numpy", rng=3)  # scale 5
    noise = (released.counts - SKETCH.counts).ravel()
    support = np.arange(-200, 201)
    assert_matches_pmf(noise, support, discrete_laplace_pmf(support, math.exp(-1 / 5)))


def test_opendp_sampler_noise_variance():
    """OpenDP samples from the OS CSPRNG and cannot be seeded: this test is random, alpha = 1e-6."""
    family = L2LSH(dimension=2, n_repetitions=10, n_buckets=256, seed=1)
    sketch = RACE(family).update(np.zeros((3, 2)))
    released = sketch.release(1.0)
    noise = (released.counts - sketch.counts).ravel()
    exact = released.noise_variance()
    assert released.noise_scale == 10.0
    assert_mean(noise, 0.0, variance=exact)
    assert_variance(noise, exact)
    with pytest.raises(InvalidParameterError, match="'rng'"):
        sketch.release(1.0, rng=0)


def test_noise_comes_from_rng_at_call_time_and_differs_between_releases():
    first = SKETCH.release(1.0, noise_source="numpy", rng=5)
    assert np.array_equal(first.counts, SKETCH.release(1.0, noise_source="numpy", rng=5).counts)
    assert not np.array_equal(first.counts, SKETCH.release(1.0, noise_source="numpy", rng=6).counts)
    assert not np.array_equal(first.counts, SKETCH.counts)
    assert not hasattr(first, "n_updates") and not hasattr(first, "rng")


def test_released_sketch_carries_its_event_and_cannot_be_noised_again():
    released = SKETCH.release(2.0, neighbouring="replace-one", noise_source="numpy", rng=1)
    assert released.event == GuaranteeEvent(PrivacyGuarantee(2.0, 0.0, Neighbouring.REPLACE_ONE))
    accountant = PrivacyAccountant()
    accountant.compose(released.event)
    with pytest.raises(TypeError):
        released.release(1.0)
    with pytest.raises(TypeError):
        released.update(np.zeros((1, 2)))
    with pytest.raises(ValueError):
        released.counts[0, 0] = 0
    assert released.point_count == pytest.approx(N_POINTS, abs=6 * math.sqrt(2 * WIDTH) * released.noise_scale / math.sqrt(ROWS))


def test_released_estimates_are_unbiased_over_the_noise():
    queries = np.array([[0.0, 0.0], [1.5, -0.5]])
    raw = SKETCH.estimate(queries)
    draws = np.array([SKETCH.release(1.0, noise_source="numpy", rng=seed).estimate(queries) for seed in range(300)])
    for query in range(2):
        assert_mean(draws[:, query], float(raw[query]))


def test_a_released_sketch_rejects_a_scale_that_does_not_match_its_guarantee():
    with pytest.raises(InvalidParameterError, match="'noise_scale'"):
        ReleasedRACE(family=FAMILY, counts=SKETCH.counts, epsilon=1.0, neighbouring="add-remove", noise_scale=ROWS / N_POINTS)
    assert noise_scale(ROWS, 1.0, Neighbouring.ADD_REMOVE) == ROWS


@pytest.mark.parametrize(
    ("arguments", "name"),
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": float("nan")}, "epsilon"),
        ({"epsilon": 1.0, "neighbouring": "swap"}, "neighbouring"),
        ({"epsilon": 1.0, "neighbouring": "zero-out"}, "neighbouring"),  # a sketch has no null point
        ({"epsilon": 1.0, "noise_source": "torch"}, "noise_source"),
    ],
)
def test_release_validation(arguments, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}'"):
        SKETCH.release(**arguments)
