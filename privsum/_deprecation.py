"""Renamed parameters: the old name keeps working for a while, with a `DeprecationWarning`."""

from __future__ import annotations

import warnings
from typing import Any

from privsum._validation import invalid

__all__ = ["NOT_GIVEN", "renamed"]


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
