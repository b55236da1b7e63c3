"""Fixed-width bit fields packed most-significant bit first, and their inverse.

Message ``k`` of width ``w`` occupies bits ``k w .. k w + w - 1`` of the payload, bit 0 being the
most significant bit of byte 0; the last byte is padded with zero bits. Both directions work on
groups of eight fields (``w`` whole bytes), so every step is a numpy operation over
``n_fields / 8`` entries, whatever ``w``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MAX_FIELD_BITS", "pack_fields", "packed_size", "unpack_fields"]

#: The widest field supported: 56 bits (a field spans at most 8 bytes, so one uint64 holds it).
MAX_FIELD_BITS = 56


def packed_size(n_fields: int, width: int) -> int:
    """Bytes of ``n_fields`` fields of ``width`` bits: ``ceil(n_fields * width / 8)``."""
    return (n_fields * width + 7) // 8


def _field_dtype(width: int) -> type:
    return np.uint32 if width <= 24 else np.uint64


def pack_fields(fields: np.ndarray, width: int) -> bytes:
    """The fields (each ``< 2^width``) packed MSB first, zero-padded to whole bytes.

    Examples:
        >>> pack_fields(np.array([1, 0, 1, 1, 0, 0, 0, 0, 1]), 1).hex()
        'b080'
        >>> pack_fields(np.array([5, 2]), 3).hex()
        'a8'
    """
    count = int(fields.size)
    if count == 0:
        return b""
    if width in (8, 16, 32):
        return np.asarray(fields).astype(f">u{width // 8}").tobytes()
    if width == 1:
        return np.packbits(np.asarray(fields, dtype=np.uint8)).tobytes()
    dtype = _field_dtype(width)
    groups = -(-count // 8)
    padded = np.zeros(groups * 8, dtype=dtype)
    padded[:count] = fields
    columns = padded.reshape(groups, 8).T  # (8, groups): field j of each group
    out = np.zeros((width, groups), dtype=np.uint8)
    for j in range(8):
        start = j * width
        first, last = start // 8, (start + width - 1) // 8
        shift = (last + 1) * 8 - (start + width)  # spare bits after the field in its last byte
        field = columns[j].astype(np.uint64) << np.uint64(shift)
        for byte in range(first, last + 1):
            out[byte] |= ((field >> np.uint64(8 * (last - byte))) & np.uint64(0xFF)).astype(np.uint8)
    return out.T.tobytes()[: packed_size(count, width)]


def unpack_fields(payload: bytes | memoryview | np.ndarray, count: int, width: int) -> np.ndarray:
    """``count`` fields of ``width`` bits from the payload (exactly `packed_size` bytes, checked by the caller).

    Returns uint32 fields for widths up to 24 bits, uint64 beyond.

    Examples:
        >>> unpack_fields(bytes.fromhex('a8'), 2, 3).tolist()
        [5, 2]
    """
    data = np.frombuffer(payload, dtype=np.uint8) if not isinstance(payload, np.ndarray) else payload
    if count == 0:
        return np.zeros(0, dtype=_field_dtype(width))
    if width in (8, 16, 32):
        return data[: count * width // 8].view(f">u{width // 8}").astype(_field_dtype(width))
    if width == 1:
        return np.unpackbits(data, count=count).astype(np.uint32)
    dtype = _field_dtype(width)
    groups = -(-count // 8)
    padded = np.zeros(groups * width, dtype=np.uint8)
    padded[: data.size] = data
    rows = np.ascontiguousarray(padded.reshape(groups, width).T).astype(dtype)  # (width bytes, groups)
    out = np.empty((groups, 8), dtype=dtype)
    mask = dtype((1 << width) - 1)
    eight = dtype(8)
    for j in range(8):
        start = j * width
        first, last = start // 8, (start + width - 1) // 8
        accumulated = rows[first].copy()
        for byte in range(first + 1, last + 1):
            accumulated <<= eight
            accumulated |= rows[byte]
        shift = (last + 1) * 8 - (start + width)
        if shift:
            accumulated >>= dtype(shift)
        np.bitwise_and(accumulated, mask, out=out[:, j])
    return out.reshape(-1)[:count]
