"""Wire format and parties: bytes per user, analyzer absorb rate, client encoding speed, HTTP deployment.

Usage (from the repository root):

    python benchmarks/bench_wire.py [--repeats 5] [--http-users 100000] [--skip-http]

Prints the machine, the load average, the command and, for each target of issue 26, the
measurement (median and spread of ``--repeats`` runs) and the ratio, measured in one run:

* bytes on the wire per user <= 1.1 x the protocol's own message content (messages x
  `bits_per_message`, rounded up to bytes) + a header of at most 64 bytes (RR, 3NB at I = 768,
  Skellam vector sum at d = 384);
* the analyzer absorbing a batch of 10^7 messages >= 0.5 x the machine limit for the same
  messages (``np.frombuffer`` of the decoded values plus one ``np.bincount``);
* clients encoding all users <= 2 x the in-process `randomize` of the same users (same bit
  generator, PCG64, for both);
* 10^5 users of a one-instance RR count through the two HTTP services <= 10 x the in-process party
  path (batched uploads), and each service's peak memory <= 512 MiB.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from privsum.bitsum import RRBitSum, ThreeNBBitSum  # noqa: E402
from privsum.exceptions import PrivacyLeakWarning  # noqa: E402
from privsum.parties import Analyzer, Client, Deployment, Shuffler  # noqa: E402
from privsum.sums import SkellamVectorSum  # noqa: E402

COMMAND = "python benchmarks/bench_wire.py " + " ".join(sys.argv[1:])


def timings(operation: Callable[[], object], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        operation()
        times.append(time.perf_counter() - start)
    return times


def spread(times: list[float]) -> str:
    return f"median {statistics.median(times):.4g} s (min {min(times):.4g}, max {max(times):.4g})"


def protocols(n_users: int) -> dict[str, tuple[Deployment, np.ndarray]]:
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2, (n_users, 768)).astype(np.int8)
    vectors = rng.normal(size=(n_users, 384))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    rr = RRBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=10_000)
    nb = ThreeNBBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=10_000)
    skellam = SkellamVectorSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=10_000, dimension=384, norm_bound=1.0)
    return {
        "RR, I = 768": (Deployment(rr, n_instances=768), bits),
        "3NB, I = 768": (Deployment(nb, n_instances=768), bits),
        "Skellam, d = 384": (Deployment(skellam), vectors),
    }


def bytes_per_user(cases: dict[str, tuple[Deployment, np.ndarray]]) -> None:
    print("\n## Bytes per user (target: <= 1.1 x content + <= 64-byte header)")
    for name, (deployment, inputs) in cases.items():
        uploads = Client(deployment, rng=1).encode_many(inputs)
        spec, protocol = deployment.spec, deployment.protocol
        bits = protocol.bits_per_message(1 if deployment.n_instances == getattr(protocol, "dimension", None)
                                         else deployment.n_instances)
        sizes = np.array([len(upload) for upload in uploads])
        messages = (sizes - spec.upload_header_bytes) * 8 // spec.field_bits  # whole messages fit; padding < 8 bits
        content = np.ceil(messages * bits / 8)
        ratio = float(np.mean((sizes - spec.upload_header_bytes) / content))
        print(f"{name}: header {spec.upload_header_bytes} B, mean upload {sizes.mean():,.1f} B, content "
              f"{content.mean():,.1f} B ({bits} bits/message), payload/content {ratio:.4f}")


def absorb_rate(repeats: int, n_messages: int = 10**7) -> None:
    print(f"\n## Analyzer absorbing {n_messages:,} messages (target: >= 0.5 x machine limit)")
    rng = np.random.default_rng(2)
    for n_instances, protocol in ((1, RRBitSum(n_users=10**7, flip_probability=0.1, delta=1e-6)),
                                  (768, RRBitSum(n_users=13_021, flip_probability=0.1, delta=1e-6)),
                                  (768, ThreeNBBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=10_000))):
        deployment = Deployment(protocol, n_instances=n_instances)
        spec = deployment.spec
        fields = spec.fields(rng.integers(0, n_instances, n_messages), rng.integers(0, 2, n_messages))
        senders = -(-n_messages // deployment.cap.total)
        batch = spec.encode_batch(fields, n_senders=senders, batch_id=bytes(16))
        decoded = fields.astype(np.intp).tobytes()
        cells = n_instances << spec.value_bits
        limit = timings(lambda decoded=decoded, cells=cells: np.bincount(np.frombuffer(decoded, dtype=np.intp),
                                                                         minlength=cells), repeats)
        absorb = timings(lambda deployment=deployment, batch=batch: Analyzer(deployment).absorb(batch), repeats)
        ratio = statistics.median(limit) / statistics.median(absorb)
        print(f"{type(protocol).__name__}, I = {n_instances} ({spec.field_bits}-bit fields, {len(batch):,} B): "
              f"absorb {spread(absorb)}; limit {spread(limit)}; absorb rate / limit = {ratio:.2f}")


def client_speed(cases: dict[str, tuple[Deployment, np.ndarray]], repeats: int) -> None:
    print("\n## Clients encoding all users vs in-process randomize (target: <= 2 x)")
    for name, (deployment, inputs) in cases.items():
        protocol = deployment.protocol
        client = Client(deployment, rng=3)
        generator = np.random.default_rng(4)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            randomize = timings(lambda p=protocol, x=inputs, g=generator: p.randomize(x, rng=g), repeats)
        encode = timings(lambda client=client, inputs=inputs: client.encode_many(inputs), repeats)
        ratio = statistics.median(encode) / statistics.median(randomize)
        print(f"{name}, {inputs.shape[0]:,} users: clients {spread(encode)}; randomize {spread(randomize)}; "
              f"ratio {ratio:.2f}")


def party_path(deployment: Deployment, bits: np.ndarray, per_request: int) -> object:
    """The in-process party path: clients, shuffler (one submit per user), release, analyzer."""
    client, shuffler, analyzer = Client(deployment, rng=5), Shuffler(deployment, rng=6), Analyzer(deployment)
    for first in range(0, bits.shape[0], per_request):
        uploads = client.encode_many(bits[first : first + per_request])
        for offset, upload in enumerate(uploads):
            shuffler.submit(f"user-{first + offset}", upload)
    analyzer.absorb(shuffler.release())
    return analyzer.estimate()


def http_deployment(n_users: int, repeats: int) -> None:
    from privsum.serve.local import local_deployment
    from privsum.serve.simulator import get_json, post, simulate_users

    print(f"\n## {n_users:,} users of a one-instance RR count through the HTTP services (target: <= 10 x, <= 512 MiB)")
    deployment = Deployment(RRBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=n_users), n_instances=1)
    bits = np.zeros((n_users, 1), dtype=np.int8)
    bits[: n_users // 3] = 1
    in_process = timings(lambda: party_path(deployment, bits, 5000), repeats)
    with tempfile.TemporaryDirectory() as folder:
        protocol_file = Path(folder) / "protocol.json"
        deployment.save(protocol_file)
        with local_deployment(protocol_file) as (shuffler, analyzer):
            runs = iter(range(repeats))

            def through_http() -> None:  # new senders each time: a sender uploads once per collection
                simulate_users(deployment, bits, shuffler.url, per_request=5000, rng=7, sender_prefix=f"run{next(runs)}")
                status, body = post(shuffler.url, "/release")
                if status != 200:
                    raise RuntimeError(body.decode())
                get_json(analyzer.url, "/estimate")

            http = timings(through_http, repeats)
            peaks = {service.role: service.peak_memory_bytes() for service in (shuffler, analyzer)}
    ratio = statistics.median(http) / statistics.median(in_process)
    memory = ", ".join(f"{role} {peak / 2**20:.0f} MiB" for role, peak in peaks.items() if peak is not None)
    print(f"HTTP {spread(http)}; in-process party path {spread(in_process)}; ratio {ratio:.2f}; peak memory {memory}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--users", type=int, default=2000, help="users for the bytes and client measurements")
    parser.add_argument("--http-users", type=int, default=100_000)
    parser.add_argument("--skip-http", action="store_true")
    args = parser.parse_args(argv)
    print(f"machine: {platform.platform()}, {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}, numpy {np.__version__}")
    print(f"load average at start: {tuple(round(v, 2) for v in os.getloadavg())}")
    print(f"command: {COMMAND}")
    cases = protocols(args.users)
    bytes_per_user(cases)
    absorb_rate(args.repeats)
    client_speed(cases, args.repeats)
    if not args.skip_http:
        http_deployment(args.http_users, max(1, args.repeats // 2))
    print(f"\nload average at end: {tuple(round(v, 2) for v in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
