"""The limits the reference services enforce, and reading a request body within them.

A service refuses, before it holds more than the limit in memory or waits longer than the limit:

* a body over ``max_body_bytes`` (a declared ``Content-Length`` over it is refused before a byte
  of the body is read; a chunked body as soon as its running size passes it): HTTP 413;
* a body that has not arrived whole within ``body_timeout`` seconds (a slow or endless body, a
  ``Content-Length`` larger than what is sent): HTTP 408, and the connection is closed;
* a ``Content-Type`` other than ``application/octet-stream`` (none is accepted): HTTP 415;
* more than ``max_records`` uploads in one ``POST /uploads`` body: HTTP 413;
* an upload that would make the shuffler hold more than ``max_senders`` sender identities in one
  collection (held for the next batch and kept from earlier batches to refuse second uploads), or
  more than ``max_messages`` messages for the next batch: that upload is refused, the others of
  the body are accepted;
* more than ``max_connections`` concurrent connections: HTTP 503 (Uvicorn's ``limit_concurrency``);
* a request head (request line and headers, at most 16 KiB: h11's limit) that has not arrived
  whole within ``head_timeout`` seconds: the connection is closed
  (`privsum.serve.connections.head_deadline_protocol`).

Every refusal's text names the parameter, the constraint and the value (the library's template).
"""

from __future__ import annotations

import asyncio
import hmac
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from privsum._validation import check_integer, check_real, invalid
from privsum.exceptions import InvalidParameterError

__all__ = ["OCTET_STREAM", "RequestRefusedError", "ServiceLimits", "check_operator", "read_body", "read_token"]

OCTET_STREAM = "application/octet-stream"
#: Longest ``Content-Length`` value read as a number (20 digits exceed any limit; longer is refused unread).
_MAX_LENGTH_DIGITS = 20


@dataclass(frozen=True)
class ServiceLimits:
    """What one service accepts per request and holds in all (``python -m privsum shuffler|analyzer`` options).

    Attributes:
        max_body_bytes: the largest request body (``--max-body-bytes``). The analyzer decodes a
            batch in memory several times its size (tens of bytes per message for the protocols
            with large alphabets, whose view is sparse): raise it only with the memory for that.
        body_timeout: seconds within which a whole request body must arrive (``--body-timeout``).
        max_records: the most uploads in one ``POST /uploads`` body (``--max-records``; shuffler).
        max_senders: the most sender identities the shuffler holds in one collection, held for the
            next batch plus those of earlier batches (``--max-senders``; shuffler). Each costs a few
            hundred bytes (its id of at most 256 bytes, and its entry in two sets).
        max_messages: the most messages the shuffler holds for the next batch (``--max-messages``;
            shuffler): 8 bytes each. An upload whose messages do not fit is refused.
        max_connections: concurrent connections and requests before Uvicorn answers 503
            (``--max-connections``).
        keep_alive: seconds an idle keep-alive connection stays open (``--keep-alive``).
        head_timeout: seconds within which a request's head must arrive whole (``--head-timeout``).

    Examples:
        >>> ServiceLimits().max_body_bytes
        67108864
        >>> ServiceLimits(max_senders=0)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        privsum.exceptions.InvalidParameterError: The 'max_senders' parameter of ServiceLimits must be ... Got 0 instead.
    """

    max_body_bytes: int = 64 << 20
    body_timeout: float = 60.0
    max_records: int = 100_000
    max_senders: int = 1_000_000
    max_messages: int = 1 << 26
    max_connections: int = 1000
    keep_alive: float = 5.0
    head_timeout: float = 10.0

    def __post_init__(self) -> None:
        owner = "ServiceLimits"
        check_integer(self.max_body_bytes, "max_body_bytes", owner, low=1, high=2**40)
        check_real(self.body_timeout, "body_timeout", owner, low=0.0, high=86400.0, low_open=True)
        check_integer(self.max_records, "max_records", owner, low=1, high=2**32 - 1)
        check_integer(self.max_senders, "max_senders", owner, low=1, high=2**32 - 1)
        check_integer(self.max_messages, "max_messages", owner, low=1, high=2**40)
        check_integer(self.max_connections, "max_connections", owner, low=1, high=2**20)
        check_real(self.keep_alive, "keep_alive", owner, low=0.0, high=86400.0, low_open=True)
        check_real(self.head_timeout, "head_timeout", owner, low=0.0, high=86400.0, low_open=True)


class RequestRefusedError(Exception):
    """A request refused with an HTTP status and a message in the library's template."""

    def __init__(self, status: int, error: InvalidParameterError) -> None:
        super().__init__(str(error))
        self.status = status


async def read_body(request: Any, limits: ServiceLimits, owner: str) -> bytearray:
    """The body of ``request`` (a Starlette request), refused as soon as it breaks one of ``limits``.

    Raises:
        RequestRefusedError: 415 (content type), 400 (malformed ``Content-Length``, client gone),
            413 (over ``max_body_bytes``), 408 (not received within ``body_timeout``).
    """
    content_type = request.headers.get("content-type")
    if content_type is not None and content_type.split(";")[0].strip().lower() != OCTET_STREAM:
        raise RequestRefusedError(415, invalid("Content-Type", owner, f"{OCTET_STREAM} (or absent)", content_type[:100]))
    declared = request.headers.get("content-length")
    if declared is not None:
        if not (declared.isascii() and declared.isdigit()):
            raise RequestRefusedError(400, invalid("Content-Length", owner, "a decimal byte count", declared[:40]))
        if len(declared.lstrip("0")) > _MAX_LENGTH_DIGITS or int(declared) > limits.max_body_bytes:
            raise RequestRefusedError(413, _too_large(owner, limits, f"{declared[:40]} bytes (Content-Length)"))
    body = bytearray()
    try:
        await asyncio.wait_for(_receive(request, body, limits, owner), limits.body_timeout)
    except asyncio.TimeoutError:
        constraint = f"received whole within {limits.body_timeout:g} s (body_timeout)"
        raise RequestRefusedError(408, invalid("body", owner, constraint, f"{len(body)} bytes by then")) from None
    return body


async def _receive(request: Any, body: bytearray, limits: ServiceLimits, owner: str) -> None:
    from starlette.requests import ClientDisconnect

    try:
        async for chunk in request.stream():
            if len(body) + len(chunk) > limits.max_body_bytes:
                streamed = f"at least {len(body) + len(chunk)} bytes (streamed)"
                raise RequestRefusedError(413, _too_large(owner, limits, streamed))
            body += chunk
    except ClientDisconnect:
        gone = f"{len(body)} bytes before the client left"
        raise RequestRefusedError(400, invalid("body", owner, "sent whole", gone)) from None


def _too_large(owner: str, limits: ServiceLimits, value: str) -> InvalidParameterError:
    return invalid("body", owner, f"at most {limits.max_body_bytes} bytes (max_body_bytes)", value)


def read_token(path: str | Path) -> str:
    """The operator token in the file ``path`` (its first line; at least 16 printable ASCII characters)."""
    constraint = "a readable file whose first line has at least 16 printable ASCII characters without spaces"
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise invalid("operator_token_file", "read_token", constraint, f"{path}: {type(error).__name__}") from None
    token = lines[0].strip() if lines else ""
    if not (len(token) >= 16 and token.isascii() and token.isprintable() and " " not in token):
        raise invalid("operator_token_file", "read_token", constraint, f"{len(token)} characters")
    return token


def check_operator(request: Any, token: str | None, owner: str) -> None:
    """Refuse (401) a request without ``Authorization: Bearer <token>`` when the service has an operator token."""
    if token is None:
        return
    given = request.headers.get("authorization", "")
    if not hmac.compare_digest(given.encode("latin-1", "replace"), f"Bearer {token}".encode("ascii")):
        state = "no Authorization header" if not given else "another token"
        raise RequestRefusedError(401, invalid("Authorization", owner, "Bearer and the operator token", state))
