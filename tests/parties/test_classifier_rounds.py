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
    with pytest.raises(InvalidParameterError, match="label_privacy"):  # a joint sum over bit sums does not exist
        ClassifierRounds(model(3, label_privacy="joint"), n_users=10, n_features=2)
    with pytest.raises(InvalidParameterError, match="shuffled vector sum"):  # a trusted curator has no parties
        ClassifierRounds(model(3, label_privacy="joint", protocol="central-gaussian"), n_users=10, n_features=2)
    with pytest.raises(InvalidParameterError, match="label_privacy in"):
        ClassifierRounds(model(3), n_users=10, n_features=2).joint_deployment()
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


# ---------------------------------------------------------------------- label_privacy="clear"
def test_clear_labels_travel_as_they_are_and_the_counts_are_exact():
    """The clear label round sends each class index unchanged: exact counts, the label unprotected (infinite guarantee)."""
    points, labels = data()
    rounds = ClassifierRounds(model(3, label_privacy="clear"), n_users=points.shape[0], n_features=2)
    deployment = rounds.label_deployment()
    assert deployment.protocol.label_epsilon == np.inf and deployment.cap.total == 1
    label_analyzer, uploads = one_round(deployment, rounds.class_indices(labels)[:, None], 5)
    assert [rounds.reported_class(upload) for upload in uploads] == rounds.class_indices(labels).tolist()
    assert label_analyzer.estimate().tolist() == [N_PER_CLASS, N_PER_CLASS]
    assert label_analyzer.guarantee.epsilon == np.inf
    fitted = party_fit(model(3, label_privacy="clear"), points, labels, seed=2)
    direct = model(3, label_privacy="clear").fit(points, labels)
    assert fitted.class_counts_.tolist() == direct.class_counts_.tolist() == [N_PER_CLASS, N_PER_CLASS]
    assert fitted.guarantees_ == direct.guarantees_ and fitted.guarantees_["model"].epsilon == np.inf
    assert fitted.kde_guarantee_ == direct.kde_guarantee_ and fitted.kde_guarantee_.epsilon <= 4.0
    with pytest.raises(InvalidParameterError, match="label_privacy in"):
        rounds.joint_deployment()


@pytest.mark.slow
def test_clear_party_training_matches_fit_in_distribution():
    """Class density at a point, clear-label party path against `fit` over 120 seeds each (alpha = 1e-6)."""
    points, labels = data()
    query = np.array([[1.0, 0.0]])
    party = [party_fit(model(r, label_privacy="clear"), points, labels, seed=2000 + r).class_densities(query)[0, 0]
             for r in range(120)]
    direct = [model(r, label_privacy="clear").fit(points, labels).class_densities(query)[0, 0] for r in range(120)]
    assert_same_octiles(np.asarray(party), np.asarray(direct))


def assert_same_octiles(party, direct):
    bins = np.quantile(np.concatenate([party, direct]), np.linspace(0, 1, 9)[1:-1])
    assert np.std(party) > 0
    assert_same_distribution(np.digitize(party, bins), np.digitize(direct, bins))


# ---------------------------------------------------------------------- label_privacy="joint"
JOINT = {"protocol": "vector", "kernel": "ip", "n_repetitions": None, "accounting": "tight", "label_privacy": "joint"}


def unit_data():
    points, labels = data()
    return points / np.linalg.norm(points, axis=1, keepdims=True), labels  # the inner-product kernel's unit ball


@pytest.fixture
def calibrate_once(monkeypatch):
    """`fit`'s joint calibration (about 1 s) computed once per setting: the identity features do not depend on the seed."""
    original, cache = ShuffledKDEClassifier._joint_kde, {}

    def cached(self, n_users):
        key = (repr(self.family_), n_users, self.epsilon, self.delta)
        if key not in cache:
            cache[key] = original(self, n_users)
        return cache[key]

    monkeypatch.setattr(ShuffledKDEClassifier, "_joint_kde", cached)


def party_fit_joint(classifier, points, labels, seed):
    """`fit` with label_privacy="joint", as parties: one round of the joint class sum."""
    rounds = ClassifierRounds(classifier, n_users=points.shape[0], n_features=points.shape[1])
    analyzer, _ = one_round(rounds.joint_deployment(), rounds.joint_inputs(points, labels), seed)
    return rounds.fitted_joint(analyzer)


def test_joint_round_gives_fits_model_and_accounting(calibrate_once):
    points, labels = unit_data()
    fitted = party_fit_joint(model(5, **JOINT), points, labels, seed=4)
    direct = model(5, **JOINT).fit(points, labels)
    assert fitted.guarantees_ == direct.guarantees_ and fitted.guarantees_["model"].epsilon <= 4.0
    assert fitted.family_ == direct.family_ and fitted.n_training_users_ == 2 * N_PER_CLASS
    deployment = Deployment.from_file_dict(Deployment(fitted.protocols_[0]).to_file_dict())  # the protocol file rebuilds it
    assert deployment.wire_name == "JointClassKDE" and deployment.positional
    assert deployment.n_instances == 2 * (2 + 1)  # C (I Q + 1): two classes of two features and a count
    assert fitted.predict(np.array([[1.0, 0.0], [-1.0, 0.0]])).tolist() == ["a", "b"]
    assert abs(fitted.class_counts_ - N_PER_CLASS).max() < 40  # noise sd about 5 users at epsilon 4


def test_joint_round_refusals(calibrate_once):
    points, labels = unit_data()
    rounds = ClassifierRounds(model(5, **JOINT), n_users=points.shape[0], n_features=2)
    client = Client(rounds.joint_deployment(), rng=0)
    for bad, match in (([0.5, 0.0, 2], r"within \[0, 1\]"), ([0.5, 0.0, 0.5], "integer-valued"), ([0.5, 0.0], "rows of 3"),
                       ([3.0, 0.0, 1], "norm"), ([np.nan, 0.0, 1], "finite")):
        with pytest.raises(InvalidParameterError, match=f"'x' parameter of JointClassKDEProtocol must be .*{match}"):
            client.encode(bad)
    with pytest.raises(InvalidParameterError, match="label_privacy in"):
        rounds.label_deployment()
    analyzer, _ = one_round(rounds.joint_deployment(), rounds.joint_inputs(points, labels), 1)
    with pytest.raises(InvalidParameterError, match="another deployment"):
        rounds.fitted_joint(Analyzer(Deployment(rounds.joint_deployment().protocol, min_senders=1)))
    with pytest.raises(InvalidParameterError, match="classes"):
        rounds.joint_inputs(points, labels[:5])
    assert rounds.fitted_joint(analyzer).class_counts_.size == 2


def test_one_malicious_joint_sender_moves_a_class_size_within_the_window(calibrate_once):
    """Robustness: one well-formed upload (shares within the cap) moves w * size by at most the bound, and by half of it here."""
    points, labels = unit_data()
    rounds = ClassifierRounds(model(5, **JOINT), n_users=points.shape[0] + 1, n_features=2)
    deployment = rounds.joint_deployment()
    protocol, spec = deployment.protocol, deployment.spec
    vector_sum = protocol.vector_sum
    shares = np.zeros(deployment.cap.total, dtype=np.int64)
    count = protocol.row_width - 1  # class 0's count coordinate
    shares[count * vector_sum.n_shares] = vector_sum.modulus // 2  # half the modulus added to it
    attack = spec.encode_upload(spec.fields(np.repeat(np.arange(spec.n_instances), vector_sum.n_shares), shares))
    honest = Client(deployment, rng=3).encode_many(rounds.joint_inputs(points, labels))
    totals = []
    another = Client(deployment, rng=4).encode(rounds.joint_inputs(points[:1], labels[:1])[0])
    for uploads in ([*honest, another], [*honest, attack]):
        shuffler, analyzer = Shuffler(deployment, rng=5), Analyzer(deployment)
        for sender, upload in enumerate(uploads):
            shuffler.submit(sender, upload)
        analyzer.absorb(shuffler.release())
        totals.append(vector_sum.analyze_participants(analyzer.view, analyzer.n_participants))
    shift = abs(totals[1][count] - totals[0][count])
    bound = protocol.manipulation_bound(1)
    assert bound == (vector_sum.modulus - 1) / vector_sum.scale
    assert bound / 2 - 2 * protocol.count_weight < shift <= bound


def test_joint_party_training_matches_fit_in_distribution(calibrate_once):
    """Class size and class density at a point, joint party path against `fit` over 150 seeds each (alpha = 1e-6 each)."""
    points, labels = unit_data()
    query = np.array([[1.0, 0.0]])
    party, direct = [], []
    for repeat in range(150):
        for target, fitted in ((party, party_fit_joint(model(repeat, **JOINT), points, labels, seed=3000 + repeat)),
                               (direct, model(repeat, **JOINT).fit(points, labels))):
            target.append((fitted.class_counts_[0], fitted.class_densities(query)[0, 0]))
    party, direct = np.asarray(party), np.asarray(direct)
    assert_same_distribution(party[:, 0].astype(int), direct[:, 0].astype(int))
    assert_same_octiles(party[:, 1], direct[:, 1])
