"""Uploads and batches: the versioned header, the packed messages, and parsing with bounded work.

Two kinds of wire object share one header prefix (all integers big-endian):

======  ======  ==========================================================
offset  bytes   field
======  ======  ==========================================================
0       4       magic ``PSUM`` (``50 53 55 4d``)
4       1       format version, ``1``
5       1       kind: ``1`` upload (one sender's messages), ``2`` batch (a shuffler's release)
6       1       ``L``: length of the protocol name, 1..20
7       L       protocol name, printable ASCII
7+L     32      fingerprint: SHA-256 of the configuration's canonical encoding
======  ======  ==========================================================

An upload continues with a u32 message count ``m`` and the payload; a batch continues with a
16-byte batch id, a u32 number of senders, a u64 message count ``m`` and the payload. The payload
is ``m`` fields of ``w`` bits packed most-significant bit first (`privsum.wire.packing`), zero-padded
to ``ceil(m w / 8)`` bytes. Two layouts, fixed by the configuration (its fingerprint commits to it):

* **tagged**: field = ``instance << value_bits | value_index``, messages in any order;
* **positional** (every sender sends exactly ``c`` messages to each instance): field =
  ``value_index`` alone, the instance implied by the position. An upload lists instance 0's ``c``
  messages, then instance 1's, ...; a batch of ``n`` senders lists instance 0's ``n c`` messages,
  then instance 1's, ... (the shuffler permutes each instance's messages separately).

In code, both layouts are handled as *logical fields* ``instance << value_bits | value_index``
(int64): the positional layout drops the tag on the wire and restores it from the position.
Nothing else is accepted: the length must be exact, padding bits zero, every instance below
``n_instances``, every value index below the alphabet size and, positional, exactly ``c``
messages per instance and sender. The full description is ``docs/wire-format.md``.

This module knows nothing of any protocol's mathematics: a `WireSpec` carries the sizes.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import numpy as np

from privsum._validation import check_integer, invalid
from privsum.exceptions import InvalidParameterError
from privsum.wire.fingerprint import FINGERPRINT_BYTES
from privsum.wire.packing import MAX_FIELD_BITS, count_fields, pack_fields, packed_size, unpack_fields

__all__ = [
    "BATCH",
    "BATCH_ID_BYTES",
    "MAGIC",
    "MAX_DENSE_CELLS",
    "MAX_NAME_BYTES",
    "UPLOAD",
    "VERSION",
    "DecodedBatch",
    "WireFormatError",
    "WireSpec",
]

MAGIC = b"PSUM"
#: Format version 2: the positional layout (version 1 had only the tagged one); version 1 bytes are refused.
VERSION = 2
UPLOAD = 1
BATCH = 2
MAX_NAME_BYTES = 20
BATCH_ID_BYTES = 16
_PREFIX = 7  # magic, version, kind, name length
#: The most (instance, value-index) cells `WireSpec.batch_counts` counts densely (256 MiB of int64).
MAX_DENSE_CELLS = 1 << 25
#: The widest logical field (tag plus value index) held in an int64.
MAX_LOGICAL_BITS = 62


class WireFormatError(InvalidParameterError):
    """Bytes that are not a well-formed upload or batch of the expected configuration (nothing was changed)."""


def _refuse(name: str, owner: str, constraint: str, value: object) -> WireFormatError:
    base = invalid(name, owner, constraint, value)
    error = WireFormatError(str(base))
    error.refusal = base.refusal  # type: ignore[attr-defined]
    return error


@dataclass(frozen=True)
class DecodedBatch:
    """A parsed batch: its id, the number of senders the shuffler vouches for, and the fields."""

    batch_id: bytes
    n_senders: int
    fields: np.ndarray


@dataclass(frozen=True)
class WireSpec:
    """The sizes a parser needs, fixed by one configuration (its fingerprint commits to them).

    Attributes:
        name: the protocol's wire name (printable ASCII, 1 to 20 bytes).
        fingerprint: 32 bytes, SHA-256 of the configuration's canonical encoding.
        n_instances: number of instance tags ``I``.
        alphabet_size: number of message values ``|A|``.
        max_upload_messages: the most messages one upload may hold (the per-sender cap).
        max_batch_messages: the most messages one batch may hold.
        positional: ``c`` for the positional layout (every sender sends exactly ``c`` messages
            to each instance, listed instance by instance, no tag on the wire), ``0`` for the
            tagged layout. Positional requires ``max_upload_messages == c n_instances``.

    Examples:
        >>> spec = WireSpec("RRBitSum", bytes(32), n_instances=1, alphabet_size=2, max_upload_messages=1)
        >>> spec.field_bits, spec.upload_header_bytes
        (1, 51)
        >>> shares = WireSpec("Shares", bytes(32), n_instances=4, alphabet_size=1000, max_upload_messages=12, positional=3)
        >>> shares.tag_bits, shares.field_bits  # the coordinate is implied by the position
        (2, 10)
    """

    name: str
    fingerprint: bytes
    n_instances: int
    alphabet_size: int
    max_upload_messages: int
    max_batch_messages: int = 2**40
    positional: int = 0

    def __post_init__(self) -> None:
        owner = "WireSpec"
        if not (isinstance(self.name, str) and 1 <= len(self.name) <= MAX_NAME_BYTES and self.name.isascii()
                and self.name.isprintable()):
            raise invalid("name", owner, f"printable ASCII of 1 to {MAX_NAME_BYTES} characters", self.name)
        if not (isinstance(self.fingerprint, bytes) and len(self.fingerprint) == FINGERPRINT_BYTES):
            raise invalid("fingerprint", owner, f"{FINGERPRINT_BYTES} bytes", self.fingerprint)
        check_integer(self.n_instances, "n_instances", owner, low=1, high=2**32)
        check_integer(self.alphabet_size, "alphabet_size", owner, low=1, high=2**48)
        check_integer(self.max_upload_messages, "max_upload_messages", owner, low=1, high=2**32 - 1)
        check_integer(self.max_batch_messages, "max_batch_messages", owner, low=1, high=2**62)
        check_integer(self.positional, "positional", owner, low=0, high=2**32 - 1)
        if self.positional and self.max_upload_messages != self.positional * self.n_instances:
            raise invalid("positional", owner, f"c with c * n_instances == max_upload_messages ({self.max_upload_messages})",
                          self.positional)
        if self.field_bits > MAX_FIELD_BITS:
            raise invalid("n_instances", owner, f"with the alphabet, fields of at most {MAX_FIELD_BITS} bits",
                          f"{self.field_bits} bits")
        if self.tag_bits + self.value_bits > MAX_LOGICAL_BITS:
            raise invalid("n_instances", owner, f"with the alphabet, tag and value of at most {MAX_LOGICAL_BITS} bits",
                          f"{self.tag_bits + self.value_bits} bits")

    @property
    def tag_bits(self) -> int:
        """``ceil(log2 I)`` bits of instance tag (0 for one instance)."""
        return math.ceil(math.log2(self.n_instances)) if self.n_instances > 1 else 0

    @property
    def value_bits(self) -> int:
        """``max(1, ceil(log2 |A|))`` bits of value index."""
        return max(1, math.ceil(math.log2(self.alphabet_size)))

    @property
    def field_bits(self) -> int:
        """Bits of one message on the wire: tag plus value index (tagged), the value index alone (positional)."""
        return self.value_bits if self.positional else self.tag_bits + self.value_bits

    @property
    def layout(self) -> str:
        """``"positional"`` or ``"tagged"``."""
        return "positional" if self.positional else "tagged"

    def positional_instances(self, n_senders: int) -> np.ndarray:
        """The instance of each message of a positional upload (``n_senders = 1``) or batch: ``n_senders c`` per instance."""
        return np.repeat(np.arange(self.n_instances, dtype=np.int64), n_senders * self.positional)

    @property
    def _prefix(self) -> bytes:
        name = self.name.encode("ascii")
        return MAGIC + bytes([VERSION, 0, len(name)]) + name + self.fingerprint

    @property
    def upload_header_bytes(self) -> int:
        """Bytes before an upload's payload: ``43 + L``."""
        return _PREFIX + len(self.name) + FINGERPRINT_BYTES + 4

    @property
    def batch_header_bytes(self) -> int:
        """Bytes before a batch's payload: ``67 + L``."""
        return _PREFIX + len(self.name) + FINGERPRINT_BYTES + BATCH_ID_BYTES + 4 + 8

    # ------------------------------------------------------------------ fields
    def fields(self, instances: np.ndarray, value_indices: np.ndarray, *, overwrite: bool = False) -> np.ndarray:
        """``instance << value_bits | value_index`` for each message, as int64 (inputs already in range).

        ``overwrite=True`` computes the fields in the ``instances`` array itself (an int64 array the
        caller no longer needs), saving two temporary arrays.
        """
        indices = np.asarray(value_indices, dtype=np.int64)
        if self.tag_bits == 0:
            return indices
        if overwrite and isinstance(instances, np.ndarray) and instances.dtype == np.int64 and instances.flags.writeable:
            np.left_shift(instances, self.value_bits, out=instances)
            return np.bitwise_or(instances, indices, out=instances)
        return (np.asarray(instances, dtype=np.int64) << self.value_bits) | indices

    def split(self, fields: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(instances, value_indices)`` of fields (as int64)."""
        fields = fields.astype(np.int64)
        return fields >> self.value_bits, fields & ((1 << self.value_bits) - 1)

    # ------------------------------------------------------------------ encode
    def encode_upload(self, fields: np.ndarray) -> bytes:
        """One sender's upload of the given fields."""
        count = int(fields.size)
        if count > self.max_upload_messages:
            raise invalid("fields", "WireSpec.encode_upload", f"at most {self.max_upload_messages} messages", count)
        return self.upload_header(count) + pack_fields(self.wire_fields(fields, 1), self.field_bits)

    def upload_header(self, count: int) -> bytes:
        """The header of an upload of ``count`` messages (the payload follows it)."""
        prefix = bytearray(self._prefix)
        prefix[5] = UPLOAD
        return bytes(prefix) + struct.pack(">I", count)

    def wire_fields(self, fields: np.ndarray, n_senders: int) -> np.ndarray:
        """What the payload holds of logical ``fields``: themselves (tagged), their value indices (positional).

        Positional fields must be listed instance by instance, ``n_senders c`` per instance.
        """
        if not self.positional:
            return fields
        fields = np.asarray(fields)
        instances = self.positional_instances(n_senders)
        if not (fields.shape == instances.shape and np.array_equal(fields >> self.value_bits, instances)):
            raise invalid("fields", "WireSpec", f"{n_senders * self.positional} messages of each instance, instance by instance "
                          "(the positional layout)", f"{fields.size} messages")
        return fields & ((1 << self.value_bits) - 1)

    def encode_batch(self, fields: np.ndarray, *, n_senders: int, batch_id: bytes) -> bytes:
        """A shuffler's release of the given (already permuted) fields."""
        if not (isinstance(batch_id, bytes) and len(batch_id) == BATCH_ID_BYTES):
            raise invalid("batch_id", "WireSpec.encode_batch", f"{BATCH_ID_BYTES} bytes", batch_id)
        prefix = bytearray(self._prefix)
        prefix[5] = BATCH
        head = bytes(prefix) + batch_id + struct.pack(">IQ", n_senders, int(fields.size))
        return head + pack_fields(self.wire_fields(fields, n_senders), self.field_bits)

    # ------------------------------------------------------------------ decode
    def _check_prefix(self, data: bytes | memoryview, kind: int, owner: str) -> int:
        """Validate magic, version, kind, name and fingerprint; return the offset after them."""
        if not (isinstance(data, (bytes, bytearray))
                or (isinstance(data, memoryview) and data.ndim == 1 and data.itemsize == 1 and data.c_contiguous)):
            raise _refuse("data", owner, "bytes (a bytes, bytearray or byte memoryview)", type(data).__name__)
        size = len(data)
        if size < _PREFIX:
            raise _refuse("data", owner, f"at least {_PREFIX} bytes (a header)", f"{size} bytes (truncated)")
        head = bytes(data[:_PREFIX])
        if head[:4] != MAGIC:
            raise _refuse("data", owner, f"bytes starting with the magic {MAGIC!r}", head[:4])
        if head[4] != VERSION:
            raise _refuse("data", owner, f"format version {VERSION}", head[4])
        if head[5] != kind:
            expected = "an upload (kind 1)" if kind == UPLOAD else "a batch (kind 2)"
            raise _refuse("data", owner, expected, f"kind {head[5]}")
        name_length = head[6]
        end = _PREFIX + name_length + FINGERPRINT_BYTES
        if size < end:
            raise _refuse("data", owner, f"at least {end} bytes of header", f"{size} bytes (truncated)")
        name = bytes(data[_PREFIX : _PREFIX + name_length])
        if name != self.name.encode("ascii"):
            raise _refuse("data", owner, f"a message of protocol {self.name!r}", name.decode("ascii", "replace"))
        found = bytes(data[_PREFIX + name_length : end])
        if found != self.fingerprint:
            raise _refuse("data", owner, f"the configuration fingerprint {self.fingerprint.hex()[:16]}…",
                          f"{found.hex()[:16]}… (another configuration)")
        return end

    def _payload(self, data: bytes | memoryview, start: int, count: int, owner: str) -> np.ndarray:
        """The payload's bytes after checking the exact length and the zero padding (no allocation before)."""
        expected = start + packed_size(count, self.field_bits)
        if len(data) != expected:
            state = "truncated" if len(data) < expected else "trailing bytes"
            raise _refuse("data", owner, f"exactly {expected} bytes for {count} messages", f"{len(data)} bytes ({state})")
        payload = np.frombuffer(data, dtype=np.uint8, offset=start)
        spare = (-count * self.field_bits) % 8
        if spare and payload[-1] & ((1 << spare) - 1):
            raise _refuse("data", owner, "zero padding bits", f"last byte {int(payload[-1]):#04x}")
        return payload

    def decode_upload(self, data: bytes | memoryview) -> np.ndarray:
        """The fields of one upload; any malformed input raises `WireFormatError`."""
        owner = "WireSpec.decode_upload"
        start = self._check_prefix(data, UPLOAD, owner)
        if len(data) < start + 4:
            raise _refuse("data", owner, f"at least {start + 4} bytes of header", f"{len(data)} bytes (truncated)")
        (count,) = struct.unpack_from(">I", data, start)
        if count > self.max_upload_messages:
            raise _refuse("data", owner, f"at most {self.max_upload_messages} messages (the per-sender cap)", count)
        if self.positional and count != self.max_upload_messages:
            raise _refuse("data", owner, f"exactly {self.max_upload_messages} messages ({self.positional} per instance, "
                          "the positional layout)", count)
        payload = self._payload(data, start + 4, count, owner)
        return self._logical(unpack_fields(payload, count, self.field_bits), 1, owner)

    def _logical(self, fields: np.ndarray, n_senders: int, owner: str) -> np.ndarray:
        """Checked logical fields of a payload's fields (positional: the instances restored from the positions)."""
        self._check_fields(fields, owner)
        if not self.positional:
            return fields
        return (self.positional_instances(n_senders) << self.value_bits) | fields.astype(np.int64)

    def read_batch_header(self, data: bytes | memoryview) -> tuple[bytes, int, int, int]:
        """``(batch_id, n_senders, count, payload_offset)`` of a batch, header and length checked."""
        owner = "WireSpec.decode_batch"
        start = self._check_prefix(data, BATCH, owner)
        end = start + BATCH_ID_BYTES + 12
        if len(data) < end:
            raise _refuse("data", owner, f"at least {end} bytes of header", f"{len(data)} bytes (truncated)")
        batch_id = bytes(data[start : start + BATCH_ID_BYTES])
        n_senders, count = struct.unpack_from(">IQ", data, start + BATCH_ID_BYTES)
        if count > self.max_batch_messages:
            raise _refuse("data", owner, f"at most {self.max_batch_messages} messages (the batch cap)", count)
        if n_senders < 1:
            raise _refuse("data", owner, "a batch from at least one sender", n_senders)
        if count > n_senders * self.max_upload_messages:
            raise _refuse("data", owner, f"at most {self.max_upload_messages} messages per sender",
                          f"{count} messages from {n_senders} senders")
        if self.positional and count != n_senders * self.max_upload_messages:
            raise _refuse("data", owner, f"exactly {self.max_upload_messages} messages per sender (the positional layout)",
                          f"{count} messages from {n_senders} senders")
        return batch_id, n_senders, count, end

    def decode_batch(self, data: bytes | memoryview) -> DecodedBatch:
        """A batch's id, senders and fields; any malformed input raises `WireFormatError`."""
        batch_id, n_senders, count, start = self.read_batch_header(data)
        payload = self._payload(data, start, count, "WireSpec.decode_batch")
        fields = self._logical(unpack_fields(payload, count, self.field_bits), n_senders, "WireSpec.decode_batch")
        return DecodedBatch(batch_id, n_senders, fields)

    def batch_counts(self, data: bytes | memoryview) -> tuple[bytes, int, np.ndarray]:
        """``(batch_id, n_senders, counts)``: a batch counted per (instance, value index), validated.

        ``counts`` has shape ``(n_instances, alphabet_size)`` (see `dense_counts`). Fields of up to 8
        bits that divide a byte are counted from a histogram of the payload's bytes, without
        unpacking them.
        """
        owner = "WireSpec.batch_counts"
        batch_id, n_senders, count, start = self.read_batch_header(data)
        payload = self._payload(data, start, count, owner)
        width = self.field_bits
        if not self.countable:
            raise invalid("spec", owner, f"at most {MAX_DENSE_CELLS} (instance, value) cells to count densely",
                          self.n_instances << self.value_bits)
        cells = self.n_instances << self.value_bits
        if self.positional and self.n_instances > 1:  # one row of n c value indices per instance
            rows = unpack_fields(payload, count, width).astype(np.int64).reshape(self.n_instances, -1)
            rows += (np.arange(self.n_instances, dtype=np.int64) << self.value_bits)[:, None]
            counts = np.bincount(rows.reshape(-1), minlength=cells)
        elif width in (1, 2, 4, 8):
            counts = _counts_from_bytes(payload, count, width)
        else:
            counts = count_fields(payload, count, width, cells)
        return batch_id, n_senders, self._cells(counts, owner)

    @property
    def countable(self) -> bool:
        """Whether `batch_counts` may count this configuration densely (at most `MAX_DENSE_CELLS` cells)."""
        return (self.n_instances << self.value_bits) <= MAX_DENSE_CELLS

    def dense_counts(self, fields: np.ndarray) -> np.ndarray:
        """Counts of the (valid) fields, shape ``(n_instances, alphabet_size)``."""
        return self._cells(np.bincount(fields, minlength=self.n_instances << self.value_bits), "WireSpec.dense_counts")

    def _cells(self, counts: np.ndarray, owner: str) -> np.ndarray:
        """Per-field counts (length ``>= I 2^v``) as an ``(I, |A|)`` table; a count on an invalid field raises."""
        cells = self.n_instances << self.value_bits
        if counts[cells:].any():
            raise _refuse("data", owner, f"instance ids below {self.n_instances}", "a message with a larger instance id")
        table = counts[:cells].reshape(self.n_instances, 1 << self.value_bits)
        if table[:, self.alphabet_size :].any():
            raise _refuse("data", owner, f"value indices below {self.alphabet_size}", "a message outside the alphabet")
        return table[:, : self.alphabet_size].astype(np.int64)

    def _check_fields(self, fields: np.ndarray, owner: str) -> None:
        """Every payload field in range (positional: value indices only; tagged: instance and value index)."""
        if fields.size == 0:
            return
        if self.positional:
            instances, indices = np.zeros(1, dtype=np.int64), fields
        else:
            instances, indices = self.split(fields)
        if not instances.max() < self.n_instances:
            raise _refuse("data", owner, f"instance ids below {self.n_instances}", int(instances.max()))
        if not indices.max() < self.alphabet_size:
            raise _refuse("data", owner, f"value indices below {self.alphabet_size} (the alphabet)", int(indices.max()))


def _counts_from_bytes(payload: np.ndarray, count: int, width: int) -> np.ndarray:
    """Per-field counts of fields of ``width`` in (1, 2, 4, 8) bits, from one histogram of the bytes.

    Each byte holds ``8 / width`` fields; the zero padding fields of the last byte are removed.
    """
    byte_counts = np.bincount(payload, minlength=256)
    if width == 8:
        return byte_counts
    per_byte = 8 // width
    mask = (1 << width) - 1
    values = np.arange(256)
    counts = np.zeros(1 << width, dtype=np.int64)
    for position in range(per_byte):
        counts += np.bincount((values >> (8 - width * (position + 1))) & mask, weights=byte_counts,
                              minlength=1 << width).astype(np.int64)
    counts[0] -= per_byte * payload.size - count  # the padding fields (checked to be zero)
    return counts
