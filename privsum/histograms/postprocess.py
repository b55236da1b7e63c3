"""Post-processing of released histograms: functions of the released counts and public values only.

None of these reads the users' data, so none costs privacy (post-processing). They trade the
estimate's unbiasedness for plausibility: clipping at zero biases small bins upwards.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privsum._validation import check_array, check_integer, check_real, invalid

__all__ = ["consistent_with_total", "nonnegative", "top_k"]


def _counts(counts: Any, owner: str) -> np.ndarray:
    array = check_array(counts, "counts", owner, ndim=1).astype(float)
    if array.size == 0:
        raise invalid("counts", owner, "a non-empty 1-D array of released counts", "an empty array")
    return array


def nonnegative(counts: Any) -> np.ndarray:
    """Released counts with negative entries set to 0 (biased upwards near 0; never larger error).

    Examples:
        >>> nonnegative([3.5, -1.2, 0.0]).tolist()
        [3.5, 0.0, 0.0]
    """
    return np.maximum(_counts(counts, "nonnegative"), 0.0)


def consistent_with_total(counts: Any, total: float) -> np.ndarray:
    """The non-negative counts summing to ``total`` closest to ``counts`` in Euclidean distance.

    The projection onto the scaled simplex ``{c >= 0, sum c = total}`` (sort-based, as in Duchi,
    Shalev-Shwartz, Singer & Chandra, "Efficient projections onto the l1-ball for learning in
    high dimensions", ICML 2008). With ``total`` the public number of users, every bin's error is
    no larger in sum of squares than before, since the true histogram lies in that set (a
    projection onto a convex set never moves a point away from the set's members).

    Examples:
        >>> consistent_with_total([6.0, -2.0, 5.0], 10).tolist()
        [5.5, 0.0, 4.5]
    """
    owner = "consistent_with_total"
    values = _counts(counts, owner)
    total = check_real(total, "total", owner, low=0.0)
    ordered = np.sort(values)[::-1]
    cumulative = np.cumsum(ordered) - total
    ranks = np.arange(1, values.size + 1)
    positive = ordered - cumulative / ranks > 0
    last = int(np.flatnonzero(positive)[-1]) if positive.any() else values.size - 1
    shift = cumulative[last] / (last + 1)
    return np.maximum(values - shift, 0.0)


def top_k(counts: Any, k: int, labels: Any = None) -> list:
    """The ``k`` bins with the largest released counts, largest first (ties: the earlier bin).

    Args:
        counts: released counts.
        k: how many, in ``1..len(counts)``.
        labels: the category labels (e.g. ``histogram.categories.labels``); ``None`` returns bin indices.

    Examples:
        >>> top_k([3.0, 9.0, 5.0], 2, labels=["a", "b", "c"])
        ['b', 'c']
    """
    owner = "top_k"
    values = _counts(counts, owner)
    k = check_integer(k, "k", owner, low=1, high=values.size)
    order = np.argsort(-values, kind="stable")[:k]
    if labels is None:
        return order.tolist()
    if isinstance(labels, (str, bytes)) or not hasattr(labels, "__len__"):
        raise invalid("labels", owner, "None or a sequence of labels, one per bin", type(labels).__name__)
    labels = list(labels)
    if len(labels) != values.size:
        raise invalid("labels", owner, f"{values.size} labels, one per bin", f"{len(labels)} labels")
    return [labels[i] for i in order]
