"""The classifier over vector sums: accuracy on the bundled data, the composed guarantee, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privsum.accounting import GaussianEvent, ParallelEvent, PrivacyAccountant, gaussian_sigma
from privsum.apps import ShuffledKDEClassifier, label_event
from privsum.datasets import load_wordnet_glosses
from privsum.exceptions import InvalidParameterError
from privsum.kde.vector import feature_norm_bound
from privsum.lsq import IdentityFeatures
from privsum.sums.central_vector import NORM_RTOL
from privsum.sums.skellam import SkellamVectorSum


@pytest.fixture(scope="module")
def wordnet():
    """The demo's setting: 3,000 training users per class (15 classes), the bundled test split."""
    train, test = load_wordnet_glosses(split="train"), load_wordnet_glosses(split="test")
    rng = np.random.default_rng(0)
    rows = np.sort(np.concatenate([rng.permutation(np.flatnonzero(train.labels == c))[:3000] for c in np.unique(train.labels)]))
    names = np.asarray(train.class_names)
    return train.class_names, train.embeddings[rows], names[train.labels[rows]], test.embeddings, names[test.labels]


def two_blobs(n: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    points = np.vstack([rng.normal([1.0, 0.2], 0.1, (n, 2)), rng.normal([-1.0, 0.2], 0.1, (n, 2))])
    points /= np.maximum(1.0, np.linalg.norm(points, axis=1, keepdims=True))
    return points, np.repeat(["a", "b"], n)


# Measured on this setting (seed 0): exact centroid 0.739, central Gaussian 0.733 at epsilon = 1 with labels
# in the clear, 0.732 with the joint sum; thresholds are a few points lower to allow other seeds.
@pytest.mark.parametrize(
    ("epsilon", "label_budget_fraction", "label_privacy", "threshold"),
    [
        (1.0, 0.5, "clear", 0.71),
        pytest.param(3.0, 0.5, "clear", 0.72, marks=pytest.mark.slow),
        pytest.param(5.0, 0.8, "round", 0.68, marks=pytest.mark.slow),  # KDE part 1, label round 4
        pytest.param(1.0, 0.5, "joint", 0.70, marks=pytest.mark.slow),
    ],
)
def test_central_gaussian_vector_classifier_on_bundled_wordnet(
    wordnet, epsilon, label_budget_fraction, label_privacy, threshold
) -> None:
    classes, X, y, X_test, y_test = wordnet
    model = ShuffledKDEClassifier(
        classes=classes,
        kernel="ip",
        protocol="central-gaussian",
        epsilon=epsilon,
        delta=1e-6,
        label_budget_fraction=label_budget_fraction,
        label_privacy=label_privacy,
        random_state=0,
    ).fit(X, y)
    assert model.score(X_test, y_test) >= threshold


# Measured (seed 0): 0.737 at epsilon = 1 and 0.738 at epsilon = 3 with labels in the clear, 0.750 with the
# label round (epsilon 4), 0.735 with the joint sum; the targets are 0.70 / 0.72 / 0.66.
@pytest.mark.slow
@pytest.mark.parametrize(
    ("epsilon", "label_budget_fraction", "label_privacy", "threshold"),
    [(1.0, 0.5, "clear", 0.71), (3.0, 0.5, "clear", 0.72), (5.0, 0.8, "round", 0.69), (1.0, 0.5, "joint", 0.69)],
)
def test_shuffled_vector_classifier_on_bundled_wordnet(wordnet, epsilon, label_budget_fraction, label_privacy, threshold) -> None:
    classes, X, y, X_test, y_test = wordnet
    model = ShuffledKDEClassifier(
        classes=classes,
        kernel="ip",
        protocol="vector",
        epsilon=epsilon,
        delta=1e-6,
        label_budget_fraction=label_budget_fraction,
        label_privacy=label_privacy,
        random_state=1,
    ).fit(X, y)
    assert model.score(X_test, y_test) >= threshold
    assert model.kde_guarantee_.epsilon <= model.kde_epsilon_
    if label_privacy != "clear":
        assert model.guarantees_["communication"].epsilon <= epsilon


def test_shuffled_vector_classifier_guarantee_and_messages() -> None:
    X, y = two_blobs()
    model = ShuffledKDEClassifier(
        classes=["a", "b"], kernel="ip", protocol="vector", epsilon=3.0, delta=1e-6, label_budget_fraction=2 / 3, random_state=0
    )
    model.fit(X, y)
    assert all(isinstance(p.vector_sum, SkellamVectorSum) for p in model.protocols_)
    expected = PrivacyAccountant()
    expected.compose(label_event(2.0, 2))
    events = [p.event_for_participants(int(n)) for p, n in zip(model.protocols_, model.class_counts_, strict=True)]
    assert [p.n_users for p in model.protocols_] == model.class_counts_.tolist()  # each class calibrated for its size
    expected.compose(ParallelEvent(events, parts_per_user=1))
    assert model.guarantees_["communication"] == expected.guarantee(1e-6)
    assert model.kde_guarantee_.epsilon <= 1.0
    sums = [p.vector_sum for p in model.protocols_]
    assert model.communication_["expected_messages_per_user"] == 1.0 + max(s.expected_messages_per_user for s in sums)
    assert (model.predict(np.array([[1.0, 0.0], [-1.0, 0.0]])) == ["a", "b"]).all()


def test_exact_vector_classifier_is_the_nearest_centroid(wordnet) -> None:
    classes, X, y, X_test, _ = wordnet
    model = ShuffledKDEClassifier(classes=classes, kernel="ip", protocol="exact-vector", label_privacy="clear").fit(X, y)
    centroids = np.stack([X[y == c].mean(axis=0) for c in classes])
    expected = np.asarray(classes)[np.argmax(X_test[:500] @ centroids.T, axis=1)]
    assert (model.predict(X_test[:500]) == expected).all()


def test_reported_guarantee_is_the_label_round_composed_with_the_parallel_class_sums() -> None:
    X, y = two_blobs()
    model = ShuffledKDEClassifier(
        classes=["a", "b"],
        kernel="ip",
        protocol="central-gaussian",
        epsilon=3.0,
        delta=1e-6,
        label_budget_fraction=2 / 3,
        random_state=0,
    )
    model.fit(X, y)
    sigma = gaussian_sigma(1.0, 1e-6, sensitivity=2 * feature_norm_bound(IdentityFeatures(dimension=2)) * (1 + NORM_RTOL))
    class_events = [p.event for p in model.protocols_]
    assert all(isinstance(e, GaussianEvent) and e.sigma == sigma for e in class_events)
    expected = PrivacyAccountant()
    expected.compose(label_event(2.0, 2))
    expected.compose(ParallelEvent(class_events, parts_per_user=1))
    assert model.guarantees_["communication"] == expected.guarantee(1e-6)
    assert model.guarantees_["model"] == expected.guarantee(1e-6)
    assert 2.0 < model.guarantees_["communication"].epsilon <= 3.0  # sequential: more than either part, at most the total
    assert model.kde_guarantee_.epsilon <= 1.0
    assert model.communication_["expected_messages_per_user"] == 1.0 + 2.0


def test_joint_sum_guarantee_covers_labels_without_a_label_round() -> None:
    X, y = two_blobs()
    model = ShuffledKDEClassifier(
        classes=["a", "b"],
        kernel="ip",
        protocol="central-gaussian",
        epsilon=1.0,
        delta=1e-6,
        label_privacy="joint",
        random_state=0,
    )
    model.fit(X, y)
    (joint,) = model.protocols_
    expected = PrivacyAccountant()
    expected.compose(joint.vector_sum.event)
    assert model.guarantees_["communication"] == expected.guarantee(1e-6) == model.guarantees_["model"]
    assert model.guarantees_["communication"].epsilon <= joint.vector_sum.guarantee.epsilon <= 1.0
    assert model.communication_["label_message_bits"] == 0.0
    assert abs(model.class_counts_ - 300).max() < 100
    assert (model.predict(np.array([[1.0, 0.0], [-1.0, 0.0]])) == ["a", "b"]).all()


def test_labels_in_the_clear_report_no_privacy() -> None:
    X, y = two_blobs()
    model = ShuffledKDEClassifier(
        classes=["a", "b"],
        kernel="gaussian",
        protocol="central-gaussian",
        n_repetitions=16,
        label_privacy="clear",
        random_state=0,
    )
    model.fit(X, y)
    assert math.isinf(model.guarantees_["communication"].epsilon)
    assert model.kde_guarantee_.epsilon <= 2.0


def test_per_instance_central_baseline_keeps_its_name() -> None:
    X, y = two_blobs(100)
    model = ShuffledKDEClassifier(
        classes=["a", "b"], kernel="ip", protocol="central-gaussian-per-instance", n_repetitions=8, random_state=0
    )
    assert model.fit(X, y).score(X, y) > 0.5
    assert type(model.protocols_[0]).__name__ == "ShuffledKDE"


@pytest.mark.parametrize(
    ("parameters", "name"),
    [
        ({"protocol": "3nb", "label_privacy": "joint"}, "label_privacy"),
        ({"label_privacy": "both"}, "label_privacy"),
        ({"protocol": "central"}, "protocol"),
    ],
)
def test_bad_parameters_are_named(parameters: dict, name: str) -> None:
    X, y = two_blobs(20)
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter of ShuffledKDEClassifier"):
        ShuffledKDEClassifier(classes=["a", "b"], **parameters).fit(X, y)


@pytest.mark.parametrize(
    ("protocol", "label_privacy"),
    [(p, "round") for p in ("central-gaussian", "vector", "exact-vector", "3nb")]
    + [(p, "joint") for p in ("central-gaussian", "vector", "exact-vector")],
)
def test_points_above_the_norm_bound_are_refused_naming_X(protocol: str, label_privacy: str) -> None:
    X, y = two_blobs(20)
    model = ShuffledKDEClassifier(classes=["a", "b"], kernel="ip", protocol=protocol, label_privacy=label_privacy)
    with pytest.raises(InvalidParameterError, match="'X' parameter of ShuffledKDEClassifier must be points of Euclidean norm"):
        model.fit(X * 3, y)


@pytest.mark.parametrize(("kernel", "protocol"), [("gaussian", "central-gaussian"), ("ip", "3nb"), ("lsh", "exact")])
def test_class_densities_equal_each_released_function(kernel: str, protocol: str) -> None:
    X, y = two_blobs(60)
    model = ShuffledKDEClassifier(classes=["a", "b"], kernel=kernel, protocol=protocol, n_repetitions=16, random_state=0).fit(
        X, y
    )
    queries = np.random.default_rng(3).normal(0, 0.2, (50, 2)).clip(-0.7, 0.7)
    expected = np.stack([d(queries) for d in model.densities_], axis=1)
    np.testing.assert_allclose(model.class_densities(queries), expected, rtol=1e-10, atol=1e-12)
