"""Wire format and parties: bytes per user, analyzer absorb rate, client encoding speed, HTTP deployment.

Usage (from the repository root):

    python benchmarks/bench_wire.py [--repeats 5] [--http-users 100000] [--skip-http] [--only SECTION ...] [--json PATH]

``--only clients`` (or ``bytes``, ``absorb``, ``http``; several allowed) runs those sections alone.

``--json PATH`` also writes every measurement (machine, load, command, medians, spreads, ratios)
as JSON; ``scripts/wire_figures.py --write PATH`` renders it into docs/benchmarks.md.

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
import datetime
import json
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
SECTIONS = ["bytes", "absorb", "clients", "http"]


def timings(operation: Callable[[], object], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        operation()
        times.append(time.perf_counter() - start)
    return times


def spread(times: list[float]) -> str:
    return f"median {statistics.median(times):.4g} s (min {min(times):.4g}, max {max(times):.4g})"


def summary(times: list[float]) -> dict[str, float]:
    """Median and spread of a timing, for the JSON record."""
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times), "runs": len(times)}


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


def bytes_per_user(cases: dict[str, tuple[Deployment, np.ndarray]]) -> list[dict]:
    print("\n## Bytes per user (target: <= 1.1 x content + <= 64-byte header)")
    rows = []
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
        rows.append({"case": name, "layout": spec.layout, "header_bytes": spec.upload_header_bytes,
                     "mean_upload_bytes": float(sizes.mean()), "mean_content_bytes": float(content.mean()),
                     "bits_per_message": bits, "wire_bits_per_message": spec.field_bits, "ratio": ratio})
    return rows


def absorb_rate(repeats: int, n_messages: int = 10**7) -> list[dict]:
    print(f"\n## Analyzer absorbing {n_messages:,} messages (target: >= 0.5 x machine limit)")
    rows = []
    rng = np.random.default_rng(2)
    for n_instances, protocol in ((1, RRBitSum(n_users=10**7, flip_probability=0.1, delta=1e-6)),
                                  (768, RRBitSum(n_users=13_021, flip_probability=0.1, delta=1e-6)),
                                  (768, ThreeNBBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=10_000))):
        deployment = Deployment(protocol, n_instances=n_instances)
        spec = deployment.spec
        fields = spec.fields(rng.integers(0, n_instances, n_messages), rng.integers(0, 2, n_messages))
        senders = max(-(-n_messages // deployment.cap.total), deployment.min_senders)  # a batch the analyzer accepts
        batch = spec.encode_batch(fields, n_senders=senders, batch_id=bytes(16))
        decoded = fields.astype(np.intp).tobytes()
        cells = n_instances << spec.value_bits
        limit = timings(lambda decoded=decoded, cells=cells: np.bincount(np.frombuffer(decoded, dtype=np.intp),
                                                                         minlength=cells), repeats)
        absorb = timings(lambda deployment=deployment, batch=batch: Analyzer(deployment).absorb(batch), repeats)
        ratio = statistics.median(limit) / statistics.median(absorb)
        print(f"{type(protocol).__name__}, I = {n_instances} ({spec.field_bits}-bit fields, {len(batch):,} B): "
              f"absorb {spread(absorb)}; limit {spread(limit)}; absorb rate / limit = {ratio:.2f}")
        rows.append({"case": f"{type(protocol).__name__}, I = {n_instances}", "messages": n_messages,
                     "field_bits": spec.field_bits, "batch_bytes": len(batch), "absorb": summary(absorb),
                     "limit": summary(limit), "ratio": ratio})
    return rows


def client_speed(cases: dict[str, tuple[Deployment, np.ndarray]], repeats: int) -> list[dict]:
    print("\n## Clients encoding all users vs in-process randomize (target: <= 2 x)")
    rows = []
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
        rows.append({"case": name, "users": int(inputs.shape[0]), "clients": summary(encode),
                     "randomize": summary(randomize), "ratio": ratio})
    return rows


def party_path(deployment: Deployment, bits: np.ndarray, per_request: int) -> object:
    """The in-process party path: clients, shuffler (one submit per user), release, analyzer."""
    client, shuffler, analyzer = Client(deployment, rng=5), Shuffler(deployment, rng=6), Analyzer(deployment)
    for first in range(0, bits.shape[0], per_request):
        uploads = client.encode_many(bits[first : first + per_request])
        for offset, upload in enumerate(uploads):
            shuffler.submit(f"user-{first + offset}", upload)
    analyzer.absorb(shuffler.release())
    return analyzer.estimate()


def http_deployment(n_users: int, repeats: int) -> list[dict]:
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
    return [{"case": f"RR, I = 1, {n_users:,} users", "users": n_users, "http": summary(http),
             "in_process": summary(in_process), "ratio": ratio,
             "peak_memory_mib": {role: peak / 2**20 for role, peak in peaks.items() if peak is not None}}]


def machine() -> str:
    return (f"{platform.platform()}, {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
            f"Python {platform.python_version()}, numpy {np.__version__}")


def load() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--users", type=int, default=2000, help="users for the bytes and client measurements")
    parser.add_argument("--http-users", type=int, default=100_000)
    parser.add_argument("--skip-http", action="store_true")
    parser.add_argument("--only", nargs="+", choices=SECTIONS, default=SECTIONS, help="run these sections alone")
    parser.add_argument("--json", type=Path, default=None, help="also write the measurements here (JSON)")
    args = parser.parse_args(argv)
    sections = set(args.only) - ({"http"} if args.skip_http else set())
    record = {"machine": machine(), "load_start": load(), "command": COMMAND,
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    print(f"machine: {record['machine']}")
    print(f"load average at start: {tuple(record['load_start'])}")
    print(f"command: {COMMAND}")
    cases = protocols(args.users)
    if "bytes" in sections:
        record["bytes_per_user"] = bytes_per_user(cases)
    if "absorb" in sections:
        record["absorb"] = absorb_rate(args.repeats)
    if "clients" in sections:
        record["clients"] = client_speed(cases, args.repeats)
    record["http"] = http_deployment(args.http_users, max(1, args.repeats // 2)) if "http" in sections else []
    record["load_end"] = load()
    print(f"\nload average at end: {tuple(record['load_end'])}")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(record, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
