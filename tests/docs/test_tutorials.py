"""Every ```python block of every tutorial page (and of the other guides with code) runs, in order.

The blocks of one page share one namespace, as in a notebook; each page runs in a fresh module
(registered in ``sys.modules`` while it runs, so dataclasses and pickling work) inside a scratch
working directory. A page's own ``assert`` statements are its checks.
"""

from __future__ import annotations

import linecache
import re
import sys
import types
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
TUTORIALS = ("bitsums", "sums", "clipped", "sketches", "kde", "classifier", "accountant")
EXECUTED_PAGES = [DOCS / "tutorials" / f"{name}.md" for name in TUTORIALS]
EXECUTED_PAGES += [DOCS / "extending.md", DOCS / "getting-started.md", DOCS / "data.md"]
PYTHON_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def python_blocks(text: str) -> list[str]:
    """The source of each fenced ```python block, in page order."""
    return [match.group(1) for match in PYTHON_BLOCK.finditer(text)]


def test_python_blocks_are_extracted_in_order():
    page = "intro\n```python\na = 1\n```\ntext\n```bash\nls\n```\n```python\nb = a + 1\n```\n"
    assert python_blocks(page) == ["a = 1\n", "b = a + 1\n"]


@pytest.mark.parametrize("name", TUTORIALS)
def test_every_family_has_a_tutorial(name):
    assert (DOCS / "tutorials" / f"{name}.md").is_file()


@pytest.mark.parametrize("page", EXECUTED_PAGES, ids=lambda p: p.stem)
def test_page_code_runs(page, tmp_path, monkeypatch):
    blocks = python_blocks(page.read_text(encoding="utf-8"))
    assert blocks, f"{page.name} has no python block"
    monkeypatch.chdir(tmp_path)
    module = types.ModuleType(f"docs_page_{page.stem}")
    sys.modules[module.__name__] = module
    try:
        for index, source in enumerate(blocks, 1):
            filename = f"{page.relative_to(DOCS.parent)} (block {index})"
            linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)  # readable tracebacks
            exec(compile(source, filename, "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
