"""Batched uploads over HTTP: several senders' uploads in one request body.

A body is a sequence of records, each ``u16 sender length | sender (UTF-8) | u32 upload length |
upload`` (big-endian). The reference shuffler takes the sender named in a record as its identity:
that is the simulator's convenience, and in a deployment the identity must come from an
authenticated connection instead (see ``docs/deployment.md``).
"""

from __future__ import annotations

import struct
from typing import Any

from privsum._validation import check_integer, invalid
from privsum.wire.format import WireFormatError

__all__ = ["RECORD_HEADER_BYTES", "pack_records", "unpack_records"]

#: Bytes of a record's framing: the two length fields.
RECORD_HEADER_BYTES = 6
_MAX_SENDER_BYTES = 256


def pack_records(records: list[tuple[str, bytes]]) -> bytes:
    """The request body of ``(sender, upload)`` pairs.

    Examples:
        >>> unpack_records(pack_records([("a", b"xy")]), max_upload_bytes=10)
        [('a', b'xy')]
    """
    if not isinstance(records, (list, tuple)):
        raise invalid("records", "pack_records", "a list of (sender, upload) pairs", type(records).__name__)
    parts = []
    for record in records:
        sender, upload = _check_record(record)
        name = sender.encode("utf-8")
        parts += [struct.pack(">H", len(name)), name, struct.pack(">I", len(upload)), upload]
    return b"".join(parts)


def _check_record(record: Any) -> tuple[str, bytes]:
    """A ``(sender, upload)`` pair that `unpack_records` reads back: a sender of 1 to 256 UTF-8 bytes, an upload below 4 GiB."""
    constraint = f"(sender, upload) pairs: a str of 1 to {_MAX_SENDER_BYTES} UTF-8 bytes and bytes below 2^32"
    if not (isinstance(record, tuple) and len(record) == 2 and isinstance(record[0], str) and isinstance(record[1], bytes)):
        raise invalid("records", "pack_records", constraint, record)
    sender, upload = record
    try:
        size = len(sender.encode("utf-8"))
    except UnicodeEncodeError:
        raise invalid("records", "pack_records", constraint, sender) from None
    if not (1 <= size <= _MAX_SENDER_BYTES and len(upload) < 2**32):
        raise invalid("records", "pack_records", constraint, f"a sender of {size} bytes, an upload of {len(upload)} bytes")
    return sender, upload


def unpack_records(body: bytes, *, max_upload_bytes: int, max_records: int = 2**32 - 1) -> list[tuple[str, bytes]]:
    """The ``(sender, upload)`` pairs of a body; a malformed framing raises `WireFormatError` (lengths checked first).

    A body of more than ``max_records`` records is refused when its record ``max_records + 1`` begins.
    """
    if not isinstance(body, (bytes, bytearray)):
        raise invalid("body", "unpack_records", "bytes", type(body).__name__)
    max_upload_bytes = check_integer(max_upload_bytes, "max_upload_bytes", "unpack_records", high=2**32 - 1)
    max_records = check_integer(max_records, "max_records", "unpack_records", low=1, high=2**32 - 1)
    records, position, size = [], 0, len(body)
    view = memoryview(body)
    while position < size:
        if len(records) == max_records:
            raise _framing(f"at most {max_records} records (max_records)", f"more, record {max_records + 1} at byte {position}")
        if size - position < 2:
            raise _framing(f"a record header at byte {position}", "truncated")
        (name_length,) = struct.unpack_from(">H", body, position)
        if not 1 <= name_length <= _MAX_SENDER_BYTES or size - position < 2 + name_length + 4:
            raise _framing(f"a sender of 1 to {_MAX_SENDER_BYTES} bytes and an upload length at byte {position}",
                           f"{name_length} bytes")
        try:
            sender = bytes(view[position + 2 : position + 2 + name_length]).decode("utf-8")
        except UnicodeDecodeError:
            raise _framing(f"a UTF-8 sender at byte {position}", "invalid UTF-8") from None
        (upload_length,) = struct.unpack_from(">I", body, position + 2 + name_length)
        start = position + 2 + name_length + 4
        if upload_length > max_upload_bytes or size - start < upload_length:
            raise _framing(f"an upload of at most {max_upload_bytes} bytes within the body at byte {start}",
                           f"{upload_length} bytes")
        records.append((sender, bytes(view[start : start + upload_length])))
        position = start + upload_length
    return records


def _framing(constraint: str, value: str) -> WireFormatError:
    return WireFormatError(f"The 'body' parameter of unpack_records must be {constraint}. Got {value} instead.")
