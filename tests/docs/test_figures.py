"""Figures are drawn with matplotlib; without it the scripts say so. The KDE benchmark's figure redraws from its table."""

from __future__ import annotations

import importlib.util
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from privsum import _plotting

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def figure3():
    spec = importlib.util.spec_from_file_location("bench_kde_figure3", ROOT / "benchmarks" / "bench_kde_figure3.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def committed_table() -> str:
    page = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    start = page.index("| protocol | epsilon | rmse | max_error | added_rmse")
    return page[start : page.index("\n\n", start)]


def test_the_committed_kde_figure_redraws_from_the_committed_table(figure3, tmp_path):
    results, baseline = figure3.results_from_table(committed_table())
    assert set(results) == {"RR", "3NB", "Pure", "central", "local"} and baseline[0] == pytest.approx(0.01864)
    assert all(len(points) == 6 for points in results.values())
    assert figure3.write_figure(results, baseline, str(tmp_path / "figure.svg"), "title")
    root = ElementTree.parse(tmp_path / "figure.svg").getroot()
    lines = [g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("id", "").startswith("line2d_")]
    assert root.tag.endswith("svg") and len(lines) >= 2 * 5


def test_missing_matplotlib_is_reported(figure3, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(figure3, "pyplot_or_none", lambda: None)
    assert not figure3.write_figure({"RR": [(1.0, 0.1, 0.01)]}, (0.1, 0.2, 0.01), str(tmp_path / "figure.svg"), "title")
    figure3.report_figure(False, "figure.svg")
    assert 'no figure: matplotlib is not installed: install it with pip install "privsum[plot]"' in capsys.readouterr().out
    assert not (tmp_path / "figure.svg").exists()


def test_pyplot_or_none_without_matplotlib(monkeypatch):
    real_import = _plotting.importlib.import_module

    def refuse(name, *args):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *args)

    monkeypatch.setattr(_plotting.importlib, "import_module", refuse)
    assert _plotting.pyplot_or_none() is None
