"""The shuffler and analyzer as Starlette applications (run by Uvicorn from `privsum.serve.cli`).

Shuffler: ``POST /uploads`` (a body of records, `privsum.serve.records`), ``POST /release``
(release a batch: returned as ``application/octet-stream`` and, with an analyzer URL, forwarded
to it), ``GET /status``, ``GET /protocol`` (the protocol file). Analyzer: ``POST /batches`` (one
batch), ``GET /estimate``, ``GET /status``, ``GET /protocol``. Every body is read with a size
limit before it is parsed; every refusal is a ``400`` with the error text.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import numpy as np

try:  # privsum[serve]; without it this module imports (for docs and API checks) but builds no app
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, PlainTextResponse, Response
    from starlette.routing import Route
except ModuleNotFoundError as error:  # pragma: no cover - exercised only without the extra
    _STARLETTE_MISSING: ModuleNotFoundError | None = error
else:
    _STARLETTE_MISSING = None

from privsum.exceptions import InvalidParameterError
from privsum.parties import Analyzer, Deployment, Shuffler
from privsum.serve.records import unpack_records

__all__ = ["analyzer_app", "shuffler_app"]


class _BodyTooLargeError(Exception):
    pass


async def _read_body(request: Request, limit: int) -> bytes:
    """The request body, refused as soon as it passes ``limit`` bytes (declared or streamed)."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise _BodyTooLargeError(f"body of {declared} bytes over the limit of {limit}")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _BodyTooLargeError(f"body over the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _refusal(error: Exception) -> PlainTextResponse:
    status = 413 if isinstance(error, _BodyTooLargeError) else 400
    return PlainTextResponse(str(error), status_code=status)


def _status(deployment: Deployment, **extra: Any) -> dict[str, Any]:
    return {"protocol": deployment.wire_name, "fingerprint": deployment.fingerprint.hex(),
            "min_senders": deployment.min_senders} | extra


def _require_starlette() -> None:
    if _STARLETTE_MISSING is not None:
        raise ImportError("the HTTP services need the optional extra: pip install 'privsum[serve]'") from _STARLETTE_MISSING


def shuffler_app(deployment: Deployment, *, analyzer_url: str | None = None, max_body_bytes: int = 64 << 20) -> Starlette:
    """The shuffler service of ``deployment``; ``analyzer_url`` (e.g. ``http://127.0.0.1:8001``) receives each batch."""
    _require_starlette()
    shuffler = Shuffler(deployment)
    max_upload = deployment.spec.upload_header_bytes + (deployment.cap.total * deployment.spec.field_bits + 7) // 8

    async def uploads(request: Request) -> Response:
        try:
            records = unpack_records(await _read_body(request, max_body_bytes), max_upload_bytes=max_upload)
        except (InvalidParameterError, _BodyTooLargeError) as error:
            return _refusal(error)
        refused = []
        for index, (sender, upload) in enumerate(records):
            try:
                shuffler.submit(sender, upload)
            except InvalidParameterError as error:
                refused.append({"index": index, "error": str(error)})
        return JSONResponse({"accepted": len(records) - len(refused), "refused": refused[:10],
                             "n_refused": len(refused), "senders": shuffler.n_senders})

    async def release(request: Request) -> Response:
        try:
            batch = shuffler.release()
        except InvalidParameterError as error:
            return _refusal(error)
        if analyzer_url is not None:
            forward = urllib.request.Request(analyzer_url.rstrip("/") + "/batches", data=batch, method="POST",
                                             headers={"Content-Type": "application/octet-stream"})
            try:
                with urllib.request.urlopen(forward, timeout=60) as answer:  # the operator's own URL
                    answer.read()
            except OSError as error:  # (URLError is one) the batch is in the body: the operator posts it again
                return Response(batch, status_code=502, media_type="application/octet-stream",
                                headers={"X-Privsum-Forward-Error": str(error)[:200].encode("ascii", "replace").decode()})
        return Response(batch, media_type="application/octet-stream")

    async def status(request: Request) -> Response:
        return JSONResponse(_status(deployment, senders=shuffler.n_senders, ready=shuffler.ready))

    async def protocol(request: Request) -> Response:
        return JSONResponse(deployment.to_file_dict())

    return Starlette(routes=[
        Route("/uploads", uploads, methods=["POST"]),
        Route("/release", release, methods=["POST"]),
        Route("/status", status, methods=["GET"]),
        Route("/protocol", protocol, methods=["GET"]),
    ])


def analyzer_app(deployment: Deployment, *, max_body_bytes: int = 1 << 30) -> Starlette:
    """The analyzer service of ``deployment``."""
    _require_starlette()
    analyzer = Analyzer(deployment)

    async def batches(request: Request) -> Response:
        try:
            messages = analyzer.absorb(await _read_body(request, max_body_bytes))
        except (InvalidParameterError, _BodyTooLargeError) as error:
            return _refusal(error)
        return JSONResponse({"messages": messages, "participants": analyzer.n_participants, "batches": analyzer.n_batches})

    async def estimate(request: Request) -> Response:
        try:
            value, guarantee = analyzer.estimate(), analyzer.guarantee
            numbers = np.asarray(value, dtype=float).tolist()
        except InvalidParameterError as error:
            return _refusal(error)
        except (TypeError, ValueError):  # a released function (the KDE): use privsum.parties.Analyzer in process
            return PlainTextResponse(f"the estimate of {deployment.wire_name} is not an array of numbers", status_code=501)
        return JSONResponse({
            "estimate": numbers,
            "participants": analyzer.n_participants,
            "batches": analyzer.n_batches,
            "guarantee_crowd": analyzer.guarantee_crowd,
            "guarantee": {"epsilon": guarantee.epsilon, "delta": guarantee.delta,
                          "neighbouring": str(getattr(guarantee.neighbouring, "value", guarantee.neighbouring))},
        })

    async def status(request: Request) -> Response:
        return JSONResponse(_status(deployment, participants=analyzer.n_participants, batches=analyzer.n_batches))

    async def protocol(request: Request) -> Response:
        return Response(json.dumps(deployment.to_file_dict()), media_type="application/json")

    return Starlette(routes=[
        Route("/batches", batches, methods=["POST"]),
        Route("/estimate", estimate, methods=["GET"]),
        Route("/status", status, methods=["GET"]),
        Route("/protocol", protocol, methods=["GET"]),
    ])

