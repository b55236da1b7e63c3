"""The test vectors in tests/wire/vectors/: bytes reproduced by privsum's client and read back by privsum.

`tests/wire/test_decoder_from_docs.py` reads the same vectors with a decoder written from the page.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from privsum.exceptions import InvalidParameterError
from privsum.parties import Analyzer, Client, Deployment
from privsum.wire import WireFormatError
from tests.parties.protocols import NAMES

VECTORS = Path(__file__).parent / "vectors"


def load(name):
    return json.loads((VECTORS / f"{name}.json").read_text())


def test_every_carried_protocol_has_a_vector():
    assert sorted(path.stem for path in VECTORS.glob("*.json")) == sorted(NAMES)


def view(deployment, fields):
    instances, indices = deployment.spec.split(fields)
    return {"instances": instances.tolist(), "values": deployment.values_of(indices).tolist()}


@pytest.mark.parametrize("name", NAMES)
def test_vector(name):
    vector = load(name)
    deployment = Deployment.from_file_dict(vector["protocol_file"])  # no re-calibration: the stored parameters
    assert deployment.canonical_bytes.decode("ascii") == vector["canonical_encoding"]
    assert deployment.fingerprint.hex() == vector["fingerprint"]
    spec = deployment.spec
    assert vector["field_bits"] == {"tag": spec.tag_bits, "value": spec.value_bits, "width": spec.field_bits}
    upload = bytes.fromhex(vector["upload_hex"])
    assert Client(deployment, rng=vector["seed"]).encode(np.asarray(vector["input"])) == upload
    assert view(deployment, spec.decode_upload(upload)) == vector["decoded"]
    batch = bytes.fromhex(vector["batch"]["hex"])
    decoded = spec.decode_batch(batch)
    assert (decoded.batch_id.hex(), decoded.n_senders) == (vector["batch"]["batch_id_hex"], vector["batch"]["n_senders"])
    assert view(deployment, decoded.fields) == vector["batch"]["decoded"]
    analyzer = Analyzer(deployment)
    analyzer.absorb(batch)
    assert analyzer.n_participants == 2 and analyzer.view.total_messages == len(vector["batch"]["decoded"]["values"])


def test_positional_uploads_are_the_protocols_bits_per_user_and_a_header():
    """Issue 28 item 3: the Skellam vector sum's upload is `bits_per_user`, rounded up to bytes, and its header."""
    vector = load("SkellamVectorSum")
    deployment = Deployment.from_file_dict(vector["protocol_file"])
    assert deployment.positional and vector["protocol_file"]["layout"] == "positional"
    upload = bytes.fromhex(vector["upload_hex"])
    content = -(-deployment.protocol.bits_per_user() // 8)
    assert len(upload) == deployment.spec.upload_header_bytes + content
    assert deployment.spec.upload_header_bytes <= 64


def test_version_1_vectors_are_refused():
    """The format version is in every header and in the fingerprinted description: old bytes never count."""
    vector = load("RRBitSum")
    deployment = Deployment.from_file_dict(vector["protocol_file"])
    old = bytearray(bytes.fromhex(vector["batch"]["hex"]))
    old[4] = 1
    with pytest.raises(WireFormatError, match="version"):
        Analyzer(deployment).absorb(bytes(old))
    with pytest.raises(InvalidParameterError, match="version"):
        Deployment.from_file_dict(vector["protocol_file"] | {"version": 1})


def test_the_wire_format_page_shows_the_vectors_it_quotes():
    page = (Path(__file__).parents[2] / "docs" / "wire-format.md").read_text()
    vector = load("RRBitSum")
    for text in (vector["canonical_encoding"], vector["fingerprint"], vector["upload_hex"]):
        assert text in page
    shares = load("SkellamVectorSum")
    header = 2 * (43 + len("SkellamVectorSum"))
    values = shares["decoded"]["values"][:4]
    assert f"`{shares['upload_hex'][header : header + shares['field_bits']['value']]}`" in page
    assert f"`{', '.join(map(str, values))}`" in page
    assert "".join(format(v, f"0{shares['field_bits']['value']}b") for v in values) in page
