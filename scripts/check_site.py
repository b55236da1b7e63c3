"""Check a built documentation site: an API page for every public module, and the tutorials.

Usage (from the repository root, after ``mkdocs build --strict --site-dir SITE``)::

    python scripts/check_site.py SITE

Checks, without screenshots:

* every public module of privsum (packages and modules whose dotted name has no part starting
  with ``_``, found by walking the installed package) is documented: some ``::: identifier`` entry
  of ``docs/api/*.md`` names the module, something inside it, or an object defined in it (a
  re-exported class counts for the module that defines it), **and** the built page of that
  ``docs/api`` file carries the anchor ``id="identifier"`` that mkdocstrings renders for it;
* every page of `REQUIRED_PAGES` (the tutorials and the guides) was built, and every tutorial
  page shows highlighted Python code;
* math is typeset offline: the KaTeX files of `MATH_ASSETS` were copied into the site, and every
  page with math (``class="arithmatex"``) loads them from the site, not from the network;
* no API page names a private base class (``Bases: _FlippedReports``): `scripts/mkdocs_hooks.py`
  replaces them by their public ancestors;
* no page uses the project's internal names for papers (a "seed" number, a "SPEC" section):
  pages cite authors, title and venue.

Exits with status 1 and a list of problems if anything is missing.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import pkgutil
import re
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
TUTORIALS = ("bitsums", "sums", "clipped", "sketches", "kde", "classifier", "accountant")
REQUIRED_PAGES = (
    "index.html",
    "privacy-model/index.html",
    "choosing/index.html",
    "extending/index.html",
    "limitations/index.html",
    "verification/index.html",
    "contributing/index.html",
    "getting-started/index.html",
    "conventions/index.html",
    *(f"tutorials/{name}/index.html" for name in TUTORIALS),
)
MATH_ASSETS = (
    "assets/katex/katex.min.js",
    "assets/katex/katex.min.css",
    "assets/katex/contrib/auto-render.min.js",
    "assets/katex/fonts/KaTeX_Main-Regular.woff2",
    "javascripts/katex-init.js",
)
ENTRY = re.compile(r"^:::\s+([\w.]+)", re.MULTILINE)
PRIVATE_BASE = re.compile(r'Bases: .*?title="privsum(?:\.\w+)*\._\w+"')
INTERNAL_NAME = re.compile("seed[ ]00[0-4]|SPEC[ ]\u00a7|SPEC[ ]section", re.IGNORECASE)  # spelled so as not to match itself
REMOTE_SCRIPT = re.compile(r'<(?:script|link)[^>]+(?:src|href)="(?:https?:)?//[^"]*(?:katex|mathjax)', re.IGNORECASE)


def public_modules(package: str = "privsum") -> list[str]:
    """Dotted names of the package and all its public submodules (no part starting with ``_``)."""
    root = importlib.import_module(package)
    names = [package]
    for info in pkgutil.walk_packages(root.__path__, f"{package}."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


def resolve(identifier: str) -> object:
    """The object a mkdocstrings identifier names (longest importable module prefix, then attributes)."""
    parts = identifier.split(".")
    for split in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:]:
            target = getattr(target, attribute)
        return target
    raise ImportError(f"cannot import anything named by {identifier!r}")


def api_entries(docs: Path = DOCS) -> dict[str, list[str]]:
    """``{api page stem: [identifiers of its ::: entries]}``."""
    return {page.stem: ENTRY.findall(page.read_text(encoding="utf-8")) for page in sorted((docs / "api").glob("*.md"))}


def modules_of(identifier: str, modules: Iterable[str]) -> set[str]:
    """The public modules an entry documents: named, containing it, or defining the object it names."""
    covered = {module for module in modules if identifier == module or identifier.startswith(module + ".")}
    target = resolve(identifier)
    if inspect.ismodule(target):
        covered.add(target.__name__)
    defined_in = getattr(target, "__module__", None)
    if isinstance(defined_in, str):
        covered.add(defined_in)
    return covered & set(modules)


def documenting_entries(docs: Path = DOCS) -> dict[str, list[tuple[str, str]]]:
    """``{public module: [(api page stem, identifier), ...]}`` for every public module."""
    modules = public_modules()
    found: dict[str, list[tuple[str, str]]] = {module: [] for module in modules}
    for stem, identifiers in api_entries(docs).items():
        for identifier in identifiers:
            for module in modules_of(identifier, modules):
                found[module].append((stem, identifier))
    return found


def unreferenced_modules(docs: Path = DOCS) -> list[str]:
    """Public modules that no ``docs/api/*.md`` entry documents."""
    return [module for module, entries in documenting_entries(docs).items() if not entries]


def site_problems(site: Path, docs: Path = DOCS) -> list[str]:
    """Everything missing from the built ``site``; empty when the site is complete."""
    problems = [f"no API entry documents the public module {module}" for module in unreferenced_modules(docs)]
    for module, entries in documenting_entries(docs).items():
        if entries and not any(_anchor_built(site, stem, identifier) for stem, identifier in entries):
            pages = ", ".join(sorted({f"api/{stem}" for stem, _ in entries}))
            problems.append(f"the built API page ({pages}) has no anchor for {module}")
    for page in REQUIRED_PAGES:
        if not (site / page).is_file():
            problems.append(f"page not built: {page}")
    for name in TUTORIALS:
        page = site / "tutorials" / name / "index.html"
        if page.is_file() and not _shows_python(page.read_text(encoding="utf-8")):
            problems.append(f"tutorial {name} shows no highlighted Python code")
    problems += [f"math asset not in the site: {asset}" for asset in MATH_ASSETS if not (site / asset).is_file()]
    for page in sorted(site.rglob("*.html")):
        html = page.read_text(encoding="utf-8")
        name = page.relative_to(site).as_posix()
        if 'class="arithmatex"' in html and "katex.min.js" not in html:
            problems.append(f"{name} has math but does not load KaTeX")
        if REMOTE_SCRIPT.search(html):
            problems.append(f"{name} loads math from the network")
        if name.startswith("api/") and PRIVATE_BASE.search(html):
            problems.append(f"{name} names a private base class")
        internal = INTERNAL_NAME.search(html)
        if internal:
            problems.append(f"{name} uses an internal paper name ({internal.group(0)!r}): cite authors, title and venue")
    return problems


def _shows_python(html: str) -> bool:
    """Whether the page has a highlighted code block with a Python ``import`` (Pygments' ``kn`` token)."""
    return 'class="highlight"' in html and '<span class="kn">import</span>' in html


def _anchor_built(site: Path, stem: str, identifier: str) -> bool:
    page = site / "api" / stem / "index.html"
    return page.is_file() and f'id="{identifier}"' in page.read_text(encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Check a built privsum documentation site.")
    parser.add_argument("site", type=Path, help="the --site-dir of mkdocs build")
    arguments = parser.parse_args(argv)
    problems = site_problems(arguments.site)
    for problem in problems:
        print(f"check_site: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"check_site: {len(public_modules())} public modules documented, {len(REQUIRED_PAGES)} required pages built")
    return 0


if __name__ == "__main__":
    sys.exit(main())
