"""Every ```python block of every tutorial page (and of the other guides with code) runs, in order,
and prints what the page shows.

The blocks of one page share one namespace, as in a notebook; each page runs in a fresh module
(registered in ``sys.modules`` while it runs, so dataclasses and pickling work) inside a scratch
working directory. A page's own ``assert`` statements are its checks; a block that prints is
followed by a ```` ```text title="Output" ```` block, and the printed text must match it
(``scripts/doc_outputs.py --write PAGE`` regenerates them).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
TUTORIALS = ("bitsums", "sums", "clipped", "histograms", "sketches", "kde", "classifier", "accountant")
EXECUTED_PAGES = [DOCS / "tutorials" / f"{name}.md" for name in TUTORIALS]
EXECUTED_PAGES += [DOCS / "extending.md", DOCS / "getting-started.md", DOCS / "data.md", DOCS / "conventions.md"]
EXECUTED_PAGES += [DOCS / "threat-model.md"]
EXECUTED_PAGES += [ROOT / "README.md"]  # its quickstart
PAGES_SHOWING_OUTPUT = [page for page in EXECUTED_PAGES if page.stem != "data"]


def _load_doc_outputs():
    spec = importlib.util.spec_from_file_location("doc_outputs", ROOT / "scripts" / "doc_outputs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


doc_outputs = _load_doc_outputs()


def test_python_blocks_are_extracted_in_order():
    page = "intro\n```python\na = 1\n```\ntext\n```bash\nls\n```\n```python\nb = a + 1\n```\n"
    assert doc_outputs.python_blocks(page) == ["a = 1\n", "b = a + 1\n"]


def test_output_blocks_belong_to_the_python_block_before_them():
    page = '```python\nprint(1)\n```\n\n```text title="Output"\n1\n```\n```python\nx = 2\n```\n'
    assert doc_outputs.expected_outputs(page) == ["1\n", None]
    assert doc_outputs.mismatches(page, ["1\n", ""]) == []
    assert doc_outputs.mismatches(page, ["2\n", ""])  # a wrong output is reported
    assert doc_outputs.mismatches(page, ["1\n", "printed\n"])  # so is a missing output block
    rewritten = doc_outputs.with_outputs(page, ["3\n", "4\n"])
    assert doc_outputs.expected_outputs(rewritten) == ["3\n", "4\n"]
    assert doc_outputs.python_blocks(rewritten) == doc_outputs.python_blocks(page)


def test_full_precision_floats_may_differ_in_their_last_digits_only():
    assert doc_outputs.same_output("x 1.9713823724005672 y\n", "x 1.9713823724022372 y")
    assert doc_outputs.same_output("[1.0000009049800237e-07]", "[1.0000009123804549e-07]")
    assert not doc_outputs.same_output("x 1.9713823724005672", "x 1.9813823724005672")  # beyond 1e-6
    assert not doc_outputs.same_output("(2.55466, 1e-05)", "(2.55467, 1e-05)")  # short numbers: exact
    assert not doc_outputs.same_output("rmse 5.80", "rmse 5.8")
    assert not doc_outputs.same_output("a 1.0000000001", "b 1.0000000001")


@pytest.mark.parametrize("name", TUTORIALS)
def test_every_family_has_a_tutorial(name):
    assert (DOCS / "tutorials" / f"{name}.md").is_file()


@pytest.mark.parametrize("page", PAGES_SHOWING_OUTPUT, ids=lambda p: p.stem)
def test_page_shows_some_output(page):
    assert any(output is not None for output in doc_outputs.expected_outputs(page.read_text(encoding="utf-8")))


@pytest.mark.parametrize("page", EXECUTED_PAGES, ids=lambda p: p.stem)
def test_page_code_runs_and_prints_what_the_page_shows(page, tmp_path):
    text = page.read_text(encoding="utf-8")
    assert doc_outputs.python_blocks(text), f"{page.name} has no python block"
    printed = doc_outputs.run_page(page, tmp_path)
    problems = doc_outputs.mismatches(text, printed)
    assert not problems, f"{page.name}: " + "\n".join(problems)
