"""Labelled rows: vectors that live in one row of ``C`` and carry a fixed count, and their exact replace-one shift.

A classifier that sums every class at once (`privsum.kde.JointClassKDE`) gives each user a vector of
``C`` rows of width ``W``: its own class's row holds its features (norm at most ``F``) and, in the
row's last coordinate, the count weight ``w``; every other row is zero. Under replace-one a user may
change its point **and** its label, so the shift of the sum is

* the same row: ``f(x) - f(x')``, of norm at most ``2F``;
* two rows: ``-(f(x), w)`` in one and ``(f(x'), w)`` in another, of norm at most
  ``sqrt(2 (F^2 + w^2))``;

hence the exact L2 sensitivity ``max(2F, sqrt(2) sqrt(F^2 + w^2))``, where the generic bound for
vectors of norm ``sqrt(F^2 + w^2)`` is twice that norm.

After conditional randomized rounding (as in `privsum.sums.SkellamVectorSum`) the integer vector
``r`` has ``||r||^2 <= K``, zero rows stay zero, and the count coordinate is ``floor(gamma w)`` or
that plus one (exactly ``gamma w`` when it is an integer), so the features of a row satisfy
``||r_f||^2 <= K - floor(gamma w)^2``. The shifts of the rounded vectors are then at most
``sqrt(4 (K - c^2) + j)`` (same row; ``c = floor(gamma w)``, ``j = 1`` when the count may round either
way, else 0) and ``sqrt(2 K)`` (two rows); in L1, ``2 min(sqrt((W - 1) R), R) + j`` with
``R = K - c^2``, and ``2 min(sqrt(W K), K)``.
"""

from __future__ import annotations

import math

import numpy as np

from privsum._validation import check_integer, check_real, invalid

__all__ = ["check_label_parameters", "check_labelled_rows", "labelled_row_shifts"]


def labelled_row_shifts(
    squared_norm_bound: int, dimension: int, scale: float, n_rows: int, count_weight: float
) -> tuple[float, float]:
    """L2 and L1 bounds on the replace-one shift of two rounded labelled-row vectors (module docstring).

    Examples:
        >>> l2, l1 = labelled_row_shifts(125, 8, 10.0, 2, 0.5)  # K = 125: features <= 10, count 5
        >>> round(l2, 4), round(l1, 4)
        (20.0, 44.7214)
    """
    width = dimension // n_rows
    scaled_count = count_weight * scale
    count = math.floor(scaled_count)
    jitter = 0 if count == scaled_count else 1
    rest = max(0, squared_norm_bound - count * count)
    same_l2, two_l2 = 4 * rest + jitter, 2 * squared_norm_bound
    same_l1 = 2 * min(math.sqrt((width - 1) * rest), rest) + jitter
    two_l1 = 2 * min(math.sqrt(width * squared_norm_bound), squared_norm_bound)
    return math.nextafter(math.sqrt(max(same_l2, two_l2)), math.inf), math.nextafter(max(same_l1, two_l1), math.inf)


def check_labelled_rows(values: np.ndarray, n_rows: int, count_weight: float, owner: str) -> None:
    """Refuse (as ``x``) any vector that is not one labelled row: one row with count ``count_weight``, the others zero."""
    blocks = values.reshape(values.shape[0], n_rows, -1)
    active = blocks[:, :, -1] == count_weight
    inactive_zero = np.all(blocks == 0, axis=2) | active
    good = (active.sum(axis=1) == 1) & np.all(inactive_zero, axis=1)
    if not np.all(good):
        bad = int(np.argmin(good))
        raise invalid(
            "x",
            owner,
            f"labelled rows: one of {n_rows} rows with last coordinate count_weight={count_weight:g}, the others zero",
            f"row {bad}",
        )


def check_label_parameters(
    label_rows: int, count_weight: float, dimension: int, norm_bound: float, owner: str
) -> tuple[int, float]:
    """Validated ``(label_rows, count_weight)``: ``(0, 0)``, or ``C >= 2`` dividing ``d`` and ``0 < w <= c``."""
    label_rows = check_integer(label_rows, "label_rows", owner, low=0, high=max(0, dimension // 2))
    count_weight = check_real(count_weight, "count_weight", owner, low=0.0, high=norm_bound)
    if label_rows == 0:
        if count_weight != 0.0:
            raise invalid("count_weight", owner, "0 unless label_rows is set", count_weight)
        return 0, 0.0
    if label_rows < 2 or dimension % label_rows:
        raise invalid("label_rows", owner, f"0, or a divisor of dimension={dimension} of at least 2", label_rows)
    if not count_weight > 0.0:
        raise invalid("count_weight", owner, "positive with label_rows", count_weight)
    return label_rows, count_weight
