"""Labelled rows (the joint classifier's vectors): exact replace-one shifts of the rounded vectors, and refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privsum.exceptions import InvalidParameterError
from privsum.sums import SkellamVectorSum

ROWS, WIDTH, COUNT = 3, 5, 0.5
NORM = math.hypot(1.0, COUNT)


def _labelled(features: np.ndarray, labels: np.ndarray) -> np.ndarray:
    vectors = np.zeros((labels.size, ROWS, WIDTH))
    vectors[np.arange(labels.size), labels, :-1] = features
    vectors[np.arange(labels.size), labels, -1] = COUNT
    return vectors.reshape(labels.size, ROWS * WIDTH)


def _protocol(**kwargs) -> SkellamVectorSum:
    return SkellamVectorSum.from_privacy(
        epsilon=1.0, delta=1e-6, n_users=200, dimension=ROWS * WIDTH, norm_bound=NORM, scale=6.3, **kwargs
    )


def test_rounded_shifts_stay_within_the_bounds():
    """Worst-case pairs (opposite unit features in one row, or two rows), rounded many times: never beyond the bounds."""
    protocol = _protocol(label_rows=ROWS, count_weight=COUNT)
    rng = np.random.default_rng(0)
    directions = rng.normal(size=(400, WIDTH - 1))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    labels = rng.integers(0, ROWS, 400)
    same = protocol.round_vectors(_labelled(directions, labels), rng=1) - protocol.round_vectors(
        _labelled(-directions, labels), rng=2
    )
    moved = protocol.round_vectors(_labelled(directions, labels), rng=3) - protocol.round_vectors(
        _labelled(directions, (labels + 1) % ROWS), rng=4
    )
    l2, l1 = protocol.shift_bounds
    for shifts in (same, moved):
        assert np.all(np.linalg.norm(shifts, axis=1) <= l2)
        assert np.all(np.abs(shifts).sum(axis=1) <= l1)
    assert np.max(np.linalg.norm(same, axis=1)) >= 2 * 6.3 * 0.95  # opposite features: about 2 gamma F apart


def test_exact_shift_needs_less_noise_than_the_generic_bound():
    generic = _protocol()
    labelled = _protocol(label_rows=ROWS, count_weight=COUNT)
    assert labelled.shift_bounds[0] < generic.shift_bounds[0]
    assert labelled.noise_mu < generic.noise_mu
    assert labelled.guarantee.epsilon <= 1.0 and labelled.guarantee.delta == 1e-6


def test_vectors_that_are_not_labelled_rows_are_refused():
    protocol = _protocol(label_rows=ROWS, count_weight=COUNT)
    good = _labelled(np.full((2, WIDTH - 1), 0.5), np.array([0, 2]))
    protocol.run(np.vstack([good] * 100), rng=0)
    two_rows = good.copy()
    two_rows[0, WIDTH - 1 + WIDTH] = COUNT  # a second count
    wrong_count = good.copy()
    wrong_count[1, -1] = 0.25
    stray = good.copy()
    stray[0, WIDTH] = 0.1  # a feature in another row
    for bad in (two_rows, wrong_count, stray):
        with pytest.raises(InvalidParameterError, match="'x'"):
            protocol.run(np.vstack([bad] * 100), rng=0)


def test_label_rows_are_validated():
    with pytest.raises(InvalidParameterError, match="'label_rows'"):
        _protocol(label_rows=4, count_weight=COUNT)  # 15 coordinates are not 4 rows
    with pytest.raises(InvalidParameterError, match="'count_weight'"):
        _protocol(label_rows=ROWS, count_weight=2.0)


def test_central_gaussian_uses_the_exact_labelled_sensitivity():
    from privsum.sums import CentralGaussianVectorSum

    common = {"epsilon": 1.0, "delta": 1e-6, "n_users": 10, "dimension": ROWS * WIDTH, "norm_bound": NORM}
    generic = CentralGaussianVectorSum.from_privacy(**common)
    labelled = CentralGaussianVectorSum.from_privacy(**common, label_rows=ROWS, count_weight=COUNT)
    features = math.sqrt(NORM**2 - COUNT**2)
    assert labelled.sensitivity == pytest.approx(max(2 * features, math.sqrt(2) * NORM), rel=1e-9)
    assert generic.sensitivity == pytest.approx(2 * NORM, rel=1e-9)
    assert labelled.sigma < generic.sigma and labelled.guarantee.epsilon <= 1.0
    worst_same_row = _labelled(np.array([[1.0, 0, 0, 0], [-1.0, 0, 0, 0]]), np.array([0, 0]))
    worst_two_rows = _labelled(np.array([[1.0, 0, 0, 0], [1.0, 0, 0, 0]]), np.array([0, 1]))
    for pair in (worst_same_row, worst_two_rows):  # the bound is attained by one of them
        assert np.linalg.norm(pair[0] - pair[1]) <= labelled.sensitivity
    assert max(np.linalg.norm(p[0] - p[1]) for p in (worst_same_row, worst_two_rows)) == pytest.approx(labelled.sensitivity)
    with pytest.raises(InvalidParameterError, match="'x'"):
        labelled.run(np.ones((2, ROWS * WIDTH)) * 0.1, rng=0)
    labelled.run(iter([worst_same_row, worst_two_rows]), rng=0)  # chunks are checked too
