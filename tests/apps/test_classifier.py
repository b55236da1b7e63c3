import math

import numpy as np
import pytest

from privsum import InvalidParameterError, PrivacyLeakWarning
from privsum.apps import ShuffledKDEClassifier, decode_class, keep_probability, randomize_labels
from privsum.testing import assert_mean


def blobs(rng, n_per_class=300):
    centres = np.array([[2.0, 0.0], [-2.0, 0.0], [0.0, 2.0]])
    X = np.vstack([rng.normal(c, 0.3, (n_per_class, 2)) for c in centres])
    return X, np.repeat(["a", "b", "c"], n_per_class)


def test_label_round_keeps_with_the_stated_probability():
    labels = np.zeros(50_000, dtype=int)
    keep = keep_probability(1.0, 5)
    reported = randomize_labels(labels, 5, 1.0, np.random.default_rng(0))
    assert_mean(reported == 0, keep, variance=keep * (1 - keep))  # alpha = 1e-6
    others = np.bincount(reported[reported != 0], minlength=5)[1:]
    assert others.min() > 0.9 * others.mean()  # uniform over the other labels


def test_non_private_model_classifies_blobs():
    X, y = blobs(np.random.default_rng(1))
    model = ShuffledKDEClassifier(
        classes=["a", "b", "c"], protocol="exact", label_epsilon=math.inf, n_repetitions=128, random_state=0
    )
    assert model.fit(X, y).score(X, y) > 0.95


def test_private_model_reports_composed_guarantee():
    X, y = blobs(np.random.default_rng(2))
    model = ShuffledKDEClassifier(
        classes=["a", "b", "c"], protocol="3nb", epsilon=2.0, label_epsilon=1.0, n_repetitions=16, random_state=0
    ).fit(X, y)
    kde = model.kde_guarantee_
    assert kde.epsilon <= 2.0 * (1 + 1e-9) and kde.neighbouring.value == "replace-one"
    for guarantee in model.guarantees_.values():
        assert kde.epsilon < guarantee.epsilon <= 3.0 * (1 + 1e-9)
    assert model.score(X, y) > 0.5


def test_inferring_classes_warns_and_unknown_labels_raise():
    X, y = blobs(np.random.default_rng(3), 20)
    with pytest.warns(PrivacyLeakWarning):
        ShuffledKDEClassifier(protocol="exact", n_repetitions=8, random_state=0).fit(X, y)
    with pytest.raises(InvalidParameterError, match="'y'"):
        ShuffledKDEClassifier(classes=["a", "b"], protocol="exact", n_repetitions=8).fit(X, y)


@pytest.mark.parametrize(
    ("parameters", "name"),
    [
        ({"kernel": "cosine"}, "kernel"),
        ({"protocol": "magic"}, "protocol"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"delta": 1.0}, "delta"),
        ({"label_epsilon": math.nan}, "label_epsilon"),
        ({"n_repetitions": 0}, "n_repetitions"),
    ],
)
def test_invalid_parameters_raise_at_fit(parameters, name):
    X, y = blobs(np.random.default_rng(4), 10)
    with pytest.raises(InvalidParameterError, match=f"'{name}'"):
        ShuffledKDEClassifier(classes=["a", "b", "c"], **parameters).fit(X, y)


def test_unfitted_and_decoder_validation():
    with pytest.raises(AttributeError, match="not fitted"):
        ShuffledKDEClassifier(classes=[0, 1]).predict(np.zeros((1, 2)))
    X, y = blobs(np.random.default_rng(5), 50)
    model = ShuffledKDEClassifier(classes=["a", "b", "c"], protocol="exact", n_repetitions=32, random_state=0).fit(X, y)
    assert decode_class(model, "a", ["east", "west"], np.array([[2.0, 0.0], [-2.0, 0.0]]), top_k=1) == ["east"]
    with pytest.raises(InvalidParameterError, match="'label'"):
        decode_class(model, "z", ["w"], np.zeros((1, 2)))
    with pytest.raises(InvalidParameterError, match="'embeddings'"):
        decode_class(model, "a", ["w", "v"], np.zeros((1, 2)))


def test_communication_and_sklearn_parameter_protocol():
    X, y = blobs(np.random.default_rng(6), 100)
    model = ShuffledKDEClassifier(classes=["a", "b", "c"], protocol="rr", epsilon=4.0, n_repetitions=16, random_state=0)
    assert model.get_params()["protocol"] == "rr"
    assert model.set_params(epsilon=3.0).epsilon == 3.0
    with pytest.raises(ValueError, match="'gamma'"):  # an InvalidParameterError without scikit-learn
        model.set_params(gamma=1.0)
    model.fit(X, y)
    communication = model.communication_
    assert communication["expected_messages_per_user"] == pytest.approx(1.0 + 16.0)  # RR: one message per instance
    assert communication["bits_per_message"] == 4 + 1  # 16 instances -> 4 tag bits, 1 value bit
    clone = ShuffledKDEClassifier(**model.get_params())
    np.testing.assert_array_equal(clone.fit(X, y).predict(X), model.predict(X))  # same random_state, same model
