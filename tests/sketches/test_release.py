"""Private RACE release: noise scale R/epsilon (add/remove) or 2R/epsilon (replace-one), never R/(N epsilon)."""

import math

import numpy as np
import pytest

import privsum.sketches.race as race_module
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


def test_a_released_sketch_cannot_be_built_by_hand():
    # Even with the scale its epsilon requires: nothing was added to these raw counts.
    for arguments in (
        {"noise_scales": (float(ROWS),)},
        {"noise_scale": float(ROWS)},
        {"noise_scales": (float(ROWS),), "_token": object()},
    ):
        with pytest.raises((InvalidParameterError, TypeError), match="ReleasedRACE"):
            ReleasedRACE(family=FAMILY, counts=SKETCH.counts, epsilon=1.0, neighbouring="add-remove", **arguments)
    assert noise_scale(ROWS, 1.0, Neighbouring.ADD_REMOVE) == ROWS


def _internal(counts, *, epsilon=1.0, scales=(float(ROWS),)):
    """The constructor as `release` / `from_bytes` call it (to test the invariants it still checks)."""
    return ReleasedRACE(
        family=FAMILY,
        counts=counts,
        epsilon=epsilon,
        neighbouring="add-remove",
        noise_scales=scales,
        _token=race_module._RELEASE_TOKEN,
    )


@pytest.mark.parametrize("bad", [math.nan, 1e300, 2.7, math.inf])
def test_released_counts_are_validated_never_cast(bad):
    counts = SKETCH.counts.astype(float)
    counts[3, 5] = bad
    with pytest.raises(InvalidParameterError, match="'counts'"):
        _internal(counts)
    with pytest.raises(InvalidParameterError, match="'counts'"):
        _internal(SKETCH.counts[:, :-1])
    with pytest.raises(InvalidParameterError, match="'noise_scales'"):
        _internal(SKETCH.counts, scales=(ROWS / N_POINTS,))  # the public code's R/(N epsilon)
    assert _internal(SKETCH.counts).counts.dtype == np.int64


# ----------------------------------------------------------------- merging releases of disjoint users
FIRST_POINTS = np.random.default_rng(20).normal(size=(3000, 2))
SECOND_POINTS = np.random.default_rng(21).normal(0.5, 1.0, size=(2000, 2))


def test_merged_releases_add_counters_noise_and_report_the_parallel_composition():
    first = RACE(FAMILY).update(FIRST_POINTS).release(1.0, noise_source="numpy", rng=1)
    second = RACE(FAMILY).update(SECOND_POINTS).release(2.0, noise_source="numpy", rng=2)
    merged = first.merge(second, disjoint_users=True)
    np.testing.assert_array_equal(merged.counts, first.counts + second.counts)
    assert merged.guarantee == PrivacyGuarantee(2.0, 0.0, "add-remove") and merged.event == GuaranteeEvent(merged.guarantee)
    assert merged.noise_scales == (ROWS / 1.0, ROWS / 2.0) and merged.noise_scale == ROWS / 2.0
    assert merged.noise_variance() == pytest.approx(first.noise_variance() + second.noise_variance())
    assert ReleasedRACE.from_bytes(merged.to_bytes()) == merged
    np.testing.assert_array_equal(second.merge(first, disjoint_users=True).counts, merged.counts)
    with pytest.raises(TypeError):
        merged.release(1.0)


def test_merged_estimates_are_unbiased_for_the_union_with_the_summed_noise():
    union = RACE(FAMILY).update(np.vstack([FIRST_POINTS, SECOND_POINTS]))
    first, second = RACE(FAMILY).update(FIRST_POINTS), RACE(FAMILY).update(SECOND_POINTS)
    query = np.array([[0.2, 0.1]])
    counter = (np.arange(ROWS), FAMILY.hash_codes(query)[0])
    draws, noise = [], []
    for seed in range(300):
        merged = first.release(1.0, noise_source="numpy", rng=2 * seed).merge(
            second.release(4.0, noise_source="numpy", rng=2 * seed + 1), disjoint_users=True
        )
        draws.append(float(merged.estimate(query)[0]))
        noise.append((merged.counts - union.counts)[counter])
    assert_mean(np.array(draws), float(union.estimate(query)[0]))
    assert_variance(np.array(noise).ravel(), merged.noise_variance())


def test_merge_refuses_incompatible_releases():
    from privsum.exceptions import IncompatibleSketchError

    released = SKETCH.release(1.0, noise_source="numpy", rng=0)
    other_family = L2LSH(dimension=2, n_repetitions=ROWS, bucket_width=1.0, n_buckets=WIDTH, seed=5)
    with pytest.raises(IncompatibleSketchError):
        released.merge(RACE(other_family).release(1.0, noise_source="numpy", rng=0), disjoint_users=True)
    with pytest.raises(IncompatibleSketchError, match="neighbouring"):
        released.merge(SKETCH.release(1.0, neighbouring="replace-one", noise_source="numpy", rng=0), disjoint_users=True)
    with pytest.raises(IncompatibleSketchError):
        released.merge(SKETCH, disjoint_users=True)
    with pytest.raises(IncompatibleSketchError):
        SKETCH.merge(released)
    with pytest.raises(InvalidParameterError, match="'disjoint_users'"):
        released.merge(released, disjoint_users=False)


def test_raw_sketch_equality_and_emptiness():
    empty, sketch = RACE(FAMILY), SKETCH
    assert empty.is_empty and empty == RACE(FAMILY) and empty.copy() == empty
    assert not sketch.is_empty and sketch == sketch.copy() and sketch != empty
    assert sketch == RACE.from_bytes(sketch.to_bytes())
    other_family = L2LSH(dimension=2, n_repetitions=ROWS, bucket_width=1.0, n_buckets=WIDTH, seed=5)
    assert sketch != RACE(other_family).update(np.random.default_rng(0).normal(size=(N_POINTS, 2)))
    assert sketch != sketch.release(1.0, noise_source="numpy", rng=0)


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
