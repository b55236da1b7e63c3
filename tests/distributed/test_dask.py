"""Distributed runs on a local Dask cluster of 4 worker processes equal local runs in distribution (alpha = 1e-6)."""

from __future__ import annotations

import numpy as np
import pytest

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

from privsum import distributed as privsum_distributed  # noqa: E402
from privsum.bitsum import CentralLaplaceBitSum, RRBitSum, ThreeNBBitSum  # noqa: E402
from privsum.exceptions import InvalidParameterError  # noqa: E402
from privsum.kde import ShuffledKDE  # noqa: E402
from privsum.lsq import L2LSH, RandomFourierFeatures  # noqa: E402
from privsum.sketches import RACE  # noqa: E402
from privsum.sums import CorrelatedNoiseSum  # noqa: E402
from privsum.testing import assert_same_distribution  # noqa: E402
from tests.shuffle.toy import ToyFlip  # noqa: E402

N = 400
RUNS = 150


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=4, processes=True, threads_per_worker=1, dashboard_address=None)
    with distributed.Client(cluster) as connected:
        yield connected
    cluster.close()


def _many_views(client, protocol, users, seeds):
    """``RUNS`` distributed histograms computed in one graph (each run with its own spawned streams)."""
    lazies, drivers = [], []
    n_chunks = len(privsum_distributed.engine._chunks(users))
    for seed in seeds:
        streams = privsum_distributed.spawn_seeds(seed, n_chunks + 1)
        lazies.append(privsum_distributed.partial_view(protocol, users, seeds=streams[:-1]))
        drivers.append(np.random.default_rng(streams[-1]))
    partials = client.gather(client.compute(lazies))
    return [protocol.complete_view(p, rng=g) for p, g in zip(partials, drivers, strict=True)]


CASES = {
    "3nb": (
        ThreeNBBitSum(n_users=N, noise_ratio=0.6, flooding_shape=3.0, flooding_ratio=0.5, delta=1e-6),
        lambda rng: (rng.random((N, 3)) < 0.3).astype(np.int8),
    ),
    "central": (CentralLaplaceBitSum(n_users=N, scale=2.0, noise_source="numpy"), lambda rng: rng.random((N, 2)) < 0.5),
    "correlated": (
        CorrelatedNoiseSum.from_privacy(epsilon=2.0, delta=1e-6, n_users=N, domain=2),
        lambda rng: rng.integers(0, 3, size=(N, 2)),
    ),
    "kde": (
        ShuffledKDE(
            family=RandomFourierFeatures(dimension=2, n_repetitions=2, seed=0),
            bitsum=RRBitSum(n_users=N, flip_probability=0.2, delta=1e-6),
            chunk_size=64,
        ),
        lambda rng: rng.standard_normal((N, 2)),
    ),
}


@pytest.mark.parametrize(
    "name", ["3nb", *(pytest.param(name, marks=pytest.mark.slow) for name in ("central", "correlated", "kde"))]
)
def test_dask_run_equals_the_local_run_in_distribution(client, name):
    protocol, make_input = CASES[name]
    x = make_input(np.random.default_rng(1)).astype(np.int64) if name != "kde" else make_input(np.random.default_rng(1))
    users = da.from_array(x, chunks=(N // 4, -1))  # 4 row blocks: 4 worker tasks per run
    remote = _many_views(client, protocol, users, range(RUNS))
    local = [protocol.sample_view(x, rng=10_000 + seed) for seed in range(RUNS)]
    columns = local[0].counts.size
    for column in range(columns):
        assert_same_distribution(
            np.array([v.counts.ravel()[column] for v in remote]),
            np.array([v.counts.ravel()[column] for v in local]),
            alpha=1e-6 / columns,
        )


def test_run_on_the_cluster_is_reproducible_and_checks_participants(client):
    protocol = RRBitSum(n_users=N, flip_probability=0.1, delta=1e-6)
    bits = da.from_array(np.ones((N, 2), dtype=np.int8), chunks=(100, 1))  # columns split: rechunked to whole rows
    first = privsum_distributed.run(protocol, bits, rng=5, client=client)
    assert np.array_equal(first, privsum_distributed.run(protocol, bits, rng=5, client=client))
    assert np.array_equal(first.shape, (2,))
    chunks = [np.ones((50, 2), dtype=np.int8), np.ones((50, 2), dtype=np.int8)]
    with pytest.warns(Warning, match="event_for_participants"):
        privsum_distributed.run(protocol, chunks, rng=0, client=client)
    kde = CASES["kde"][0]
    released = privsum_distributed.run(kde, da.from_array(np.zeros((N, 2)), chunks=100), rng=0, client=client)
    assert released.n_users == N and released.guarantee == kde.guarantee


def test_chunk_streams_are_independent():
    seeds = privsum_distributed.spawn_seeds(3, 4)
    draws = [np.random.default_rng(seed).random(1000) for seed in seeds]
    assert len({tuple(d[:5]) for d in draws}) == 4
    assert [s.spawn_key for s in privsum_distributed.spawn_seeds(np.random.SeedSequence(3), 2)] == [(0,), (1,)]


def test_race_built_on_the_cluster_equals_the_local_sketch(client):
    family = L2LSH(dimension=2, n_repetitions=20, bucket_width=2.0, n_buckets=16, seed=0)
    points = np.random.default_rng(2).standard_normal((1000, 2))
    remote = privsum_distributed.build_race(family, da.from_array(points, chunks=(130, 2)), client=client)
    local = RACE(family).update(points)
    assert np.array_equal(remote.counts, local.counts) and remote.n_updates == 1000


def test_bad_inputs_raise():
    protocol = RRBitSum(n_users=N, flip_probability=0.1, delta=1e-6)
    with pytest.raises(InvalidParameterError, match="'users'"):
        privsum_distributed.run(protocol, np.ones((3, 2)))
    with pytest.raises(InvalidParameterError, match="'users'"):
        privsum_distributed.run(protocol, [])
    with pytest.raises(InvalidParameterError, match="'protocol'"):
        privsum_distributed.run(ToyFlip(flip_probability=0.2), [np.ones((3, 1), dtype=int)])
    with pytest.raises(InvalidParameterError, match="'seeds'"):
        privsum_distributed.partial_view(protocol, [np.ones((3, 1), dtype=int)], seeds=[])
    with pytest.raises(InvalidParameterError, match="'family'"):
        privsum_distributed.build_race("not a family", [np.ones((3, 2))])


def test_secure_root_keeps_every_worker_stream_secure(monkeypatch):
    pytest.importorskip("randomgen")
    seen = []
    original = privsum_distributed.engine.generator_from_seed

    def recording(seed, *, secure):
        generator = original(seed, secure=secure)
        seen.append(type(generator.bit_generator).__name__)
        return generator

    monkeypatch.setattr(privsum_distributed.engine, "generator_from_seed", recording)
    protocol = RRBitSum(n_users=N, flip_probability=0.1, delta=1e-6)
    chunks = [np.ones((N // 2, 2), dtype=np.int8)] * 2
    with dask.config.set(scheduler="synchronous"):  # the tasks run in this process, so the recorder sees them
        estimate = privsum_distributed.run(protocol, chunks, rng="secure")
    assert estimate.shape == (2,)
    assert seen == ["ChaCha"] * 3  # two chunks and the driver
    seen.clear()
    with dask.config.set(scheduler="synchronous"):
        privsum_distributed.run(protocol, chunks, rng=0)
    assert seen == ["PCG64"] * 3
