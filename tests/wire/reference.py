"""An independent, deliberately naive reader of the wire format, written from docs/wire-format.md.

It parses bytes with Python integers and bit strings (no numpy, no privsum.wire), so the tests
compare two implementations of the page rather than the code with itself.
"""

from __future__ import annotations

import hashlib
import math


def field_width(n_instances: int, alphabet_size: int) -> tuple[int, int]:
    tag = math.ceil(math.log2(n_instances)) if n_instances > 1 else 0
    value = max(1, math.ceil(math.log2(alphabet_size)))
    return tag, value


def read(data: bytes, n_instances: int, alphabet_size: int) -> dict:
    """Parse an upload or a batch; raise ValueError on anything the page forbids."""
    if data[:4] != b"PSUM" or data[4] != 1 or data[5] not in (1, 2):
        raise ValueError("bad magic, version or kind")
    kind, name_length = data[5], data[6]
    name = data[7 : 7 + name_length].decode("ascii")
    position = 7 + name_length
    fingerprint = data[position : position + 32]
    position += 32
    result = {"kind": kind, "name": name, "fingerprint": fingerprint.hex()}
    if kind == 1:
        count = int.from_bytes(data[position : position + 4], "big")
        position += 4
    else:
        result["batch_id"] = data[position : position + 16].hex()
        result["n_senders"] = int.from_bytes(data[position + 16 : position + 20], "big")
        count = int.from_bytes(data[position + 20 : position + 28], "big")
        position += 28
    tag_bits, value_bits = field_width(n_instances, alphabet_size)
    width = tag_bits + value_bits
    payload = data[position:]
    if len(payload) != (count * width + 7) // 8:
        raise ValueError("wrong payload length")
    bits = "".join(format(byte, "08b") for byte in payload)
    if set(bits[count * width :]) - {"0"}:
        raise ValueError("non-zero padding")
    instances, indices = [], []
    for k in range(count):
        field = int(bits[k * width : (k + 1) * width], 2)
        instance, index = field >> value_bits, field & ((1 << value_bits) - 1)
        if instance >= n_instances or index >= alphabet_size:
            raise ValueError("out of range")
        instances.append(instance)
        indices.append(index)
    result.update(count=count, instances=instances, indices=indices)
    return result


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("ascii")).hexdigest()
