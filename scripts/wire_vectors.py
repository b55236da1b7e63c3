"""Write (or check) the wire-format test vectors in tests/wire/vectors/, one JSON file per protocol.

Each vector holds the protocol file (calibrated parameters), the canonical encoding and
fingerprint, the field widths, a seed, one user's input, the expected upload (hex), its decoded
view, and a two-sender batch with a fixed id and its decoded view (docs/wire-format.md, "Test
vectors"). ``python scripts/wire_vectors.py --write`` regenerates them
(only when the format or a calibration changes on purpose); without ``--write`` it reports
which differ. tests/wire/test_vectors.py checks them against privsum, tests/wire/test_decoder_from_docs.py
with a decoder written from the page alone.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from privsum.parties import Client, Deployment  # noqa: E402
from tests.parties.protocols import NAMES, inputs, n_instances, protocol  # noqa: E402

VECTORS = ROOT / "tests" / "wire" / "vectors"
SEED = 20261128
BATCH_ID = bytes(range(16))


def vector(name: str) -> dict:
    """The test vector of one protocol (100 users calibrated, 3 instances or a 4-dimensional vector).

    The upload is one user's; the batch holds that upload and a second user's (seed + 1), in
    upload order (tagged) or instance by instance (positional), as a shuffler may release them.
    """
    deployment = Deployment(protocol(name, 100), n_instances=n_instances(name, 3), min_senders=100)
    spec = deployment.spec
    users = inputs(name, 2, 3, np.random.default_rng(SEED))
    upload = Client(deployment, rng=SEED).encode(users[0])
    second = Client(deployment, rng=SEED + 1).encode(users[1])
    both = [spec.decode_upload(data) for data in (upload, second)]
    fields = np.concatenate(both)
    if spec.positional:
        fields = fields.reshape(2, spec.n_instances, spec.positional).transpose(1, 0, 2).reshape(-1)
    batch = spec.encode_batch(fields, n_senders=2, batch_id=BATCH_ID)
    return {
        "protocol_file": deployment.to_file_dict(),
        "canonical_encoding": deployment.canonical_bytes.decode("ascii"),
        "fingerprint": deployment.fingerprint.hex(),
        "field_bits": {"tag": spec.tag_bits, "value": spec.value_bits, "width": spec.field_bits},
        "seed": SEED,
        "input": users[0].tolist(),
        "upload_hex": upload.hex(),
        "decoded": decoded(deployment, both[0]),
        "batch": {"batch_id_hex": BATCH_ID.hex(), "n_senders": 2, "hex": batch.hex(), "decoded": decoded(deployment, fields)},
    }


def decoded(deployment: Deployment, fields: np.ndarray) -> dict:
    """The decoded view of logical fields: each message's instance and value, in payload order."""
    instances, indices = deployment.spec.split(fields)
    return {"instances": instances.tolist(), "values": deployment.values_of(indices).tolist()}


def _compact_number_lists(text: str) -> str:
    """Lists of numbers on one line each (the decoded messages would take a line per number).

    Only lists that `json.dumps` broke over lines: a string never holds a raw newline.
    """
    pattern = r"\[\n\s*(-?[\d.e+-]+(?:,\s*-?[\d.e+-]+)*)\s*\]"
    return re.sub(pattern, lambda m: "[" + ", ".join(item.strip() for item in m.group(1).split(",")) + "]", text)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the vectors")
    args = parser.parse_args(argv)
    VECTORS.mkdir(parents=True, exist_ok=True)
    stale = []
    for name in NAMES:
        path = VECTORS / f"{name}.json"
        text = _compact_number_lists(json.dumps(vector(name), indent=1)) + "\n"
        if args.write:
            path.write_text(text)
        elif not path.exists() or path.read_text() != text:
            stale.append(name)
    if stale:
        print("differ:", ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
