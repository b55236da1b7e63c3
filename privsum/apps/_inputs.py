"""Scikit-learn-style checks of a classifier's inputs: points ``X`` and labels ``y``, every refusal naming its argument."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from privsum._validation import check_array, invalid
from privsum.apps._estimator import DataConversionWarning

__all__ = ["check_labels", "check_points"]


def check_points(X: Any, owner: str, *, n_features: int | None = None) -> np.ndarray:
    """Dense, finite, real ``(n_samples, n_features)`` points; every refusal names ``X``."""
    if hasattr(X, "toarray") and hasattr(X, "nnz"):
        raise invalid("X", owner, "a dense array (sparse input is not supported)", type(X).__name__)
    try:
        array = np.asarray(X)
    except (TypeError, ValueError) as error:
        raise invalid("X", owner, "a rectangular array of real numbers", f"an unconvertible input ({error})") from error
    if array.dtype == object:
        try:
            array = array.astype(float)
        except (TypeError, ValueError, OverflowError) as error:
            raise invalid("X", owner, "an array of real numbers", f"an object array ({error})") from error
    if np.iscomplexobj(array):
        raise invalid("X", owner, "an array of real numbers (Complex data not supported)", f"dtype {array.dtype}")
    if array.ndim != 2:
        raise invalid(
            "X", owner, "a 2-D array (n_samples, n_features): Reshape your data with X.reshape(-1, 1)", f"shape {array.shape}"
        )
    if array.shape[1] == 0:
        raise invalid("X", owner, "at least one feature", f"0 feature(s) (shape={array.shape}) while a minimum of 1 is required")
    if n_features is not None and array.shape[1] != n_features:
        raise invalid(
            "X",
            owner,
            f"{n_features} features",
            f"X has {array.shape[1]} features, but {owner} is expecting {n_features} features as input",
        )
    return check_array(array, "X", owner, ndim=2)


def check_labels(y: Any, n_samples: int, owner: str) -> np.ndarray:
    """One label per sample; a column vector is flattened with a `DataConversionWarning`."""
    if y is None:
        raise invalid("y", owner, "labels (this estimator requires y to be passed, but the target y is None)", None)
    try:
        labels = np.asarray(y)
    except (TypeError, ValueError) as error:
        raise invalid("y", owner, "a 1-D array of labels", f"an unconvertible input ({error})") from error
    if labels.ndim == 2 and labels.shape[1] == 1:
        warnings.warn(
            "A column-vector y was passed when a 1d array was expected; it is flattened to shape (n_samples,).",
            DataConversionWarning,
            stacklevel=3,
        )
        labels = labels.ravel()
    if labels.ndim != 1 or labels.shape[0] != n_samples:
        raise invalid("y", owner, f"a 1-D array with one label per row of X ({n_samples})", f"shape {labels.shape}")
    if labels.dtype.kind in "fc" and not np.all(np.isfinite(labels)):
        raise invalid("y", owner, "finite labels", "labels with NaN or infinity (Input y contains NaN)")
    return labels
