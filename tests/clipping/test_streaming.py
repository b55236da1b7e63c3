"""The clipped sums streamed in chunks of users, and with dropouts.

Statistical tests: false-alarm rate alpha = 1e-6 (split over the columns compared), fixed seeds.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from scipy import stats

from privsum.accounting import PLDPair, PrivacyGuarantee
from privsum.clipping import ClippedSum, ClippedVectorSum, SparseVectorAggregation, choose_instance, sub_domain_index
from privsum.clipping.instances import NoisySums
from privsum.exceptions import InvalidParameterError, PrivacyLeakWarning
from privsum.shuffle.noise import discrete_laplace_pmf
from privsum.shuffle.sparse import SparseMessageHistogram
from privsum.shuffle.streaming import UserChunks
from privsum.sums.multi_message import supported_security_bits
from privsum.sums.sparse_shares import SparseMultiMessageSum
from privsum.sums.split_and_mix import share_distance_bound
from privsum.testing import FALSE_ALARM_RATE, assert_matches_pmf, assert_same_distribution

N = 30
SPLIT = (0, 1, 9, 20, N)  # uneven chunks, one of a single user


def _chunks(x: np.ndarray, split: tuple[int, ...] = SPLIT) -> list[np.ndarray]:
    return [x[a:b] for a, b in itertools.pairwise(split)]


def _mixed(n_users: int = N, epsilon: float = 8.0) -> ClippedSum:
    """GKMPS21 on I_0 and I_1, BBGN20 on I_2 (domain U = 4)."""
    methods = ("correlated", "correlated", "multi-message")
    instances = tuple(
        choose_instance(epsilon=epsilon, delta=5e-7, n_users=n_users, domain=2**j, method=m) for j, m in enumerate(methods)
    )
    return ClippedSum(n_users=n_users, domain=4, instances=instances)


X = np.array([0, 1, 2, 3, 4] * (N // 5))


def _estimates(protocol: ClippedSum, view) -> np.ndarray:
    return protocol.sub_domain_estimates(view)[0].astype(int)


# --------------------------------------------------------------------------- 1-D: chunks == one run
def test_chunked_fast_view_has_the_law_of_one_faithful_run():
    """Summed per-chunk NB(m/n) noise shares == one run's messages: each S_j minus its truth is DLap(a_j)."""
    protocol = _mixed()
    rng = np.random.default_rng(100)
    runs = 1_500
    chunked = np.array([_estimates(protocol, protocol.sample_view_streamed(_chunks(X), rng=rng)) for _ in range(runs)])
    whole = np.array([_estimates(protocol, protocol.randomize(X, rng=rng)) for _ in range(runs)])
    truth = np.array([X[sub_domain_index(X) == j].sum() for j in range(3)])
    support = np.arange(-25, 26)
    alpha = FALSE_ALARM_RATE / 6
    for j, instance in enumerate(protocol.instances):
        assert_same_distribution(chunked[:, j], whole[:, j], alpha=alpha)
        ratio = instance.central_ratio if j < 2 else instance.noise_ratio
        assert_matches_pmf(chunked[:, j] - truth[j], support, discrete_laplace_pmf(support, ratio), alpha=alpha)


def test_chunked_faithful_view_has_the_law_of_one_fast_run():
    protocol = _mixed()
    rng = np.random.default_rng(101)
    runs = 800
    chunked = [protocol.sample_view_streamed(_chunks(X), rng=rng, path="faithful") for _ in range(runs)]
    assert all(isinstance(view, SparseMessageHistogram) for view in chunked)
    chunked_estimates = np.array([_estimates(protocol, view) for view in chunked])
    whole = np.array([protocol.sample_sub_domain_estimates(X, rng=rng)[0].astype(int) for _ in range(runs)])
    message_counts = np.array([view.total_messages for view in chunked])
    whole_counts = np.array([protocol.sample_view(X, rng=rng).total_messages for _ in range(runs)])
    for j in range(protocol.n_sub_domains):
        assert_same_distribution(chunked_estimates[:, j], whole[:, j], alpha=FALSE_ALARM_RATE / 4)
    assert_same_distribution(message_counts, whole_counts, alpha=FALSE_ALARM_RATE / 4)


@pytest.mark.parametrize("path", ["fast", pytest.param("faithful", marks=pytest.mark.slow)])
def test_chunked_run_equals_one_run_in_distribution(path):
    protocol = _mixed(epsilon=2.0)
    rng = np.random.default_rng(102 if path == "fast" else 103)
    runs = 1_000 if path == "fast" else 500
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # N users in chunks: no warning
        chunked = np.array([protocol.run(iter(_chunks(X)), rng=rng, path=path)[0] for _ in range(runs)])
    whole = np.array([protocol.run(X, rng=rng, path=path)[0] for _ in range(runs)])
    assert_same_distribution(chunked.astype(int), whole.astype(int))


def test_streams_memory_by_chunk_and_accepts_every_chunk_form():
    protocol = ClippedSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=2_000, domain=2**10)
    assert protocol.streams_chunks
    x = np.random.default_rng(104).integers(0, 40, size=(2_000, 2))
    partial = protocol.partial_view(x[:500], rng=0)
    assert isinstance(partial.histogram, NoisySums) and partial.n_users == 500
    assert partial.histogram.totals.shape == (2, protocol.n_sub_domains)  # O(k log U) per chunk, no message
    chunks = _chunks(x, (0, 500, 1_000, 1_999, 2_000))
    by_iterator = protocol.run(iter(chunks), rng=3)
    np.testing.assert_array_equal(by_iterator, protocol.run(UserChunks(chunks), rng=3))
    np.testing.assert_array_equal(by_iterator, protocol.run_streamed(chunks, rng=3))
    assert np.all(np.abs(by_iterator - x.sum(axis=0)) < 2_000)
    real = ClippedSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=2_000, domain=2**10, resolution=0.5)
    assert real.run(iter(_chunks(x / 2, (0, 700, 2_000))), rng=1).shape == (2,)
    with pytest.raises(InvalidParameterError, match="'x'"):
        protocol.run(iter([x[:10], np.full((3, 2), 2**10 + 1)]), rng=0)
    with pytest.raises(InvalidParameterError, match="'other'"):
        NoisySums(np.zeros((1, 2), dtype=int)) + NoisySums(np.zeros((1, 3), dtype=int))
    with pytest.raises(InvalidParameterError, match="'view'"):
        protocol.analyze(NoisySums(np.zeros((1, 3), dtype=int)))


def test_dask_array_streams_block_by_block():
    da = pytest.importorskip("dask.array")
    protocol = _mixed()
    lazy = da.from_array(np.stack([X, X[::-1]], axis=1), chunks=(7, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        assert protocol.run(lazy, rng=0).shape == (2,)
        assert protocol.run(lazy, rng=0, path="faithful").shape == (2,)


def test_distributed_run_streams_on_dask():
    pytest.importorskip("dask")
    import dask

    from privsum import distributed

    da = pytest.importorskip("dask.array")
    vector = ClippedVectorSum.from_privacy(epsilon=8.0, delta=1e-6, n_users=40, dimension=3, radius=1.0, levels=16)
    points = np.random.default_rng(105).normal(size=(40, 3)) * 0.2
    points /= np.maximum(1.0, np.linalg.norm(points, axis=1, keepdims=True))
    with dask.config.set(scheduler="synchronous"):
        assert distributed.run(vector, da.from_array(points, chunks=(10, 3)), rng=0).shape == (3,)
        assert distributed.run(_mixed(), [X[:10], X[10:]], rng=0, path="faithful").shape == (1,)


# --------------------------------------------------------------------------- vector sums: chunks == one run
def _ball(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    x = rng.normal(size=(n, d))
    return x * rng.uniform(0, 1, (n, 1)) / np.linalg.norm(x, axis=1, keepdims=True)


def test_vector_chunked_run_equals_one_faithful_run_in_distribution():
    protocol = ClippedVectorSum.from_privacy(epsilon=8.0, delta=1e-6, n_users=N, dimension=2, radius=1.0, levels=16)
    x = _ball(np.random.default_rng(106), N, 2)
    rng = np.random.default_rng(107)
    scale = protocol.step / math.sqrt(protocol.padded_dimension)  # outputs are integer multiples of this
    runs = 600
    chunked = np.array([protocol.run(iter(_chunks(x)), rng=rng) for _ in range(runs)])
    whole = np.array([protocol.run(x, rng=rng, path="faithful") for _ in range(runs)])
    for k in range(2):
        a, b = (np.round(values[:, k] / scale / 4).astype(int) for values in (chunked, whole))
        assert_same_distribution(a, b, alpha=FALSE_ALARM_RATE / 2)


def test_sparse_chunked_run_equals_one_faithful_run_in_distribution():
    protocol = SparseVectorAggregation.from_privacy(epsilon=6.0, delta=1e-6, n_users=N, dimension=4)
    rng = np.random.default_rng(108)
    x = (rng.random((N, 4)) < 0.4).astype(int)
    runs = 800
    chunked = np.array([protocol.run(iter(_chunks(x)), rng=rng) for _ in range(runs)])
    whole = np.array([protocol.run(x, rng=rng, path="faithful") for _ in range(runs)])
    faithful_chunked = np.array([protocol.run(iter(_chunks(x)), rng=rng, path="faithful") for _ in range(runs // 2)])
    for k in range(4):
        assert_same_distribution(chunked[:, k].astype(int), whole[:, k].astype(int), alpha=FALSE_ALARM_RATE / 8)
        assert_same_distribution(faithful_chunked[:, k].astype(int), whole[:, k].astype(int), alpha=FALSE_ALARM_RATE / 8)


# --------------------------------------------------------------------------- dropouts
def _nb_difference_epsilon(share: float, ratio: float, sensitivity: int) -> float:
    """Independent recomputation: log P(0) - log P(sensitivity) of NB(share) - NB(share) (log-convex on k >= 0)."""
    nb = stats.nbinom(share, 1 - ratio)
    j = np.arange(0, int(200 / (1 - ratio)))
    return math.log(float((nb.pmf(j) ** 2).sum()) / float((nb.pmf(j + sensitivity) * nb.pmf(j)).sum()))


def _bbgn_achieved(instance: SparseMultiMessageSum, m: int) -> PrivacyGuarantee:
    epsilon = _nb_difference_epsilon(m / instance.n_users, instance.noise_ratio, instance.domain)
    bbgn = supported_security_bits(instance.n_shares, instance.modulus, m)
    chi_square = -math.log2(share_distance_bound(m, instance.n_shares, instance.modulus))  # the larger sigma backs delta
    bits = min(instance.share_security_bits, max(bbgn, chi_square))
    return PrivacyGuarantee(epsilon, min((1 + math.exp(epsilon)) * 2.0**-bits, 1 - 1e-16))


def _shares_only(n_users: int = 100) -> ClippedSum:
    return ClippedSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=n_users, domain=4, method="multi-message")


def test_fewer_participants_clipped_sum_reports_the_weaker_recomputed_guarantee():
    protocol = _shares_only()
    achieved = protocol.event_for_participants(60).guarantee
    parts = [_bbgn_achieved(instance, 60) for instance in protocol.instances]
    assert achieved.epsilon == pytest.approx(2 * max(p.epsilon for p in parts), rel=1e-6)
    assert achieved.delta == pytest.approx(2 * max(p.delta for p in parts), rel=1e-6)
    assert achieved.epsilon > protocol.guarantee.epsilon and achieved.delta > protocol.guarantee.delta
    assert achieved.neighbouring == protocol.guarantee.neighbouring
    assert protocol.event_for_participants(100) == protocol.event
    assert protocol.event_for_participants(3).guarantee.epsilon == math.inf  # BBGN20's bound backs nothing
    with pytest.raises(InvalidParameterError, match="'n_participants'"):
        protocol.event_for_participants(101)
    with pytest.raises(InvalidParameterError, match="'x'"):
        protocol.run(iter([np.ones(100, dtype=int), np.ones(1, dtype=int)]), rng=0)


def test_fewer_participants_mixed_instances_compose_each_instances_own_guarantee():
    protocol = _mixed(n_users=100, epsilon=1.0)
    achieved = protocol.event_for_participants(70).guarantee
    gkmps = [p.verified_epsilon(p.delta, n_participants=70) for p in protocol.instances[:2]]
    shares = _bbgn_achieved(protocol.instances[2], 70)
    assert achieved.epsilon == pytest.approx(2 * max(*gkmps, shares.epsilon), rel=1e-6)
    assert achieved.delta == pytest.approx(2 * max(protocol.instances[0].delta, shares.delta), rel=1e-6)
    assert achieved.epsilon > protocol.guarantee.epsilon


def test_fewer_participants_warn_once_and_fast_matches_faithful():
    """With m < n users both paths carry NB(m/n) - NB(m/n) noise (not DLap): same law, one warning per run."""
    protocol = _mixed()
    x = X[:12]
    with pytest.warns(PrivacyLeakWarning) as record:
        protocol.run(iter(_chunks(x, (0, 5, 12))), rng=0)
    assert len([w for w in record if issubclass(w.category, PrivacyLeakWarning)]) == 1
    rng = np.random.default_rng(109)
    runs = 1_200
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        fast = np.array([protocol.sample_sub_domain_estimates(x, rng=rng)[0].astype(int) for _ in range(runs)])
        faithful = np.array([_estimates(protocol, protocol.randomize(x, rng=rng)) for _ in range(runs)])
    for j in range(protocol.n_sub_domains):
        assert_same_distribution(fast[:, j], faithful[:, j], alpha=FALSE_ALARM_RATE / 3)


def test_more_participants_are_accepted_by_correlated_instances_only():
    protocol = ClippedSum.from_privacy(epsilon=2.0, delta=1e-6, n_users=20, domain=2, method="correlated")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        estimate = protocol.run(iter([np.ones(20, dtype=int), np.ones(10, dtype=int)]), rng=0)
    assert abs(estimate[0] - 30) < 40
    assert protocol.event_for_participants(30) == protocol.event


def test_fewer_participants_vector_sum_composes_like_its_headline():
    for calibration in ("analytic", "tight"):
        protocol = ClippedVectorSum.from_privacy(
            epsilon=8.0, delta=1e-6, n_users=40, dimension=3, radius=1.0, levels=16, calibration=calibration
        )
        event = protocol.event_for_participants(25)
        coordinate = protocol.coordinate
        parts = [_bbgn_achieved(instance, 25) for instance in coordinate.instances]
        per = PrivacyGuarantee(2 * max(p.epsilon for p in parts), 2 * max(p.delta for p in parts))
        assert event.event.guarantee.epsilon == pytest.approx(per.epsilon, rel=1e-6)
        count = protocol.padded_dimension
        slack = protocol.headline.delta - count * coordinate.guarantee.delta
        delta = count * per.delta + slack
        if calibration == "analytic":
            advanced = per.epsilon * math.sqrt(2 * count * math.log(1 / slack)) + count * per.epsilon * math.expm1(per.epsilon)
            expected = min(count * per.epsilon, advanced)
        else:
            expected = min(count * per.epsilon, PLDPair.from_guarantee(per).self_compose(count).epsilon(delta))
        assert event.guarantee.epsilon == pytest.approx(expected, rel=1e-5)
        assert event.guarantee.delta == pytest.approx(delta, rel=1e-6)
        assert event.guarantee.epsilon > protocol.guarantee.epsilon
        with pytest.raises(InvalidParameterError, match="'n_participants'"):
            protocol.event_for_participants(41)


def test_fewer_participants_sparse_aggregation_composes_like_its_headline():
    protocol = SparseVectorAggregation.from_privacy(epsilon=6.0, delta=1e-6, n_users=40, dimension=4)
    achieved = protocol.event_for_participants(30).guarantee
    count = _bbgn_achieved(protocol.count, 30)
    block_delta = protocol.headline.delta / 2 - protocol.count.guarantee.delta
    levels = []
    for j, instance in enumerate(protocol.levels):
        per, touched = _bbgn_achieved(instance, 30), min(2**j, 4)
        if touched == 1:
            block = per
        else:
            slack = block_delta - touched * instance.guarantee.delta
            advanced = per.epsilon * math.sqrt(2 * touched * math.log(1 / slack)) + touched * per.epsilon * math.expm1(
                per.epsilon
            )
            block = PrivacyGuarantee(min(touched * per.epsilon, advanced), touched * per.delta + slack)
        levels.append((count.epsilon + block.epsilon, count.delta + block.delta))
    assert achieved.epsilon == pytest.approx(2 * max(e for e, _ in levels), rel=1e-5)
    assert achieved.delta == pytest.approx(2 * max(d for _, d in levels), rel=1e-6)
    assert achieved.epsilon > protocol.guarantee.epsilon
    with pytest.warns(PrivacyLeakWarning):
        protocol.run(np.zeros((30, 4), dtype=int), rng=0)
