"""Random and mutated bytes at every wire parser: a clear refusal or a valid parse, never a crash or a state change.

Parsers: `WireSpec.decode_upload`, `WireSpec.decode_batch`, `WireSpec.batch_counts`,
`Shuffler.submit`, `Analyzer.absorb` (dense and sparse views), `Deployment.from_file_dict`.
"""

from __future__ import annotations

import contextlib
import copy
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from privsum.bitsum import RRBitSum, ThreeNBBitSum
from privsum.exceptions import InvalidParameterError
from privsum.parties import Analyzer, Client, Deployment, Shuffler
from privsum.sums import SkellamVectorSum

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _deployments():
    rr = Deployment(RRBitSum(n_users=3, flip_probability=0.25, delta=0.1), n_instances=5, min_senders=1)
    nb = Deployment(ThreeNBBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=3), n_instances=2, min_senders=1)
    skellam = Deployment(SkellamVectorSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=3, dimension=2, norm_bound=1.0),
                         min_senders=1)
    return {
        "rr": (rr, np.array([[1, 0, 1, 1, 0]])),
        "3nb": (nb, np.array([[1, 0]])),
        "skellam": (skellam, np.array([[0.3, 0.1]])),
    }


DEPLOYMENTS = _deployments()


def _samples(key):
    deployment, user = DEPLOYMENTS[key]
    upload = Client(deployment, rng=0).encode(user[0])
    shuffler = Shuffler(deployment, rng=1)
    shuffler.submit("a", upload)
    return deployment, upload, shuffler.release()


SAMPLES = {key: _samples(key) for key in DEPLOYMENTS}


def mutate(data: bytes, edits: list[tuple[int, int]], cut: int | None, extra: bytes) -> bytes:
    """Overwrite bytes at positions (modulo the length), truncate, append."""
    buffer = bytearray(data)
    for position, value in edits:
        if buffer:
            buffer[position % len(buffer)] = value
    if cut is not None:
        buffer = buffer[: cut % (len(buffer) + 1)]
    return bytes(buffer) + extra


EDITS = st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=4)


def _accepts_or_refuses(call, data):
    try:
        call(data)
    except InvalidParameterError:
        return False
    return True


@pytest.mark.parametrize("key", sorted(DEPLOYMENTS))
@SETTINGS
@given(data=st.binary(max_size=300), edits=EDITS, cut=st.none() | st.integers(0, 10**6), extra=st.binary(max_size=3),
       use_sample=st.booleans())
def test_upload_parsers(key, data, edits, cut, extra, use_sample):
    deployment, upload, _ = SAMPLES[key]
    candidate = mutate(upload, edits, cut, extra) if use_sample else data
    _accepts_or_refuses(deployment.spec.decode_upload, candidate)
    shuffler = Shuffler(deployment, rng=0)
    if not _accepts_or_refuses(lambda b: shuffler.submit("s", b), candidate):
        assert shuffler.n_senders == 0  # a refused upload is not held


@pytest.mark.parametrize("key", sorted(DEPLOYMENTS))
@SETTINGS
@given(data=st.binary(max_size=300), edits=EDITS, cut=st.none() | st.integers(0, 10**6), extra=st.binary(max_size=3),
       use_sample=st.booleans())
def test_batch_parsers_leave_the_analyzer_unchanged_on_refusal(key, data, edits, cut, extra, use_sample):
    deployment, _, batch = SAMPLES[key]
    candidate = mutate(batch, edits, cut, extra) if use_sample else data
    _accepts_or_refuses(deployment.spec.decode_batch, candidate)
    if Analyzer(deployment).dense:
        _accepts_or_refuses(deployment.spec.batch_counts, candidate)
    analyzer = Analyzer(deployment)
    analyzer.absorb(batch)
    before = (copy.deepcopy(analyzer.view), analyzer.n_participants, analyzer.n_batches)
    if not _accepts_or_refuses(analyzer.absorb, candidate):
        after = (analyzer.view, analyzer.n_participants, analyzer.n_batches)
        assert after[1:] == before[1:]
        if Analyzer(deployment).dense:
            assert after[0] == before[0]
        else:
            assert np.array_equal(after[0].counts, before[0].counts) and np.array_equal(after[0].values, before[0].values)


@settings(max_examples=80, deadline=None)
@given(key=st.sampled_from(["protocol", "parameters", "n_instances", "min_senders", "exceed_probability", "fingerprint",
                            "version", "format"]),
       value=st.one_of(st.none(), st.integers(-5, 10**12), st.floats(allow_nan=True), st.text(max_size=8),
                       st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=3)))
def test_protocol_file_parser(key, value):
    content = json.loads(json.dumps(SAMPLES["rr"][0].to_file_dict())) | {key: value}
    with contextlib.suppress(InvalidParameterError):
        Deployment.from_file_dict(content)


@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=200), edits=EDITS, cut=st.none() | st.integers(0, 10**6))
def test_http_record_framing_parser(data, edits, cut):
    from privsum.serve.records import pack_records, unpack_records

    _, upload, _ = SAMPLES["rr"]
    sample = pack_records([("alice", upload), ("bob", upload)])
    for candidate in (data, mutate(sample, edits, cut, b"")):
        try:
            records = unpack_records(candidate, max_upload_bytes=len(upload))
        except InvalidParameterError:
            continue
        assert all(len(record) <= len(upload) for _, record in records)
