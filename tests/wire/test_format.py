"""The byte format: packing against a naive reader, and every malformed input refused."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privsum.exceptions import InvalidParameterError
from privsum.wire import WireFormatError, WireSpec, canonical_encoding, fingerprint, pack_fields, packed_size, unpack_fields
from privsum.wire.packing import pack_rows
from tests.wire.test_decoder_from_docs import Config, canonical, read


def spec(n_instances=5, alphabet_size=3, cap=4, batch_cap=100, name="Toy"):
    return WireSpec(name, fingerprint({"toy": n_instances}), n_instances, alphabet_size, cap, batch_cap)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 56), st.lists(st.integers(0, 2**56 - 1), max_size=40))
def test_pack_round_trip_and_bit_layout(width, raw):
    fields = np.array([value % (1 << width) for value in raw], dtype=np.uint64)
    packed = pack_fields(fields, width)
    assert len(packed) == packed_size(fields.size, width)
    bits = "".join(format(int(value), f"0{width}b") for value in fields)
    bits += "0" * (-len(bits) % 8)
    assert packed == bytes(int(bits[i : i + 8], 2) for i in range(0, len(bits), 8))
    assert unpack_fields(packed, fields.size, width).astype(np.uint64).tolist() == fields.tolist()


@settings(max_examples=80, deadline=None)
@given(st.one_of(st.just(1), st.integers(2, 56)), st.integers(0, 55), st.integers(0, 40), st.integers(1, 4), st.booleans(),
       st.integers(0, 2**32))
def test_pack_rows_is_pack_fields_of_each_row(value_bits, tag_bits, count, n_rows, tagged, seed):
    """Rows sharing their tags, packed at once (one-bit values: a tag template and scattered bits) as the generic packer."""
    tag_bits = min(tag_bits, 56 - value_bits) if tagged else 0
    rng = np.random.default_rng(seed)
    indices = rng.integers(0, 1 << value_bits, (n_rows, count), dtype=np.uint64).astype(np.int64)
    tags = rng.integers(0, 1 << tag_bits, count, dtype=np.uint64).astype(np.int64) if tagged else None
    rows = pack_rows(indices, value_bits, tags=tags, tag_bits=tag_bits)
    assert rows.shape == (n_rows, packed_size(count, tag_bits + value_bits))
    for row, values in zip(rows, indices, strict=True):
        fields = values if tags is None else (tags << value_bits) | values
        assert row.tobytes() == pack_fields(fields, tag_bits + value_bits)


@pytest.mark.parametrize(("n_instances", "alphabet_size"), [(1, 2), (5, 3), (768, 2), (4, 4), (2, 256), (3, 2**20)])
def test_upload_and_batch_agree_with_the_naive_reader(n_instances, alphabet_size):
    wire = spec(n_instances, alphabet_size, cap=50, batch_cap=1000)
    rng = np.random.default_rng(n_instances)
    instances = rng.integers(0, n_instances, 37)
    indices = rng.integers(0, alphabet_size, 37)
    fields = wire.fields(instances, indices)
    upload = wire.encode_upload(fields)
    assert len(upload) == wire.upload_header_bytes + packed_size(37, wire.field_bits)
    parsed = read(upload, config_of(wire))
    assert (parsed["kind"], parsed["name"], parsed["count"]) == (1, "Toy", 37)
    assert parsed["instances"] == instances.tolist() and parsed["values"] == indices.tolist()
    assert wire.decode_upload(upload).tolist() == fields.tolist()
    batch = wire.encode_batch(fields, n_senders=3, batch_id=bytes(range(16)))
    parsed = read(batch, config_of(wire))
    assert (parsed["kind"], parsed["n_senders"], parsed["batch_id"]) == (2, 3, bytes(range(16)).hex())
    if wire.countable:
        _, senders, counts = wire.batch_counts(batch)
        expected = np.zeros((n_instances, alphabet_size), dtype=np.int64)
        np.add.at(expected, (instances, indices), 1)
        assert senders == 3 and np.array_equal(counts, expected)


def config_of(wire):
    """The page-derived reader's configuration of a spec (alphabet 0..size-1)."""
    layout = "positional" if wire.positional else "tagged"
    return Config(wire.name, wire.fingerprint, wire.n_instances, 0, wire.alphabet_size, None, layout,
                  wire.positional, wire.max_upload_messages)


@pytest.mark.parametrize(("n_instances", "per_instance", "alphabet_size"), [(1, 3, 5), (4, 3, 1000), (384, 2, 2**23), (5, 1, 2)])
def test_positional_layout_has_no_tags_and_lists_instances_in_order(n_instances, per_instance, alphabet_size):
    wire = WireSpec("Toy", fingerprint({"toy": n_instances}), n_instances, alphabet_size, per_instance * n_instances, 10**6,
                    positional=per_instance)
    assert wire.field_bits == wire.value_bits
    rng = np.random.default_rng(n_instances)
    instances = np.repeat(np.arange(n_instances), per_instance)
    uploads = [wire.fields(instances, rng.integers(0, alphabet_size, instances.size)) for _ in range(3)]
    data = wire.encode_upload(uploads[0])
    assert len(data) == wire.upload_header_bytes + packed_size(instances.size, wire.value_bits)
    assert np.array_equal(wire.decode_upload(data), uploads[0])
    parsed = read(data, config_of(wire))
    assert parsed["instances"] == instances.tolist()
    assert parsed["values"] == (uploads[0] & ((1 << wire.value_bits) - 1)).tolist()
    by_instance = np.stack(uploads).reshape(3, n_instances, per_instance).transpose(1, 0, 2).reshape(-1)
    batch = wire.encode_batch(by_instance, n_senders=3, batch_id=bytes(16))
    assert np.array_equal(wire.decode_batch(batch).fields, by_instance)
    assert read(batch, config_of(wire))["instances"] == np.repeat(np.arange(n_instances), 3 * per_instance).tolist()
    if wire.countable:
        _, senders, counts = wire.batch_counts(batch)
        assert senders == 3 and np.array_equal(counts, wire.dense_counts(by_instance))
    # refused: an upload of other than c I messages; fields out of instance order
    header = bytearray(data[: wire.upload_header_bytes])
    header[-4:] = (instances.size - 1).to_bytes(4, "big")
    short = bytes(header) + pack_fields(np.zeros(instances.size - 1, dtype=np.int64), wire.field_bits)
    _refused(wire.decode_upload, short, "positional")
    if n_instances > 1:
        with pytest.raises(InvalidParameterError, match="positional"):
            wire.encode_upload(uploads[0][::-1].copy())


def test_version_1_bytes_and_a_positional_count_mismatch_in_a_batch_are_refused():
    wire = WireSpec("Toy", bytes(32), 2, 4, 4, 100, positional=2)
    good = wire.encode_batch(wire.fields(np.repeat(np.arange(2), 2), np.arange(4)), n_senders=1, batch_id=bytes(16))
    _refused(wire.decode_batch, good[:4] + b"\x01" + good[5:], "version")
    lying = bytearray(good)
    lying[wire.batch_header_bytes - 12 : wire.batch_header_bytes - 8] = (2).to_bytes(4, "big")  # two senders, one's messages
    _refused(wire.decode_batch, bytes(lying), "positional")
    with pytest.raises(InvalidParameterError, match="positional"):
        WireSpec("Toy", bytes(32), 2, 4, 5, 100, positional=2)


def test_header_is_at_most_64_bytes_for_twenty_character_names():
    assert spec(name="A" * 20).upload_header_bytes == 63
    with pytest.raises(InvalidParameterError, match="name"):
        spec(name="A" * 21)


def test_fingerprint_is_sha256_of_the_canonical_text():
    text = '{"a":"f64:3ff8000000000000","b":[-3,false,null,"x\\"y"],"c":{"d":1}}'
    value = {"c": {"d": 1}, "b": [-3, False, None, 'x"y'], "a": 1.5}
    assert canonical_encoding(value).decode() == text == canonical(value)
    assert fingerprint(value).hex() == hashlib.sha256(text.encode()).hexdigest()
    with pytest.raises(InvalidParameterError):
        canonical_encoding({"a": float("nan")})


def _refused(call, data, match):
    with pytest.raises(WireFormatError, match=match):
        call(data)


def test_malformed_uploads_are_refused():
    wire = spec()
    good = wire.encode_upload(wire.fields(np.array([0, 4, 2]), np.array([2, 0, 1])))
    _refused(wire.decode_upload, good[:-1], "truncated")
    _refused(wire.decode_upload, good[:20], "truncated")
    _refused(wire.decode_upload, good + b"\0", "trailing")
    _refused(wire.decode_upload, b"XSUM" + good[4:], "magic")
    _refused(wire.decode_upload, good[:4] + b"\x01" + good[5:], "version")  # version 1 (no positional layout) is refused
    _refused(wire.decode_upload, good[:5] + b"\x02" + good[6:], "kind")
    _refused(spec(name="Other").decode_upload, good, "protocol")
    foreign = WireSpec("Toy", fingerprint({"toy": "other"}), 5, 3, 4, 100)
    _refused(foreign.decode_upload, good, "fingerprint")
    # value index 3 is outside an alphabet of 3 values; instance 7 outside 5 instances
    _refused(wire.decode_upload, wire.encode_upload(wire.fields(np.array([0]), np.array([3]))), "alphabet")
    _refused(wire.decode_upload, wire.encode_upload(wire.fields(np.array([7]), np.array([0]))), "instance")
    # over the per-sender cap: the count is checked before the payload is read
    header = bytearray(good[: wire.upload_header_bytes])
    header[-4:] = (5).to_bytes(4, "big")
    _refused(wire.decode_upload, bytes(header), "cap")
    header[-4:] = (2**32 - 1).to_bytes(4, "big")
    _refused(wire.decode_upload, bytes(header), "cap")
    # non-zero padding bits (3 fields of 5 bits: 15 bits, one spare bit)
    _refused(wire.decode_upload, good[:-1] + bytes([good[-1] | 1]), "padding")


def test_malformed_batches_are_refused_before_allocation():
    wire = spec(cap=2, batch_cap=10)
    good = wire.encode_batch(wire.fields(np.array([1, 2]), np.array([0, 0])), n_senders=1, batch_id=bytes(16))
    _refused(wire.batch_counts, good[:-1], "truncated")
    huge = bytearray(good[: wire.batch_header_bytes])
    huge[-8:] = (2**60).to_bytes(8, "big")  # declared count, far beyond the batch cap, and no payload
    _refused(wire.batch_counts, bytes(huge), "batch cap")
    too_many = wire.encode_batch(wire.fields(np.zeros(3, dtype=int), np.zeros(3, dtype=int)), n_senders=1, batch_id=bytes(16))
    _refused(wire.batch_counts, too_many, "per sender")
    no_senders = wire.encode_batch(wire.fields(np.zeros(0, dtype=int), np.zeros(0, dtype=int)), n_senders=0, batch_id=bytes(16))
    _refused(wire.batch_counts, no_senders, "at least one sender")
    _refused(wire.batch_counts, wire.encode_upload(wire.fields(np.array([0]), np.array([0]))), "kind")


@pytest.mark.parametrize(
    ("call", "parameter"),
    [
        (lambda: pack_fields(np.array([8]), 3), "fields"),  # 8 needs 4 bits
        (lambda: pack_fields(np.array([-1]), 3), "fields"),
        (lambda: pack_fields(np.array([1.0]), 3), "fields"),  # never cast
        (lambda: pack_fields(np.array([1]), 57), "width"),
        (lambda: unpack_fields(b"\x00", 2**62, 3), "payload"),  # refused before any allocation
        (lambda: unpack_fields(b"\x00\x00", 2, 3), "payload"),  # one trailing byte
        (lambda: packed_size(-1, 3), "n_fields"),
        (lambda: pack_rows(np.array([[2]]), 1), "indices"),
        (lambda: pack_rows(np.array([1]), 1), "indices"),  # one row per user: 2-D
        (lambda: pack_rows(np.array([[1]]), 1, tags=np.array([4]), tag_bits=2), "tags"),
        (lambda: pack_rows(np.array([[1]]), 1, tags=np.array([0, 1]), tag_bits=1), "tags"),  # one tag per column
        (lambda: pack_rows(np.array([[1]]), 1, tag_bits=1), "tag_bits"),  # tag bits without tags
        (lambda: pack_rows(np.array([[1]]), 50, tags=np.array([0]), tag_bits=7), "tag_bits"),  # 57 bits
    ],
)
def test_packing_refuses_fields_widths_and_lengths_it_cannot_round_trip(call, parameter):
    with pytest.raises(InvalidParameterError, match=repr(parameter)):
        call()
