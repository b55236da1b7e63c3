"""scripts/choosing_histograms.py runs at a tiny size, and the committed block has its rows and limits."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "choosing_histograms.py"
PAGE = ROOT / "docs" / "choosing.md"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("choosing_histograms", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


@pytest.mark.slow
def test_the_script_fills_the_block(script, tmp_path):
    page = tmp_path / "choosing.md"
    page.write_text(f"intro\n{script.BEGIN_MARKER}\nold\n{script.END_MARKER}\nafter\n", encoding="utf-8")
    assert script.main(["--n-users", "3000", "--categories", "4", "--docs", str(tmp_path)]) == 0
    text = page.read_text(encoding="utf-8")
    assert "old" not in text and text.startswith("intro") and text.rstrip().endswith("after")
    assert "`ShuffledHistogram` (3nb), 4 categories | 3,000" in text
    assert "`CentralHistogram`" in text and "`ShuffledCountSketch`" in text and "`ShuffledMean`" in text


def test_the_committed_block_is_the_committed_setting(script):
    text = PAGE.read_text(encoding="utf-8")
    block = text[text.index(script.BEGIN_MARKER) : text.index(script.END_MARKER)]
    assert "python scripts/choosing_histograms.py --n-users 10000 100000 --categories 20 1000 --epsilon 1" in block
    assert script.limits_table() in block
