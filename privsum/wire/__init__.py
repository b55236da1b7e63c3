"""The byte format of uploads and batches: versioned header, configuration fingerprint, packed messages.

Knows nothing of any protocol's mathematics: `WireSpec` carries the sizes a configuration fixes
(``docs/wire-format.md`` is the complete description, enough to write a client in another language).
"""

from privsum.wire.fingerprint import FINGERPRINT_BYTES, canonical_encoding, fingerprint
from privsum.wire.format import BATCH, MAGIC, UPLOAD, VERSION, DecodedBatch, WireFormatError, WireSpec
from privsum.wire.packing import MAX_FIELD_BITS, pack_fields, packed_size, unpack_fields

__all__ = [
    "BATCH",
    "FINGERPRINT_BYTES",
    "MAGIC",
    "MAX_FIELD_BITS",
    "UPLOAD",
    "VERSION",
    "DecodedBatch",
    "WireFormatError",
    "WireSpec",
    "canonical_encoding",
    "fingerprint",
    "pack_fields",
    "packed_size",
    "unpack_fields",
]
