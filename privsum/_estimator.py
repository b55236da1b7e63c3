"""What every scikit-learn-style estimator of privsum does in ``__init__``: keep its arguments, nothing more."""

from __future__ import annotations

from typing import Any

__all__ = ["keep_parameters"]


def keep_parameters(estimator: Any, arguments: dict[str, Any]) -> None:
    """Store each constructor argument as the attribute of the same name (scikit-learn's ``__init__`` contract).

    Call it first thing in ``__init__`` as ``keep_parameters(self, locals())``: no argument is validated or
    changed here (``fit`` validates), so ``get_params`` and ``clone`` see exactly what was passed.

    Examples:
        >>> class Estimator:
        ...     def __init__(self, *, alpha=1.0, beta=None):
        ...         keep_parameters(self, locals())
        >>> vars(Estimator(alpha=2.0))
        {'alpha': 2.0, 'beta': None}
    """
    for name, value in arguments.items():
        if name not in ("self", "__class__"):
            setattr(estimator, name, value)
