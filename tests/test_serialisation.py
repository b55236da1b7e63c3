"""Serialised releases (KDE functions, RACE sketches): versioned, validated on load, never unpickled.

Each format is ``magic | version | kind | header length | JSON header | payload [| SHA-256]``.
Every single-byte corruption, truncation, extension, wrong magic, wrong version, wrong kind,
checksum mismatch and malformed header must be refused with the library's error naming ``data``.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from privsum.accounting import PrivacyGuarantee
from privsum.exceptions import InvalidParameterError
from privsum.kde import KDEFunction
from privsum.lsq import L2LSH, RandomFourierFeatures
from privsum.sketches import RACE, ReleasedRACE

PREFIX = struct.Struct("<6sHBI")  # magic, version, kind, header length (both formats)
DIGEST = 32
CORRUPTIONS = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


def kde_function() -> KDEFunction:
    family = RandomFourierFeatures(dimension=3, n_repetitions=5, bandwidth=0.7, seed=4)
    coefficients = np.random.default_rng(0).normal(size=(5, 1))
    return KDEFunction._released(family, coefficients, 40, PrivacyGuarantee(1.5, 1e-6, "add-remove"))


def raw_race() -> RACE:
    family = L2LSH(dimension=2, n_repetitions=4, bucket_width=1.0, n_buckets=8, seed=3)
    return RACE(family).update(np.random.default_rng(1).normal(size=(30, 2)))


def released_race() -> ReleasedRACE:
    return raw_race().release(1.0, noise_source="numpy", rng=2)


@dataclass(frozen=True)
class Format:
    name: str
    make: Callable[[], Any]
    load: Callable[[bytes], Any]
    checksummed: bool


KDE = Format("KDEFunction", kde_function, KDEFunction.from_bytes, True)
RAW_RACE = Format("RACE", raw_race, RACE.from_bytes, False)
RELEASED_RACE = Format("ReleasedRACE", released_race, ReleasedRACE.from_bytes, False)
FORMATS = [KDE, RAW_RACE, RELEASED_RACE]
#: Formats whose every corruption must be refused (RACE: expected to fail until it has a checksum).
STRICT = [KDE, RAW_RACE, RELEASED_RACE]


def refused(fmt: Format, data: Any) -> None:
    with pytest.raises(InvalidParameterError, match="'data'"):
        fmt.load(data)


def rewrite(fmt: Format, data: bytes, **changes: Any) -> bytes:
    """``data`` with prefix fields (magic, version, kind) or header keys changed, its checksum recomputed."""
    body = data[:-DIGEST] if fmt.checksummed else data
    magic, version, kind, length = PREFIX.unpack_from(body)
    header = json.loads(body[PREFIX.size : PREFIX.size + length])
    header.update(changes.pop("header", {}))
    encoded = changes.pop("raw_header", json.dumps(header).encode())
    magic, version, kind = changes.get("magic", magic), changes.get("version", version), changes.get("kind", kind)
    new_body = PREFIX.pack(magic, version, kind, len(encoded)) + encoded + body[PREFIX.size + length :]
    return new_body + hashlib.sha256(new_body).digest() if fmt.checksummed else new_body


# --------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_round_trip_is_exact(fmt: Format) -> None:
    original = fmt.make()
    data = original.to_bytes()
    restored = fmt.load(data)
    assert type(restored) is type(original)
    payload = "coefficients" if fmt is KDE else "counts"
    assert np.array_equal(getattr(restored, payload), getattr(original, payload))
    assert restored.family == original.family
    assert restored.to_bytes() == data  # deterministic: the same release serialises to the same bytes
    if fmt is KDE:
        assert restored == original and restored.guarantee == original.guarantee
    if fmt is RELEASED_RACE:
        assert restored == original and restored.event == original.event
    if fmt is RAW_RACE:
        assert restored.n_updates == original.n_updates


def test_round_trip_of_queries_is_exact() -> None:
    queries = np.random.default_rng(5).normal(size=(7, 3))
    original = kde_function()
    assert np.array_equal(KDEFunction.from_bytes(original.to_bytes())(queries), original(queries))
    released = released_race()
    points = np.random.default_rng(6).normal(size=(7, 2))
    assert np.array_equal(ReleasedRACE.from_bytes(released.to_bytes()).estimate(points), released.estimate(points))


# --------------------------------------------------------------------------- corruptions
@pytest.mark.parametrize("fmt", STRICT, ids=lambda f: f.name)
@CORRUPTIONS
@given(data=st.data())
def test_every_single_byte_corruption_is_refused(fmt: Format, data: st.DataObject) -> None:
    original = bytearray(fmt.make().to_bytes())
    position = data.draw(st.integers(0, len(original) - 1), label="position")
    original[position] ^= data.draw(st.integers(1, 255), label="xor")
    refused(fmt, bytes(original))


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@CORRUPTIONS
@given(data=st.data())
def test_every_truncation_and_extension_is_refused(fmt: Format, data: st.DataObject) -> None:
    original = fmt.make().to_bytes()
    keep = data.draw(st.integers(0, len(original) - 1), label="kept bytes")
    refused(fmt, original[:keep])
    refused(fmt, original + data.draw(st.binary(min_size=1, max_size=16), label="extension"))


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("junk", [b"", b"\x00", b"PS", b"\x00" * 80, "text", None, 3, bytearray(b"abc")])
def test_junk_is_refused(fmt: Format, junk: Any) -> None:
    refused(fmt, junk)


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("magic", [b"PSRACF", b"PSKDEG", b"\x00" * 6, b"\x80\x04\x95PK"])
def test_wrong_magic_is_refused(fmt: Format, magic: bytes) -> None:
    data = fmt.make().to_bytes()
    if magic == data[:6]:
        return
    with pytest.raises(InvalidParameterError, match="'data'.*magic"):
        fmt.load(rewrite(fmt, data, magic=magic))


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("shift", [-1, 1, 100])
def test_wrong_version_is_refused(fmt: Format, shift: int) -> None:
    data = fmt.make().to_bytes()
    version = PREFIX.unpack_from(data)[1] + shift
    with pytest.raises(InvalidParameterError, match="'data'.*version"):
        fmt.load(rewrite(fmt, data, version=version))


@pytest.mark.parametrize(("fmt", "other"), [(RAW_RACE, RELEASED_RACE), (RELEASED_RACE, RAW_RACE), (KDE, RAW_RACE)], ids=str)
def test_wrong_kind_or_format_is_refused(fmt: Format, other: Format) -> None:
    refused(fmt, other.make().to_bytes())
    data = fmt.make().to_bytes()
    refused(fmt, rewrite(fmt, data, kind=PREFIX.unpack_from(data)[2] + 7))


def test_checksum_mismatch_is_refused_by_name() -> None:
    data = bytearray(kde_function().to_bytes())
    data[-1] ^= 0xFF
    with pytest.raises(InvalidParameterError, match="'data'.*checksum"):
        KDEFunction.from_bytes(bytes(data))
    data = bytearray(kde_function().to_bytes())
    data[PREFIX.size + 3] ^= 0x20  # inside the JSON header: still caught by the checksum, before JSON is read
    with pytest.raises(InvalidParameterError, match="'data'.*checksum"):
        KDEFunction.from_bytes(bytes(data))


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize(
    "raw_header",
    [b"", b"{", b"[]", b"null", b"3", b'"text"', b"\xff\xfe", b"{}", b'{"shape": NaN}', b"[" * 5000 + b"]" * 5000],
    ids=["empty", "open", "list", "null", "number", "string", "not-utf8", "empty-object", "nan", "deep"],
)
def test_bad_json_header_is_refused(fmt: Format, raw_header: bytes) -> None:
    refused(fmt, rewrite(fmt, fmt.make().to_bytes(), raw_header=raw_header))


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize(
    "header",
    [{"shape": [2, 2]}, {"shape": [-4, -8]}, {"shape": [1e3, 1]}, {"shape": None}, {"family": None}, {"family": "L2LSH"}],
    ids=["shape", "negative-shape", "float-shape", "no-shape", "no-family", "family-name"],
)
def test_inconsistent_but_checksummed_headers_are_refused(fmt: Format, header: dict) -> None:
    refused(fmt, rewrite(fmt, fmt.make().to_bytes(), header=header))


@pytest.mark.parametrize(
    "header",
    [{"epsilon": -1.0}, {"epsilon": True}, {"epsilon": "1"}, {"noise_scale": 0.5}, {"neighbouring": "nobody"}],
    ids=["negative-epsilon", "bool-epsilon", "string-epsilon", "scale-mismatch", "relation"],
)
def test_released_race_header_edits_are_refused_naming_data(header: dict) -> None:
    refused(RELEASED_RACE, rewrite(RELEASED_RACE, released_race().to_bytes(), header=header))


# --------------------------------------------------------------------------- never unpickled
def _no_unpickling(*_: Any, **__: Any) -> Any:
    raise AssertionError("deserialisation must never unpickle")


def _numpy_load_without_pickle(original: Callable[..., Any]) -> Callable[..., Any]:
    def load(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("allow_pickle", False):
            raise AssertionError("deserialisation must never allow pickles in numpy.load")
        return original(*args, **kwargs)

    return load


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_loading_never_unpickles(fmt: Format, monkeypatch: pytest.MonkeyPatch) -> None:
    data = fmt.make().to_bytes()
    hostile = pickle.dumps({"shape": [1]})  # a pickle stream where the bytes should be
    for name in ("loads", "load", "Unpickler"):
        monkeypatch.setattr(pickle, name, _no_unpickling)
    monkeypatch.setattr(np, "load", _numpy_load_without_pickle(np.load))
    monkeypatch.setattr(np.lib.format, "read_array", _no_unpickling)  # the .npy reader unpickles object arrays
    restored = fmt.load(data)
    assert restored.to_bytes() == data
    refused(fmt, hostile)
    refused(fmt, rewrite(fmt, data, raw_header=json.dumps({"pickle": hostile.hex()}).encode()))
