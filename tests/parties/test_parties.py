"""Client, shuffler and analyzer of every protocol: the party path against the in-process run."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

from privsum.bitsum import RRBitSum, ThreeNBBitSum
from privsum.exceptions import InvalidParameterError, PrivacyLeakWarning
from privsum.parties import Analyzer, Client, Deployment, Shuffler
from privsum.shuffle import MessageHistogram
from privsum.testing.stats import assert_matches_pmf, assert_same_distribution
from privsum.wire import WireFormatError
from tests.parties.protocols import KDES, LABEL_ROUNDS, NAMES, inputs, n_instances, protocol


def party_run(deployment, x, *, seed=0, batches=1):
    """Every row of ``x`` through client, shuffler (``batches`` releases) and analyzer."""
    client, shuffler, analyzer = Client(deployment, rng=seed), Shuffler(deployment, rng=seed + 1), Analyzer(deployment)
    uploads = client.encode_many(x)
    for part in np.array_split(np.arange(len(uploads)), batches):
        for sender in part:
            shuffler.submit(int(sender), uploads[sender])
        analyzer.absorb(shuffler.release())
    return analyzer


@pytest.mark.parametrize("name", NAMES)
def test_every_protocol_round_trips_through_the_parties(name):
    rng = np.random.default_rng(1)
    proto = protocol(name, 60)
    deployment = Deployment(proto, n_instances=n_instances(name, 2), min_senders=20)
    x = inputs(name, 60, 2, rng)
    analyzer = party_run(deployment, x, batches=3)
    assert analyzer.n_participants == 60 and analyzer.n_batches == 3
    estimate = analyzer.estimate()
    if name in KDES:
        estimate = estimate(np.zeros((1, 2)))
        x = np.zeros((1, 1))
    if name == "JointClassKDEProtocol":  # every class's density and noisy size
        densities, sizes = estimate
        assert len(densities) == 2 and sizes.shape == (2,) and densities[0](np.zeros((1, 2))).shape == (1,)
    elif name in LABEL_ROUNDS:  # the reported class counts
        assert estimate.shape == (3,) and estimate.sum() == 60
    else:
        assert np.shape(estimate) == np.shape(np.asarray(x).sum(axis=0))
    expected = proto.guarantee_for_participants(20)  # three batches of 20: each user hides in its own batch
    assert analyzer.guarantee.epsilon == expected.epsilon and analyzer.guarantee.delta >= expected.delta


@pytest.mark.parametrize(("name", "columns"), [*((name, 3) for name in NAMES), ("RRBitSum", 1), ("RRBitSum", 768),
                                               ("ThreeNBBitSum", 9), ("PureBitSum", 16)])
def test_client_uploads_are_the_generic_encoding_of_the_same_draws(name, columns):
    """`Client.encode_many` (tags packed once per batch of users) is byte-identical to `WireSpec.encode_upload` per user."""
    deployment = Deployment(protocol(name, 40), n_instances=n_instances(name, columns))
    x = inputs(name, 40, columns, np.random.default_rng(4))
    batch, counts = deployment.protocol.encode_users(x, rng=np.random.default_rng(5))
    spec, ends = deployment.spec, np.cumsum(counts)
    fields = spec.fields(batch.instances, deployment.value_indices(batch.values))
    users = np.split(fields, ends[:-1])
    if spec.positional:  # listed instance by instance, each instance's messages in the order drawn
        users = [user[np.argsort(user >> spec.value_bits, kind="stable")] for user in users]
    expected = [spec.encode_upload(user) for user in users]
    assert Client(deployment, rng=np.random.default_rng(5)).encode_many(x) == expected


def test_rr_party_counts_follow_the_exact_law():
    """Each instance's count of reported ones is Bin(S, 1-q) + Bin(n-S, q) (alpha = 1e-6)."""
    n, ones, n_columns = 40, 15, 1500
    proto = RRBitSum(n_users=n, flip_probability=0.2, delta=1e-3)
    bits = np.zeros((n, n_columns), dtype=np.int8)
    bits[:ones] = 1
    view = party_run(Deployment(proto, n_instances=n_columns), bits).view
    q = proto.flip_probability
    pmf = np.convolve(stats.binom.pmf(np.arange(ones + 1), ones, 1 - q), stats.binom.pmf(np.arange(n - ones + 1), n - ones, q))
    assert_matches_pmf(view.count(1), np.arange(n + 1), pmf)


@pytest.mark.parametrize("name", ["ThreeNBBitSum", "PureBitSum", "BlanketRealSum", "CorrelatedNoiseSum", "MultiMessageSum"])
def test_party_view_has_the_distribution_of_the_in_process_view(name):
    """Per instance (independent, identical columns): message total and value-weighted total (alpha = 1e-6 each)."""
    n, n_columns = 30, 1200
    proto = protocol(name, n)
    column = inputs(name, n, 1, np.random.default_rng(2))
    x = np.repeat(column, n_columns, axis=1)
    party = party_run(Deployment(proto, n_instances=n_columns), x).view
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        direct = proto.sample_view(x, rng=3)
    weights = np.arange(len(party.alphabet))
    assert_same_distribution(party.counts.sum(axis=1), direct.counts.sum(axis=1))
    assert_same_distribution(party.counts @ weights, direct.counts @ weights)


@pytest.mark.parametrize(
    "name", ["ShuffledVectorSum", pytest.param("SkellamVectorSum", marks=pytest.mark.slow),
             "ShuffledKDE", "ClippedSum", pytest.param("ClippedVectorSum", marks=pytest.mark.slow),
             "SparseVectorAggregation", "VectorSumKDEProtocol", "LabelRound", "JointClassKDEProtocol"]
)
def test_party_estimates_match_run(name):
    """Repeated small runs: the first coordinate's estimate (the KDE at the origin), party path against `run` (alpha = 1e-6).

    The joint class sum's first value is class 0's density at the origin; its `run` takes points and labels apart.
    """
    n, repeats = 12, 150
    proto = protocol(name, n)
    x = inputs(name, n, 1, np.random.default_rng(4))
    deployment = Deployment(proto, min_senders=1)
    run = (lambda rng: proto.run(x[:, :-1], x[:, -1].astype(int), rng=rng)) if name == "JointClassKDEProtocol" else (
        lambda rng: proto.run(x, rng=rng))
    party, direct = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        for repeat in range(repeats):
            party.append(first_value(party_run(deployment, x, seed=10 * repeat).estimate()))
            direct.append(first_value(run(repeat)))
    party, direct = np.asarray(party), np.asarray(direct)
    bins = np.quantile(np.concatenate([party, direct]), np.linspace(0, 1, 9)[1:-1])  # octiles of the pooled sample
    assert np.std(party) > 0
    assert_same_distribution(np.digitize(party, bins), np.digitize(direct, bins))


def first_value(estimate):
    """The first coordinate of an estimate, or a KDE function's value at the origin (the first class's, for the joint sum)."""
    if isinstance(estimate, tuple):  # the joint class sum: (densities, sizes)
        estimate = estimate[0][0]
    return estimate(np.zeros((1, 2)))[0] if callable(estimate) else estimate[0]


def test_3nb_cap_redraws_are_counted_in_delta():
    proto = ThreeNBBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=100)
    deployment = Deployment(proto, n_instances=1, exceed_probability=1e-9)
    analyzer = party_run(deployment, np.ones((100, 1), dtype=int))
    extra = (1 + np.e) * 100 * deployment.cap.exceed_probability
    assert 0 < deployment.cap.exceed_probability <= 1e-9
    assert analyzer.guarantee.delta == pytest.approx(1e-6 + extra, rel=1e-9)


def test_shuffler_enforces_cap_identity_and_minimum():
    proto = ThreeNBBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=10)
    deployment = Deployment(proto, n_instances=2)
    shuffler, client = Shuffler(deployment, rng=0), Client(deployment, rng=1)
    spec = deployment.spec
    crowded = spec.encode_upload(spec.fields(np.zeros(deployment.cap.per_instance + 1, dtype=int),
                                             np.ones(deployment.cap.per_instance + 1, dtype=int)))
    with pytest.raises(WireFormatError, match="per instance"):
        shuffler.submit("mallory", crowded)
    shuffler.submit("alice", client.encode([1, 0]))
    with pytest.raises(InvalidParameterError, match="sender"):
        shuffler.submit("alice", client.encode([1, 0]))
    with pytest.raises(InvalidParameterError, match="min_senders"):
        shuffler.release()
    assert shuffler.n_senders == 1


def test_a_sender_uploads_once_per_collection_and_the_smallest_batch_sets_the_guarantee():
    proto = RRBitSum(n_users=4, flip_probability=0.25, delta=0.01)
    deployment = Deployment(proto, n_instances=1, min_senders=2)
    shuffler, client, analyzer = Shuffler(deployment, rng=0), Client(deployment, rng=1), Analyzer(deployment)
    for sender in ("a", "b", "c"):
        shuffler.submit(sender, client.encode([1]))
    analyzer.absorb(shuffler.release())
    with pytest.raises(InvalidParameterError, match="collection"):
        shuffler.submit("a", client.encode([1]))
    for sender in ("d", "e"):
        shuffler.submit(sender, client.encode([0]))
    analyzer.absorb(shuffler.release())
    assert (analyzer.n_participants, analyzer.guarantee_crowd) == (5, 2)
    assert analyzer.guarantee == proto.guarantee_for_participants(2) != proto.guarantee_for_participants(5)


def test_analyzer_refuses_replays_foreign_and_corrupt_batches_without_changing_state():
    proto = RRBitSum(n_users=5, flip_probability=0.25, delta=0.1)
    deployment = Deployment(proto, n_instances=3)
    other = Deployment(proto, n_instances=3, min_senders=4)  # another configuration
    batch = party_run(deployment, np.ones((5, 3), dtype=int), batches=1)
    analyzer = Analyzer(deployment)
    shuffler = Shuffler(deployment, rng=0)
    for sender in range(5):
        shuffler.submit(sender, Client(deployment, rng=sender).encode([1, 0, 1]))
    released = shuffler.release()
    analyzer.absorb(released)
    before = (analyzer.view, analyzer.n_participants, analyzer.n_batches)
    bad = [released, released[:-1], released + b"\0", Analyzer(other).deployment.spec.encode_batch(
        np.zeros(1, dtype=np.uint32), n_senders=1, batch_id=bytes(16))]
    for data in bad:
        with pytest.raises(WireFormatError):
            analyzer.absorb(data)
        assert (analyzer.view, analyzer.n_participants, analyzer.n_batches) == before
    assert batch.n_participants == 5


def test_deployment_file_round_trip_and_refusals(tmp_path):
    deployment = Deployment(ThreeNBBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=50), n_instances=3)
    path = tmp_path / "protocol.json"
    deployment.save(path)
    assert Deployment.load(path).fingerprint == deployment.fingerprint
    content = deployment.to_file_dict() | {"fingerprint": "00" * 32}
    with pytest.raises(InvalidParameterError, match="fingerprint"):
        Deployment.from_file_dict(content)
    with pytest.raises(InvalidParameterError, match="protocol"):
        Deployment.from_file_dict(deployment.to_file_dict() | {"protocol": "Nope"})


def test_client_refuses_inputs_for_another_number_of_instances():
    deployment = Deployment(RRBitSum(n_users=5, flip_probability=0.25, delta=0.1), n_instances=3)
    with pytest.raises(InvalidParameterError, match="instances"):
        Client(deployment, rng=0).encode([1, 0])


def test_default_randomness_is_the_secure_stream():
    pytest.importorskip("randomgen", reason="the default CSPRNG needs privsum[secure] (included in privsum[serve])")
    deployment = Deployment(RRBitSum(n_users=5, flip_probability=0.25, delta=0.1), n_instances=1)
    client, shuffler = Client(deployment), Shuffler(deployment)
    assert type(client._generator.bit_generator).__name__ == "ChaCha"
    assert type(shuffler._generator.bit_generator).__name__ == "ChaCha"
    assert isinstance(Analyzer(deployment).view, MessageHistogram)


def test_positional_shuffler_permutes_each_coordinate_uniformly_and_independently():
    """Skellam shares (positional): whose share comes first in coordinates 0 and 1 is uniform on 3 x 3 pairs (alpha = 1e-6)."""
    proto = protocol("SkellamVectorSum", 100)
    deployment = Deployment(proto, min_senders=3)
    spec = deployment.spec
    assert deployment.positional and spec.field_bits == spec.value_bits
    instances = spec.positional_instances(1)
    uploads = [spec.encode_upload(spec.fields(instances, np.full(instances.size, sender))) for sender in range(3)]
    shuffler, firsts = Shuffler(deployment, rng=5), []
    for repeat in range(1800):
        for sender, upload in enumerate(uploads):
            shuffler.submit((repeat, sender), upload)
        batch = spec.decode_batch(shuffler.release())
        rows = spec.split(batch.fields)[1].reshape(spec.n_instances, -1)
        assert np.array_equal(np.sort(rows, axis=1), np.repeat(np.arange(3), spec.positional)[None, :].repeat(4, axis=0))
        firsts.append(3 * rows[0, 0] + rows[1, 0])
    assert_matches_pmf(np.asarray(firsts), np.arange(9), np.full(9, 1 / 9))


def test_users_without_messages_upload_a_header_alone():
    """A random-count protocol may draw no message for a user: the upload is the header and m = 0."""
    proto = ThreeNBBitSum(n_users=10, noise_ratio=1e-12, flooding_shape=0.0, flooding_ratio=0.0, delta=0.5)
    deployment = Deployment(proto, n_instances=2)
    uploads = Client(deployment, rng=0).encode_many(np.zeros((3, 2), dtype=int))
    assert all(len(upload) == deployment.spec.upload_header_bytes for upload in uploads)
    assert all(deployment.spec.decode_upload(upload).size == 0 for upload in uploads)


def test_a_kde_over_a_central_vector_sum_has_no_parties():
    from privsum.lsq import RandomFourierFeatures
    from privsum.parties import VectorSumKDEProtocol
    from privsum.sums import CentralGaussianVectorSum

    family = RandomFourierFeatures(dimension=2, n_repetitions=2, seed=1)
    with pytest.raises(InvalidParameterError, match="shuffled vector sum"):
        VectorSumKDEProtocol.from_privacy(family=family, protocol=CentralGaussianVectorSum, epsilon=1.0, delta=1e-6,
                                          n_users=50)


def test_sparse_view_of_several_batches_counts_every_message():
    """Shares modulo q (a sparse view): the absorbed view equals the histogram of every message of every batch."""
    from privsum.shuffle.sparse import SparseMessageHistogram

    proto = protocol("SkellamVectorSum", 30)
    deployment = Deployment(proto, min_senders=10)
    client, shuffler, analyzer = Client(deployment, rng=0), Shuffler(deployment, rng=1), Analyzer(deployment)
    assert not analyzer.dense
    uploads = client.encode_many(inputs("SkellamVectorSum", 30, 4, np.random.default_rng(0)))
    fields = []
    for part in np.array_split(np.arange(30), 3):
        for sender in part:
            shuffler.submit(int(sender), uploads[sender])
        batch = shuffler.release()
        fields.append(deployment.spec.decode_batch(batch).fields)
        analyzer.absorb(batch)
    instances, indices = deployment.spec.split(np.concatenate(fields))
    values = deployment.values_of(indices)
    expected = SparseMessageHistogram.from_pairs(instances, values, np.ones(values.size, dtype=np.int64), 4)
    view = analyzer.view
    assert view == expected and view.total_messages == values.size == 30 * deployment.cap.total
    assert view.counts.max() > 1  # repeated shares across batches were coalesced
