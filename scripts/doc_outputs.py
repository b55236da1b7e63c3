"""Run the documentation's Python blocks and check (or rewrite) the printed output each page shows.

A page's ```python blocks run in order in one namespace (as in a notebook), inside a scratch
working directory. A block that prints is followed by its expected output, a fenced block
opened with ```` ```text title="Output" ````. ``--check`` (the default) compares; ``--write``
rewrites the output blocks from a fresh run. ``tests/docs/test_tutorials.py`` uses this module.

Usage (from the repository root)::

    PYTHONPATH=. python scripts/doc_outputs.py --write docs/getting-started.md
    PYTHONPATH=. python scripts/doc_outputs.py docs/tutorials/*.md
"""

from __future__ import annotations

import argparse
import contextlib
import io
import linecache
import os
import re
import sys
import tempfile
import types
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTPUT_FENCE = '```text title="Output"'
OLD_OUTPUT = re.compile(r'\n*^```text title="Output"[ \t]*\n.*?^```[ \t]*\n?', re.MULTILINE | re.DOTALL)
FENCE = re.compile(r'^```(python|text title="Output")[ \t]*\n(.*?)^```[ \t]*\n?', re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Block:
    """One fenced block of a page: its kind, its source and where it sits in the page text."""

    kind: str  # "python" or "output"
    source: str
    start: int
    end: int


def blocks(text: str) -> list[Block]:
    """The ```python and output blocks of a page, in order."""
    return [
        Block("python" if match.group(1) == "python" else "output", match.group(2), match.start(), match.end())
        for match in FENCE.finditer(text)
    ]


def python_blocks(text: str) -> list[str]:
    """The source of each ```python block, in page order."""
    return [block.source for block in blocks(text) if block.kind == "python"]


def expected_outputs(text: str) -> list[str | None]:
    """For each ```python block, the output block that follows it (before the next python block), or None."""
    outputs: list[str | None] = []
    for block in blocks(text):
        if block.kind == "python":
            outputs.append(None)
        elif outputs and outputs[-1] is None:
            outputs[-1] = block.source
        else:
            raise ValueError(f"an output block at character {block.start} follows no python block")
    return outputs


def run_page(page: Path, workdir: Path) -> list[str]:
    """Run every ```python block of ``page`` in one fresh module; return what each block printed."""
    text = page.read_text(encoding="utf-8")
    module = types.ModuleType(f"docs_page_{page.stem.replace('-', '_')}")
    sys.modules[module.__name__] = module  # dataclasses and pickling look the module up here
    printed = []
    previous = Path.cwd()
    os.chdir(workdir)
    try:
        for index, source in enumerate(python_blocks(text), 1):
            filename = f"{_display(page)} (block {index})"
            linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)  # readable tracebacks
            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer):
                exec(compile(source, filename, "exec"), module.__dict__)
            printed.append(buffer.getvalue())
    finally:
        os.chdir(previous)
        del sys.modules[module.__name__]
    return printed


def normalised(output: str) -> str:
    """Output compared line by line, without trailing spaces or blank lines at the end."""
    return "\n".join(line.rstrip() for line in output.rstrip().splitlines())


NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
LONG_DIGITS = 10  # numbers printed with at least this many significant digits are compared to RELATIVE_TOLERANCE
RELATIVE_TOLERANCE = 1e-6


def same_output(expected: str, actual: str) -> bool:
    """Equal line by line, except that numbers printed at full precision may differ in their last digits.

    A number with at least `LONG_DIGITS` significant digits (a float printed by ``repr``) matches
    one within `RELATIVE_TOLERANCE`; every shorter number, and all other text, must match exactly.
    """
    expected, actual = normalised(expected), normalised(actual)
    if expected == actual:
        return True
    if NUMBER.split(expected) != NUMBER.split(actual):
        return False
    pairs = zip(NUMBER.findall(expected), NUMBER.findall(actual), strict=False)
    return len(NUMBER.findall(expected)) == len(NUMBER.findall(actual)) and all(
        first == second or _close_long_numbers(first, second) for first, second in pairs
    )


def _close_long_numbers(first: str, second: str) -> bool:
    digits = min(len(re.sub(r"[eE].*|[^\d]", "", number).lstrip("0")) for number in (first, second))
    if digits < LONG_DIGITS:
        return False
    a, b = float(first), float(second)
    return abs(a - b) <= RELATIVE_TOLERANCE * max(abs(a), abs(b))


def mismatches(text: str, printed: list[str]) -> list[str]:
    """Differences between a page's output blocks and what its blocks printed (empty when they agree)."""
    problems = []
    for index, (expected, actual) in enumerate(zip(expected_outputs(text), printed, strict=True), 1):
        if expected is None and actual.strip():
            problems.append(f"block {index} prints but shows no output block:\n{actual}")
        elif expected is not None and not same_output(expected, actual):
            problems.append(f"block {index} printed\n{actual}\nbut the page shows\n{expected}")
    return problems


def without_outputs(text: str) -> str:
    """The page with its output blocks (and the blank lines before them) removed."""
    return OLD_OUTPUT.sub("\n", text)


def with_outputs(text: str, printed: list[str]) -> str:
    """The page with every printing block followed by an output block of what it printed (old ones replaced)."""
    text = without_outputs(text)
    python = [block for block in blocks(text) if block.kind == "python"]
    for block, output in reversed(list(zip(python, printed, strict=True))):
        if output.strip():
            text = f"{text[: block.end]}\n{OUTPUT_FENCE}\n{normalised(output)}\n```\n{text[block.end :]}"
    return text


def _display(page: Path) -> str:
    try:
        return str(page.resolve().relative_to(ROOT))
    except ValueError:
        return str(page)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Check or rewrite the printed output shown by documentation pages.")
    parser.add_argument("pages", nargs="+", type=Path)
    parser.add_argument("--write", action="store_true", help="rewrite the output blocks instead of checking them")
    arguments = parser.parse_args(argv)
    failed = False
    for page in arguments.pages:
        text = page.read_text(encoding="utf-8")
        with tempfile.TemporaryDirectory() as workdir:
            printed = run_page(page, Path(workdir))
        if arguments.write:
            page.write_text(with_outputs(text, printed), encoding="utf-8")
            print(f"doc_outputs: wrote {page}")
            continue
        for problem in mismatches(text, printed):
            failed = True
            print(f"doc_outputs: {page}: {problem}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
