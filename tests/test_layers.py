"""Layering: no module of privsum imports a package of its own layer or above, nor another package's private parts.

The layers, top down (the architecture section of docs/contributing.md states the same list):

* ``serve`` (the HTTP services) over ``parties`` (client, shuffler, analyzer over the wire format)
  and the ``demo`` module, over ``apps`` (the classifier and decoder);
* ``kde`` and ``means`` (estimators composed from sums), over the composite protocols
  ``clipping`` (built from ``sums`` instances), ``histograms`` (one bit sum per category) and the
  ``distributed`` runner (which knows the sketches' merge);
* the protocols ``bitsum``, ``sums``, ``sketches``, and the ``testing`` helpers (statistical tests
  and audits over any protocol);
* the model ``shuffle`` and the byte format ``wire`` (which knows no protocol);
* ``accounting``, ``lsq`` and the bundled ``datasets``;
* the private helpers (``privsum._validation``, ``privsum._random``, ..., ``privsum.exceptions``),
  which import no package (only one another).

``privsum/__init__.py`` (the facade) and ``privsum/__main__.py`` (the command dispatcher, by module
name) sit outside the layers. Deprecated paths re-export lazily by name (`privsum._deprecation`),
never by an import statement, so an old path never makes a lower package import a higher one.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "privsum"

#: Package (or top-level module) -> layer rank; a module may import only lower ranks (or its own package).
RANKS = {
    "serve": 8,
    "demo": 7,
    "parties": 7,
    "apps": 6,
    "kde": 5,
    "means": 5,
    "clipping": 4,
    "distributed": 4,
    "histograms": 4,
    "bitsum": 3,
    "sketches": 3,
    "sums": 3,
    "testing": 3,
    "shuffle": 2,
    "wire": 2,
    "accounting": 1,
    "datasets": 1,
    "lsq": 1,
}
#: The facade and the command dispatcher import across every layer.
OUTSIDE_THE_LAYERS = {"__init__", "__main__"}
#: Rank of the private top-level helpers (``_validation``, ``_random``, ...) and ``exceptions``.
HELPERS = 0

#: Private modules of another package imported today, to be made public names of that package (then removed here).
KNOWN_PRIVATE_IMPORTS: set[tuple[str, str]] = set()


def _unit(path: Path) -> str:
    """The package a module belongs to, or the top-level module's own name."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return parts[0]


def _rank(unit: str) -> int | None:
    if unit in OUTSIDE_THE_LAYERS:
        return None
    if unit in RANKS:
        return RANKS[unit]
    return HELPERS if unit.startswith("_") or unit == "exceptions" else None


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """``(module, imported names)`` of every ``privsum.*`` import of a module, at any depth (function-level too)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.startswith("privsum."):
            found.append((node.module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.ImportFrom) and node.module == "privsum":
            found.extend((f"privsum.{alias.name}", []) for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend((alias.name, []) for alias in node.names if alias.name.startswith("privsum."))
    return found


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_package_and_top_level_module_has_a_layer():
    units = {_unit(path) for path in _modules()}
    assert sorted(unit for unit in units if unit not in OUTSIDE_THE_LAYERS and _rank(unit) is None) == []


def test_no_module_imports_its_own_layer_or_above():
    upward = []
    for path in _modules():
        own = _unit(path)
        rank = _rank(own)
        if rank is None:
            continue
        for module, _ in _imports(path):
            other = module.split(".")[1]
            other_rank = _rank(other)
            helpers_among_themselves = rank == other_rank == HELPERS
            if other != own and other_rank is not None and other_rank >= rank and not helpers_among_themselves:
                upward.append(f"{path.relative_to(ROOT)} imports {module}")
    assert upward == []


def test_no_module_imports_another_package_s_private_parts():
    """A helper shared across packages is a public name of its package, never an underscore import."""
    private = []
    for path in _modules():
        own = _unit(path)
        for module, names in _imports(path):
            parts = module.split(".")
            if parts[1] == own or parts[1].startswith("_") or (own, module) in KNOWN_PRIVATE_IMPORTS:
                continue
            hidden = [name for name in names if name.startswith("_")]
            if hidden or any(part.startswith("_") for part in parts[2:]):
                private.append(f"{path.relative_to(ROOT)} imports {module} {hidden}")
    assert private == []


def test_the_kde_knows_bit_sums_only_through_their_interface():
    """``privsum.kde`` imports no concrete bit-sum class: it calibrates any bit sum through `BitSumProtocol`."""
    concrete = []
    for path in sorted((PACKAGE / "kde").rglob("*.py")):
        for module, names in _imports(path):
            if module == "privsum.bitsum" or module.startswith("privsum.bitsum."):
                concrete += [f"{path.name}: {module}.{name}" for name in names if name.endswith("BitSum")]
                if module not in {"privsum.bitsum", "privsum.bitsum.base"}:
                    concrete.append(f"{path.name}: {module}")
    assert concrete == []


def test_the_layer_check_sees_an_upward_import(tmp_path):
    """The checks above read imports at any depth: a function-level upward import would be caught."""
    module = tmp_path / "probe.py"
    module.write_text(
        "def f():\n    from privsum.apps import ShuffledKDEClassifier\n    import privsum.kde.protocol\n", encoding="utf-8"
    )
    assert _imports(module) == [("privsum.apps", ["ShuffledKDEClassifier"]), ("privsum.kde.protocol", [])]
