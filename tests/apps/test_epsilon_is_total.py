"""``ShuffledKDEClassifier(epsilon=...)``: the epsilon passed is the total guarantee of one fit (issue 30)."""

import math

import numpy as np
import pytest

from privsum.apps import ShuffledKDEClassifier


def _blobs(n_per_class=200):
    rng = np.random.default_rng(7)
    centres = np.array([[0.6, 0.0], [-0.6, 0.0], [0.0, 0.6]])
    X = np.vstack([rng.normal(c, 0.05, (n_per_class, 2)) for c in centres])
    return X, np.repeat(["a", "b", "c"], n_per_class)


@pytest.mark.parametrize(
    ("options", "label_share"),
    [
        ({"protocol": "3nb"}, 0.5),  # the defaults: half of epsilon on the label round
        ({"protocol": "rr", "label_budget_fraction": 0.25}, 0.25),
        ({"protocol": "vector", "kernel": "ip", "label_budget_fraction": 0.75}, 0.75),
        ({"protocol": "vector", "kernel": "ip", "label_privacy": "joint"}, 0.0),
    ],
)
def test_the_reported_total_is_at_most_the_epsilon_passed(options, label_share):
    X, y = _blobs()
    model = ShuffledKDEClassifier(classes=["a", "b", "c"], epsilon=1.0, delta=1e-6, n_repetitions=8, random_state=0, **options)
    model.fit(X, y)
    for guarantee in model.guarantees_.values():
        assert guarantee.epsilon <= 1.0 and guarantee.delta <= 1e-6
    assert model.label_epsilon_ == pytest.approx(label_share)
    assert model.kde_epsilon_ == pytest.approx(1.0 - label_share)
    assert model.kde_guarantee_.epsilon <= model.kde_epsilon_ * (1 + 1e-9)
    if label_share > 0:  # the label round is spent: the total exceeds the KDE part alone
        assert model.guarantees_["communication"].epsilon > model.kde_guarantee_.epsilon


def test_clear_labels_spend_all_of_epsilon_on_the_points_and_report_an_infinite_total():
    X, y = _blobs()
    model = ShuffledKDEClassifier(classes=["a", "b", "c"], protocol="rr", epsilon=1.0, label_privacy="clear", n_repetitions=8)
    model.fit(X, y)
    assert math.isinf(model.label_epsilon_) and model.kde_epsilon_ == 1.0
    assert math.isinf(model.guarantees_["communication"].epsilon)
    assert model.kde_guarantee_.epsilon <= 1.0 * (1 + 1e-9)


def test_the_label_and_kde_parts_never_add_up_to_more_than_epsilon():
    for epsilon in (0.1, 0.3, 0.7, 1.1, 2.9, 3.3, 7.7):
        for fraction in (0.1, 0.2, 0.3, 1 / 3, 0.7, 0.9):
            model = ShuffledKDEClassifier(epsilon=epsilon, label_budget_fraction=fraction)
            label, kde = model._split_budget()
            assert label + kde <= epsilon and label == fraction * epsilon and kde > 0
