"""A raw HTTP/1.1 client for hostile requests (lying lengths, endless chunks, slow bytes) and their answers."""

from __future__ import annotations

import socket
import time
import urllib.parse
from dataclasses import dataclass


@dataclass
class Answer:
    status: int | None  # None: the server closed the connection without an answer
    headers: dict[str, str]
    body: bytes
    seconds: float

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


def address(url: str) -> tuple[str, int]:
    parsed = urllib.parse.urlsplit(url)
    return parsed.hostname, parsed.port


def request_head(method: str, path: str, headers: dict[str, str] | None = None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: privsum-test"] + [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def exchange(url: str, data: bytes, *, drip: list[bytes] = (), drip_every: float = 0.2, timeout: float = 10.0) -> Answer:
    """Send ``data`` then each of ``drip`` every ``drip_every`` seconds; read one answer (until close or complete)."""
    start = time.monotonic()
    with socket.create_connection(address(url), timeout=timeout) as connection:
        try:
            connection.sendall(data)
            for piece in drip:
                time.sleep(drip_every)
                connection.sendall(piece)
        except OSError:  # the server answered and closed while we were still sending
            pass
        received = b""
        try:
            while not _complete(received):
                chunk = connection.recv(65536)
                if not chunk:
                    break
                received += chunk
        except OSError:
            pass
    return _parse(received, time.monotonic() - start)


def _complete(received: bytes) -> bool:
    head, separator, body = received.partition(b"\r\n\r\n")
    if not separator:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return False


def _parse(received: bytes, seconds: float) -> Answer:
    if not received:
        return Answer(None, {}, b"", seconds)
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return Answer(int(lines[0].split()[1]), headers, body, seconds)
