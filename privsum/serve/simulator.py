"""A client simulator: N users' uploads sent to a shuffler service over HTTP (standard library only)."""

from __future__ import annotations

import http.client
import json
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

import numpy as np

from privsum._random import RNGLike
from privsum._validation import check_integer, invalid
from privsum.parties import Client, Deployment
from privsum.serve.records import pack_records

__all__ = ["MAX_ANSWER_BYTES", "SimulationReport", "fetch_deployment", "simulate_users"]

#: The largest answer read from a service (a released batch is the largest).
MAX_ANSWER_BYTES = 1 << 30


@dataclass(frozen=True)
class SimulationReport:
    """What the simulator sent: users, requests, bytes, seconds, and uploads the shuffler refused."""

    users: int
    requests: int
    upload_bytes: int
    seconds: float
    refused: int


class _Connection:
    """One keep-alive HTTP connection to a service."""

    def __init__(self, url: str, timeout: float = 120.0) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme != "http" or not parsed.hostname:
            raise invalid("url", "privsum.serve", "an http://host:port URL", url)
        self.connection = http.client.HTTPConnection(parsed.hostname, parsed.port or 80, timeout=timeout)

    def request(self, method: str, path: str, body: bytes | None = None, token: str | None = None) -> tuple[int, bytes]:
        """One request; an answer over `MAX_ANSWER_BYTES` is refused (a hostile service cannot fill the memory)."""
        headers = {"Content-Type": "application/octet-stream"} | ({} if token is None else {"Authorization": f"Bearer {token}"})
        self.connection.request(method, path, body=body, headers=headers)
        answer = self.connection.getresponse()
        content = answer.read(MAX_ANSWER_BYTES + 1)
        if len(content) > MAX_ANSWER_BYTES:
            self.connection.close()
            raise invalid("url", "privsum.serve", f"a service answering at most {MAX_ANSWER_BYTES} bytes",
                          f"more to {method} {path}")
        return answer.status, content

    def close(self) -> None:
        self.connection.close()


def fetch_deployment(url: str, *, fingerprint: str | None = None) -> Deployment:
    """The deployment a service runs (its ``GET /protocol``), checked against its fingerprint.

    A client should pin the ``fingerprint`` (hex) it expects: a protocol file stating another is
    then refused before its parameters are built, so a hostile service cannot configure the client.
    """
    connection = _Connection(url)
    try:
        status, body = connection.request("GET", "/protocol")
    finally:
        connection.close()
    if status != 200:
        raise invalid("url", "fetch_deployment", "a privsum service answering GET /protocol", f"HTTP {status}")
    try:
        content = json.loads(body)
    except (ValueError, RecursionError) as error:
        raise invalid("url", "fetch_deployment", "a service answering a JSON protocol file", type(error).__name__) from None
    if fingerprint is not None and not (isinstance(content, dict) and content.get("fingerprint") == fingerprint):
        stated = content.get("fingerprint") if isinstance(content, dict) else type(content).__name__
        raise invalid("url", "fetch_deployment", f"a service of the fingerprint {fingerprint}", stated)
    return Deployment.from_file_dict(content)


def simulate_users(deployment: Deployment, inputs: Any, shuffler_url: str, *, per_request: int = 5000,
                   rng: RNGLike = None, sender_prefix: str = "user") -> SimulationReport:
    """Encode every row of ``inputs`` as one user's upload and send them to the shuffler, ``per_request`` per request.

    Each user is a separate sender (``{sender_prefix}-{i}``). Returns what was sent; the uploads the
    shuffler refused are counted (a well-behaved simulator has none).
    """
    inputs = np.asarray(inputs)
    per_request = check_integer(per_request, "per_request", "simulate_users", low=1)
    client = Client(deployment, rng=rng)
    connection = _Connection(shuffler_url)
    start, sent, requests, refused = time.perf_counter(), 0, 0, 0
    try:
        for first in range(0, inputs.shape[0], per_request):
            uploads = client.encode_many(inputs[first : first + per_request])
            body = pack_records([(f"{sender_prefix}-{first + k}", upload) for k, upload in enumerate(uploads)])
            status, answer = connection.request("POST", "/uploads", body)
            if status != 200:
                raise invalid("shuffler_url", "simulate_users", "a shuffler accepting the uploads", answer.decode()[:500])
            refused += json.loads(answer)["n_refused"]
            sent += len(body)
            requests += 1
    finally:
        connection.close()
    return SimulationReport(int(inputs.shape[0]), requests, sent, time.perf_counter() - start, refused)


def post(url: str, path: str, body: bytes = b"", *, token: str | None = None) -> tuple[int, bytes]:
    """One POST to a service (e.g. ``/release`` on the shuffler; ``token``: the operator token, where it needs one)."""
    connection = _Connection(url)
    try:
        return connection.request("POST", path, body, token)
    finally:
        connection.close()


def get_json(url: str, path: str) -> Any:
    """One GET of a JSON document from a service."""
    connection = _Connection(url)
    try:
        status, body = connection.request("GET", path)
    finally:
        connection.close()
    if status != 200:
        raise invalid("url", "privsum.serve", f"a service answering GET {path}", body.decode()[:500])
    return json.loads(body)
