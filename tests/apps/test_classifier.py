import math

import numpy as np
import pytest

from privsum import InvalidParameterError, PrivacyLeakWarning
from privsum.apps import ShuffledKDEClassifier, decode_class, decode_classes, keep_probability, randomize_labels
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
        classes=["a", "b", "c"], protocol="exact", label_privacy="clear", n_repetitions=128, random_state=0
    )
    assert model.fit(X, y).score(X, y) > 0.95


def test_private_model_reports_composed_guarantee():
    X, y = blobs(np.random.default_rng(2))
    model = ShuffledKDEClassifier(
        classes=["a", "b", "c"], protocol="3nb", epsilon=3.0, label_budget_fraction=1 / 3, n_repetitions=16, random_state=0
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
        ({"label_budget_fraction": math.nan}, "label_budget_fraction"),
        ({"label_budget_fraction": 1.0}, "label_budget_fraction"),
        ({"label_privacy": "public"}, "label_privacy"),
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


def test_decoding_scores_rank_relative_or_raw_density():
    # Three classes on a circle; "generic" (near the middle) is dense for every class, "east" only for class a.
    rng = np.random.default_rng(7)
    centres = np.array([[1.0, 0.0], [-0.5, 0.87], [-0.5, -0.87]])
    X = np.vstack([rng.normal(c, 0.3, (300, 2)) for c in centres])
    y = np.repeat(["a", "b", "c"], 300)
    model = ShuffledKDEClassifier(classes=["a", "b", "c"], protocol="exact", n_repetitions=1024, random_state=0).fit(X, y)
    words = ["generic", "east"]
    embeddings = np.array([[0.3, 0.0], [1.9, 0.0]])
    densities = np.array([d(embeddings) for d in model.densities_])
    assert densities[0, 0] > densities[0, 1] > 0  # raw density puts the generic word first for class a ...
    assert decode_class(model, "a", words, embeddings, top_k=2, score="density") == ["generic", "east"]
    assert decode_class(model, "a", words, embeddings, top_k=2, floor_quantile=0.0) == [
        "east",
        "generic",
    ]  # ... the ratio does not
    for quantile in (0.0, 0.5):
        floored = np.maximum(densities, np.quantile(densities, quantile))
        expected = np.log(floored[0]) - np.log(floored.mean(axis=0))
        decoded = decode_class(model, "a", words, embeddings, top_k=2, floor_quantile=quantile)
        assert decoded == [words[i] for i in np.argsort(-expected, kind="stable")]
    with pytest.raises(InvalidParameterError, match="'floor_quantile'"):
        decode_class(model, "a", words, embeddings, floor_quantile=1.0)
    with pytest.raises(InvalidParameterError, match="'score'"):
        decode_class(model, "a", words, embeddings, score="ratio")
    with pytest.raises(InvalidParameterError, match="'model'"):
        decode_class(object(), "a", words, embeddings)


def test_decoding_accepts_a_fitted_pipeline_ending_in_the_classifier():
    pytest.importorskip("sklearn")
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = blobs(np.random.default_rng(8), 200)
    pipeline = make_pipeline(
        StandardScaler(), ShuffledKDEClassifier(classes=["a", "b", "c"], protocol="exact", n_repetitions=64, random_state=0)
    ).fit(X, y)
    words = [f"w{i}" for i in range(20)]
    embeddings = np.random.default_rng(9).normal(0, 3, size=(20, 2))
    scaled = pipeline[:-1].transform(embeddings)
    for score in ("log_ratio", "density"):
        expected = decode_class(pipeline[-1], "b", words, scaled, top_k=5, score=score)
        assert decode_class(pipeline, "b", words, embeddings, top_k=5, score=score) == expected


@pytest.mark.slow
def test_wordnet_decoded_lists_share_few_words():
    """The demo's setting (3NB, Gaussian kernel, epsilon = 3): no word in more than two classes' top-8 lists."""
    from collections import Counter

    from privsum.datasets import load_vocabulary, load_wordnet_glosses

    train = load_wordnet_glosses(split="train")
    rng = np.random.default_rng(0)
    rows = np.sort(np.concatenate([rng.permutation(np.flatnonzero(train.labels == c))[:3000] for c in np.unique(train.labels)]))
    names = np.asarray(train.class_names)
    model = ShuffledKDEClassifier(
        classes=train.class_names,
        protocol="3nb",
        epsilon=7.0,
        delta=1e-6,
        label_budget_fraction=4 / 7,
        n_repetitions=384,
        random_state=0,
    ).fit(train.embeddings[rows], names[train.labels[rows]])
    words, vectors = load_vocabulary()
    lists = {score: decode_classes(model, words, vectors, top_k=8, score=score) for score in ("log_ratio", "density")}
    assert lists["log_ratio"]["noun.food"] == decode_class(model, "noun.food", words, vectors, top_k=8)
    shared = {score: max(Counter(word for top in tops.values() for word in top).values()) for score, tops in lists.items()}
    assert shared["log_ratio"] <= 2, shared
    assert shared["density"] > shared["log_ratio"], shared  # raw density lets generic words top several classes


@pytest.mark.parametrize("score", ["log_ratio", "density"])
def test_decoding_shares_the_query_features_and_ranks_as_each_released_function(score):
    """`decode_classes` computes the vocabulary's features once for all classes (one matrix product with
    the stacked coefficients); the densities equal each class's `KDEFunction` to 1e-12 relative, and
    the decoded lists are those of ranking each function's own values (with a class left empty)."""
    from privsum.apps._densities import densities_at
    from privsum.apps.decoding import _log_ratio_scores

    rng = np.random.default_rng(10)
    X, y = blobs(rng, 200)
    model = ShuffledKDEClassifier(
        classes=["a", "b", "c", "d"], protocol="exact", label_privacy="clear", n_repetitions=48, random_state=1
    )
    model.fit(X, y)
    assert model.densities_[3] is None  # nobody reported "d"
    words = [f"w{i}" for i in range(400)]
    embeddings = rng.normal(0.0, 2.0, (400, 2))
    each = {c: d(embeddings) for c, d in enumerate(model.densities_) if d is not None}
    shared = densities_at(model.densities_, model.family_, embeddings)
    for c, values in each.items():
        np.testing.assert_allclose(shared[:, c], values, rtol=1e-12, atol=1e-15)
    scores = _log_ratio_scores(each, 0.9) if score == "log_ratio" else each
    expected = {label: [words[i] for i in np.lexsort((-each[c], -scores[c]))[:5]] for c, label in enumerate("abc")}
    decoded = decode_classes(model, words, embeddings, top_k=5, score=score)
    assert decoded == {**expected, "d": []}
