"""Every class's density at many query points at once, and class probabilities from densities."""

from __future__ import annotations

import numpy as np

from privsum.kde.function import KDEFunction
from privsum.lsq import LSQFamily

__all__ = ["densities_at", "probabilities_from_densities"]

# Query points x features evaluated at once by `densities_at`.
QUERY_ENTRIES = 1 << 21


def probabilities_from_densities(densities: np.ndarray) -> np.ndarray:
    """`ShuffledKDEClassifier.predict_proba` from a ``(n, n_classes)`` array of densities (``-inf``: no density).

    Examples:
        >>> probabilities_from_densities(np.array([[0.3, 0.1, -0.2], [-0.1, -0.3, -np.inf]])).round(3).tolist()
        [[0.75, 0.25, 0.0], [1.0, 0.0, 0.0]]
    """
    densities = np.asarray(densities, dtype=float)
    released = np.isfinite(densities)
    support = np.where(released, np.maximum(densities, 0.0), 0.0)
    totals = support.sum(axis=1, keepdims=True)
    probabilities = np.divide(support, totals, out=np.zeros_like(support), where=totals > 0)
    weak = totals[:, 0] <= 0
    if np.any(weak):
        values, live = densities[weak], released[weak]
        lowest = np.where(live, values, np.inf).min(axis=1, keepdims=True)
        shifted = np.where(live, values - np.where(np.isfinite(lowest), lowest, 0.0), 0.0)
        spread = shifted.sum(axis=1, keepdims=True)
        n_live = live.sum(axis=1, keepdims=True)
        uniform = np.where(n_live > 0, live / np.maximum(n_live, 1), 1.0 / densities.shape[1])
        probabilities[weak] = np.where(spread > 0, shifted / np.where(spread > 0, spread, 1.0), uniform)
    return probabilities


def densities_at(densities: list[KDEFunction | None], family: LSQFamily, points: np.ndarray) -> np.ndarray:
    """Every class's `KDEFunction` at ``points`` (``-inf`` for empty classes), the query features computed once.

    The same values as calling each density (``g(y) @ F / (n I)``), as one matrix product per
    chunk of query points instead of one feature map per class.
    """
    width = family.n_repetitions * family.n_coordinates
    values = np.full((points.shape[0], len(densities)), -np.inf)
    live = [c for c, d in enumerate(densities) if d is not None]
    if not live or points.shape[0] == 0:
        return values
    weights = np.stack([densities[c].coefficients.ravel() / (densities[c].n_users * family.n_repetitions) for c in live], axis=1)
    step = max(1, QUERY_ENTRIES // width)
    for start in range(0, points.shape[0], step):
        chunk = points[start : start + step]
        values[start : start + step, live] = family.g(chunk).reshape(chunk.shape[0], width) @ weights
    return values
