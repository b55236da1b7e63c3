"""The services' limits, token files, JSON numbers and command-line refusals (in process)."""

from __future__ import annotations

import math

import pytest

from privsum.exceptions import InvalidParameterError
from privsum.serve.limits import ServiceLimits, read_token


@pytest.mark.parametrize(("name", "value"), [("max_body_bytes", 0), ("max_body_bytes", 2**41), ("body_timeout", 0.0),
                                             ("body_timeout", math.nan), ("max_records", -1), ("max_senders", 1.5),
                                             ("max_messages", True), ("max_connections", "9"), ("keep_alive", -1.0),
                                             ("head_timeout", math.inf)])
def test_limits_are_validated(name, value):
    with pytest.raises(InvalidParameterError, match=f"The '{name}' parameter of ServiceLimits must be"):
        ServiceLimits(**{name: value})


def test_token_files(tmp_path):
    path = tmp_path / "token"
    path.write_text("a" * 16 + "\nsecond line\n")
    assert read_token(path) == "a" * 16
    for content in (b"", b"short\n", b"with a space in it!!\n", "\u00e9".encode() * 20, b"\xff" * 20):
        path.write_bytes(content)
        with pytest.raises(InvalidParameterError, match="'operator_token_file' parameter of read_token"):
            read_token(path)
    with pytest.raises(InvalidParameterError, match="FileNotFoundError"):
        read_token(tmp_path / "missing")


def test_non_finite_numbers_are_named_in_json():
    pytest.importorskip("starlette")
    from privsum.serve.apps import _json_array, _json_number

    assert _json_number(math.inf) == "inf" and _json_number(1.5) == 1.5
    assert _json_array([[1.0, math.nan], [-math.inf, 2.0]]) == [[1.0, "nan"], ["-inf", 2.0]]
    assert _json_array([1.0, 2.0]) == [1.0, 2.0]


@pytest.mark.parametrize("options", [["--max-body-bytes", "0"], ["--body-timeout", "-1"], ["--max-senders", "0"],
                                     ["--operator-token-file", "/nonexistent/token"]])
def test_services_refuse_bad_options_without_a_traceback(options, tmp_path, capsys):
    from privsum.bitsum import RRBitSum
    from privsum.parties import Deployment
    from privsum.serve.cli import main

    protocol_file = tmp_path / "protocol.json"
    Deployment(RRBitSum(n_users=3, flip_probability=0.1, delta=1e-6), n_instances=1).save(protocol_file)
    assert main(["shuffler", "--protocol-file", str(protocol_file), *options]) == 2
    assert "must be" in capsys.readouterr().err
    assert main(["analyzer", "--protocol-file", str(tmp_path / "missing.json")]) == 2
    assert "'path' parameter of Deployment.load" in capsys.readouterr().err


def test_the_deployment_page_states_the_defaults():
    """The limits table of docs/deployment.md against `ServiceLimits` (the page is written by hand)."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "deployment.md").read_text()
    rows = re.findall(r"^\| `--([a-z-]+)`(?: \(shuffler\))? \| ([^|]+) \|", page, re.M)
    defaults, stated = ServiceLimits(), {}
    for option, text in rows:
        name, text = option.replace("-", "_"), text.strip()
        if hasattr(defaults, name):
            number = re.fullmatch(r"(\d+)(?: (MiB|s))?|2\^(\d+)", text)
            assert number, (option, text)
            value = 2 ** int(number[3]) if number[3] else int(number[1]) << (20 if number[2] == "MiB" else 0)
            stated[name] = value
    assert stated == {name: getattr(defaults, name) for name in stated}
    assert set(stated) == set(ServiceLimits.__dataclass_fields__)
