"""A small versioned, checksummed (optionally signed) binary envelope for released objects (never pickled).

Layout (all integers little-endian)::

    magic (6 bytes) | format version (uint16) | kind (uint8) | header length (uint32)
    | header (UTF-8 JSON object) | payload (raw little-endian numbers) | SHA-256 of all that precedes
    | [HMAC-SHA256 of all that precedes the SHA-256, when signed]

The high bit of the kind byte marks a signed file (so the flag itself is checksummed and signed).

Integrity versus authenticity: the SHA-256 checksum only detects accidental corruption
(truncation, flipped bits). Anyone can edit a header (say epsilon 1 -> 0.01) and recompute it.
A signature made with a secret key (``to_bytes(key=...)``, HMAC-SHA256) lets the holder of the
key detect any edit: ``from_bytes(data, key=...)`` refuses unsigned or mis-signed bytes (the
comparison is constant-time). Without ``key``, a signed file is checked for corruption only.

`unpack` checks, in order and before anything is decoded: the type and the length of the bytes,
the magic, the version, the kind, the header length, the checksum and (with a key) the signature;
only then is the JSON header parsed (it must be an object) and the payload's length checked
against the shape the header declares before numpy reads it. Every refusal is the library's
`InvalidParameterError` naming the ``data`` (or ``key``) parameter. Nothing here calls `pickle`
or `numpy.load`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from privsum._validation import invalid

__all__ = ["MIN_KEY_BYTES", "Envelope", "check_key", "pack", "unpack"]

_PREFIX = struct.Struct("<6sHBI")
_DIGEST_SIZE = 32
_SIGNED = 0x80  # high bit of the kind byte: an HMAC-SHA256 signature follows the checksum
#: Shortest signing key accepted (128 bits).
MIN_KEY_BYTES = 16
#: Longest JSON header accepted (a family spec and a few numbers need far less).
MAX_HEADER_BYTES = 1 << 20


@dataclass(frozen=True)
class Envelope:
    """What identifies one serialised format: its magic, version and a name for error messages."""

    magic: bytes
    version: int
    name: str


def check_key(key: Any, owner: str) -> bytes | None:
    """``None``, or the signing key as bytes (at least `MIN_KEY_BYTES` of them), or raise naming ``key``."""
    if key is None:
        return None
    if not (isinstance(key, (bytes, bytearray, memoryview)) and len(bytes(key)) >= MIN_KEY_BYTES):
        shown = f"{len(bytes(key))} bytes" if isinstance(key, (bytes, bytearray, memoryview)) else type(key).__name__
        raise invalid("key", owner, f"None or a secret of at least {MIN_KEY_BYTES} bytes", shown)
    return bytes(key)


def pack(
    envelope: Envelope, kind: int, header: dict[str, Any], payload: np.ndarray, dtype: str, *, key: bytes | None = None
) -> bytes:
    """Serialise ``header`` (JSON) and ``payload`` (as ``dtype``, its shape stored in the header), signed with ``key``."""
    array = np.ascontiguousarray(payload, dtype=dtype)
    encoded = json.dumps({**header, "shape": list(array.shape)}, sort_keys=True, allow_nan=False).encode("utf-8")
    stored_kind = kind | (_SIGNED if key is not None else 0)
    body = _PREFIX.pack(envelope.magic, envelope.version, stored_kind, len(encoded)) + encoded + array.tobytes()
    signature = b"" if key is None else hmac.new(key, body, hashlib.sha256).digest()
    return body + hashlib.sha256(body).digest() + signature


def unpack(
    data: Any, envelope: Envelope, kind: int, kind_name: str, dtype: str, owner: str, *, key: bytes | None = None
) -> tuple[dict[str, Any], np.ndarray]:
    """Check and decode `pack` output: the JSON header (a dict) and the payload array (a copy).

    With ``key`` (checked by `check_key`), unsigned bytes and bytes whose signature does not
    match are refused before anything is decoded.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise invalid("data", owner, "bytes", type(data).__name__)
    data = bytes(data)
    if len(data) < _PREFIX.size + _DIGEST_SIZE:
        raise invalid("data", owner, f"the bytes of a serialised {envelope.name} (too short)", f"{len(data)} bytes")
    magic, version, stored_kind, header_length = _PREFIX.unpack_from(data)
    if magic != envelope.magic:
        raise invalid("data", owner, f"the bytes of a serialised {envelope.name} (magic {envelope.magic!r})", f"magic {magic!r}")
    if version != envelope.version:
        raise invalid("data", owner, f"{envelope.name} format version {envelope.version}", f"version {version}")
    signed = bool(stored_kind & _SIGNED)
    if stored_kind & ~_SIGNED != kind:
        raise invalid("data", owner, f"the bytes of {kind_name} (kind {kind})", f"kind {stored_kind & ~_SIGNED}")
    trailer = _DIGEST_SIZE * (2 if signed else 1)
    header_end = _PREFIX.size + header_length
    if not (header_length <= MAX_HEADER_BYTES and header_end <= len(data) - trailer):
        raise invalid("data", owner, "a header length within the bytes", f"header length {header_length}")
    digest_start = len(data) - trailer
    body, digest = data[:digest_start], data[digest_start : digest_start + _DIGEST_SIZE]
    signature = data[digest_start + _DIGEST_SIZE :]  # empty when unsigned
    if not hmac.compare_digest(hashlib.sha256(body).digest(), digest):
        raise invalid("data", owner, f"intact bytes of a serialised {envelope.name} (checksum)", "corrupted or truncated bytes")
    if key is not None:
        if not signed:
            raise invalid("data", owner, f"a {envelope.name} signed with the given key", "unsigned bytes")
        if not hmac.compare_digest(hmac.new(key, body, hashlib.sha256).digest(), signature):
            raise invalid("data", owner, f"a {envelope.name} signed with the given key", "a signature that does not match")
    header = _decode_header(body[_PREFIX.size : header_end], owner)
    shape = _declared_shape(header, owner)
    payload = body[header_end:]
    item = np.dtype(dtype).itemsize
    if len(payload) != math.prod(shape) * item:
        raise invalid("data", owner, f"{math.prod(shape) * item} payload bytes for shape {tuple(shape)}", len(payload))
    return header, np.frombuffer(payload, dtype=dtype).reshape(shape).copy()


def _decode_header(raw: bytes, owner: str) -> dict[str, Any]:
    try:
        header = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise invalid("data", owner, "a UTF-8 JSON header", type(error).__name__) from None
    if not isinstance(header, dict):
        raise invalid("data", owner, "a JSON object as header", type(header).__name__)
    return header


def _refuse_constant(name: str) -> None:
    raise ValueError(f"non-finite number {name} in the header")


def _declared_shape(header: dict[str, Any], owner: str) -> list[int]:
    shape = header.get("shape")
    if not (
        isinstance(shape, list)
        and len(shape) <= 8
        and all(isinstance(size, int) and not isinstance(size, bool) and size >= 0 for size in shape)
    ):
        raise invalid("data", owner, "a header 'shape' of non-negative integers", shape)
    return shape


def header_field(header: dict[str, Any], key: str, kinds: type | tuple[type, ...], owner: str) -> Any:
    """``header[key]``, refused (naming ``data``) when missing or not of ``kinds`` (bools are not numbers)."""
    value = header.get(key)
    number_expected = kinds in (int, float) or (isinstance(kinds, tuple) and set(kinds) <= {int, float})
    if key not in header or not isinstance(value, kinds) or (number_expected and isinstance(value, bool)):
        raise invalid("data", owner, f"a header field {key!r} of type {kinds}", value)
    return value
