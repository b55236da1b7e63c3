"""The HTTP deployment as separate processes on free ports of 127.0.0.1 (bounded in time)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from privsum.bitsum import RRBitSum
from privsum.parties import Client, Deployment
from privsum.serve import pack_records
from privsum.serve.simulator import get_json, post, simulate_users
from privsum.testing.stats import two_sided_z

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from privsum.serve.local import local_deployment

from .rawhttp import exchange, request_head

ROOT = Path(__file__).resolve().parents[2]
N_USERS, ONES = 3000, 900


@pytest.fixture(scope="module")
def services(tmp_path_factory):
    protocol_file = tmp_path_factory.mktemp("serve") / "protocol.json"
    deployment = Deployment(RRBitSum(n_users=N_USERS, flip_probability=0.1, delta=1e-6), n_instances=1)
    deployment.save(protocol_file)
    with local_deployment(protocol_file, timeout=90) as (shuffler, analyzer):
        yield deployment, shuffler, analyzer


def test_services_refuse_bad_requests(services):
    deployment, shuffler, analyzer = services
    assert get_json(shuffler.url, "/status")["fingerprint"] == deployment.fingerprint.hex()
    status, body = post(shuffler.url, "/release")
    assert status == 400 and b"min_senders" in body
    status, body = post(analyzer.url, "/batches", b"PSUM\x01\x02")
    assert status == 400 and b"truncated" in body
    status, _ = post(shuffler.url, "/uploads", b"\x00")
    assert status == 400
    upload = Client(deployment, rng=0).encode([1])
    foreign = Client(Deployment(RRBitSum(n_users=5, flip_probability=0.1, delta=1e-6), n_instances=1), rng=0).encode([1])
    status, body = post(shuffler.url, "/uploads", pack_records([("probe", upload), ("probe", upload), ("other", foreign)]))
    answer = json.loads(body)
    assert status == 200 and answer["accepted"] == 1 and answer["n_refused"] == 2
    head = request_head("POST", "/uploads", {"Content-Length": str(65 << 20)})
    assert exchange(shuffler.url, head + b"\x00" * 4096).status == 413  # refused before the body is read


def test_simulated_users_reach_the_analyzer_through_both_services(services):
    deployment, shuffler, analyzer = services
    bits = np.zeros((N_USERS - 1, 1), dtype=np.int8)  # one sender ("probe") is already held
    bits[: ONES - 1] = 1
    report = simulate_users(deployment, bits, shuffler.url, per_request=1000, rng=1)
    assert report.refused == 0 and report.users == N_USERS - 1
    status, _ = post(shuffler.url, "/release")
    assert status == 200
    result = get_json(analyzer.url, "/estimate")
    assert result["participants"] == N_USERS and result["batches"] == 1
    protocol = deployment.protocol
    bound = two_sided_z() * protocol.rmse()  # alpha = 1e-6
    assert abs(result["estimate"][0] - ONES) <= bound
    expected = protocol.event_for_participants(N_USERS).guarantee
    assert (result["guarantee"]["epsilon"], result["guarantee"]["delta"]) == (expected.epsilon, expected.delta)
    for service in (shuffler, analyzer):
        peak = service.peak_memory_bytes()
        assert peak is None or peak < 512 << 20


@pytest.mark.slow
def test_example_runs_three_processes():
    finished = subprocess.run([sys.executable, str(ROOT / "examples" / "deploy_localhost.py"), "--users", "1000", "--ones",
                               "300"], capture_output=True, text=True, timeout=240, check=True)
    assert "estimate" in finished.stdout and "guarantee (" in finished.stdout
