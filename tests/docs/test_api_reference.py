"""Every public module of privsum is documented by a docs/api entry, and scripts/check_site.py works."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def check_site():
    spec = importlib.util.spec_from_file_location("check_site", ROOT / "scripts" / "check_site.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def test_public_modules_are_found(check_site):
    modules = check_site.public_modules()
    assert {"privsum", "privsum.accounting", "privsum.bitsum.rr", "privsum.kde"} <= set(modules)
    assert not any(part.startswith("_") for module in modules for part in module.split("."))


def test_every_api_entry_resolves(check_site):
    for stem, identifiers in check_site.api_entries().items():
        assert identifiers, f"docs/api/{stem}.md has no ::: entry"
        for identifier in identifiers:
            check_site.resolve(identifier)  # raises if the entry names nothing


def test_every_public_module_is_referenced(check_site):
    assert check_site.unreferenced_modules() == []


def test_every_api_page_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in sorted((ROOT / "docs" / "api").glob("*.md")):
        assert f"api/{page.name}" in nav, f"docs/api/{page.name} is not in the mkdocs.yml nav"


def test_site_check_reports_what_is_missing(check_site, tmp_path):
    problems = check_site.site_problems(tmp_path)
    assert any("page not built: tutorials/kde/index.html" in p for p in problems)
    assert any("has no anchor for privsum.kde" in p for p in problems)
    assert check_site.main([str(tmp_path)]) == 1


def test_site_check_accepts_a_complete_site(check_site, tmp_path):
    for module, entries in check_site.documenting_entries().items():
        stem, identifier = entries[0]
        page = tmp_path / "api" / stem / "index.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        with page.open("a", encoding="utf-8") as handle:
            handle.write(f'<h2 id="{identifier}">{module}</h2>\n')
    for required in check_site.REQUIRED_PAGES:
        path = tmp_path / required
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('<div class="highlight"><code><span class="kn">import</span></code></div>', encoding="utf-8")
    for asset in check_site.MATH_ASSETS:
        (tmp_path / asset).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / asset).write_text("/* asset */", encoding="utf-8")
    assert check_site.site_problems(tmp_path) == []


def test_site_check_catches_math_without_katex_and_private_bases(check_site, tmp_path):
    (tmp_path / "page").mkdir()
    (tmp_path / "page" / "index.html").write_text('<span class="arithmatex">\\(x\\)</span>', encoding="utf-8")
    (tmp_path / "remote.html").write_text(
        '<script src="https://cdn.jsdelivr.net/npm/katex/dist/katex.min.js"></script><span class="arithmatex"></span>',
        encoding="utf-8",
    )
    (tmp_path / "api" / "bitsum").mkdir(parents=True)
    (tmp_path / "api" / "bitsum" / "index.html").write_text(
        '<p>Bases: <code><span title="privsum.bitsum.rr._FlippedReports">_FlippedReports</span></code></p>', encoding="utf-8"
    )
    (tmp_path / "cited.html").write_text("<p>as in seed 001 Algorithm 1</p>", encoding="utf-8")
    problems = check_site.site_problems(tmp_path)
    assert "cited.html uses an internal paper name ('seed 001'): cite authors, title and venue" in problems
    assert "page/index.html has math but does not load KaTeX" in problems
    assert "remote.html loads math from the network" in problems
    assert "api/bitsum/index.html names a private base class" in problems
    assert any(problem.startswith("math asset not in the site") for problem in problems)


def test_mkdocs_hook_replaces_private_bases_by_public_ancestors():
    spec = importlib.util.spec_from_file_location("mkdocs_hooks", ROOT / "scripts" / "mkdocs_hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    html = '<p>Bases: <code><span title="privsum.bitsum.rr._FlippedReports">_FlippedReports</span></code></p>'
    cleaned = hooks.on_post_page(html)
    assert "_FlippedReports" not in cleaned and ">BitSumProtocol</span>" in cleaned
    assert hooks.on_post_page("<p>no bases here</p>") == "<p>no bases here</p>"
    mixin = ('<p>Bases: <code><span title="privsum.parties.kde_vector._OverVectorSum">_OverVectorSum</span></code>, '
             '<code><a title="privsum.kde.vector.VectorSumKDE\n\n  (summary)">VectorSumKDE</a></code></p>')
    cleaned = hooks.on_post_page(mixin)  # a mixin without a public ancestor is left out, with its separator
    assert cleaned.startswith("<p>Bases: <code><a title=") and "_OverVectorSum" not in cleaned


def test_mkdocs_config_has_grouped_nav_and_no_invented_repository():
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "repo_url" not in config
    for group in ("Learn", "Protocols", "Applications", "Guarantees", "Reference", "Project"):
        assert f"\n  - {group}:\n" in config
