"""Random and mutated requests at the two services' applications (in process, over ASGI): a 4xx or a 200, never a 500.

Every refusal's text follows the library's template, and a refused request leaves the service's
``GET /status`` as it was. The same attacks against real processes are in ``tests/serve``.
"""

from __future__ import annotations

import asyncio
import json
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from privsum.bitsum import RRBitSum, ThreeNBBitSum
from privsum.exceptions import InvalidParameterError
from privsum.parties import Analyzer, Client, Deployment, Shuffler
from privsum.serve import pack_records

pytest.importorskip("starlette")

from privsum.serve.apps import analyzer_app, shuffler_app
from privsum.serve.limits import ServiceLimits

TEMPLATE = re.compile(r"^The '([^']+)' parameter of (.+?) must be (.+)\. Got (.+) instead\.$", re.S)
FAST = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
SLOW = settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
LIMITS = ServiceLimits(max_body_bytes=4096, max_records=8, body_timeout=2.0)
DEPLOYMENTS = {
    "rr": Deployment(RRBitSum(n_users=3, flip_probability=0.25, delta=0.1), n_instances=3, min_senders=2),
    "3nb": Deployment(ThreeNBBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=3), n_instances=1, min_senders=2),
}


def call(app, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """One request through the ASGI application; an exception escaping it fails the test."""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "server": ("127.0.0.1", 1), "client": ("127.0.0.1", 2),
             "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]}
    chunks = [body[i : i + 1000] for i in range(0, len(body), 1000)] or [b""]
    sent: list[dict] = []

    async def receive():
        if chunks:
            chunk = chunks.pop(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(chunks)}
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


def state(app) -> dict:
    status, body = call(app, "GET", "/status")
    assert status == 200
    return json.loads(body)


def check_answer(status: int, body: bytes) -> None:
    assert status in (200, 400, 401, 408, 413, 415), (status, body)
    if status != 200:
        assert TEMPLATE.match(body.decode()), body


def sample_upload(key: str, rng: int = 0) -> bytes:
    deployment = DEPLOYMENTS[key]
    return Client(deployment, rng=rng).encode(np.ones(deployment.n_instances, dtype=int))


def sample_batch(key: str, rng: int = 0) -> bytes:
    deployment = DEPLOYMENTS[key]
    shuffler = Shuffler(deployment, rng=rng)
    for sender in range(2):
        shuffler.submit(sender, sample_upload(key, rng + sender))
    return shuffler.release()


def mutate(data: bytes, edits: list[tuple[int, int]], cut: int | None) -> bytes:
    buffer = bytearray(data)
    for position, value in edits:
        buffer[position % len(buffer)] = value
    return bytes(buffer if cut is None else buffer[: cut % (len(buffer) + 1)])


EDITS = st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=4)
CONTENT_TYPES = st.sampled_from([None, "application/octet-stream", "application/octet-stream; x=1", "text/plain",
                                 "application/json"])


def check_uploads(key, data, edits, cut, use_sample, content_type, sender):
    app = shuffler_app(DEPLOYMENTS[key], limits=LIMITS)
    call(app, "POST", "/uploads", pack_records([("resident", sample_upload(key))]))
    before = state(app)
    sample = pack_records([(sender, sample_upload(key, 1)), ("x", sample_upload(key, 2))])
    body = mutate(sample, edits, cut) if use_sample else data
    headers = {} if content_type is None else {"Content-Type": content_type}
    status, answer = call(app, "POST", "/uploads", body, headers | {"Content-Length": str(len(body))})
    check_answer(status, answer)
    if status != 200:
        assert state(app) == before
    else:
        result = json.loads(answer)
        assert state(app)["senders"] == before["senders"] + result["accepted"]
        assert len(result["refused"]) <= 10 and all(TEMPLATE.match(r["error"]) for r in result["refused"])


def check_batches(key, data, edits, cut, use_sample, content_type):
    app = analyzer_app(DEPLOYMENTS[key], limits=LIMITS)
    resident = sample_batch(key)
    assert call(app, "POST", "/batches", resident)[0] == 200
    before = state(app), call(app, "GET", "/estimate")
    body = mutate(resident, edits, cut) if use_sample else data
    headers = {} if content_type is None else {"Content-Type": content_type}
    status, answer = call(app, "POST", "/batches", body, headers)
    check_answer(status, answer)
    if status != 200:
        assert (state(app), call(app, "GET", "/estimate")) == before


UPLOADS = given(key=st.sampled_from(sorted(DEPLOYMENTS)), data=st.binary(max_size=600), edits=EDITS,
                cut=st.none() | st.integers(0, 10**6), use_sample=st.booleans(), content_type=CONTENT_TYPES,
                sender=st.text(min_size=1, max_size=40))
BATCHES = given(key=st.sampled_from(sorted(DEPLOYMENTS)), data=st.binary(max_size=600), edits=EDITS,
                cut=st.none() | st.integers(0, 10**6), use_sample=st.booleans(), content_type=CONTENT_TYPES)


@FAST
@UPLOADS
def test_uploads_endpoint(**case):
    check_uploads(**case)


@pytest.mark.slow
@SLOW
@UPLOADS
def test_uploads_endpoint_longer(**case):
    check_uploads(**case)


@FAST
@BATCHES
def test_batches_endpoint(**case):
    check_batches(**case)


@pytest.mark.slow
@SLOW
@BATCHES
def test_batches_endpoint_longer(**case):
    check_batches(**case)


@settings(FAST, max_examples=30)
@given(method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]),
       path=st.sampled_from(["/", "/uploads", "/release", "/status", "/protocol", "/batches", "/estimate", "/x/../status",
                             "/uploads/", "//status"]),
       length=st.none() | st.integers(0, 10**30).map(str) | st.text(max_size=8))
def test_routes_methods_and_lengths(method, path, length):
    for app in (shuffler_app(DEPLOYMENTS["rr"], limits=LIMITS), analyzer_app(DEPLOYMENTS["rr"], limits=LIMITS)):
        headers = {} if length is None else {"Content-Length": length.encode("latin-1", "replace").decode("latin-1")}
        status, answer = call(app, method, path, b"", headers)
        assert status in (200, 307, 400, 404, 405, 413), (method, path, status, answer)
        if status in (400, 404, 405, 413) and method != "HEAD":
            assert TEMPLATE.match(answer.decode()), answer


def test_batches_stay_within_the_crowd_the_protocol_covers():
    """A split-and-mix sum covers at most n_users participants: the service holds no more for one batch."""
    from tests.parties.protocols import protocol

    deployment = Deployment(protocol("MultiMessageSum", 5), n_instances=1, min_senders=2)
    shuffler, analyzer = shuffler_app(deployment, limits=LIMITS), analyzer_app(deployment, limits=LIMITS)
    client = Client(deployment, rng=0)
    records = [(f"user-{i}", client.encode([i % 2])) for i in range(7)]
    answer = json.loads(call(shuffler, "POST", "/uploads", pack_records(records))[1])
    assert (answer["accepted"], answer["n_refused"]) == (5, 2)
    assert TEMPLATE.match(answer["refused"][0]["error"]) and "at most 5 senders of one batch" in answer["refused"][0]["error"]
    status, batch = call(shuffler, "POST", "/release")
    assert status == 200 and call(analyzer, "POST", "/batches", batch)[0] == 200
    status, body = call(analyzer, "GET", "/estimate")
    assert status == 200 and json.loads(body)["participants"] == 5


def test_a_guarantee_without_a_finite_epsilon_is_answered_in_json():
    """One sender of a noise-sharing sum has no finite epsilon: the answer names it instead of failing (was a 500)."""
    from tests.parties.protocols import protocol

    deployment = Deployment(protocol("CorrelatedNoiseSum", 20), n_instances=1, min_senders=1)
    shuffler, analyzer = shuffler_app(deployment, limits=LIMITS), analyzer_app(deployment, limits=LIMITS)
    call(shuffler, "POST", "/uploads", pack_records([("alone", Client(deployment, rng=0).encode([1]))]))
    assert call(analyzer, "POST", "/batches", call(shuffler, "POST", "/release")[1])[0] == 200
    status, body = call(analyzer, "GET", "/estimate")
    assert status == 200 and json.loads(body)["guarantee"]["epsilon"] == "inf"


def test_a_failed_forward_returns_the_batch():
    deployment = DEPLOYMENTS["rr"]
    for url in ("http://127.0.0.1:1", "http://[::1]:1/x?y"):
        app = shuffler_app(deployment, analyzer_url=url, limits=LIMITS)
        call(app, "POST", "/uploads", pack_records([(f"s{i}", sample_upload("rr", i)) for i in range(2)]))
        status, batch = call(app, "POST", "/release")
        assert status == 502 and Analyzer(deployment).absorb(batch) == 6  # the whole batch, to post again
        assert state(app)["senders"] == 0  # released: the operator posts the batch again


@pytest.mark.parametrize("url", ["http://127.0.0.1:1/\r\nX-Injected: 1", "ftp://host", "http://", "127.0.0.1:8001", 8001,
                                 "http://h\u00e9st"])
def test_malformed_analyzer_urls_are_refused_at_start(url):
    with pytest.raises(InvalidParameterError, match="'analyzer_url' parameter of shuffler_app"):
        shuffler_app(DEPLOYMENTS["rr"], analyzer_url=url)


@pytest.mark.slow
def test_every_protocol_answers_its_estimate_longer():
    """A released batch of every protocol through the analyzer service: 200 with finite JSON, or 501 for the KDEs."""
    from tests.fuzz.test_hostile_messages import NAMES, sample

    for name in NAMES:
        deployment, _, batch = sample(name)
        app = analyzer_app(deployment)
        assert call(app, "POST", "/batches", batch)[0] == 200
        status, body = call(app, "GET", "/estimate")
        assert status == (501 if name in ("ShuffledKDE", "VectorSumKDEProtocol", "JointClassKDEProtocol") else 200), (name, body)
        if status == 200:
            assert json.loads(body)["participants"] == 4


def test_batches_outside_the_deployments_crowd_are_refused():
    """A batch below min_senders would set every user's guarantee to its crowd's; one above n_users voids it."""
    deployment = DEPLOYMENTS["3nb"]
    app = analyzer_app(deployment, limits=LIMITS)
    batch = bytearray(sample_batch("3nb"))
    at = deployment.spec.batch_header_bytes - 12
    batch[at : at + 4] = (1).to_bytes(4, "big")  # 2 senders stated as 1
    status, body = call(app, "POST", "/batches", bytes(batch))
    check_answer(status, body)
    assert status == 400 and "at least 2 (min_senders)" in body.decode()
    assert state(app)["batches"] == 0

    from tests.parties.protocols import protocol

    shares = Deployment(protocol("MultiMessageSum", 5), n_instances=1, min_senders=2)
    shuffler, client = Shuffler(shares, rng=0), Client(shares, rng=1)
    for sender in range(5):
        shuffler.submit(sender, client.encode([1]))
    batch = bytearray(shuffler.release())
    at = shares.spec.batch_header_bytes - 12
    batch[at : at + 4] = (6).to_bytes(4, "big")
    app = analyzer_app(shares, limits=LIMITS)
    status, body = call(app, "POST", "/batches", bytes(batch))
    check_answer(status, body)
    assert status == 400 and state(app)["batches"] == 0


def test_repeated_estimates_are_computed_once_per_batch(monkeypatch):
    """GET /estimate computes the guarantee (seconds at 10^6 participants) once per absorbed batch, not per request."""
    computed = []
    original = Analyzer.estimate
    monkeypatch.setattr(Analyzer, "estimate", lambda self: computed.append(1) or original(self))
    app = analyzer_app(DEPLOYMENTS["rr"], limits=LIMITS)
    call(app, "POST", "/batches", sample_batch("rr", 0))
    answers = {call(app, "GET", "/estimate") for _ in range(5)}
    assert len(answers) == 1 and len(computed) == 1
    call(app, "POST", "/batches", sample_batch("rr", 7))
    assert json.loads(call(app, "GET", "/estimate")[1])["batches"] == 2 and len(computed) == 2
