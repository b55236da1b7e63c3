"""The per-sender cap of composite protocols (many sub-instances behind one deployment).

Stated on docs/wire-format.md ("Per-sender caps"): the total is the **sum** of the parts' totals
(an honest user sends to every part), the per-instance cap is the **largest** part's (the wire
states one ``c``, enforced alike on every instance; the composites' `manipulation_bound` assumes
that), the exceed probability the sum of the parts' (a union bound). Checked here against the
messages honest users actually send, part by part.
"""

from __future__ import annotations

import numpy as np
import pytest

from privsum.parties import Deployment, Shuffler
from privsum.wire import WireFormatError
from tests.parties.protocols import inputs, protocol

COMPOSITES = ("ClippedSum", "SparseVectorAggregation", "ShuffledKDE", "VectorSumKDEProtocol")


def part_caps(proto, deployment):
    """Each wire instance's own part's cap (``c_i``), from the parts' stated caps."""
    exceed, n_instances = deployment.exceed_probability, deployment.n_instances
    name = type(proto).__name__
    if name == "ClippedSum":
        width = proto.n_sub_domains
        caps = [part.sender_cap(n_instances // width, exceed / width).per_instance for part in proto.instances]
        return np.tile(caps, n_instances // width)
    if name == "SparseVectorAggregation":
        share = exceed / (1 + proto.n_levels)
        count = [proto.count.sender_cap(proto.n_levels, share).per_instance] * proto.n_levels
        levels = [[level.sender_cap(proto.dimension, share).per_instance] * proto.dimension for level in proto.levels]
        return np.concatenate([count, *levels])
    part = proto.bitsum if name == "ShuffledKDE" else proto.vector_sum
    return np.full(n_instances, part.sender_cap(n_instances, exceed).per_instance)


def sent_per_instance(proto, deployment, n_users, seed):
    """How many messages each of ``n_users`` honest users sends to each wire instance."""
    batch, counts = proto.encode_users(inputs(type(proto).__name__, n_users, 1, np.random.default_rng(seed)), rng=seed)
    users = np.repeat(np.arange(n_users), counts)
    return np.bincount(users * deployment.n_instances + batch.instances,
                       minlength=n_users * deployment.n_instances).reshape(n_users, -1)


@pytest.mark.parametrize("name", COMPOSITES)
def test_the_composite_cap_is_the_sum_of_the_parts_and_their_largest_per_instance(name):
    proto = protocol(name, 100)
    deployment = Deployment(proto)
    caps = part_caps(proto, deployment)
    assert deployment.cap.total == caps.sum()
    assert deployment.cap.per_instance == caps.max()
    sent = np.vstack([sent_per_instance(proto, deployment, 100, seed) for seed in range(3)])
    assert np.all(sent <= caps[None, :])  # every honest user within its own part's cap, instance by instance
    assert np.all(sent.sum(axis=1) <= deployment.cap.total)


def test_the_total_binds_where_the_parts_caps_differ():
    """Sparse vector aggregation: the largest per-instance cap on every instance would exceed the sum; refused."""
    proto = protocol("SparseVectorAggregation", 100)
    deployment = Deployment(proto)
    caps, spec = part_caps(proto, deployment), deployment.spec
    assert caps.min() < caps.max() and caps.max() * deployment.n_instances > deployment.cap.total
    shuffler = Shuffler(deployment, rng=0)
    with pytest.raises(WireFormatError, match="cap"):  # the largest cap in every instance: over the total
        shuffler.submit("mallory", _over_cap_upload(spec, deployment.cap.per_instance * deployment.n_instances))
    at_the_parts_caps = np.repeat(np.arange(deployment.n_instances), caps)
    shuffler.submit("honest-shaped", spec.encode_upload(spec.fields(at_the_parts_caps, np.zeros_like(at_the_parts_caps))))
    assert shuffler.n_senders == 1


def _over_cap_upload(spec, count):
    """An upload header declaring ``count`` messages (over the total), with a payload of that many zero fields."""
    header = spec.encode_upload(spec.fields(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)))[:-4]
    return header + count.to_bytes(4, "big") + bytes(-(-count * spec.field_bits // 8))
