"""Systematic hostile messages at the parties: every byte truncated, every header bit flipped, crafted values.

Each refusal is an `InvalidParameterError` in the library's template (parameter, owner, constraint,
value), raised in bounded time and memory, and leaves the shuffler's held senders and messages and
the analyzer's view, participants and batches as they were. Random mutations are in
``test_wire_parsers.py``; this file is systematic and covers every protocol the parties carry
(a fast subset by default, all of them in the slow run).
"""

from __future__ import annotations

import functools
import math
import re
import tracemalloc

import numpy as np
import pytest

from privsum.exceptions import InvalidParameterError
from privsum.parties import Analyzer, Client, Deployment, Shuffler
from privsum.wire.format import BATCH_ID_BYTES, WireSpec
from tests.parties.protocols import NAMES, inputs, n_instances, protocol

TEMPLATE = re.compile(r"^The '([^']+)' parameter of (.+?) must be (.+)\. Got (.+) instead\.$", re.S)
FAST = ("RRBitSum", "ThreeNBBitSum", "PureBitSum", "MultiMessageSum", "ClippedSum", "SparseVectorAggregation")
SLOW = tuple(name for name in NAMES if name not in FAST)
PROTOCOLS = [*FAST, *(pytest.param(name, marks=pytest.mark.slow) for name in SLOW)]
N_USERS = 4


@functools.cache
def sample(name: str) -> tuple[Deployment, list[bytes], bytes]:
    """A deployment, the uploads of ``N_USERS`` users and the batch the shuffler releases of them."""
    deployment = Deployment(protocol(name, 20), n_instances=n_instances(name, 3), min_senders=1)
    client, shuffler = Client(deployment, rng=0), Shuffler(deployment, rng=1)
    uploads = [client.encode(row) for row in inputs(name, N_USERS, 3, np.random.default_rng(2))]
    for sender, upload in enumerate(uploads):
        shuffler.submit(sender, upload)
    return deployment, uploads, shuffler.release()


def refusal(call, data, parameter: str | tuple[str, ...] = "data") -> str:
    with pytest.raises(InvalidParameterError) as info:
        call(data)
    text = str(info.value)
    match = TEMPLATE.match(text)
    assert match and match.group(1) in ((parameter,) if isinstance(parameter, str) else parameter), text
    return text


def shuffler_state(shuffler: Shuffler) -> tuple:
    return shuffler.n_senders, shuffler.n_messages, shuffler.ready


def analyzer_state(analyzer: Analyzer) -> tuple:
    view = analyzer.view
    arrays = (view.counts,) if analyzer.dense else (view.instances, view.values, view.counts)
    return analyzer.n_participants, analyzer.n_batches, analyzer.smallest_batch, tuple(a.tobytes() for a in arrays)


def loaded(name: str) -> tuple[Shuffler, Analyzer]:
    """A shuffler holding one upload and an analyzer holding one batch (refusals must leave both so)."""
    deployment, uploads, batch = sample(name)
    shuffler, analyzer = Shuffler(deployment, rng=3), Analyzer(deployment)
    shuffler.submit("held", uploads[0])
    analyzer.absorb(batch)
    return shuffler, analyzer


def refused_unchanged(shuffler: Shuffler, analyzer: Analyzer, upload: bytes | None, batch: bytes | None) -> None:
    before = shuffler_state(shuffler), analyzer_state(analyzer)
    if upload is not None:
        refusal(lambda data: shuffler.submit("attacker", data), upload, parameter=("data", "upload"))
        refusal(shuffler.deployment.spec.decode_upload, upload)
    if batch is not None:  # a well-formed batch under the same id is refused as a replay
        refusal(analyzer.absorb, batch, parameter=("data", "batch"))
    assert (shuffler_state(shuffler), analyzer_state(analyzer)) == before


@pytest.mark.parametrize("name", PROTOCOLS)
def test_truncated_at_every_byte(name):
    _, uploads, batch = sample(name)
    shuffler, analyzer = loaded(name)
    upload = max(uploads, key=len)
    for cut in range(len(upload)):
        refused_unchanged(shuffler, analyzer, upload[:cut], None)
    for cut in range(len(batch)):
        refused_unchanged(shuffler, analyzer, None, batch[:cut])


@pytest.mark.parametrize("name", PROTOCOLS)
def test_every_header_bit_flipped(name):
    """Every bit of the upload header, and of the batch header except its id and sender count, is checked."""
    deployment, uploads, batch = sample(name)
    shuffler, analyzer = loaded(name)
    spec = deployment.spec
    for position in range(spec.upload_header_bytes):
        for bit in range(8):
            mutated = bytearray(uploads[0])
            mutated[position] ^= 1 << bit
            refused_unchanged(shuffler, analyzer, bytes(mutated), None)
    id_start = spec.batch_header_bytes - 12 - BATCH_ID_BYTES
    vouched = range(id_start, id_start + BATCH_ID_BYTES + 4)  # a new id or another sender count is well-formed
    for position in (p for p in range(spec.batch_header_bytes) if p not in vouched):
        for bit in range(8):
            mutated = bytearray(batch)
            mutated[position] ^= 1 << bit
            refused_unchanged(shuffler, analyzer, None, bytes(mutated))


@pytest.mark.parametrize("name", PROTOCOLS)
def test_appended_bytes_and_doubled_messages(name):
    _, uploads, batch = sample(name)
    shuffler, analyzer = loaded(name)
    for extra in (b"\x00", b"\xff" * 7, uploads[0]):
        refused_unchanged(shuffler, analyzer, uploads[1] + extra, batch + extra)
    refused_unchanged(shuffler, analyzer, None, batch)  # a replay
    refusal(lambda data: shuffler.submit("held", data), uploads[1], parameter="sender")  # one upload per sender


@pytest.mark.parametrize("name", PROTOCOLS)
def test_payload_bit_flips_are_refused_or_accepted_whole(name):
    """A flipped payload bit gives another well-formed upload or a refusal; the shuffler changes only on acceptance."""
    deployment, uploads, _ = sample(name)
    upload = max(uploads, key=len)
    start = deployment.spec.upload_header_bytes
    positions = range(start, len(upload)) if len(upload) - start <= 64 else np.linspace(start, len(upload) - 1, 64, dtype=int)
    for position in positions:
        for bit in range(8):
            mutated = bytearray(upload)
            mutated[position] ^= 1 << bit
            shuffler = Shuffler(deployment, rng=0)
            try:
                shuffler.submit("s", bytes(mutated))
            except InvalidParameterError as error:
                assert TEMPLATE.match(str(error)), str(error)
                assert shuffler_state(shuffler) == (0, 0, False)
            else:
                assert shuffler.n_senders == 1


def _permissive(spec: WireSpec) -> WireSpec:
    """The same header (name, fingerprint) with a cap of 2^20 messages: crafts what a hostile client would send.

    Only for the tagged layout (random message counts, as 3NB): the crafted fields carry their instance.
    """
    return WireSpec(spec.name, spec.fingerprint, spec.n_instances, spec.alphabet_size, max_upload_messages=2**20)


def _tagged(n_instances: int) -> Deployment:
    """3NB: random message counts, so the tagged layout, with 3 tag bits for 5 instances (ids 5 to 7 are free)."""
    return Deployment(protocol("ThreeNBBitSum", 20), n_instances=n_instances, min_senders=1)


def test_instance_ids_out_of_range():
    deployment = _tagged(5)
    spec, crafted = deployment.spec, _permissive(deployment.spec)
    shuffler, analyzer = Shuffler(deployment, rng=0), Analyzer(deployment)
    for instance in (5, 7):
        field = np.array([instance << spec.value_bits], dtype=np.int64)
        text = refusal(spec.decode_upload, crafted.encode_upload(field))
        assert "instance ids below 5" in text and str(instance) in text
        batch = crafted.encode_batch(field, n_senders=1, batch_id=bytes(16))
        assert "instance ids below 5" in refusal(analyzer.absorb, batch)
        refused_unchanged(shuffler, analyzer, crafted.encode_upload(field), batch)


def test_values_out_of_the_alphabet():
    """The blanket sum's alphabet has 3 values in 2 bits: index 3 is refused in an upload and in a batch."""
    deployment = Deployment(protocol("BlanketRealSum", 20), n_instances=1, min_senders=1)
    assert deployment.spec.alphabet_size == 3 and deployment.spec.field_bits == 2
    shuffler, analyzer = Shuffler(deployment, rng=0), Analyzer(deployment)
    upload = Client(deployment, rng=0).encode([0.5])
    shuffler.submit("honest", upload)
    batch = shuffler.release()
    shuffler.submit("held", Client(deployment, rng=1).encode([0.5]))
    forged_upload, forged_batch = bytearray(upload), bytearray(batch)
    forged_upload[-1] |= 0b11000000  # the one message's two bits: value index 3
    forged_batch[-1] |= 0b11000000
    assert "alphabet" in refusal(deployment.spec.decode_upload, bytes(forged_upload))
    assert "alphabet" in refusal(analyzer.absorb, bytes(forged_batch))
    refused_unchanged(shuffler, analyzer, bytes(forged_upload), bytes(forged_batch))


def test_uploads_and_batches_over_the_cap():
    deployment = _tagged(3)
    spec, crafted, cap = deployment.spec, _permissive(deployment.spec), deployment.cap
    shuffler, analyzer = Shuffler(deployment, rng=0), Analyzer(deployment)
    over = crafted.encode_upload(np.repeat(np.arange(3, dtype=np.int64) << spec.value_bits, -(-(cap.total + 1) // 3)))
    assert f"at most {cap.total} messages (the per-sender cap)" in refusal(spec.decode_upload, over)
    one_instance = crafted.encode_upload(np.zeros(cap.per_instance + 1, dtype=np.int64))
    text = refusal(lambda data: shuffler.submit("s", data), one_instance, "upload")
    assert f"at most {cap.per_instance} messages per instance" in text
    too_many = crafted.encode_batch(np.zeros(2 * cap.total + 1, dtype=np.int64), n_senders=2, batch_id=bytes(16))
    refused_unchanged(shuffler, analyzer, over, too_many)
    huge = bytearray(crafted.encode_batch(np.zeros(0, dtype=np.int64), n_senders=1, batch_id=bytes(16)))
    huge[-8:] = (2**64 - 1).to_bytes(8, "big")  # a u64 message count at its largest
    assert "batch cap" in refusal(analyzer.absorb, bytes(huge))
    zero = crafted.encode_batch(np.zeros(0, dtype=np.int64), n_senders=0, batch_id=bytes(16))
    assert "at least one sender" in refusal(analyzer.absorb, zero)


def test_declared_sizes_are_refused_before_allocation():
    """A header declaring the largest counts, with no payload, is refused within 64 KiB of allocations."""
    deployment = _tagged(3)
    cap = deployment.cap.total
    crafted = _permissive(deployment.spec)
    upload = bytearray(crafted.encode_upload(np.zeros(0, dtype=np.int64)))
    upload[-4:] = cap.to_bytes(4, "big")
    batch = bytearray(crafted.encode_batch(np.zeros(0, dtype=np.int64), n_senders=2**32 - 1, batch_id=bytes(16)))
    batch[-8:] = (cap * (2**32 - 1)).to_bytes(8, "big")
    shuffler, analyzer = Shuffler(deployment, rng=0), Analyzer(deployment)
    tracemalloc.start()
    try:
        refused_unchanged(shuffler, analyzer, bytes(upload), bytes(batch))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 10


@pytest.mark.parametrize("value", [None, "PSUM", 5, [80, 83, 85, 77], np.zeros(60, dtype=np.uint8),
                                   memoryview(np.zeros(20, dtype=np.int32))])
def test_non_bytes_are_refused(value):
    deployment, _, _ = sample("RRBitSum")
    shuffler, analyzer = loaded("RRBitSum")
    before = shuffler_state(shuffler), analyzer_state(analyzer)
    refusal(deployment.spec.decode_upload, value)
    refusal(lambda data: shuffler.submit("s", data), value)
    refusal(analyzer.absorb, value)
    assert (shuffler_state(shuffler), analyzer_state(analyzer)) == before


def test_sender_identities_that_are_not_equal_to_themselves_are_refused():
    deployment, uploads, _ = sample("RRBitSum")
    shuffler = Shuffler(deployment, rng=0)
    for sender in ([1], {"a": 1}):
        refusal(lambda data, s=sender: shuffler.submit(s, data), uploads[0], parameter="sender")
    refusal(lambda data: shuffler.submit(float("nan"), data), uploads[0], parameter="sender")  # nan != nan: unlimited
    assert shuffler.n_senders == 0


def test_zero_message_users_encode():
    """A user of a random-count protocol may draw no message: its upload is a header with count 0 (was a crash)."""
    deployment = Deployment(protocol("PureBitSum", 20), n_instances=1, min_senders=1)
    client = Client(deployment, rng=0)
    uploads = [client.encode([0]) for _ in range(200)]
    assert any(len(upload) == deployment.spec.upload_header_bytes for upload in uploads)
    shuffler = Shuffler(deployment, rng=1)
    for sender, upload in enumerate(uploads):
        shuffler.submit(sender, upload)
    assert shuffler.n_senders == len(uploads)


def test_a_batch_below_min_senders_is_refused():
    deployment = Deployment(protocol("RRBitSum", 20), n_instances=1, min_senders=20)
    analyzer = Analyzer(deployment)
    small = deployment.spec.encode_batch(np.zeros(1, dtype=np.int64), n_senders=1, batch_id=bytes(16))
    refusal(analyzer.absorb, small, parameter=("data", "batch"))
    assert analyzer.n_batches == 0


def _file_content(parameters):
    content = Deployment(protocol("RRBitSum", 20), n_instances=1).to_file_dict()
    return content | {"parameters": parameters}


@pytest.mark.parametrize("depth", [40, 5000])
def test_deeply_nested_protocol_files_are_refused(depth, tmp_path):
    nested: object = 1
    for _ in range(depth):
        nested = [nested]
    text = refusal(Deployment.from_file_dict, _file_content({"n_users": nested}), parameter="parameters")
    assert "levels deep" in text
    component: object = {"class": "RRBitSum", "parameters": {}}
    for _ in range(depth):
        component = {"class": "RRBitSum", "parameters": {"n_users": component}}
    refusal(Deployment.from_file_dict, _file_content({"n_users": component}), parameter="parameters")
    path = tmp_path / "deep.json"
    path.write_text("[" * 200_000 + "]" * 200_000)
    refusal(Deployment.load, path, parameter="path")
    for text in ("not json", "\xff\xfe"):
        path.write_bytes(text.encode("latin-1"))
        refusal(Deployment.load, path, parameter="path")
    refusal(Deployment.load, tmp_path / "missing.json", parameter="path")


def test_the_parties_keep_batches_within_the_protocols_crowd():
    deployment = Deployment(protocol("MultiMessageSum", 5), n_instances=1, min_senders=1)
    shuffler, client, analyzer = Shuffler(deployment, rng=0), Client(deployment, rng=1), Analyzer(deployment)
    for sender in range(6):
        try:
            shuffler.submit(sender, client.encode([1]))
        except InvalidParameterError:
            break
    assert shuffler.n_senders == 5  # the sixth sender was refused: the modulus covers n_users = 5
    analyzer.absorb(shuffler.release())
    assert analyzer.guarantee.epsilon < math.inf
    forged = deployment.spec.encode_batch(np.zeros(6 * deployment.cap.total, dtype=np.int64), n_senders=6,
                                          batch_id=bytes(16))
    refusal(analyzer.absorb, forged, parameter=("data", "batch"))
    assert analyzer.n_participants == 5
