"""Renamed parameters: the old name keeps working for a while, with a `DeprecationWarning`."""

from __future__ import annotations

import warnings
from typing import Any

from privsum._validation import invalid

__all__ = ["NOT_GIVEN", "install_moved_modules", "moved_attribute_getter", "renamed"]


NOT_GIVEN: Any = "deprecated"
"""The default of a deprecated parameter (a plain string, as scikit-learn's ``clone`` and ``get_params`` expect)."""


def renamed(old_name: str, old_value: Any, new_name: str, new_value: Any, new_default: Any, owner: str) -> Any:
    """The value to use for ``new_name`` when the caller may have passed the deprecated ``old_name``.

    Passing the old name warns with `DeprecationWarning` and its value is used; passing both with
    different values raises `InvalidParameterError`.
    """
    if isinstance(old_value, str) and old_value == NOT_GIVEN:
        return new_value
    if not isinstance(old_value, str):
        raise invalid(old_name, owner, f"a string (it is the deprecated name of {new_name!r})", old_value)
    new_is_default = isinstance(new_value, str) and new_value == new_default
    if not new_is_default and not (isinstance(new_value, str) and new_value == old_value):
        raise invalid(old_name, owner, f"omitted (it is the deprecated name of {new_name!r}, given as {new_value!r})", old_value)
    warnings.warn(
        f"The {old_name!r} parameter of {owner} is deprecated and will be removed: use {new_name}={old_value!r}.",
        DeprecationWarning,
        stacklevel=3,
    )
    return old_value


def moved_attribute_getter(package: str, moved: dict[str, str]) -> Any:
    """A module ``__getattr__`` serving ``moved`` names with one `DeprecationWarning` each.

    ``moved`` maps each old name to its new module, or to ``"module:new_name"`` for a renamed one.

    The new module is imported on first access only, so the old package never imports the new
    one at import time. Each name warns once: its value is then cached in the package.
    """
    import importlib
    import sys

    def moved_getattr(name: str) -> Any:
        if name not in moved:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, new_name = moved[name].partition(":")
        warnings.warn(
            f"{package}.{name} has moved to {module}.{new_name or name}; the old path will be removed in the next release.",
            DeprecationWarning,
            stacklevel=2,
        )
        value = getattr(importlib.import_module(module), new_name or name)
        setattr(sys.modules[package], name, value)
        return value

    return moved_getattr


class _MovedModuleLoader:
    """Loads an old module path as a module holding its old public names, each read from its new module; warns once."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def create_module(self, spec: Any) -> Any:
        import importlib
        import types

        targets = sorted({target.partition(":")[0] for target in self.names.values()})
        warnings.warn(
            f"{spec.name} has moved (to {', '.join(targets)}); the old path will be removed in the next release.",
            DeprecationWarning,
            stacklevel=2,
        )
        module = types.ModuleType(spec.name, f"Deprecated alias: the names of {spec.name}, now in {', '.join(targets)}.")
        for name, target in self.names.items():
            new_module, _, new_name = target.partition(":")
            setattr(module, name, getattr(importlib.import_module(new_module), new_name or name))
        module.__all__ = sorted(self.names)
        return module

    def exec_module(self, module: Any) -> None:
        """Nothing to run: the names were read from their new modules."""


class _MovedModuleFinder:
    """A `sys.meta_path` finder that resolves old module paths to their moved names."""

    def __init__(self, moved: dict[str, dict[str, str]]) -> None:
        self.moved = moved

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname not in self.moved:
            return None
        import importlib.util

        return importlib.util.spec_from_loader(fullname, _MovedModuleLoader(self.moved[fullname]))


def install_moved_modules(moved: dict[str, dict[str, str]]) -> None:
    """Keep old module paths importable: ``moved[old_module][name]`` is the module ``name`` now lives in.

    An old path warns once with `DeprecationWarning`, on its first import; nothing is imported
    before, and no file remains at the old path.
    """
    import sys

    if not any(isinstance(finder, _MovedModuleFinder) and finder.moved == moved for finder in sys.meta_path):
        sys.meta_path.append(_MovedModuleFinder(moved))
