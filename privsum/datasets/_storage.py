"""Compact on-disk encodings shared by the loaders and `scripts/build_wordnet_dataset.py`.

Unit-norm embeddings are stored as int8 directions: each row is scaled so that its largest
coordinate in absolute value maps to 127 and rounded. Only the direction matters, so no scale is
stored: decoding divides the int8 row by its own norm. Lists of strings are stored as one UTF-8
byte array with a separator, which `numpy.savez_compressed` deflates well and which loads
without pickle.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["STRING_SEPARATOR", "decode_strings", "decode_unit_rows", "encode_strings", "encode_unit_rows"]

STRING_SEPARATOR = "\n"


def encode_unit_rows(embeddings: np.ndarray) -> np.ndarray:
    """Quantise the direction of each row of a 2-D float array to int8 (largest coordinate -> ±127)."""
    rows = np.asarray(embeddings, dtype=np.float64)
    largest = np.max(np.abs(rows), axis=1, keepdims=True)
    if not np.all(largest > 0):
        raise ValueError("cannot encode an all-zero embedding row")
    return np.rint(rows * (127.0 / largest)).astype(np.int8)


def decode_unit_rows(codes: np.ndarray) -> np.ndarray:
    """Turn int8 direction codes back into float32 rows of unit Euclidean norm."""
    rows = np.asarray(codes, dtype=np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def encode_strings(strings: Sequence[str]) -> np.ndarray:
    """Join strings (none may contain the separator) into one uint8 array of UTF-8 bytes."""
    if any(STRING_SEPARATOR in text for text in strings):
        raise ValueError("strings to encode must not contain a newline")
    return np.frombuffer(STRING_SEPARATOR.join(strings).encode("utf-8"), dtype=np.uint8)


def decode_strings(blob: np.ndarray, count: int) -> tuple[str, ...]:
    """Split a blob written by `encode_strings` back into ``count`` strings."""
    if count == 0:
        return ()
    strings = tuple(np.asarray(blob, dtype=np.uint8).tobytes().decode("utf-8").split(STRING_SEPARATOR))
    if len(strings) != count:
        raise ValueError(f"expected {count} strings in the blob, found {len(strings)}")
    return strings
