"""User-facing text cites papers by authors, title and venue, never by the project's internal names.

"seed 001" (and 000, 002-004) and "SPEC §..." are names from the project's working notes; a
reader knows the papers as, e.g., Wagner, "Learning from End User Data with Shuffled Differential
Privacy over Kernel Densities", ICLR 2025.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INTERNAL_NAME = re.compile(r"seed 00[0-4]|SPEC §|SPEC section", re.IGNORECASE)
USER_FACING = ("docs", "README.md", "examples", "benchmarks", "scripts", "privsum")  # privsum: docstrings, errors, demo
TEXT_SUFFIXES = {".md", ".py", ".txt", ".yml", ".toml", ".html", ".csv"}


def user_facing_files(roots=USER_FACING) -> list[Path]:
    files = []
    for name in roots:
        path = ROOT / name
        candidates = [path] if path.is_file() else sorted(path.rglob("*"))
        files += [file for file in candidates if file.is_file() and file.suffix in TEXT_SUFFIXES]
    return files


def internal_names(files: list[Path]) -> list[str]:
    hits = []
    for file in files:
        for number, line in enumerate(file.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if INTERNAL_NAME.search(line):
                hits.append(f"{file.relative_to(ROOT)}:{number}: {line.strip()}")
    return hits


def test_the_pattern_catches_internal_names():
    for text in ("as in seed 001", "seed 004's accounting", "SPEC §2.3", "see SPEC section 5"):
        assert INTERNAL_NAME.search(text)
    assert not INTERNAL_NAME.search("Wagner, Learning from End User Data ..., ICLR 2025; the seeded generator")


@pytest.mark.parametrize("root", USER_FACING)
def test_no_internal_paper_names_in_user_facing_text(root):
    files = user_facing_files((root,))
    assert files
    hits = internal_names(files)
    assert not hits, "cite papers by authors, title and venue:\n" + "\n".join(hits)
