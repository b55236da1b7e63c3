"""docs/benchmarks.md's wire block is the rendering of the committed benchmark record (scripts/wire_figures.py)."""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def figures():
    spec = importlib.util.spec_from_file_location("wire_figures", ROOT / "scripts" / "wire_figures.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def test_the_page_holds_the_records_rendering(figures):
    assert figures.main(["--check"]) == 0


def test_verdicts_follow_the_numbers(figures):
    record = json.loads(figures.RECORD.read_text())
    changed = copy.deepcopy(record)
    changed["bytes_per_user"][0]["ratio"] = 1.2
    changed["absorb"][0]["ratio"] = 0.4
    rendered = figures.render(changed)
    assert rendered != figures.render(record)
    assert "payload / content 1.200 | ≤ 1.1 and header ≤ 64 B: **not met**" in rendered
    assert "rate / limit 0.40 | ≥ 0.5: **not met**" in rendered
