"""A second implementation of the wire format, written from docs/wire-format.md alone.

Nothing here imports privsum: the protocol file is read with `json`, the fingerprint computed
with `hashlib`, the bytes parsed with Python integers and bit strings. Every test vector's upload
and batch are decoded into the page's *decoded view* and compared with the vector file, so the
page is complete where this file agrees with privsum's bytes. (Where writing this reader needed
something the page did not say, the page was fixed.)
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path

import pytest

VECTORS = Path(__file__).parent / "vectors"
MAGIC, VERSION, UPLOAD, BATCH = b"PSUM", 2, 1, 2


# ---------------------------------------------------------------------- "Fingerprint"
def canonical(value: object) -> str:
    """The page's canonical encoding (the table in "Fingerprint")."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            raise ValueError("NaN is not allowed")
        return '"f64:' + struct.pack(">d", value).hex() + '"'
    if isinstance(value, str):
        if not all(0x20 <= ord(c) <= 0x7E for c in value):
            raise ValueError("strings are printable ASCII")
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, dict):
        keys = sorted(value, key=lambda key: key.encode("ascii"))
        return "{" + ",".join(canonical(key) + ":" + canonical(value[key]) for key in keys) + "}"
    if isinstance(value, list):
        return "[" + ",".join(canonical(item) for item in value) + "]"
    raise ValueError(f"not a JSON value: {value!r}")


def description(file: dict) -> dict:
    """The eight-member description the page builds from a protocol file."""
    return {
        "alphabet": file["alphabet"],
        "cap": {"exceed_probability": float(file["exceed_probability"]), "per_instance": file["cap"]["per_instance"],
                "total": file["cap"]["total"]},
        "format": file["version"],
        "instances": file["n_instances"],
        "layout": file["layout"],
        "min_senders": file["min_senders"],
        "parameters": file["parameters"],
        "protocol": file["protocol"],
    }


def fingerprint(file: dict) -> bytes:
    return hashlib.sha256(canonical(description(file)).encode("ascii")).digest()


# ---------------------------------------------------------------------- "Messages"
def ceil_log2(x: int) -> int:
    a = 0
    while (1 << a) < x:
        a += 1
    return a


@dataclass(frozen=True)
class Config:
    """What a receiver knows of its deployment: read from the protocol file."""

    name: str
    fingerprint: bytes
    n_instances: int
    first: int
    size: int
    values: list | None
    layout: str
    per_instance: int
    total: int

    @classmethod
    def from_file(cls, file: dict) -> Config:
        alphabet = file["alphabet"]
        return cls(file["protocol"], fingerprint(file), file["n_instances"], alphabet["first"], alphabet["size"],
                   alphabet["values"], file["layout"], file["cap"]["per_instance"], file["cap"]["total"])

    @property
    def a(self) -> int:
        return ceil_log2(self.n_instances) if self.n_instances > 1 else 0

    @property
    def b(self) -> int:
        return max(1, ceil_log2(self.size))

    @property
    def w(self) -> int:
        return self.b if self.layout == "positional" else self.a + self.b

    def value(self, k: int) -> int:
        return self.first + k if self.values is None else self.values[k]


def read(data: bytes, config: Config) -> dict:
    """Parse an upload or a batch as the page says; raise ValueError on anything it refuses."""
    if len(data) < 7 or data[:4] != MAGIC or data[4] != VERSION or data[5] not in (UPLOAD, BATCH):
        raise ValueError("header: magic, version or kind")
    kind, length = data[5], data[6]
    if len(data) < 7 + length + 32:
        raise ValueError("truncated header")
    name = data[7 : 7 + length].decode("ascii")
    found = data[7 + length : 39 + length]
    if name != config.name or found != config.fingerprint:
        raise ValueError("another protocol or configuration")
    position = 39 + length
    view: dict = {"kind": kind, "name": name, "fingerprint": found.hex()}
    if kind == UPLOAD:
        if len(data) < position + 4:
            raise ValueError("truncated header")
        senders, count = 1, int.from_bytes(data[position : position + 4], "big")
        position += 4
    else:
        if len(data) < position + 28:
            raise ValueError("truncated header")
        view["batch_id"] = data[position : position + 16].hex()
        senders = int.from_bytes(data[position + 16 : position + 20], "big")
        count = int.from_bytes(data[position + 20 : position + 28], "big")
        view["n_senders"] = senders
        position += 28
        if senders < 1:
            raise ValueError("a batch from no sender")
    if count > senders * config.total or (config.layout == "positional" and count != senders * config.total):
        raise ValueError("over the cap (or not the positional count)")
    payload = data[position:]
    if len(payload) != (count * config.w + 7) // 8:
        raise ValueError("wrong length")
    bits = "".join(format(byte, "08b") for byte in payload)  # bit 0 of a byte is its most significant
    if "1" in bits[count * config.w :]:
        raise ValueError("non-zero padding")
    instances, values = [], []
    for j in range(count):
        field = int(bits[j * config.w : (j + 1) * config.w], 2)
        if config.layout == "positional":
            instance, k = j // (senders * config.per_instance), field
        else:
            instance, k = field >> config.b, field & ((1 << config.b) - 1)
        if instance >= config.n_instances or k >= config.size:
            raise ValueError("instance or value index out of range")
        instances.append(instance)
        values.append(config.value(k))
    view.update(count=count, instances=instances, values=values)
    return view


# ---------------------------------------------------------------------- the vectors
NAMES = sorted(path.stem for path in VECTORS.glob("*.json"))


def load(name: str) -> dict:
    return json.loads((VECTORS / f"{name}.json").read_text())


def test_there_are_vectors():
    assert len(NAMES) >= 13


@pytest.mark.parametrize("name", NAMES)
def test_fingerprint_from_the_protocol_file(name):
    vector = load(name)
    file = vector["protocol_file"]
    assert (file["format"], file["version"]) == ("privsum-protocol-file", VERSION)
    assert canonical(description(file)) == vector["canonical_encoding"]
    assert fingerprint(file).hex() == vector["fingerprint"] == file["fingerprint"]


@pytest.mark.parametrize("name", NAMES)
def test_upload_and_batch_decode_to_the_vectors_view(name):
    vector = load(name)
    config = Config.from_file(vector["protocol_file"])
    assert vector["field_bits"] == {"tag": config.a, "value": config.b, "width": config.w}
    upload = read(bytes.fromhex(vector["upload_hex"]), config)
    assert (upload["kind"], upload["count"]) == (UPLOAD, len(vector["decoded"]["values"]))
    assert {"instances": upload["instances"], "values": upload["values"]} == vector["decoded"]
    batch = read(bytes.fromhex(vector["batch"]["hex"]), config)
    assert (batch["kind"], batch["batch_id"], batch["n_senders"]) == (BATCH, vector["batch"]["batch_id_hex"],
                                                                     vector["batch"]["n_senders"])
    assert {"instances": batch["instances"], "values": batch["values"]} == vector["batch"]["decoded"]
    if config.layout == "positional":  # exactly c messages per instance and sender
        counts = [upload["instances"].count(i) for i in range(config.n_instances)]
        assert counts == [config.per_instance] * config.n_instances


@pytest.mark.parametrize("name", NAMES)
def test_an_upload_is_its_content_and_a_short_header(name):
    """Bytes = header (43 + L <= 63) + ceil(m w / 8): the page's sizes, nothing else."""
    vector = load(name)
    config = Config.from_file(vector["protocol_file"])
    data = bytes.fromhex(vector["upload_hex"])
    count = len(vector["decoded"]["values"])
    assert len(data) == 43 + len(config.name) + math.ceil(count * config.w / 8) <= 63 + math.ceil(count * config.w / 8)


@pytest.mark.parametrize("name", ["RRBitSum", "SkellamVectorSum", "ThreeNBBitSum"])
def test_the_reader_refuses_what_the_page_refuses(name):
    vector = load(name)
    config = Config.from_file(vector["protocol_file"])
    data = bytes.fromhex(vector["upload_hex"])
    count_at = 39 + len(config.name)
    bad = [data[:-1], data + b"\0", data[:4] + b"\x01" + data[5:], data[:5] + b"\x02" + data[6:],
           data[: count_at - 1] + bytes([data[count_at - 1] ^ 1]) + data[count_at:],  # fingerprint
           data[:count_at] + (config.total + 1).to_bytes(4, "big") + data[count_at + 4 :]]
    for candidate in bad:
        with pytest.raises(ValueError):
            read(candidate, config)
