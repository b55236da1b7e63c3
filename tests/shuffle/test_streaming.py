"""Streaming users in chunks: same distribution as one run, participants checked once. Statistical tests: alpha = 1e-6."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from privsum.bitsum import CentralLaplaceBitSum, LocalRRBitSum, PureBitSum, RRBitSum, ThreeNBBitSum
from privsum.exceptions import InvalidParameterError, PrivacyLeakWarning
from privsum.kde import ShuffledKDE
from privsum.lsq import L2LSH, RandomFourierFeatures
from privsum.shuffle import MessageHistogram
from privsum.shuffle.streaming import PartialView, UserChunks, is_chunk_stream, iter_user_chunks
from privsum.sketches import RACE
from privsum.sums import BlanketRealSum, CorrelatedNoiseSum, MultiMessageSum, ShuffledVectorSum
from privsum.testing import assert_same_distribution
from tests.shuffle.toy import ToyFlip

N = 60
SPLIT = (0, 7, 30, 31, N)  # uneven chunks, one of a single user


def _bits(rng: np.random.Generator) -> np.ndarray:
    return (rng.random((N, 2)) < 0.4).astype(int)


def _kde() -> ShuffledKDE:
    family = RandomFourierFeatures(dimension=2, n_repetitions=3, seed=0)
    return ShuffledKDE(family=family, bitsum=RRBitSum(n_users=N, flip_probability=0.2, delta=1e-6), chunk_size=8)


CASES = {
    "rr": (lambda: RRBitSum(n_users=N, flip_probability=0.2, delta=1e-6), _bits),
    "3nb": (lambda: ThreeNBBitSum(n_users=N, noise_ratio=0.6, flooding_shape=3.0, flooding_ratio=0.5, delta=1e-6), _bits),
    "pure": (lambda: PureBitSum(n_users=N, drop_probability=0.3, noise_ratio=0.4), _bits),
    "local-rr": (lambda: LocalRRBitSum(n_users=N, flip_probability=0.2), _bits),
    "central": (lambda: CentralLaplaceBitSum(n_users=N, scale=2.0, noise_source="numpy"), _bits),
    "blanket": (
        lambda: BlanketRealSum(n_users=N, precision=3, blanket_probability=0.3, delta=1e-6),
        lambda rng: rng.random((N, 2)),
    ),
    "correlated": (
        lambda: CorrelatedNoiseSum.from_privacy(epsilon=2.0, delta=1e-6, n_users=N, domain=2),
        lambda rng: rng.integers(0, 3, size=(N, 2)),
    ),
    "multi-message": (
        lambda: MultiMessageSum(n_users=N, domain=1, noise_ratio=0.5, n_shares=2, modulus=128, share_security_bits=10.0),
        _bits,
    ),
    "vector": (
        lambda: ShuffledVectorSum(n_users=N, dimension=3, precision=2, blanket_probability=0.3, delta=1e-6, symmetric=True),
        lambda rng: rng.uniform(-1, 1, size=(N, 3)),
    ),
    "kde": (_kde, lambda rng: rng.standard_normal((N, 2))),
}


def _chunks(x: np.ndarray) -> list[np.ndarray]:
    return [x[a:b] for a, b in itertools.pairwise(SPLIT)]


def _column(view: MessageHistogram) -> np.ndarray:
    """Per-instance message totals and one count: a few integer statistics of the view."""
    return np.concatenate([view.counts.sum(axis=1), view.counts[:, -1]])


@pytest.mark.parametrize("name", sorted(CASES))
def test_streamed_view_has_the_distribution_of_one_run(name: str) -> None:
    make, inputs = CASES[name]
    protocol = make()
    x = inputs(np.random.default_rng(1))
    whole = np.array([_column(protocol.sample_view(x, rng=seed)) for seed in range(300)])
    streamed = np.array([_column(protocol.sample_view_streamed(_chunks(x), rng=10_000 + seed)) for seed in range(300)])
    alpha = 1e-6 / whole.shape[1]
    for column in range(whole.shape[1]):
        assert_same_distribution(whole[:, column], streamed[:, column], alpha=alpha)


@pytest.mark.parametrize("name", sorted(CASES))
def test_streamed_run_accepts_every_chunk_form_and_checks_participants_once(name: str) -> None:
    make, inputs = CASES[name]
    protocol = make()
    x = inputs(np.random.default_rng(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # N users in small chunks: no warning
        by_iterator = protocol.run(iter(_chunks(x)), rng=3)
        by_wrapper = protocol.run(UserChunks(_chunks(x)), rng=3)
        by_method = protocol.run_streamed(_chunks(x), rng=3)
        faithful = protocol.run(iter(_chunks(x)), rng=3, path="faithful")
    for result in (by_wrapper, by_method):
        np.testing.assert_array_equal(np.asarray(_estimate(by_iterator)), np.asarray(_estimate(result)))
    assert np.shape(_estimate(faithful)) == np.shape(_estimate(by_iterator))
    if not getattr(protocol, "depends_on_participants", True):  # local and central: fewer users do not matter
        return
    with pytest.warns(PrivacyLeakWarning) as record:
        protocol.run(iter(_chunks(x)[:2]), rng=4)  # 30 users of N
    assert len([w for w in record if issubclass(w.category, PrivacyLeakWarning)]) == 1


def _estimate(result):
    return result.coefficients if hasattr(result, "coefficients") else result


@pytest.mark.parametrize("name", ["3nb", "correlated", "kde"])
def test_streamed_faithful_path_matches_the_fast_path(name: str) -> None:
    make, inputs = CASES[name]
    protocol = make()
    x = inputs(np.random.default_rng(5))
    fast = np.array([_column(protocol.sample_view_streamed(_chunks(x), rng=seed)) for seed in range(300)])
    faithful = np.array(
        [_column(protocol.sample_view_streamed(_chunks(x), rng=5000 + seed, path="faithful")) for seed in range(300)]
    )
    for column in range(fast.shape[1]):
        assert_same_distribution(fast[:, column], faithful[:, column], alpha=1e-6 / fast.shape[1])


def test_curated_noise_is_added_once_per_run() -> None:
    protocol = CentralLaplaceBitSum(n_users=N, scale=3.0, noise_source="numpy")
    bits = np.ones((N, 1), dtype=int)
    many = [protocol.run(iter([bits[i : i + 1] for i in range(N)]), rng=seed)[0] - N for seed in range(400)]
    once = [protocol.run(bits, rng=20_000 + seed)[0] - N for seed in range(400)]
    assert_same_distribution(np.array(many, dtype=int), np.array(once, dtype=int))


def test_multi_message_raises_on_more_users_than_its_modulus_holds() -> None:
    protocol = CASES["multi-message"][0]()
    bits = np.ones((N, 1), dtype=int)
    with pytest.raises(InvalidParameterError, match="'x'"):
        protocol.run(iter([bits, bits[:1]]), rng=0)


def test_more_users_never_warn_and_stay_unbiased_for_blanket_sums() -> None:
    protocol = CASES["vector"][0]()
    x = np.random.default_rng(6).uniform(-1, 1, size=(2 * N, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        estimates = np.array([protocol.run(iter([x[:N], x[N:]]), rng=seed) for seed in range(400)])
    spread = np.sqrt(protocol.variance(x) / 400)
    assert np.all(np.abs(estimates.mean(axis=0) - x.sum(axis=0)) < 6 * spread)


def test_empty_stream_and_bad_chunks_raise() -> None:
    protocol = CASES["rr"][0]()
    with pytest.raises(InvalidParameterError, match="'x'"):
        protocol.run(iter([]), rng=0)
    with pytest.raises(InvalidParameterError, match="'bits'"):
        protocol.run(iter([np.ones((3, 2), dtype=int), np.full((2, 2), 2)]), rng=0)
    with pytest.raises(InvalidParameterError, match="'chunks'"):
        UserChunks(np.ones(3))
    with pytest.raises(InvalidParameterError, match="'chunks'"):
        protocol.sample_view_streamed(5, rng=0)


def test_stream_detection_and_partial_views_merge() -> None:
    assert not is_chunk_stream(np.zeros((2, 2))) and not is_chunk_stream([[0, 1]])
    assert is_chunk_stream(iter([np.zeros(2)])) and is_chunk_stream(UserChunks([np.zeros(2)]))
    assert [c.shape for c in iter_user_chunks(np.zeros((3, 2)), "test")] == [(3, 2)]
    first = PartialView(MessageHistogram(np.array([[1, 0]]), (0, 1)), 2)
    total = first + PartialView(MessageHistogram(np.array([[0, 3]]), (0, 1)), 3)
    assert total.n_users == 5 and total.histogram.counts.tolist() == [[1, 3]]
    with pytest.raises(InvalidParameterError, match="'n_users'"):
        PartialView(first.histogram, -1)


def test_protocols_without_chunk_support_concatenate() -> None:
    protocol = ToyFlip(flip_probability=0.2)
    x = np.random.default_rng(7).integers(0, 2, size=(40, 2))
    assert not protocol.streams_chunks
    streamed = protocol.sample_view_streamed([x[:10], x[10:]], rng=0)
    assert streamed.total_messages == protocol.sample_view(x, rng=0).total_messages


def test_race_update_accepts_a_stream_and_commits_only_valid_streams() -> None:
    family = L2LSH(dimension=2, n_repetitions=10, bucket_width=2.0, n_buckets=16, seed=0)
    points = np.random.default_rng(8).standard_normal((50, 2))
    whole = RACE(family).update(points)
    streamed = RACE(family).update(iter([points[:20], points[20:]]))
    assert np.array_equal(whole.counts, streamed.counts) and streamed.n_updates == 50
    bad = RACE(family)
    with pytest.raises(InvalidParameterError):
        bad.update(iter([points[:20], np.full((2, 2), np.nan)]))
    assert bad.n_updates == 0 and bad.counts.sum() == 0


def test_dask_array_streams_block_by_block() -> None:
    da = pytest.importorskip("dask.array")
    protocol = CASES["3nb"][0]()
    x = _bits(np.random.default_rng(9))
    lazy = da.from_array(x, chunks=(13, 1))  # chunked along both axes: blocks are whole rows
    assert protocol.sample_view_streamed(lazy, rng=0).counts.sum() > 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        assert protocol.run(lazy, rng=0).shape == (2,)
    family = L2LSH(dimension=2, n_repetitions=5, bucket_width=2.0, n_buckets=8, seed=0)
    points = np.random.default_rng(10).standard_normal((40, 2))
    assert np.array_equal(RACE(family).update(da.from_array(points, chunks=7)).counts, RACE(family).update(points).counts)
