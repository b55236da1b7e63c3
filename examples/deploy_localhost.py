"""The reference deployment on one machine: shuffler, analyzer and simulated clients as three processes.

Calibrates a one-instance RR count, writes its protocol file, starts the analyzer and the shuffler
(``python -m privsum analyzer|shuffler``) on free ports of 127.0.0.1, runs the client simulator
(``python -m privsum simulate``) as a third process, which sends every user's upload, asks the
shuffler to release its batch to the analyzer and prints the analyzer's estimate and guarantee.

Run: ``python examples/deploy_localhost.py [--users 10000] [--ones 3000] [--epsilon 1.0]``
(needs ``pip install 'privsum[serve,secure]'``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from privsum.bitsum import RRBitSum
from privsum.parties import Deployment
from privsum.serve.local import local_deployment


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--ones", type=int, default=3_000)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-6)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        protocol_file = Path(folder) / "protocol.json"
        protocol = RRBitSum.from_privacy(epsilon=args.epsilon, delta=args.delta, n_users=args.users)
        Deployment(protocol, n_instances=1).save(protocol_file)
        with local_deployment(protocol_file) as (shuffler, analyzer):
            print(f"shuffler at {shuffler.url}, analyzer at {analyzer.url}")
            simulator = [sys.executable, "-m", "privsum", "simulate", "--shuffler-url", shuffler.url, "--users",
                         str(args.users), "--ones", str(args.ones), "--release", "--analyzer-url", analyzer.url]
            finished = subprocess.run(simulator, capture_output=True, text=True, timeout=600, check=True)
            sent, answer = finished.stdout.strip().splitlines()[-2:]
            result = json.loads(answer)
    guarantee = result["guarantee"]
    print(sent)
    print(f"true count {args.ones}, estimate {result['estimate'][0]:.1f} from {result['participants']} participants")
    print(f"guarantee ({guarantee['epsilon']:.4g}, {guarantee['delta']:.3g})-DP, {guarantee['neighbouring']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
