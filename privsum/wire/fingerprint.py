"""The canonical encoding of a configuration's public parameters and its SHA-256 fingerprint.

A deployment (protocol, calibrated public parameters, number of instances, alphabet, caps) is
written as one canonical byte string; its SHA-256 digest is the *fingerprint* every wire message
carries, so a message produced under another protocol or another configuration is refused. The
encoding is defined exactly on ``docs/wire-format.md`` (section "Fingerprint"); it is a restricted
JSON that any language can reproduce byte for byte:

* objects with keys sorted by their UTF-8 bytes, no whitespace anywhere;
* strings of printable ASCII only (``0x20``..``0x7e``), escaping only ``"`` and ``\\`` with a backslash;
* integers in decimal (``-`` for negatives, no leading zeros, no exponent);
* floating-point numbers as the string ``"f64:"`` followed by the 16 lowercase hexadecimal
  digits of their IEEE-754 binary64 bit pattern (big-endian), so that no decimal printing
  is involved;
* ``true``, ``false``, ``null``; arrays of the above.
"""

from __future__ import annotations

import hashlib
import math
import numbers
import struct
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from privsum._validation import invalid

__all__ = ["FINGERPRINT_BYTES", "canonical_encoding", "fingerprint"]

#: Length of a fingerprint: a SHA-256 digest.
FINGERPRINT_BYTES = 32


def canonical_encoding(value: Any) -> bytes:
    """The canonical bytes of ``value`` (dicts, lists/tuples, str, int, float, bool, None).

    Examples:
        >>> canonical_encoding({"b": [1, True, None], "a": 0.5})
        b'{"a":"f64:3fe0000000000000","b":[1,true,null]}'
    """
    return _encode(value, "value").encode("ascii")


def fingerprint(value: Any) -> bytes:
    """SHA-256 of `canonical_encoding` (32 bytes).

    Examples:
        >>> fingerprint({"protocol": "RRBitSum"}).hex()[:16]
        'b7c1b078bdb52d0b'
    """
    return hashlib.sha256(canonical_encoding(value)).digest()


def _encode(value: Any, where: str) -> str:
    if value is None:
        return "null"
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        number = float(value)
        if math.isnan(number):
            raise invalid(where, "canonical_encoding", "a number that is not NaN", value)
        return '"f64:' + struct.pack(">d", number).hex() + '"'
    if isinstance(value, str):
        if not all(0x20 <= ord(c) <= 0x7E for c in value):
            raise invalid(where, "canonical_encoding", "a string of printable ASCII", value)
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, Mapping):
        keys = list(value)
        if not all(isinstance(key, str) for key in keys):
            raise invalid(where, "canonical_encoding", "a mapping with string keys", keys)
        items = sorted(keys, key=lambda key: key.encode("ascii", "replace"))
        return "{" + ",".join(f"{_encode(key, where)}:{_encode(value[key], f'{where}.{key}')}" for key in items) + "}"
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return _encode(value.item(), where)
    if isinstance(value, (Sequence, np.ndarray)):
        return "[" + ",".join(_encode(item, f"{where}[]") for item in value) + "]"
    raise invalid(where, "canonical_encoding", "None, a bool, number, string, sequence or mapping", type(value).__name__)
