"""The estimator base: scikit-learn's when it is installed, an equivalent minimal one otherwise.

scikit-learn is optional. With it, privsum's estimators are genuine scikit-learn classifiers
(`clone`, pipelines, grid search and `check_estimator` work); without it they keep the same
conventions: ``__init__`` only stores its keyword parameters, `get_params` / `set_params` read
them from the signature, fitted attributes end with ``_``.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from privsum._validation import invalid
from privsum.exceptions import NotFittedError as _PrivsumNotFitted

__all__ = ["ClassifierBase", "DataConversionWarning", "NotFittedError", "sklearn_available"]

try:  # pragma: no cover - exercised in both configurations by the test matrix
    from sklearn.base import BaseEstimator as _SklearnBase
    from sklearn.base import ClassifierMixin as _SklearnClassifier
    from sklearn.exceptions import DataConversionWarning as _SklearnConversionWarning
    from sklearn.exceptions import NotFittedError as _SklearnNotFitted
except ImportError:  # pragma: no cover
    _SklearnBase = _SklearnClassifier = _SklearnConversionWarning = _SklearnNotFitted = None


def sklearn_available() -> bool:
    """Whether scikit-learn is installed (the estimators then derive from its base classes)."""
    return _SklearnBase is not None


class _MinimalEstimator:
    """`get_params` / `set_params` / `score` with scikit-learn's semantics, without scikit-learn."""

    @classmethod
    def _parameter_names(cls) -> list[str]:
        signature = inspect.signature(cls.__init__)
        return sorted(name for name, p in signature.parameters.items() if name != "self" and p.kind is not p.VAR_KEYWORD)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor parameters."""
        return {name: getattr(self, name) for name in self._parameter_names()}

    def set_params(self, **parameters: Any) -> Any:
        """Set constructor parameters (validated at ``fit``)."""
        names = self._parameter_names()
        for name, value in parameters.items():
            if name not in names:
                raise invalid(name, type(self).__name__, f"one of the parameters {names}", value)
            setattr(self, name, value)
        return self

    def score(self, X: Any, y: Any) -> float:
        """Accuracy of ``predict`` on ``(X, y)``."""
        return float(np.mean(self.predict(X) == np.asarray(y)))  # type: ignore[attr-defined]


if _SklearnBase is not None:

    class ClassifierBase(_SklearnClassifier, _SklearnBase):  # type: ignore[misc, valid-type]
        """scikit-learn's classifier base (scikit-learn is installed)."""

    class NotFittedError(_SklearnNotFitted, _PrivsumNotFitted):  # type: ignore[misc, valid-type]
        """The estimator is used before ``fit`` (both scikit-learn's and privsum's `NotFittedError`)."""

    DataConversionWarning = _SklearnConversionWarning

else:  # pragma: no cover

    class ClassifierBase(_MinimalEstimator):  # type: ignore[no-redef]
        """A minimal classifier base with scikit-learn's conventions (scikit-learn is absent)."""

    NotFittedError = _PrivsumNotFitted  # type: ignore[misc]

    class DataConversionWarning(UserWarning):  # type: ignore[no-redef]
        """Input data were converted to the expected shape (the conversion is announced, never silent)."""
