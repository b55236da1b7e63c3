"""A hostile client against the two services as real processes: every attack gets a clear 4xx in bounded time.

Each refusal's text follows the library's template (parameter, owner, constraint, value), no
answer is a 500, nothing hangs (the services run with a 1 s body deadline and a 1.5 s head
deadline), and a refused request leaves the service's state as it was (``GET /status``, the
analyzer's ``GET /estimate``).
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import threading
import time

import numpy as np
import pytest

from privsum.bitsum import RRBitSum
from privsum.exceptions import InvalidParameterError
from privsum.parties import Client, Deployment, Shuffler
from privsum.serve import pack_records
from privsum.serve.simulator import fetch_deployment, get_json, post

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from privsum.serve.local import start_service

from .rawhttp import address, exchange, request_head

TEMPLATE = re.compile(r"^The '([^']+)' parameter of (.+?) must be (.+)\. Got (.+) instead\.$", re.S)
MAX_BODY = 8192
N_USERS = 3
LIMITS = ["--max-body-bytes", str(MAX_BODY), "--body-timeout", "1", "--head-timeout", "1.5"]
DEPLOYMENT = Deployment(RRBitSum(n_users=N_USERS, flip_probability=0.1, delta=1e-6), n_instances=2)
FOREIGN = Deployment(RRBitSum(n_users=N_USERS, flip_probability=0.2, delta=1e-6), n_instances=2)


def assert_refusal(status: int, text: str | bytes, expected_status: int, *words: str) -> re.Match:
    text = text.decode() if isinstance(text, bytes) else text
    assert status == expected_status, (status, text)
    match = TEMPLATE.match(text)
    assert match, text
    for word in words:
        assert word in text, (word, text)
    return match


@pytest.fixture(scope="module")
def protocol_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("hostile") / "protocol.json"
    DEPLOYMENT.save(path)
    return path


@pytest.fixture(scope="module")
def shuffler(protocol_file):
    service = start_service("shuffler", protocol_file, extra=[*LIMITS, "--max-records", "20"], timeout=90)
    yield service
    service.stop()
    assert "Traceback" not in service.output, service.output


TOKEN = "operator-" + "7" * 24


@pytest.fixture(scope="module")
def token_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("token") / "operator.token"
    path.write_text(TOKEN + "\n")
    return path


@pytest.fixture(scope="module")
def analyzer(protocol_file, token_file):
    service = start_service("analyzer", protocol_file, extra=[*LIMITS, "--operator-token-file", str(token_file)], timeout=90)
    yield service
    service.stop()
    assert "Traceback" not in service.output, service.output


def shuffler_state(service) -> tuple:
    status = get_json(service.url, "/status")
    return status["senders"], status["messages"], status["identities"]


def analyzer_state(service) -> tuple:
    status = get_json(service.url, "/status")
    estimate = get_json(service.url, "/estimate") if status["batches"] else None
    return status["participants"], status["batches"], json.dumps(estimate)


def upload(rng: int = 0, deployment: Deployment = DEPLOYMENT) -> bytes:
    return Client(deployment, rng=rng).encode([1, 0])


def batch_of(deployment: Deployment, n_senders: int, rng: int) -> bytes:
    shuffler, client = Shuffler(deployment, rng=rng), Client(deployment, rng=rng)
    for sender in range(n_senders):
        shuffler.submit(sender, client.encode(np.arange(deployment.n_instances) % 2))
    return shuffler.release()


# ---------------------------------------------------------------------------------------------- HTTP


@pytest.mark.parametrize("length", ["99999999999999", "1" + "0" * 19, str(MAX_BODY + 1)])
def test_declared_body_over_the_limit_is_refused_before_reading_it(shuffler, length):
    before = shuffler_state(shuffler)
    answer = exchange(shuffler.url, request_head("POST", "/uploads", {"Content-Length": length}) + b"abc")
    assert_refusal(answer.status, answer.body, 413, "'body'", "max_body_bytes", f"{MAX_BODY} bytes", length)
    assert answer.seconds < 1.0 and answer.headers.get("connection") == "close"
    assert shuffler_state(shuffler) == before


def test_chunked_body_over_the_limit_is_refused_while_streaming(analyzer):
    before = analyzer_state(analyzer)
    chunk = b"1000\r\n" + b"a" * 4096 + b"\r\n"
    head = request_head("POST", "/batches", {"Transfer-Encoding": "chunked", "Authorization": f"Bearer {TOKEN}"})
    answer = exchange(analyzer.url, head + chunk * 3)
    assert_refusal(answer.status, answer.body, 413, "'body'", "max_body_bytes", "streamed")
    assert analyzer_state(analyzer) == before


@pytest.mark.parametrize("attack", ["endless chunks", "lying length", "slow body"])
def test_bodies_that_do_not_arrive_are_refused_at_the_deadline(shuffler, attack):
    before = shuffler_state(shuffler)
    if attack == "endless chunks":
        data, drip = request_head("POST", "/uploads", {"Transfer-Encoding": "chunked"}) + b"5\r\nabcde\r\n", []
    elif attack == "lying length":
        data, drip = request_head("POST", "/uploads", {"Content-Length": "100"}) + b"abc", []
    else:
        data, drip = request_head("POST", "/uploads", {"Content-Length": "100"}), [b"x"] * 20
    answer = exchange(shuffler.url, data, drip=drip, timeout=10)
    assert_refusal(answer.status, answer.body, 408, "'body'", "body_timeout", "1 s")
    assert 0.9 < answer.seconds < 4.0
    assert shuffler_state(shuffler) == before


@pytest.mark.parametrize("attack", ["silent", "dripping headers"])
def test_request_heads_that_do_not_arrive_lose_the_connection(shuffler, attack):
    data = b"" if attack == "silent" else b"POST /uploads HTTP/1.1\r\n"
    answer = exchange(shuffler.url, data, drip=[b"X-Slow: 1\r\n"] * 30 if data else [], timeout=10)
    assert answer.status is None and 1.0 < answer.seconds < 4.5


@pytest.mark.parametrize("content_type", ["application/json", "text/plain; charset=utf-8", "multipart/form-data; x=1"])
def test_wrong_content_types_are_refused(shuffler, content_type):
    body = pack_records([("typed", upload())])
    answer = exchange(shuffler.url, request_head("POST", "/uploads", {"Content-Type": content_type,
                                                                      "Content-Length": str(len(body))}) + body)
    assert_refusal(answer.status, answer.body, 415, "'Content-Type'", "application/octet-stream", content_type)


@pytest.mark.parametrize("length", ["-1", "1e3", "0x10", " 12a", "1, 2", "9" * 5000])
def test_malformed_content_lengths_are_refused(shuffler, length):
    answer = exchange(shuffler.url, request_head("POST", "/uploads", {"Content-Length": length}))
    assert_refusal(answer.status, answer.body, 400, "'request'", "well-formed HTTP/1.1")


@pytest.mark.parametrize("head", [b"GET /status?\xc3\xa9 HTTP/1.1\r\nHost: x\r\n\r\n", b"GARBAGE\r\n\r\n",
                                  b"POST /uploads HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                                  b"POST /uploads HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
                                  b"GET /status HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 70000 + b"\r\n\r\n",
                                  b"GET /status HTTP/1.1\r\n\r\n", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
                                  b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(100),
                                  b"GET /status HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                                  b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"])
def test_malformed_requests_are_refused_with_the_reason(shuffler, head):
    answer = exchange(shuffler.url, head)
    if answer.status == 400:  # h11 refused it: its reason is in the template
        assert_refusal(answer.status, answer.body, 400, "'request'", "well-formed HTTP/1.1")
    else:
        assert answer.status in (200, 404, 431, 501), answer


def test_empty_and_malformed_upload_bodies_are_refused_whole(shuffler):
    before = shuffler_state(shuffler)
    status, body = post(shuffler.url, "/uploads", b"")
    assert_refusal(status, body, 400, "'body'", "at least one record", "0 bytes")
    good = pack_records([("framing", upload())])
    for bad, words in [
        (b"\x00", ["truncated"]),
        (b"\x00\x00" + good[2:], ["sender of 1 to 256"]),  # a zero-length sender
        (b"\x01\x01" + good[2:], ["sender of 1 to 256"]),  # a 257-byte sender
        (good[:-1], ["within the body"]),  # truncated upload
        (good + b"\x00", ["truncated"]),  # a trailing byte
        (good[:2] + b"\xff" * (len(good) - 2), ["UTF-8"]),
        (b"\x00\x01a\xff\xff\xff\xff", ["at most"]),  # a 4 GiB upload length
        (good + pack_records([("second", upload())])[:-3], ["within the body"]),  # all or nothing
    ]:
        status, text = post(shuffler.url, "/uploads", bad)
        assert_refusal(status, text, 400, "'body'", *words)
    assert shuffler_state(shuffler) == before


def test_too_many_records_in_one_body_are_refused_whole(shuffler):
    before = shuffler_state(shuffler)
    body = pack_records([(f"many-{i}", b"") for i in range(21)])
    status, text = post(shuffler.url, "/uploads", body)
    assert_refusal(status, text, 400, "'body'", "max_records", "21")
    assert shuffler_state(shuffler) == before


def test_unknown_routes_methods_and_queries(shuffler, analyzer):
    for service, method, path, expected in [
        (shuffler, "GET", "/nowhere", 404), (shuffler, "DELETE", "/uploads", 405), (shuffler, "GET", "/uploads", 405),
        (analyzer, "PUT", "/batches", 405), (analyzer, "GET", "/../../etc/passwd", 404),
        (analyzer, "GET", "/status?%ff%00=%C3%A9&&==", 200),
        (analyzer, "GET", "/status?\u00e9", 400), (shuffler, "POST", "/release?force=1&senders=-1", 400),
    ]:
        answer = exchange(service.url, request_head(method, path, {"Connection": "close", "Content-Length": "0"}))
        assert answer.status == expected, (method, path, answer)
        if expected in (404, 405):
            assert_refusal(answer.status, answer.body, expected, "'request'", "GET /status", f"{method} ")


def test_sender_ids_non_ascii_huge_and_duplicate(shuffler):
    before = shuffler_state(shuffler)
    senders = ["\u00e9\u4e2d\U0001f600" * 20, "\x00\r\nX-Injected: 1", "s" * 256]
    status, body = post(shuffler.url, "/uploads", pack_records([(s, upload(i)) for i, s in enumerate(senders)]))
    answer = json.loads(body)
    assert status == 200 and answer["accepted"] == 3
    status, body = post(shuffler.url, "/uploads", pack_records([(senders[1], upload(5))]))
    answer = json.loads(body)
    assert answer["accepted"] == 0 and answer["n_refused"] == 1
    assert_refusal(400, answer["refused"][0]["error"], 400, "'sender'", "without an upload", repr(senders[1]))
    assert shuffler_state(shuffler)[0] == before[0] + 3
    _release(shuffler)


def test_concurrent_uploads_of_one_sender_are_accepted_once(shuffler):
    body, answers = pack_records([("racer", upload())]), []

    def send():
        connection = http.client.HTTPConnection(*address(shuffler.url), timeout=30)
        connection.request("POST", "/uploads", body=body, headers={"Content-Type": "application/octet-stream"})
        answers.append(json.loads(connection.getresponse().read()))
        connection.close()

    threads = [threading.Thread(target=send) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(answer["accepted"] for answer in answers) == [0] * 7 + [1]
    _release(shuffler)


def test_refused_uploads_are_counted_and_listed_within_bounds(shuffler):
    before = shuffler_state(shuffler)
    foreign = upload(deployment=FOREIGN)
    status, body = post(shuffler.url, "/uploads", pack_records([(f"foreign-{i}", foreign) for i in range(15)]))
    answer = json.loads(body)
    assert status == 200 and answer["n_refused"] == 15 and len(answer["refused"]) == 10
    assert_refusal(400, answer["refused"][0]["error"], 400, "'data'", "fingerprint", "another configuration")
    assert shuffler_state(shuffler) == before


def _release(shuffler) -> bytes | None:
    """Fill the shuffler up to min_senders and release (so that later tests start from an empty batch)."""
    held = get_json(shuffler.url, "/status")["senders"]
    fillers = [(f"filler-{time.monotonic_ns()}-{i}", upload(i)) for i in range(max(0, N_USERS - held))]
    if fillers:
        post(shuffler.url, "/uploads", pack_records(fillers))
    status, body = post(shuffler.url, "/release")
    assert status == 200
    return body


def test_release_before_min_senders_is_refused(shuffler):
    _release(shuffler)
    post(shuffler.url, "/uploads", pack_records([("lonely", upload())]))
    before = shuffler_state(shuffler)
    status, text = post(shuffler.url, "/release")
    assert_refusal(status, text, 400, "'senders'", f"at least {N_USERS} (min_senders)", "1")
    assert shuffler_state(shuffler) == before
    _release(shuffler)


# ------------------------------------------------------------------------------------------ analyzer


@pytest.fixture(scope="module")
def absorbed(analyzer):
    batch = batch_of(DEPLOYMENT, N_USERS, rng=3)
    status, _ = post(analyzer.url, "/batches", batch, token=TOKEN)
    assert status == 200
    return batch


def test_replayed_and_foreign_batches_are_refused(analyzer, absorbed):
    before = analyzer_state(analyzer)
    status, text = post(analyzer.url, "/batches", absorbed, token=TOKEN)
    assert_refusal(status, text, 400, "'batch'", "not absorbed before", "replayed")
    status, text = post(analyzer.url, "/batches", batch_of(FOREIGN, N_USERS, rng=4), token=TOKEN)
    assert_refusal(status, text, 400, "'data'", "fingerprint", "another configuration")
    other = Deployment(RRBitSum(n_users=N_USERS, flip_probability=0.1, delta=1e-6), n_instances=3)
    status, text = post(analyzer.url, "/batches", batch_of(other, N_USERS, rng=5), token=TOKEN)
    assert_refusal(status, text, 400, "'data'", "fingerprint", "another configuration")
    status, text = post(analyzer.url, "/batches", absorbed.replace(b"RRBitSum", b"RRBitSuX"), token=TOKEN)
    assert_refusal(status, text, 400, "'data'", "of protocol 'RRBitSum'", "RRBitSuX")
    assert analyzer_state(analyzer) == before


@pytest.mark.parametrize("authorization", [None, "Bearer wrong-token-of-some-length", f"Basic {TOKEN}", f"Bearer {TOKEN}x",
                                           "Bearer \u00e9"])
def test_batches_without_the_operator_token_are_refused(analyzer, authorization):
    before = analyzer_state(analyzer)
    batch = batch_of(DEPLOYMENT, N_USERS, rng=6)
    headers = {"Content-Length": str(len(batch)), "Connection": "close"}
    if authorization is not None:
        headers["Authorization"] = authorization
    answer = exchange(analyzer.url, request_head("POST", "/batches", headers) + batch)
    assert_refusal(answer.status, answer.body, 401, "'Authorization'", "operator token")
    assert TOKEN not in answer.text
    assert analyzer_state(analyzer) == before


def test_truncated_batches_are_refused(analyzer, absorbed):
    """Cuts at every header field boundary and through the payload (every byte: tests/fuzz/test_hostile_messages.py)."""
    before = analyzer_state(analyzer)
    name = len(DEPLOYMENT.wire_name)
    boundaries = [0, 4, 5, 6, 7, 7 + name, 39 + name, 55 + name, 59 + name, 67 + name]
    cuts = sorted({*boundaries, *(b - 1 for b in boundaries[1:]), *range(67 + name, len(absorbed))})
    connection = http.client.HTTPConnection(*address(analyzer.url), timeout=30)
    headers = {"Content-Type": "application/octet-stream", "Authorization": f"Bearer {TOKEN}"}
    for cut in cuts:
        connection.request("POST", "/batches", body=absorbed[:cut], headers=headers)
        answer = connection.getresponse()
        text = answer.read()
        assert_refusal(answer.status, text, 400, "'data'", "bytes")
    connection.close()
    assert analyzer_state(analyzer) == before


def test_mutated_batches_are_refused_or_absorbed_whole(analyzer, absorbed):
    """Random byte edits outside the batch id: a 400 leaves the state as it was; never a 500."""
    rng = np.random.default_rng(11)
    id_start = DEPLOYMENT.spec.batch_header_bytes - 28
    connection = http.client.HTTPConnection(*address(analyzer.url), timeout=30)
    headers = {"Content-Type": "application/octet-stream", "Authorization": f"Bearer {TOKEN}"}
    for _ in range(25):
        data = bytearray(absorbed)
        for position in rng.integers(0, len(data), size=rng.integers(1, 4)):
            if not id_start <= position < id_start + 16:
                data[position] = int(rng.integers(0, 256))
        before = analyzer_state(analyzer)
        connection.request("POST", "/batches", body=bytes(data), headers=headers)
        answer = connection.getresponse()
        text = answer.read()
        assert answer.status in (200, 400), (answer.status, text)
        if answer.status == 400:
            assert TEMPLATE.match(text.decode()), text
            assert analyzer_state(analyzer) == before
    connection.close()


# ---------------------------------------------------------------------------------------- capacity


@pytest.fixture(scope="module")
def small_shuffler(protocol_file, token_file, analyzer):
    """A shuffler with small limits and the operator token, forwarding to the analyzer."""
    extra = ["--max-senders", "5", "--max-messages", "6", "--max-connections", "4", "--head-timeout", "1",
             "--operator-token-file", str(token_file), "--analyzer-url", analyzer.url]
    service = start_service("shuffler", protocol_file, extra=extra, timeout=90)
    yield service
    service.stop()


def test_held_senders_and_messages_are_bounded(small_shuffler, analyzer):
    url = small_shuffler.url
    answer = json.loads(post(url, "/uploads", pack_records([(f"cap-{i}", upload(i)) for i in range(4)]))[1])
    assert answer["accepted"] == 3 and answer["n_refused"] == 1  # 3 uploads of 2 messages fill max_messages=6
    assert_refusal(400, answer["refused"][0]["error"], 400, "'upload'", "max_messages=6", "6 held")
    held = shuffler_state(small_shuffler)
    for token in (None, "wrong-token-of-some-length"):
        status, text = post(url, "/release", token=token)
        assert_refusal(status, text, 401, "'Authorization'", "POST /release")
    assert shuffler_state(small_shuffler) == held
    participants = get_json(analyzer.url, "/status")["participants"]
    assert post(url, "/release", token=TOKEN)[0] == 200  # forwarded with the token
    assert get_json(analyzer.url, "/status")["participants"] == participants + 3
    answer = json.loads(post(url, "/uploads", pack_records([(f"more-{i}", upload(i)) for i in range(3)]))[1])
    assert answer["accepted"] == 2 and answer["n_refused"] == 1  # 3 + 2 identities fill max_senders=5
    assert_refusal(400, answer["refused"][0]["error"], 400, "'sender'", "at most 5 senders", "more-2")
    status = get_json(url, "/status")
    assert (status["senders"], status["messages"], status["identities"]) == (2, 4, 5)


def test_idle_connections_beyond_the_limit_get_503_then_are_closed(small_shuffler):
    idle = [socket.create_connection(address(small_shuffler.url), timeout=10) for _ in range(4)]
    try:
        answer = exchange(small_shuffler.url, request_head("GET", "/status", {"Connection": "close"}))
        assert answer.status == 503
        time.sleep(1.5)  # the head deadline (1 s) closes the idle connections
        answer = exchange(small_shuffler.url, request_head("GET", "/status", {"Connection": "close"}))
        assert answer.status == 200
    finally:
        for connection in idle:
            connection.close()


def test_clients_pin_the_fingerprint_of_the_protocol_file(shuffler):
    assert fetch_deployment(shuffler.url, fingerprint=DEPLOYMENT.fingerprint.hex()).fingerprint == DEPLOYMENT.fingerprint
    with pytest.raises(InvalidParameterError, match="'url' parameter of fetch_deployment must be a service of the fing"):
        fetch_deployment(shuffler.url, fingerprint=FOREIGN.fingerprint.hex())


@pytest.mark.slow
def test_a_flood_of_senders_with_the_longest_ids_stays_within_the_bound(tmp_path):
    """70 000 senders with 256-byte ids at a shuffler holding at most 60 000: refused beyond, memory bounded."""
    protocol_file = tmp_path / "protocol.json"
    deployment = Deployment(RRBitSum(n_users=10**6, flip_probability=0.1, delta=1e-6), n_instances=1)
    deployment.save(protocol_file)
    service = start_service("shuffler", protocol_file, extra=["--max-senders", "60000"], timeout=90)
    try:
        uploads = Client(deployment, rng=0).encode_many(np.ones((1000, 1), dtype=np.int8))
        accepted = refused = 0
        for first in range(0, 70_000, 10_000):
            records = [(f"{first + i:0256d}", uploads[i % 1000]) for i in range(10_000)]
            answer = json.loads(post(service.url, "/uploads", pack_records(records))[1])
            accepted, refused = accepted + answer["accepted"], refused + answer["n_refused"]
        assert (accepted, refused) == (60_000, 10_000)
        assert get_json(service.url, "/status")["identities"] == 60_000
        peak = service.peak_memory_bytes()
        assert peak is None or peak < 512 << 20
    finally:
        service.stop()
