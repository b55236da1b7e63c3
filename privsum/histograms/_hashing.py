"""Public hash functions of item identifiers: buckets and signs per row, from a stored seed."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from privsum._validation import invalid

__all__ = ["item_ids", "row_hashes"]

_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)


def _mix(values: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser (a bijection of 64-bit words with good avalanche), wrapping arithmetic."""
    with np.errstate(over="ignore"):
        z = values.copy()
        z ^= z >> np.uint64(30)
        z *= _MIX_1
        z ^= z >> np.uint64(27)
        z *= _MIX_2
        z ^= z >> np.uint64(31)
    return z


def item_ids(items: Any, owner: str, name: str = "items") -> np.ndarray:
    """Items as ``uint64`` identifiers: non-negative integers as themselves, strings and bytes by BLAKE2b.

    Integers must be below ``2**63``; floats (NaN included), booleans and other types are refused
    rather than converted, so that ``1.0`` and ``1`` or ``True`` are never silently one item.
    """
    if isinstance(items, (str, bytes)) or not hasattr(items, "__len__"):
        raise invalid(name, owner, "a 1-D sequence of items (non-negative integers, strings or bytes)", type(items).__name__)
    array = items if isinstance(items, np.ndarray) else np.asarray(items, dtype=object)
    if array.ndim != 1 or array.size == 0:
        raise invalid(name, owner, "a non-empty 1-D sequence of items", f"shape {array.shape}")
    if array.dtype.kind in "iu":
        if array.min() < 0 or (array.dtype == np.uint64 and array.max() >= 2**63):
            raise invalid(name, owner, "integers in [0, 2**63)", int(array.min()) if array.min() < 0 else int(array.max()))
        return array.astype(np.uint64)
    if array.dtype.kind in "US":
        return np.array([_digest(item) for item in array.tolist()], dtype=np.uint64)
    out = np.empty(array.size, dtype=np.uint64)
    for row, item in enumerate(array.tolist()):
        if isinstance(item, (str, bytes)):
            out[row] = _digest(item)
        elif isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)) and 0 <= item < 2**63:
            out[row] = item
        else:
            raise invalid(name, owner, "non-negative integers below 2**63, strings or bytes (no floats, NaN or booleans)", item)
    return out


def _digest(item: str | bytes) -> int:
    data = item.encode("utf-8") if isinstance(item, str) else item
    return int.from_bytes(hashlib.blake2b(data, digest_size=8, person=b"privsum-items").digest(), "little")


def row_hashes(ids: np.ndarray, seed: int, rows: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """``(buckets, signs)``, each of shape ``(rows, n_items)``: bucket in ``[0, width)``, sign ``+1`` or ``-1``.

    Row ``r`` hashes ``mix(id XOR key_r)`` with ``key_r`` drawn from the public ``seed``; the bucket
    is the high bits times ``width`` (no modulo bias beyond ``width / 2^32``) and the sign the lowest bit.
    """
    keys = np.random.default_rng([seed, 0x5EED]).integers(0, 2**63, size=rows, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    words = _mix(ids[np.newaxis, :] ^ keys[:, np.newaxis])
    buckets = ((words >> np.uint64(32)) * np.uint64(width)) >> np.uint64(32)
    signs = 1 - 2 * (words & np.uint64(1)).astype(np.int64)
    return buckets.astype(np.int64), signs
