"""The shuffler and analyzer as Starlette applications (run by Uvicorn from `privsum.serve.cli`).

Shuffler: ``POST /uploads`` (a body of records, `privsum.serve.records`), ``POST /release``
(release a batch: returned as ``application/octet-stream`` and, with an analyzer URL, forwarded
to it), ``GET /status``, ``GET /protocol`` (the protocol file). Analyzer: ``POST /batches`` (one
batch), ``GET /estimate``, ``GET /status``, ``GET /protocol``. Every body is read within the
service's `ServiceLimits` before it is parsed; every refusal is a 4xx answer whose text names the
parameter, the constraint and the value, and leaves the service's state unchanged.
"""

from __future__ import annotations

import json
import math
import urllib.parse
import urllib.request
from typing import Any

import numpy as np

try:  # privsum[serve]; without it this module imports (for docs and API checks) but builds no app
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import JSONResponse, PlainTextResponse, Response
    from starlette.routing import Route
except ModuleNotFoundError as error:  # pragma: no cover - exercised only without the extra
    _STARLETTE_MISSING: ModuleNotFoundError | None = error
else:
    _STARLETTE_MISSING = None

from privsum._validation import invalid
from privsum.exceptions import InvalidParameterError
from privsum.parties import Analyzer, Deployment, Shuffler
from privsum.serve.limits import OCTET_STREAM, RequestRefusedError, ServiceLimits, check_operator, read_body
from privsum.serve.records import unpack_records

__all__ = ["analyzer_app", "shuffler_app"]

#: Refusals listed in an ``/uploads`` answer (the rest are only counted).
MAX_LISTED_REFUSALS = 10
_CLOSE_AFTER = (401, 408, 413, 415)  # refused before the body was read whole: the connection is not reused


def _refusal(error: Exception, status: int = 400) -> PlainTextResponse:
    status = error.status if isinstance(error, RequestRefusedError) else status
    headers = {"Connection": "close"} if status in _CLOSE_AFTER else None
    return PlainTextResponse(str(error), status_code=status, headers=headers)


def _status(deployment: Deployment, **extra: Any) -> dict[str, Any]:
    return {"protocol": deployment.wire_name, "fingerprint": deployment.fingerprint.hex(),
            "min_senders": deployment.min_senders} | extra


def _require_starlette() -> None:
    if _STARLETTE_MISSING is not None:
        raise ImportError("the HTTP services need the optional extra: pip install 'privsum[serve]'") from _STARLETTE_MISSING


def _check_limits(limits: ServiceLimits | None, default: ServiceLimits, owner: str) -> ServiceLimits:
    if limits is None:
        return default
    if not isinstance(limits, ServiceLimits):
        raise invalid("limits", owner, "a ServiceLimits", type(limits).__name__)
    return limits


class _UploadDesk:
    """The shuffler behind ``POST /uploads``: admits each record within the limits, then submits it."""

    OWNER = "POST /uploads"

    def __init__(self, deployment: Deployment, limits: ServiceLimits) -> None:
        self.shuffler, self.limits = Shuffler(deployment), limits
        self.max_upload = deployment.spec.upload_header_bytes + (deployment.cap.total * deployment.spec.field_bits + 7) // 8
        self.identities = 0  # senders accepted in this collection (held, or released and kept to refuse again)

    def submit(self, sender: str, upload: bytes) -> None:
        limits, cap = self.limits, self.shuffler.deployment.cap.total
        if self.identities >= limits.max_senders:
            raise invalid("sender", self.OWNER, f"one of at most {limits.max_senders} senders of this collection "
                          "(max_senders: the shuffler is full)", sender)
        count = min(cap, self._declared_count(upload))  # the header's count (the Shuffler checks it against the cap)
        if self.shuffler.n_messages + count > limits.max_messages:
            raise invalid("upload", self.OWNER, f"room for its {count} messages within max_messages={limits.max_messages} "
                          "held (release a batch first)", f"{self.shuffler.n_messages} held")
        self.shuffler.submit(sender, upload)
        self.identities += 1

    def _declared_count(self, upload: bytes) -> int:
        """The message count an upload's header states (its last 4 bytes, big-endian; 0 if too short to say)."""
        end = self.shuffler.deployment.spec.upload_header_bytes
        return int.from_bytes(upload[end - 4 : end], "big") if len(upload) >= end else 0

    async def handle(self, request: Request) -> Response:
        try:
            body = await read_body(request, self.limits, self.OWNER)
            if not body:
                raise invalid("body", self.OWNER, "at least one record", "0 bytes")
            records = unpack_records(body, max_upload_bytes=self.max_upload, max_records=self.limits.max_records)
        except (InvalidParameterError, RequestRefusedError) as error:
            return _refusal(error)
        del body
        refused, n_refused = [], 0
        for index, (sender, upload) in enumerate(records):
            try:
                self.submit(sender, upload)
            except InvalidParameterError as error:
                n_refused += 1
                if len(refused) < MAX_LISTED_REFUSALS:
                    refused.append({"index": index, "error": str(error)})
        return JSONResponse({"accepted": len(records) - n_refused, "refused": refused, "n_refused": n_refused,
                             "senders": self.shuffler.n_senders})


def _forward(analyzer_url: str, batch: bytes, token: str | None) -> None:
    """POST ``batch`` to the analyzer (run in a worker thread: the event loop keeps serving)."""
    headers = {"Content-Type": OCTET_STREAM} | ({} if token is None else {"Authorization": f"Bearer {token}"})
    forward = urllib.request.Request(analyzer_url.rstrip("/") + "/batches", data=batch, method="POST", headers=headers)
    with urllib.request.urlopen(forward, timeout=60) as answer:  # the operator's own URL
        answer.read()


def _check_url(url: Any, name: str, owner: str) -> None:
    constraint = "an http:// or https:// URL with a host, of printable ASCII without spaces"
    if not (isinstance(url, str) and url.isascii() and url.isprintable() and " " not in url):
        raise invalid(name, owner, constraint, url)
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise invalid(name, owner, constraint, url)


def _header_text(text: str) -> str:
    """``text`` as a safe HTTP header value: printable ASCII, at most 200 characters."""
    return "".join(c if " " <= c <= "~" else "?" for c in text[:200])


def shuffler_app(deployment: Deployment, *, analyzer_url: str | None = None, limits: ServiceLimits | None = None,
                 operator_token: str | None = None) -> Starlette:
    """The shuffler service of ``deployment``; ``analyzer_url`` (e.g. ``http://127.0.0.1:8001``) receives each batch.

    ``limits`` (default `ServiceLimits()`) bound request bodies, their time, records per request,
    and the senders and messages held (see `privsum.serve.limits`). With ``operator_token``,
    ``POST /release`` needs ``Authorization: Bearer <token>`` (else 401: nobody else can split the
    collection into small batches), and the forwarded batches carry it to the analyzer.
    """
    _require_starlette()
    if analyzer_url is not None:
        _check_url(analyzer_url, "analyzer_url", "shuffler_app")
    desk = _UploadDesk(deployment, _check_limits(limits, ServiceLimits(), "shuffler_app"))
    shuffler = desk.shuffler

    async def release(request: Request) -> Response:
        try:
            check_operator(request, operator_token, "POST /release")
            batch = shuffler.release()
        except (InvalidParameterError, RequestRefusedError) as error:
            return _refusal(error)
        if analyzer_url is not None:
            try:
                await run_in_threadpool(_forward, analyzer_url, batch, operator_token)
            except Exception as error:  # any failure: the batch is in the body, the operator posts it again
                return Response(batch, status_code=502, media_type=OCTET_STREAM,
                                headers={"X-Privsum-Forward-Error": _header_text(str(error))})
        return Response(batch, media_type=OCTET_STREAM)

    async def status(request: Request) -> Response:
        return JSONResponse(_status(deployment, senders=shuffler.n_senders, ready=shuffler.ready,
                                    messages=shuffler.n_messages, identities=desk.identities,
                                    largest_batch=deployment.largest_batch))

    async def protocol(request: Request) -> Response:
        return JSONResponse(deployment.to_file_dict())

    return _service("the shuffler", [
        Route("/uploads", desk.handle, methods=["POST"]),
        Route("/release", release, methods=["POST"]),
        Route("/status", status, methods=["GET"]),
        Route("/protocol", protocol, methods=["GET"]),
    ])


def _service(role: str, routes: list[Route]) -> Starlette:
    """The application of ``routes``; an unknown route (404) or method (405) is refused in the library's template."""
    offered = ", ".join(f"{method} {route.path}" for route in routes for method in sorted(route.methods - {"HEAD"}))

    async def unknown(request: Request, error: Exception) -> Response:
        status = getattr(error, "status_code", 404)
        refusal = invalid("request", role, f"one of {offered}", f"{request.method} {request.url.path}"[:200])
        return PlainTextResponse(str(refusal), status_code=status, headers=getattr(error, "headers", None))

    return Starlette(routes=routes, exception_handlers={404: unknown, 405: unknown})


def _json_number(value: float) -> float | str:
    """A float for JSON: finite as it is, otherwise its name (``"inf"``, ``"nan"``), which JSON has no number for."""
    value = float(value)
    return value if math.isfinite(value) else str(value)


def _json_array(value: Any) -> Any:
    """An array of numbers as nested lists for JSON (non-finite entries named, as `_json_number`)."""
    numbers = np.asarray(value, dtype=float)
    if np.isfinite(numbers).all():
        return numbers.tolist()
    named = numbers.astype(object)
    named[~np.isfinite(numbers)] = [str(x) for x in numbers[~np.isfinite(numbers)]]
    return named.tolist()


def _estimate_answer(analyzer: Analyzer) -> Response:
    """``GET /estimate``'s answer for the analyzer's present state."""
    try:
        value, guarantee = analyzer.estimate(), analyzer.guarantee
        numbers = _json_array(value)
    except InvalidParameterError as error:
        return _refusal(error)
    except (TypeError, ValueError):  # a released function (the KDE): use privsum.parties.Analyzer in process
        name = analyzer.deployment.wire_name
        return PlainTextResponse(f"the estimate of {name} is not an array of numbers", status_code=501)
    return JSONResponse({
        "estimate": numbers,
        "participants": analyzer.n_participants,
        "batches": analyzer.n_batches,
        "guarantee_crowd": analyzer.guarantee_crowd,
        "guarantee": {"epsilon": _json_number(guarantee.epsilon), "delta": _json_number(guarantee.delta),
                      "neighbouring": str(getattr(guarantee.neighbouring, "value", guarantee.neighbouring))},
    })


def analyzer_app(deployment: Deployment, *, limits: ServiceLimits | None = None,
                 operator_token: str | None = None) -> Starlette:
    """The analyzer service of ``deployment`` (``limits`` default: `ServiceLimits()`).

    With ``operator_token``, ``POST /batches`` needs ``Authorization: Bearer <token>`` (else 401):
    only the shuffler, which holds the token, can add batches. A batch stating fewer senders than
    ``min_senders`` (one such batch would set every user's guarantee to that crowd's) or more than
    `Deployment.largest_batch` (no guarantee for the collection) is refused by `Analyzer.absorb`.
    """
    _require_starlette()
    limits = _check_limits(limits, ServiceLimits(), "analyzer_app")
    analyzer = Analyzer(deployment)
    async def batches(request: Request) -> Response:
        try:
            check_operator(request, operator_token, "POST /batches")
            body = await read_body(request, limits, "POST /batches")
            messages = analyzer.absorb(body)
        except (InvalidParameterError, RequestRefusedError) as error:
            return _refusal(error)
        return JSONResponse({"messages": messages, "participants": analyzer.n_participants, "batches": analyzer.n_batches})

    answers: dict[int, Response] = {}  # by batches absorbed: the answer changes only with a new batch

    async def estimate(request: Request) -> Response:
        if analyzer.n_batches not in answers:  # computed once per state: repeated GETs cost nothing
            answers.clear()
            answers[analyzer.n_batches] = _estimate_answer(analyzer)
        return answers[analyzer.n_batches]

    async def status(request: Request) -> Response:
        return JSONResponse(_status(deployment, participants=analyzer.n_participants, batches=analyzer.n_batches))

    async def protocol(request: Request) -> Response:
        return Response(json.dumps(deployment.to_file_dict()), media_type="application/json")

    return _service("the analyzer", [
        Route("/batches", batches, methods=["POST"]),
        Route("/estimate", estimate, methods=["GET"]),
        Route("/status", status, methods=["GET"]),
        Route("/protocol", protocol, methods=["GET"]),
    ])
