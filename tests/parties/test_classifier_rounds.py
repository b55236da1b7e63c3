"""The classifier's training between parties: the label round, then one KDE round per reported class."""

from __future__ import annotations

import numpy as np
import pytest

from privsum.apps import ShuffledKDEClassifier
from privsum.exceptions import InvalidParameterError
from privsum.parties import Analyzer, ClassifierRounds, Client, Deployment, Shuffler
from privsum.testing.stats import assert_same_distribution
from privsum.wire import WireFormatError

N_PER_CLASS = 60


def data():
    rng = np.random.default_rng(7)
    points = np.vstack([rng.normal([1.0, 0.0], 0.3, (N_PER_CLASS, 2)), rng.normal([-1.0, 0.0], 0.3, (N_PER_CLASS, 2))])
    return points, np.repeat(["a", "b"], N_PER_CLASS)


def model(random_state, **options):
    parameters = {"classes": ["a", "b"], "protocol": "rr", "epsilon": 4.0, "n_repetitions": 4, "accounting": "seed"}
    return ShuffledKDEClassifier(**(parameters | options), random_state=random_state)


def one_round(deployment, inputs, seed):
    """Every row of ``inputs`` through client, shuffler (one batch) and analyzer; returns the analyzer and the uploads."""
    client, shuffler, analyzer = Client(deployment, rng=seed), Shuffler(deployment, rng=seed + 1), Analyzer(deployment)
    uploads = client.encode_many(inputs)
    for sender, upload in enumerate(uploads):
        shuffler.submit(sender, upload)
    analyzer.absorb(shuffler.release())
    return analyzer, uploads


def party_fit(classifier, points, labels, seed):
    """`fit`, as parties: label round, each user's reported class, one KDE round per class."""
    rounds = ClassifierRounds(classifier, n_users=points.shape[0], n_features=points.shape[1])
    label_analyzer, uploads = one_round(rounds.label_deployment(), rounds.class_indices(labels)[:, None], seed)
    reported = np.array([rounds.reported_class(upload) for upload in uploads])
    analyzers = [None if deployment is None else one_round(deployment, points[reported == c], seed + 10 * (c + 1))[0]
                 for c, deployment in enumerate(rounds.kde_deployments(label_analyzer.estimate()))]
    return rounds.fitted(label_analyzer, analyzers)


def test_party_training_gives_a_fitted_classifier_with_fits_accounting():
    points, labels = data()
    fitted = party_fit(model(3), points, labels, seed=1)
    direct = model(3).fit(points, labels)
    assert fitted.class_counts_.sum() == 2 * N_PER_CLASS
    assert fitted.guarantees_ == direct.guarantees_  # the same rounds, composed alike
    assert fitted.family_ == direct.family_  # the public family from the seed
    assert set(fitted.predict(points).tolist()) <= {"a", "b"} and len(fitted.densities_) == 2


def test_rounds_refuse_what_they_cannot_back():
    points, labels = data()
    with pytest.raises(InvalidParameterError, match="classes"):
        ClassifierRounds(model(3, classes=None), n_users=10, n_features=2)
    with pytest.raises(InvalidParameterError, match="random_state"):
        ClassifierRounds(model(None), n_users=10, n_features=2)
    with pytest.raises(InvalidParameterError, match="label_privacy"):
        ClassifierRounds(model(3, label_privacy="clear"), n_users=10, n_features=2)
    rounds = ClassifierRounds(model(3), n_users=points.shape[0], n_features=2)
    label_analyzer, uploads = one_round(rounds.label_deployment(), rounds.class_indices(labels)[:, None], 0)
    reported = np.array([rounds.reported_class(upload) for upload in uploads])
    deployments = rounds.kde_deployments(label_analyzer.estimate())
    assert all(d.min_senders <= np.count_nonzero(reported == c) for c, d in enumerate(deployments))
    with pytest.raises(InvalidParameterError, match="reported users"):  # a class round that never ran
        rounds.fitted(label_analyzer, [Analyzer(d) for d in deployments])
    with pytest.raises(InvalidParameterError, match="one per class"):
        rounds.fitted(label_analyzer, [Analyzer(deployments[0])])


@pytest.mark.slow
def test_party_training_matches_fit_in_distribution():
    """Class count and class density at a point, party path against `fit` over 120 seeds each (alpha = 1e-6 per statistic)."""
    points, labels = data()
    query = np.array([[1.0, 0.0]])
    party, direct = [], []
    for repeat in range(120):
        for target, fitted in ((party, party_fit(model(repeat), points, labels, seed=1000 + repeat)),
                               (direct, model(repeat).fit(points, labels))):
            target.append((fitted.class_counts_[0], fitted.class_densities(query)[0, 0]))
    party, direct = np.asarray(party), np.asarray(direct)
    assert_same_distribution(party[:, 0].astype(int), direct[:, 0].astype(int))
    bins = np.quantile(np.concatenate([party[:, 1], direct[:, 1]]), np.linspace(0, 1, 9)[1:-1])
    assert np.std(party[:, 1]) > 0
    assert_same_distribution(np.digitize(party[:, 1], bins), np.digitize(direct[:, 1], bins))


def test_label_round_manipulation_is_one_count_per_malicious_sender():
    """k malicious senders, each with one well-formed label message: each published count moves by at most k (tight)."""
    rounds = ClassifierRounds(model(3), n_users=20, n_features=2)
    deployment = rounds.label_deployment()
    protocol, spec = deployment.protocol, deployment.spec
    assert protocol.manipulation_bound(5) == 5.0 and deployment.cap.total == 1
    honest = [Client(deployment, rng=1).encode([0]) for _ in range(15)]
    attack = [spec.encode_upload(spec.fields(np.zeros(1, dtype=np.int64), np.ones(1, dtype=np.int64)))] * 5
    shuffler, analyzer = Shuffler(deployment, rng=2), Analyzer(deployment)
    for sender, upload in enumerate(honest + attack):
        shuffler.submit(sender, upload)
    two = attack[0][:-5] + (2).to_bytes(4, "big") + attack[0][-1:]  # two 2-bit messages fit the same byte
    with pytest.raises(WireFormatError, match="cap"):
        shuffler.submit("greedy", two)
    analyzer.absorb(shuffler.release())
    honest_ones = sum(spec.split(spec.decode_upload(upload))[1][0] for upload in honest)
    assert analyzer.estimate()[1] - honest_ones == 5  # the bound, reached


@pytest.mark.slow
def test_vector_sum_class_rounds_compose_as_fit_does():
    """protocol="vector": each class round a positional Skellam KDE calibrated for its count; the total within epsilon."""
    points, labels = data()
    points = points / np.linalg.norm(points, axis=1, keepdims=True)  # the inner-product kernel's unit ball
    options = {"protocol": "vector", "kernel": "ip", "n_repetitions": None, "accounting": "tight"}
    fitted = party_fit(model(4, **options), points, labels, seed=3)
    for protocol, count in zip(fitted.protocols_, fitted.class_counts_, strict=True):
        assert type(protocol).__name__ == "VectorSumKDEProtocol" and protocol.n_users == count
        assert Deployment(protocol).positional
    assert fitted.label_epsilon_ < fitted.guarantees_["model"].epsilon <= fitted.epsilon + 1e-9
