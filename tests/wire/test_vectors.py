"""The test vectors in tests/wire/vectors/: bytes reproduced by the client, read back by an independent reader."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from privsum.parties import Analyzer, Client, Deployment
from tests.parties.protocols import NAMES
from tests.wire import reference

VECTORS = Path(__file__).parent / "vectors"


def load(name):
    return json.loads((VECTORS / f"{name}.json").read_text())


def test_every_carried_protocol_has_a_vector():
    assert sorted(path.stem for path in VECTORS.glob("*.json")) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_vector(name):
    vector = load(name)
    deployment = Deployment.from_file_dict(vector["protocol_file"])  # no re-calibration: the stored parameters
    assert deployment.canonical_bytes.decode("ascii") == vector["canonical_encoding"]
    assert reference.sha256_hex(vector["canonical_encoding"]) == vector["fingerprint"] == deployment.fingerprint.hex()
    upload = bytes.fromhex(vector["upload_hex"])
    assert Client(deployment, rng=vector["seed"]).encode(np.asarray(vector["input"])) == upload
    alphabet = vector["alphabet"]
    for data, kind in ((upload, 1), (bytes.fromhex(vector["batch_hex"]), 2)):
        parsed = reference.read(data, vector["n_instances"], alphabet["size"])
        assert (parsed["kind"], parsed["fingerprint"]) == (kind, vector["fingerprint"])
        assert parsed["name"] == vector["protocol_file"]["protocol"] == deployment.wire_name
        values = [alphabet["values"][i] if alphabet["values"] else alphabet["first"] + i for i in parsed["indices"]]
        assert parsed["instances"] == vector["decoded"]["instances"] and values == vector["decoded"]["values"]
    assert len(upload) <= 64 + -(-len(vector["decoded"]["values"]) * sum(vector["field_bits"].values()) // 8)
    analyzer = Analyzer(deployment)
    analyzer.absorb(bytes.fromhex(vector["batch_hex"]))
    assert analyzer.n_participants == 1 and analyzer.view.total_messages == len(vector["decoded"]["values"])


def test_the_wire_format_page_shows_the_rr_vector():
    page = (Path(__file__).parents[2] / "docs" / "wire-format.md").read_text()
    vector = load("RRBitSum")
    for text in (vector["canonical_encoding"], vector["fingerprint"], vector["upload_hex"]):
        assert text in page
