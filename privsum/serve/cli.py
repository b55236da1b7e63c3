"""``python -m privsum shuffler | analyzer | simulate | protocol-file``: the reference deployment's commands.

* ``shuffler --protocol-file F [--host H] [--port P] [--analyzer-url URL]``: the shuffler service.
* ``analyzer --protocol-file F [--host H] [--port P]``: the analyzer service.
  Both take the limits of `privsum.serve.limits.ServiceLimits` as options (``--max-body-bytes``,
  ``--body-timeout``, ``--head-timeout``, ``--max-connections``, ``--keep-alive``; the shuffler also ``--max-records``,
  ``--max-senders``, ``--max-messages``), and ``--operator-token-file F``: then ``POST /release`` and
  ``POST /batches`` need ``Authorization: Bearer TOKEN`` (the file's first line), which the
  shuffler sends with the batches it forwards.
* ``simulate --shuffler-url URL --users N [--ones K] [--release] [--analyzer-url URL]``: N simulated
  users send their uploads (the first K hold 1 in every instance); ``--release`` then asks the
  shuffler to release, and ``--analyzer-url`` prints the analyzer's estimate and guarantee.
* ``protocol-file --protocol NAME --epsilon E --n-users N [--delta D] [--n-instances I] --out F``:
  calibrate a bit-sum protocol and write its protocol file.

Each service prints one line, ``privsum <role> listening on http://HOST:PORT``, once it accepts
connections (``--port 0`` picks a free port), then serves until interrupted.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from privsum.exceptions import InvalidParameterError
from privsum.serve.limits import ServiceLimits, read_token

__all__ = ["ANALYZER", "COMMANDS", "PROTOCOL_FILE", "SHUFFLER", "SIMULATE", "Command", "main"]

COMMANDS = ("shuffler", "analyzer", "simulate", "protocol-file")


@dataclass(frozen=True)
class Command:
    """One ``python -m privsum`` command: its help line, its options and what runs it."""

    COMMAND_HELP: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def _service_arguments(role: str) -> Callable[[argparse.ArgumentParser], None]:
    def add(service: argparse.ArgumentParser) -> None:
        service.add_argument("--protocol-file", required=True, help="the deployment's protocol file (JSON)")
        service.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
        service.add_argument("--port", type=int, default=0, help="port (default 0: a free port)")
        _add_limit_options(service, shuffler=False)
        service.add_argument("--operator-token-file", default=None,
                             help="file holding the operator token that POST /release (shuffler) and POST /batches "
                                  "(analyzer) require as 'Authorization: Bearer TOKEN'")
        if role == "shuffler":
            service.add_argument("--analyzer-url", default=None, help="forward every released batch to this analyzer")
            _add_limit_options(service, shuffler=True)

    return add


def _simulate_arguments(simulate: argparse.ArgumentParser) -> None:
    simulate.add_argument("--shuffler-url", required=True)
    simulate.add_argument("--users", type=int, required=True, help="number of users N")
    simulate.add_argument("--ones", type=int, default=None, help="users holding 1 (default N/2); bit sums only")
    simulate.add_argument("--per-request", type=int, default=5000, help="uploads per HTTP request")
    simulate.add_argument("--seed", type=int, default=None, help="seed the clients (tests only; default: CSPRNG)")
    simulate.add_argument("--release", action="store_true", help="ask the shuffler to release a batch afterwards")
    simulate.add_argument("--analyzer-url", default=None, help="print this analyzer's estimate and guarantee")
    simulate.add_argument("--operator-token-file", default=None, help="the operator token, for --release")


def _protocol_file_arguments(protocol_file: argparse.ArgumentParser) -> None:
    protocol_file.add_argument("--protocol", default="RRBitSum", help="RRBitSum, ThreeNBBitSum, PureBitSum or LocalRRBitSum")
    protocol_file.add_argument("--epsilon", type=float, required=True)
    protocol_file.add_argument("--delta", type=float, default=1e-6)
    protocol_file.add_argument("--n-users", type=int, required=True)
    protocol_file.add_argument("--n-instances", type=int, default=1)
    protocol_file.add_argument("--min-senders", type=int, default=None)
    protocol_file.add_argument("--out", required=True)


def _serve(app: object, role: str, host: str, port: int, limits: ServiceLimits) -> int:
    import uvicorn

    from privsum.serve.connections import head_deadline_protocol

    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(128)
    bound = listener.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False,
                                           limit_concurrency=limits.max_connections,
                                           timeout_keep_alive=limits.keep_alive,
                                           http=head_deadline_protocol(limits.head_timeout)))
    print(f"privsum {role} listening on http://{host}:{bound}", flush=True)
    server.run(sockets=[listener])
    return 0


def _service(args: argparse.Namespace) -> int:
    from privsum.parties import Deployment
    from privsum.serve.apps import analyzer_app, shuffler_app

    try:
        deployment = Deployment.load(args.protocol_file)
        limits = _limits(args)
        token = None if args.operator_token_file is None else read_token(args.operator_token_file)
    except InvalidParameterError as error:  # a bad option or file: say which, without a traceback
        print(f"python -m privsum {args.command}: error: {error}", file=sys.stderr)
        return 2
    if args.command == "shuffler":
        app = shuffler_app(deployment, analyzer_url=args.analyzer_url, limits=limits, operator_token=token)
    else:
        app = analyzer_app(deployment, limits=limits, operator_token=token)
    return _serve(app, args.command, args.host, args.port, limits)


#: The `ServiceLimits` fields a service takes as options: (field, type, help with the default's format,
#: shuffler only).
_LIMIT_OPTIONS: tuple[tuple[str, type, str, bool], ...] = (
    ("max_body_bytes", int, "largest request body accepted (default {})", False),
    ("body_timeout", float, "seconds within which a request body must arrive whole (default {:g})", False),
    ("head_timeout", float, "seconds within which a request's head must arrive (default {:g})", False),
    ("max_connections", int, "concurrent connections before answering 503 (default {})", False),
    ("keep_alive", float, "idle keep-alive seconds (default {:g})", False),
    ("max_records", int, "uploads per request (default {})", True),
    ("max_senders", int, "sender identities held per collection (default {})", True),
    ("max_messages", int, "messages held for the next batch (default {})", True),
)


def _add_limit_options(service: argparse.ArgumentParser, *, shuffler: bool) -> None:
    """One ``--option`` per `ServiceLimits` field in `_LIMIT_OPTIONS` whose role matches ``shuffler``."""
    limits = ServiceLimits()
    for name, kind, help_format, shuffler_only in _LIMIT_OPTIONS:
        if shuffler_only == shuffler:
            flag = "--" + name.replace("_", "-")
            service.add_argument(flag, type=kind, default=None, help=help_format.format(getattr(limits, name)))


def _limits(args: argparse.Namespace) -> ServiceLimits:
    """The service's `ServiceLimits`: the defaults, with the options given."""
    names = (name for name, *_ in _LIMIT_OPTIONS)
    given = {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}
    return ServiceLimits(**given)


def _simulate(args: argparse.Namespace) -> int:
    from privsum.serve.simulator import fetch_deployment, get_json, post, simulate_users

    deployment = fetch_deployment(args.shuffler_url)
    ones = args.users // 2 if args.ones is None else args.ones
    inputs = np.zeros((args.users, deployment.n_instances), dtype=np.int8)
    inputs[:ones] = 1
    report = simulate_users(deployment, inputs, args.shuffler_url, per_request=args.per_request, rng=args.seed)
    print(f"sent {report.users} users in {report.requests} requests, {report.upload_bytes} bytes, "
          f"{report.seconds:.2f} s, {report.refused} refused", flush=True)
    if args.release:
        token = None if args.operator_token_file is None else read_token(args.operator_token_file)
        status, body = post(args.shuffler_url, "/release", token=token)
        if status != 200:
            print(f"release refused: {body.decode()}", file=sys.stderr)
            return 1
    if args.analyzer_url is not None:
        print(json.dumps(get_json(args.analyzer_url, "/estimate")), flush=True)
    return 0


def _protocol_file(args: argparse.Namespace) -> int:
    from privsum.parties import Deployment, protocol_classes

    cls = protocol_classes()[args.protocol]
    privacy = {"epsilon": args.epsilon, "n_users": args.n_users}
    if args.protocol in ("RRBitSum", "ThreeNBBitSum"):
        privacy["delta"] = args.delta
    deployment = Deployment(cls.from_privacy(**privacy), n_instances=args.n_instances, min_senders=args.min_senders)
    deployment.save(args.out)
    print(f"wrote {args.out}: {deployment.wire_name}, fingerprint {deployment.fingerprint.hex()}")
    return 0


SHUFFLER = Command("run the shuffler HTTP service (needs privsum[serve])", _service_arguments("shuffler"), _service)
ANALYZER = Command("run the analyzer HTTP service (needs privsum[serve])", _service_arguments("analyzer"), _service)
SIMULATE = Command("send N simulated users' uploads to a shuffler service", _simulate_arguments, _simulate)
PROTOCOL_FILE = Command(
    "calibrate a bit-sum protocol and write its protocol file", _protocol_file_arguments, _protocol_file
)


def main(argv: list[str]) -> int:
    """Run one of `COMMANDS` with its arguments (as ``python -m privsum``); returns the exit status."""
    from privsum.__main__ import main as privsum_main

    return privsum_main(argv)
