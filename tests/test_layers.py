"""Layering: no module of privsum imports a package of its own layer or above.

Clipping sits on top of sums; histograms on top of the bit sums (one per category); means on top of
the sums and the clipped sums.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Package -> layer rank; a module may import only packages of a lower rank (or its own package).
RANKS = {
    "serve": 8,
    "parties": 7,
    "apps": 6,
    "kde": 5,
    "means": 5,
    "clipping": 4,
    "histograms": 4,
    "bitsum": 3,
    "sums": 3,
    "sketches": 3,
    "shuffle": 2,
    "wire": 2,
    "accounting": 1,
    "lsq": 1,
}


def _upward_imports() -> list[str]:
    found = []
    for path in sorted((ROOT / "privsum").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        own = parts[1] if len(parts) > 2 else None
        if own not in RANKS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("privsum."):
                other = node.module.split(".")[1]
                if other in RANKS and other != own and RANKS[other] >= RANKS[own]:
                    found.append(f"{'/'.join(parts)} imports {node.module}")
    return found


def test_no_module_imports_its_own_layer_or_above():
    assert _upward_imports() == []
