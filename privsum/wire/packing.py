"""Fixed-width bit fields packed most-significant bit first, and their inverse.

Message ``k`` of width ``w`` occupies bits ``k w .. k w + w - 1`` of the payload, bit 0 being the
most significant bit of byte 0; the last byte is padded with zero bits. Both directions work on
groups of eight fields (``w`` whole bytes), so every step is a numpy operation over
``n_fields / 8`` entries, whatever ``w``. `pack_rows` packs many equally long uploads at once.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from privsum._validation import as_array, check_integer, invalid

__all__ = ["MAX_FIELD_BITS", "count_fields", "pack_fields", "pack_rows", "packed_size", "unpack_fields"]

#: The widest field supported: 56 bits (a field spans at most 8 bytes, so one uint64 holds it).
MAX_FIELD_BITS = 56


def packed_size(n_fields: int, width: int) -> int:
    """Bytes of ``n_fields`` fields of ``width`` bits: ``ceil(n_fields * width / 8)``."""
    n_fields = check_integer(n_fields, "n_fields", "packed_size")
    return (n_fields * _check_width(width, "packed_size") + 7) // 8


def _check_width(width: int, owner: str) -> int:
    return check_integer(width, "width", owner, low=1, high=MAX_FIELD_BITS)


def _check_fields(fields: np.ndarray, width: int, owner: str = "pack_fields", name: str = "fields",
                  ndim: int = 1) -> np.ndarray:
    """An ``ndim``-D array of integer dtype (never cast) with every field in ``[0, 2^width)``, or raise."""
    fields = as_array(fields, name, owner)
    if not (fields.ndim == ndim and (fields.size == 0 or (fields.dtype.kind in "iu"))):
        raise invalid(name, owner, f"a {ndim}-D array of integer dtype", f"shape {fields.shape}, dtype {fields.dtype}")
    if fields.size and not (int(fields.min()) >= 0 and int(fields.max()) < 1 << width):
        raise invalid(name, owner, f"integers in [0, 2^{width})", f"range [{int(fields.min())}, {int(fields.max())}]")
    return fields


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
    width = _check_width(width, "pack_fields")
    return _pack_checked(_check_fields(fields, width), width)


def _pack_checked(fields: np.ndarray, width: int) -> bytes:
    """`pack_fields` of fields already checked to be a 1-D integer array in ``[0, 2^width)``."""
    count = int(fields.size)
    if count == 0:
        return b""
    if width in (8, 16, 32):
        return np.asarray(fields).astype(f">u{width // 8}").tobytes()
    if width == 1:
        return np.packbits(np.asarray(fields, dtype=np.uint8)).tobytes()
    if width > 24:
        return _pack_by_words(np.asarray(fields), count, width)
    dtype = _field_dtype(width)  # a field shifted by up to 7 bits still fits
    groups = -(-count // 8)
    if count % 8 == 0 and fields.dtype == dtype:
        padded = fields
    else:
        padded = np.zeros(groups * 8, dtype=dtype)
        padded[:count] = fields
    columns = padded.reshape(groups, 8).T  # (8, groups): field j of each group
    out = np.zeros((width, groups), dtype=np.uint8)
    for j in range(8):
        start = j * width
        first, last = start // 8, (start + width - 1) // 8
        field = columns[j] << dtype((last + 1) * 8 - (start + width))  # aligned to the end of its last byte
        for byte in range(first, last + 1):
            shifted = field >> dtype(8 * (last - byte)) if byte < last else field
            np.bitwise_or(out[byte], shifted, out=out[byte], casting="unsafe")  # the cast keeps the low 8 bits
    return out.T.tobytes()[: packed_size(count, width)]


def pack_rows(indices: np.ndarray, value_bits: int, *, tags: np.ndarray | None = None, tag_bits: int = 0) -> np.ndarray:
    """Each row's fields ``tags << value_bits | row`` packed as `pack_fields` packs them, one row of bytes per row.

    Every row holds ``m`` value indices (each ``< 2^value_bits``) and shares the ``m`` tags (each
    ``< 2^tag_bits``; ``None``: no tag, ``tag_bits`` 0). Rows are packed independently (each starts on a
    byte and is zero-padded): row ``u`` of the result is ``pack_fields(tags << value_bits | indices[u],
    tag_bits + value_bits)``. For one-bit values (a tag and a bit, as RR's messages), the tags are
    packed once (a template) and each row's bits are OR-ed in at their fixed positions, all rows at
    once; other fields are packed by the generic packer.

    Returns:
        a uint8 array of shape ``(rows, packed_size(m, tag_bits + value_bits))``.

    Examples:
        >>> pack_rows(np.array([[1, 0], [0, 1]]), 1, tags=np.array([0, 1]), tag_bits=1).tolist()  # fields 01 10, 00 11
        [[96], [48]]
    """
    owner = "pack_rows"
    value_bits = check_integer(value_bits, "value_bits", owner, low=1, high=MAX_FIELD_BITS)
    tag_bits = check_integer(tag_bits, "tag_bits", owner, low=0, high=MAX_FIELD_BITS - value_bits)
    indices = _check_fields(indices, value_bits, owner, "indices", ndim=2)
    n_rows, count = indices.shape
    if tags is None and tag_bits:
        raise invalid("tag_bits", owner, "0 without tags", tag_bits)
    if tags is not None:
        tags = _check_fields(tags, tag_bits, owner, "tags")
        if tags.size != count:
            raise invalid("tags", owner, f"one tag per column of indices ({count})", f"{tags.size} tags")
    width = tag_bits + value_bits
    if count == 0:
        return np.zeros((n_rows, 0), dtype=np.uint8)
    groups = -(-count // 8)  # rows padded with zero fields to whole groups of eight, so that each is whole bytes
    scatter = tag_bits > 0 and value_bits == 1 and width not in (8, 16, 32)
    cells = np.zeros((n_rows, groups * 8), dtype=np.uint8 if scatter else _field_dtype(width))
    cells[:, :count] = indices
    if scatter:
        packed = _scatter_bits(_tag_template(tags, tag_bits, groups), cells, tag_bits)
    else:  # the fields, in the dtype `pack_fields` computes in (no further copy)
        if tag_bits:
            cells[:, :count] |= tags.astype(cells.dtype) << cells.dtype.type(value_bits)
        packed = np.frombuffer(_pack_checked(cells.reshape(-1), width), dtype=np.uint8)
    return packed.reshape(n_rows, groups * width)[:, : packed_size(count, width)]


def _tag_template(tags: np.ndarray, tag_bits: int, groups: int) -> np.ndarray:
    """The packed fields ``tag << 1`` (the value bit zero) of one row, ``groups`` groups of eight."""
    fields = np.zeros(groups * 8, dtype=np.uint64)
    fields[: tags.size] = tags
    return np.frombuffer(_pack_checked(fields << np.uint64(1), tag_bits + 1), dtype=np.uint8)


def _scatter_bits(template: np.ndarray, bits: np.ndarray, tag_bits: int) -> np.ndarray:
    """Copies of the template, one per row of ``bits`` (uint8, 0 or 1), each field's bit OR-ed in at its position.

    A group of eight fields is ``w = tag_bits + 1`` bytes; the bit of field ``k`` is bit ``k w + tag_bits``
    of its group: one strided OR per field ``k`` over all rows and groups at once.
    """
    width = tag_bits + 1
    n_rows, groups = bits.shape[0], bits.shape[1] // 8
    out = np.empty((n_rows, groups, width), dtype=np.uint8)
    out[...] = template.reshape(groups, width)
    bits = bits.reshape(n_rows, groups, 8)
    for k in range(8):
        position = k * width + tag_bits
        out[:, :, position // 8] |= bits[:, :, k] << np.uint8(7 - position % 8)
    return out.reshape(-1)


def _pack_by_words(fields: np.ndarray, count: int, width: int) -> bytes:
    """Wide fields: field ``j`` of each group OR-ed into the big-endian 64-bit word at byte ``j width // 8`` of its group."""
    groups = -(-count // 8)
    if count % 8 == 0 and fields.dtype in (np.uint64, np.int64):
        columns = fields.view(np.uint64).reshape(groups, 8)
    else:
        columns = np.zeros((groups, 8), dtype=np.uint64)
        columns.reshape(-1)[:count] = fields
    buffer = np.zeros(groups * width + 8, dtype=np.uint8)  # 8 spare bytes: every word lies inside
    for j in range(8):
        start = j * width
        words = np.ndarray(shape=(groups,), dtype=">u8", buffer=buffer, offset=start // 8, strides=(width,))
        words |= columns[:, j] << np.uint64(64 - start % 8 - width)
    return buffer[: packed_size(count, width)].tobytes()


def unpack_fields(payload: bytes | memoryview | np.ndarray, count: int, width: int) -> np.ndarray:
    """``count`` fields of ``width`` bits from the payload (exactly `packed_size` bytes, else refused).

    Returns uint32 fields for widths up to 24 bits, uint64 beyond.

    Examples:
        >>> unpack_fields(bytes.fromhex('a8'), 2, 3).tolist()
        [5, 2]
    """
    owner = "unpack_fields"
    width = _check_width(width, owner)
    count = check_integer(count, "count", owner)
    data = _as_bytes(payload, owner)
    if not data.size == packed_size(count, width):
        raise invalid("payload", owner, f"exactly {packed_size(count, width)} bytes for {count} fields of {width} bits",
                      f"{data.size} bytes")
    dtype = _field_dtype(width)
    if count == 0:
        return np.zeros(0, dtype=dtype)
    if width in (8, 16, 32):
        return data[: count * width // 8].view(f">u{width // 8}").astype(dtype)
    if width == 1:
        return np.unpackbits(data, count=count).astype(dtype)
    columns = list(_field_columns(data, count, width))
    out = np.empty((columns[0].size, 8), dtype=dtype)
    for j, column in enumerate(columns):
        out[:, j] = column
    return out.reshape(-1)[:count]


def count_fields(payload: bytes | memoryview | np.ndarray, count: int, width: int, minlength: int) -> np.ndarray:
    """How often each field value occurs among ``count`` fields (`numpy.bincount` of `unpack_fields`), without listing them.

    Examples:
        >>> count_fields(pack_fields(np.array([5, 2, 5]), 3), 3, 3, 8).tolist()
        [0, 0, 1, 0, 0, 2, 0, 0]
    """
    data = _as_bytes(payload)
    if count == 0 or width in (1, 8, 16, 32):
        return np.bincount(unpack_fields(data, count, width).astype(np.intp), minlength=minlength)
    counts = np.zeros(max(minlength, 1 << width) if width <= 24 else minlength, dtype=np.int64)
    for column in _field_columns(data, count, width):
        found = np.bincount(column, minlength=counts.size)
        if found.size > counts.size:
            return np.bincount(unpack_fields(data, count, width).astype(np.intp), minlength=minlength)
        counts += found
    counts[0] -= -(-count // 8) * 8 - count  # the zero fields after the last one
    return counts


def _as_bytes(payload: bytes | memoryview | np.ndarray, owner: str = "count_fields") -> np.ndarray:
    if isinstance(payload, np.ndarray) and payload.dtype == np.uint8 and payload.ndim == 1:
        return payload
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        raise invalid("payload", owner, "bytes, a memoryview or a 1-D uint8 array", type(payload).__name__)
    return np.frombuffer(payload, dtype=np.uint8)


def _field_columns(data: np.ndarray, count: int, width: int) -> Iterator[np.ndarray]:
    """Field ``j`` of every group of eight (``j = 0..7``), as int64, read as one 64-bit word per group.

    A group is ``width`` bytes; field ``j`` starts at bit ``j width``, inside the big-endian 64-bit
    word at byte ``j width // 8`` of its group (a field spans at most 8 bytes since ``width <= 56``).
    The payload is copied once into a buffer padded with zero bytes, so that every word can be read.
    """
    groups = -(-count // 8)
    buffer = np.zeros(groups * width + 8, dtype=np.uint8)
    buffer[: data.size] = data
    mask = np.uint64((1 << width) - 1)
    for j in range(8):
        start = j * width
        words = np.ndarray(shape=(groups,), dtype=">u8", buffer=buffer, offset=start // 8, strides=(width,))
        yield ((words >> np.uint64(64 - start % 8 - width)) & mask).view(np.int64)
