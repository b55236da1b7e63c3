"""Write (or check) the wire-format test vectors in tests/wire/vectors/, one JSON file per protocol.

Each vector holds the protocol file (calibrated parameters), the canonical encoding and
fingerprint, a seed, one user's input, the expected upload (hex), its decoded messages, and a
one-upload batch with a fixed id. ``python scripts/wire_vectors.py --write`` regenerates them
(only when the format or a calibration changes on purpose); without ``--write`` it reports
which differ. tests/wire/test_vectors.py checks them with an independent reader.
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
    """The test vector of one protocol (100 users calibrated, 3 instances or a 4-dimensional vector)."""
    deployment = Deployment(protocol(name, 100), n_instances=n_instances(name, 3), min_senders=100)
    user = inputs(name, 1, 3, np.random.default_rng(SEED))[0]
    upload = Client(deployment, rng=SEED).encode(user)
    fields = deployment.spec.decode_upload(upload)
    instances, indices = deployment.spec.split(fields)
    batch = deployment.spec.encode_batch(fields, n_senders=1, batch_id=BATCH_ID)
    return {
        "protocol_file": deployment.to_file_dict(),
        "canonical_encoding": deployment.canonical_bytes.decode("ascii"),
        "fingerprint": deployment.fingerprint.hex(),
        "n_instances": deployment.n_instances,
        "alphabet": deployment.alphabet_description,
        "field_bits": {"tag": deployment.spec.tag_bits, "value": deployment.spec.value_bits},
        "seed": SEED,
        "input": user.tolist(),
        "upload_hex": upload.hex(),
        "decoded": {"instances": instances.tolist(), "values": deployment.values_of(indices).tolist()},
        "batch_id_hex": BATCH_ID.hex(),
        "batch_hex": batch.hex(),
    }


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
