"""scripts/choosing_table.py runs at a tiny size, and the committed table is what it produces.

Re-running the committed setting takes minutes (the blanket and RR calibrations at n = 10^5), so
the committed block is checked row by row for the protocols that calibrate in milliseconds; the
others (and the simulated clipped-sum row, whose random stream may change between numpy
versions) are checked to be present with the committed settings.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "choosing_table.py"
PAGE = ROOT / "docs" / "choosing.md"
FAST_ROWS = ("3NB (shuffled)", "Pure (shuffled)", "local RR", "central Laplace", "central Gaussian")
FAST_ROWS += ("correlated GKMPS21", "multi-message BBGN20")


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("choosing_table", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def committed_block(script) -> str:
    page = PAGE.read_text(encoding="utf-8")
    start, end = page.index(script.BEGIN_MARKER), page.index(script.END_MARKER)
    return page[start:end]


def committed_settings(script):
    match = re.search(r"Generated with `python scripts/choosing_table.py (.*?)`", committed_block(script))
    assert match, "the generated block states the command that produced it"
    return script.parse_arguments(match.group(1).split())


def test_tiny_run_writes_every_protocol_and_valid_svg(script, tmp_path):
    (tmp_path / "choosing.md").write_text(
        f"intro\n{script.BEGIN_MARKER}\nSTALE-CONTENT\n{script.END_MARKER}\noutro\n", encoding="utf-8"
    )
    arguments = ["--n-users", "600", "--epsilons", "2", "--plot-n", "600", "--plot-epsilons", "2", "4"]
    assert script.main([*arguments, "--trials", "5", "--docs", str(tmp_path)]) == 0
    page = (tmp_path / "choosing.md").read_text(encoding="utf-8")
    assert page.startswith("intro\n") and page.endswith("outro\n") and "STALE-CONTENT" not in page
    for spec in script.PROTOCOLS:
        assert f"| {spec.name} |" in page
    for stem in ("choosing_bitsums", "choosing_sums"):
        root = ElementTree.parse(tmp_path / "img" / f"{stem}.svg").getroot()
        lines = [group for group in root.iter("{http://www.w3.org/2000/svg}g") if group.get("id", "").startswith("line2d_")]
        assert root.tag.endswith("svg") and len(lines) >= 5  # matplotlib draws each series as a line2d group


def test_without_matplotlib_the_table_is_written_and_the_plots_are_skipped(script, tmp_path, monkeypatch, capsys):
    (tmp_path / "choosing.md").write_text(f"{script.BEGIN_MARKER}\n{script.END_MARKER}\n", encoding="utf-8")
    monkeypatch.setattr(script, "pyplot_or_none", lambda: None)
    arguments = ["--n-users", "600", "--epsilons", "2", "--plot-n", "600", "--plot-epsilons", "2"]
    assert script.main([*arguments, "--trials", "3", "--docs", str(tmp_path)]) == 0
    assert 'no plots: matplotlib is not installed: install it with pip install "privsum[plot]"' in capsys.readouterr().out
    assert "| 3NB (shuffled) |" in (tmp_path / "choosing.md").read_text(encoding="utf-8")
    assert not (tmp_path / "img" / "choosing_bitsums.svg").exists()


def test_replace_generated_block_needs_the_markers(script):
    with pytest.raises(ValueError, match="BEGIN"):
        script.replace_generated_block("no markers here", "block")


def test_committed_table_matches_the_script(script):
    block = committed_block(script)
    settings = committed_settings(script)
    for n_users in settings.n_users:
        for epsilon in settings.epsilons:
            assert f"### n = {n_users:,}, ε = {epsilon:g}" in block
            for spec in script.PROTOCOLS:
                if spec.name in FAST_ROWS:
                    row = script.protocol_row(spec, n_users, epsilon, settings.delta, trials=settings.trials, seed=settings.seed)
                    assert script.format_row(row) in block, f"{spec.name} at n={n_users}, epsilon={epsilon} is stale"
                else:
                    assert f"| {spec.name} |" in block


def test_committed_plots_exist():
    for stem in ("choosing_bitsums", "choosing_sums"):
        assert ElementTree.parse(ROOT / "docs" / "img" / f"{stem}.svg").getroot().tag.endswith("svg")
