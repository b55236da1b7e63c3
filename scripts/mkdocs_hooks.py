"""MkDocs hooks for the privsum site (listed under ``hooks:`` in mkdocs.yml).

``on_post_page``: API pages name a class's bases; a private base (``_FlippedReports``,
``_SignedCounts``, ...) is an implementation detail, so it is replaced by its nearest public
ancestor (e.g. ``BitSumProtocol``), and dropped when that ancestor is already listed.
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the hook resolves classes of the checkout it documents

PRIVATE_BASE = re.compile(r'<code><span title="(privsum(?:\.\w+)*)\.(_\w+)">_\w+</span></code>(, )?')
BASES_LINE = re.compile(r"(Bases: )(.*?)(</p>)", re.DOTALL)  # a base's title may span lines


def public_ancestor(module: str, name: str) -> str | None:
    """Dotted path of the first class in the MRO of ``module.name`` that is public (or None)."""
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None
    for ancestor in cls.__mro__[1:]:
        if not ancestor.__name__.startswith("_") and ancestor.__module__.startswith("privsum"):
            public_module = ".".join(part for part in ancestor.__module__.split(".") if not part.startswith("_"))
            return f"{public_module}.{ancestor.__name__}"
    return None


def _replace_private(match: re.Match[str]) -> str:
    ancestor = public_ancestor(match.group(1), match.group(2))
    if ancestor is None:  # a mixin with no public ancestor: left out, with its separator
        return ""
    return f'<code><span title="{ancestor}">{ancestor.rsplit(".", 1)[1]}</span></code>{match.group(3) or ""}'


def _clean_bases(match: re.Match[str]) -> str:
    bases = PRIVATE_BASE.sub(_replace_private, match.group(2))
    return match.group(1) + bases.removesuffix(", ") + match.group(3)


def on_post_page(html: str, **_: object) -> str:
    """Replace private bases in the API pages' "Bases:" lines."""
    if "Bases: " not in html:
        return html
    return BASES_LINE.sub(_clean_bases, html)
