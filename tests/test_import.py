"""``import privsum`` stays light: heavy dependencies load only when a name that needs them is used."""

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import privsum

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("dp_accounting", "scipy.stats", "scipy.signal", "sklearn", "opendp", "dask")


def _modules_after(statement: str) -> set[str]:
    """The heavy modules in ``sys.modules`` after running ``statement`` in a fresh interpreter."""
    code = f"import json, sys\n{statement}\nprint(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return set(json.loads(result.stdout.strip().splitlines()[-1]))


def test_import_privsum_loads_no_heavy_dependency():
    assert _modules_after("import privsum") == set()


def test_accounting_loads_no_heavy_dependency_until_a_pld_is_built():
    assert _modules_after("import privsum.accounting") == set()
    statement = (
        "from privsum.accounting import PLDPair, PrivacyGuarantee\n"
        "PLDPair.from_guarantee(PrivacyGuarantee(1.0, 1e-6)).epsilon(1e-5)"
    )
    assert "dp_accounting" in _modules_after(statement)


def test_import_time_profile_names_no_heavy_dependency():
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import privsum"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}
    assert "privsum" in imported
    assert not imported & set(HEAVY)


@pytest.mark.parametrize("name", privsum.__all__)
def test_every_public_name_resolves_to_its_defining_module(name):
    value = getattr(privsum, name)
    if name != "__version__":
        module = importlib.import_module(privsum._EXPORTS[name])
        assert value is getattr(module, name)
    assert name in dir(privsum)


def test_subpackages_are_attributes_and_unknown_names_raise():
    assert privsum.bitsum is importlib.import_module("privsum.bitsum")
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        privsum.nope  # noqa: B018


def test_star_import_gives_all_public_names():
    namespace: dict = {}
    exec("from privsum import *", namespace)
    assert set(privsum.__all__) <= set(namespace)
