"""Doctests of the optional extras run only where the extra is installed (skipped, never silently passed)."""

from __future__ import annotations

import importlib.util

import pytest

#: Doctest name prefix -> the module its extra provides.
OPTIONAL_DOCTESTS = {
    "privsum._random.secure_generator": "randomgen",  # privsum[secure]
    "privsum.distributed.": "dask",  # privsum[dask]
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for prefix, module in OPTIONAL_DOCTESTS.items():
            if item.name.startswith(prefix) and importlib.util.find_spec(module) is None:
                item.add_marker(pytest.mark.skip(reason=f"needs the optional package {module!r}"))
