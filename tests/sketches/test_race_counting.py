"""RACE counting in place: the counters equal a direct count of the family's hash codes (exact)."""

import numpy as np
import pytest

from privsum.exceptions import InvalidParameterError
from privsum.lsq import L2LSH, SignedRandomProjection
from privsum.sketches import RACE

POINTS = np.random.default_rng(8).standard_normal((3_001, 6))


def direct_counts(family, points):
    codes = family.hash_codes(points)
    counts = np.zeros((family.n_repetitions, family.n_buckets), dtype=np.int64)
    np.add.at(counts, (np.broadcast_to(np.arange(family.n_repetitions), codes.shape), codes), 1)
    return counts


@pytest.mark.parametrize(
    "family",
    [
        L2LSH(dimension=6, n_repetitions=50, bucket_width=2.0, n_buckets=64, seed=3),
        L2LSH(dimension=6, n_repetitions=3, bucket_width=0.3, n_buckets=2**16, seed=4),
        SignedRandomProjection(dimension=6, n_repetitions=40, n_bits=3, seed=5),
    ],
    ids=["l2", "l2-wide", "srp"],
)
@pytest.mark.parametrize("chunk_size", [None, 1, 7, 1000, 10_000])
def test_counters_equal_a_direct_count_of_the_hash_codes(family, chunk_size):
    expected = direct_counts(family, POINTS)
    sketch = RACE(family).update(POINTS, chunk_size=chunk_size)
    assert np.array_equal(sketch.counts, expected) and sketch.n_updates == len(POINTS)
    parts = iter([POINTS[:5], POINTS[5:2_000], POINTS[2_000:2_001], POINTS[2_001:]])
    streamed = RACE(family).update(parts, chunk_size=chunk_size)
    assert np.array_equal(streamed.counts, expected)


def test_a_failing_chunk_late_in_a_stream_leaves_the_sketch_unchanged():
    family = L2LSH(dimension=6, n_repetitions=10, bucket_width=1.0, n_buckets=16, seed=1)
    sketch = RACE(family).update(POINTS[:100])
    before = sketch.counts.copy()
    bad = POINTS[:50].copy()
    bad[3, 1] = np.nan
    with pytest.raises(InvalidParameterError, match="'points'"):
        sketch.update(iter([POINTS[100:200], bad]), chunk_size=16)
    assert np.array_equal(sketch.counts, before) and sketch.n_updates == 100
