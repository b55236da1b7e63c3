"""RACE: unbiasedness, merge properties, serialisation, validation (alpha = 1e-6, fixed seeds)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from privsum.exceptions import IncompatibleSketchError, InvalidParameterError
from privsum.lsq import L2LSH, RandomFourierFeatures, SignedRandomProjection
from privsum.sketches import RACE, ReleasedRACE
from privsum.testing import assert_mean

DATA = np.random.default_rng(0).normal(size=(400, 3))
QUERIES = np.array([[0.1, 0.0, -0.1], [1.0, -1.0, 0.5], [3.0, 3.0, 3.0]])


def small_family(seed=1, **changes):
    arguments = {"dimension": 3, "n_repetitions": 20, "bucket_width": 1.0, "n_buckets": 16, "seed": seed, **changes}
    return L2LSH(**arguments)


@pytest.mark.parametrize(
    "family",
    [
        L2LSH(dimension=3, n_repetitions=4000, bucket_width=1.5, n_buckets=8, seed=5),
        SignedRandomProjection(dimension=3, n_repetitions=4000, n_bits=2, seed=5),
    ],
    ids=["l2-folded", "srp"],
)
def test_race_rows_are_unbiased_for_the_lsh_kernel_sum(family):
    sketch = RACE(family).update(DATA)
    exact = family.kernel(DATA, QUERIES).sum(axis=0)
    rows = sketch.row_estimates(QUERIES)  # rows use independent hash functions: i.i.d. samples
    for query in range(len(QUERIES)):
        assert_mean(rows[query], float(exact[query]))
    assert np.allclose(sketch.estimate(QUERIES), rows.mean(axis=1))
    assert np.allclose(sketch.density(QUERIES), rows.mean(axis=1) / len(DATA))


def test_folded_counts_without_debiasing_estimate_the_expected_product():
    family = L2LSH(dimension=3, n_repetitions=4000, bucket_width=1.5, n_buckets=8, seed=6)
    sketch = RACE(family).update(DATA)
    codes = family.hash_codes(QUERIES)
    raw = sketch.counts[np.arange(family.n_repetitions), codes[0]]
    assert_mean(raw, float(family.expected_product(DATA, QUERIES[:1]).sum()))


def test_median_of_means_and_single_point_updates():
    family = small_family()
    batch = RACE(family).update(DATA[:50])
    stream = RACE(family)
    for point in DATA[:50]:
        stream.update(point)
    assert np.array_equal(batch.counts, stream.counts) and stream.n_updates == 50
    chunked = RACE(family).update(DATA[:50], chunk_size=7)
    assert np.array_equal(batch.counts, chunked.counts)
    rows = batch.row_estimates(QUERIES)
    groups = np.array_split(rows, 4, axis=1)
    expected = np.median(np.stack([g.mean(axis=1) for g in groups], axis=1), axis=1)
    assert np.allclose(batch.estimate(QUERIES, method="median_of_means", n_groups=4), expected)


index_lists = st.lists(st.integers(0, len(DATA) - 1), max_size=30)


@given(index_lists, index_lists, index_lists)
def test_merge_is_commutative_associative_and_equals_the_union(first, second, third):
    family = small_family()
    a, b, c = (RACE(family).update(DATA[i].reshape(-1, 3)) for i in (first, second, third))
    union = RACE(family).update(DATA[first + second + third].reshape(-1, 3))
    assert np.array_equal(a.merge(b).counts, b.merge(a).counts)
    assert np.array_equal(a.merge(b).merge(c).counts, a.merge(b.merge(c)).counts)
    assert np.array_equal(a.merge(b).merge(c).counts, union.counts)
    assert a.merge(b).merge(c).n_updates == union.n_updates
    assert a.n_updates == len(first)  # inputs unchanged


@given(arrays(float, st.tuples(st.integers(0, 20), st.just(3)), elements=st.floats(-50, 50, allow_nan=False)))
def test_serialisation_round_trips_exactly(points):
    sketch = RACE(small_family()).update(points)
    restored = RACE.from_bytes(sketch.to_bytes())
    assert np.array_equal(restored.counts, sketch.counts)
    assert restored.n_updates == sketch.n_updates and restored.family == sketch.family
    assert restored.to_bytes() == sketch.to_bytes()


@given(st.integers(0, 2**32), st.floats(0.01, 100, allow_nan=False), st.sampled_from(["add-remove", "replace-one"]))
def test_released_serialisation_round_trips_exactly(seed, epsilon, relation):
    family = SignedRandomProjection(dimension=3, n_repetitions=5, n_bits=3, seed=seed % 1000)
    released = RACE(family).update(DATA[:30]).release(epsilon, neighbouring=relation, noise_source="numpy", rng=seed)
    restored = ReleasedRACE.from_bytes(released.to_bytes())
    assert restored == released and restored.event == released.event


def test_merge_mismatch_raises():
    sketch = RACE(small_family())
    for other in (
        RACE(small_family(seed=2)),
        RACE(small_family(n_buckets=32)),
        RACE(small_family(n_repetitions=21)),
        RACE(small_family(bucket_width=2.0)),
        RACE(SignedRandomProjection(dimension=3, n_repetitions=20, n_bits=4, seed=1)),
        sketch.release(1.0, noise_source="numpy", rng=0),
        "not a sketch",
    ):
        with pytest.raises(IncompatibleSketchError):
            sketch.merge(other)


def test_deserialisation_rejects_foreign_or_corrupt_bytes():
    payload = RACE(small_family()).update(DATA[:10]).to_bytes()
    with pytest.raises(InvalidParameterError, match="'data'"):
        RACE.from_bytes(b"nonsense" + payload)
    with pytest.raises(InvalidParameterError, match="'data'"):
        RACE.from_bytes(payload[:-8])
    with pytest.raises(InvalidParameterError, match="'data'"):
        ReleasedRACE.from_bytes(payload)  # a raw sketch is not a released one
    tampered = bytearray(payload)
    tampered[-8:] = (10**6).to_bytes(8, "little")
    with pytest.raises(InvalidParameterError, match="'data'"):
        RACE.from_bytes(bytes(tampered))
    with pytest.raises(InvalidParameterError, match="'data'"):
        RACE.from_bytes("text")


def test_validation_names_the_parameter():
    sketch = RACE(small_family())
    with pytest.raises(InvalidParameterError, match="'family'"):
        RACE(RandomFourierFeatures(dimension=3, n_repetitions=2))
    with pytest.raises(InvalidParameterError, match="'points'"):
        sketch.update(np.array([[0.0, np.nan, 0.0]]))
    with pytest.raises(InvalidParameterError, match="'points'"):
        sketch.update(np.zeros((2, 4)))
    assert sketch.n_updates == 0  # nothing was counted
    with pytest.raises(InvalidParameterError, match="'chunk_size'"):
        sketch.update(DATA, chunk_size=0)
    with pytest.raises(InvalidParameterError, match="'method'"):
        sketch.estimate(QUERIES, method="max")
    with pytest.raises(InvalidParameterError, match="'n_groups'"):
        sketch.estimate(QUERIES, method="median_of_means", n_groups=21)
    with pytest.raises(ValueError):
        sketch.counts[0, 0] = 5  # read-only view


def test_suggest_shape_meets_its_target_when_feasible():
    plain = RACE.suggest_shape(10**5, relative_error=0.05, typical_density=0.1)
    assert plain.relative_error <= 0.05 and plain.width >= 100
    private = RACE.suggest_shape(10**6, epsilon=1.0, relative_error=0.05, typical_density=0.1)
    assert private.relative_error <= 0.05 and private.n_rows >= plain.n_rows
    tight = RACE.suggest_shape(10**6, epsilon=1.0, neighbouring="replace-one", relative_error=0.05, typical_density=0.1)
    assert tight.n_rows >= private.n_rows
    infeasible = RACE.suggest_shape(1000, epsilon=0.1, relative_error=0.01, typical_density=0.1)
    neighbours = [infeasible.n_rows // 2, infeasible.n_rows * 2]
    model = lambda rows: np.sqrt(1000**2 * 0.1 / rows + 2 * rows / 0.1**2) / (1000 * 0.1)  # noqa: E731
    assert all(model(rows) >= infeasible.relative_error for rows in neighbours)
    with pytest.raises(InvalidParameterError, match="'typical_density'"):
        RACE.suggest_shape(10, typical_density=0.0)
    with pytest.raises(InvalidParameterError, match="'epsilon'"):
        RACE.suggest_shape(10, epsilon=-1.0)
