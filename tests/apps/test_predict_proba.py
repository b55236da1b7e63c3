"""`ShuffledKDEClassifier.predict_proba`: normalised clipped densities, argmax equal to `predict`."""

from __future__ import annotations

import numpy as np
import pytest

from privsum.apps import ShuffledKDEClassifier
from privsum.apps.classifier import probabilities_from_densities

RNG = np.random.default_rng(4)
CENTRES = np.array([[2.0, 0.0], [-2.0, 0.0], [0.0, 2.5]])
X = np.vstack([RNG.normal(centre, 0.4, (200, 2)) for centre in CENTRES])
Y = np.repeat(["a", "b", "c"], 200)
QUERIES = np.vstack([CENTRES, RNG.normal(0.0, 3.0, (200, 2))])  # far points: densities near 0, noisy ones negative


def test_helper_clips_normalises_and_falls_back_to_a_shift():
    densities = np.array(
        [
            [0.3, 0.1, -0.2],  # clipped at 0, normalised
            [-0.1, -0.3, -np.inf],  # no positive density: shifted by the minimum of the released classes
            [-0.2, -0.2, -0.2],  # all equal: uniform
            [-np.inf, -np.inf, -np.inf],  # nothing released: uniform
            [0.0, 0.5, -np.inf],
        ]
    )
    probabilities = probabilities_from_densities(densities)
    expected = [[0.75, 0.25, 0.0], [1.0, 0.0, 0.0], [1 / 3] * 3, [1 / 3] * 3, [0.0, 1.0, 0.0]]
    assert probabilities == pytest.approx(np.array(expected))
    assert np.array_equal(np.argmax(probabilities, axis=1), np.argmax(densities, axis=1))


@pytest.mark.parametrize("protocol", ["exact", "rr", "3nb"])
def test_probabilities_are_a_distribution_consistent_with_predict(protocol):
    model = ShuffledKDEClassifier(
        classes=["a", "b", "c"], protocol=protocol, epsilon=6.0, label_budget_fraction=2 / 3, random_state=1
    )
    model.fit(X, Y)
    probabilities = model.predict_proba(QUERIES)
    assert probabilities.shape == (len(QUERIES), 3)
    assert np.all(probabilities >= 0) and np.allclose(probabilities.sum(axis=1), 1.0)
    assert np.array_equal(model.classes_[np.argmax(probabilities, axis=1)], model.predict(QUERIES))
    densities = model.class_densities(QUERIES)
    positive = np.any(densities > 0, axis=1)
    clipped = np.maximum(densities[positive], 0)
    assert probabilities[positive] == pytest.approx(clipped / clipped.sum(axis=1, keepdims=True))


def test_well_separated_centres_get_confident_probabilities():
    model = ShuffledKDEClassifier(
        classes=["a", "b", "c"], protocol="exact", label_privacy="clear", n_repetitions=256, random_state=0
    ).fit(X, Y)
    probabilities = model.predict_proba(CENTRES)
    assert np.all(np.diag(probabilities) > 0.7)  # the rounded random features leave ~0.1 on the other classes
