"""Package metadata: the licence file ships, PEP 639 licence fields, classifiers and keywords; no invented URLs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[2]


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_apache_licence_file_and_pep_639_fields():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.lstrip().startswith("Apache License") and "Version 2.0, January 2004" in text
    metadata = project()
    assert metadata["license"] == "Apache-2.0"
    assert "LICENSE" in metadata["license-files"]
    assert not any(classifier.startswith("License ::") for classifier in metadata["classifiers"])  # PEP 639: the expression only


def test_classifiers_keywords_and_the_plot_extra():
    metadata = project()
    assert "Typing :: Typed" in metadata["classifiers"] and len(metadata["keywords"]) >= 3
    assert any(requirement.startswith("matplotlib") for requirement in metadata["optional-dependencies"]["plot"])
    assert metadata["readme"] == "README.md"


def test_one_install_command_installs_what_the_tutorials_import():
    """README and docs give the same install line, and its extra holds scikit-learn and matplotlib (issue 30)."""
    extras = project()["optional-dependencies"]
    for extra in ("test", "examples"):
        assert {"scikit-learn", "matplotlib"} <= {r.split(">")[0].split("=")[0] for r in extras[extra]}
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    lines = {
        match.strip()
        for page in pages
        for match in re.findall(r"python3? -m pip install [^#&\n`]*", page.read_text(encoding="utf-8"))
        if "[test" in match or "[plot" in match or "[examples" in match
    }
    assert lines == {'python3 -m pip install -e ".[test]"'}


def test_no_project_urls_until_there_is_a_real_repository():
    assert "urls" not in project()
