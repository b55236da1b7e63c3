"""Manipulation bounds of the shuffled KDE and the classifier's rounds."""

from __future__ import annotations

import numpy as np
import pytest

from privsum.apps import ShuffledKDEClassifier
from privsum.bitsum import CentralLaplaceBitSum, RRBitSum, ThreeNBBitSum
from privsum.kde import ShuffledKDE
from privsum.lsq import RandomFourierFeatures
from tests.robustness.attacks import attack_batch, random_plans

N_USERS = 300


def coefficients(kde, view, n_participants):
    return kde.analyze(view, n_participants=n_participants).coefficients


@pytest.mark.parametrize("protocol_class", [RRBitSum, ThreeNBBitSum])
def test_kde_coefficients_move_by_at_most_the_bound(protocol_class):
    family = RandomFourierFeatures(dimension=2, n_repetitions=4, seed=0)
    kde = ShuffledKDE.from_privacy(family=family, protocol=protocol_class, epsilon=4.0, delta=1e-6, n_users=N_USERS)
    honest = kde.sample_view(np.random.default_rng(0).normal(size=(N_USERS, 2)), rng=1)
    before = coefficients(kde, honest, N_USERS)
    k, cap, radius = 2, kde.per_sender_message_cap(), family.bound
    assert cap == kde.bitsum.per_sender_message_cap()
    up, down = kde.bitsum.manipulation_bound(k), kde.bitsum.largest_decrease(k)
    bound = kde.manipulation_bound(k)
    assert bound == pytest.approx(max(2 * radius * up, 2 * radius * down + radius * k), rel=1e-12)
    # pushing up, the analyzer's n as given; pulling down, the attackers counted among the participants
    pushed = coefficients(kde, honest + kde.view(attack_batch(kde.n_instances, {max(kde.alphabet): k * cap})), N_USERS)
    pulled = coefficients(kde, honest + kde.view(attack_batch(kde.n_instances, {min(kde.alphabet): k * cap})), N_USERS + k)
    np.testing.assert_allclose(pushed - before, 2 * radius * up, rtol=1e-9)
    np.testing.assert_allclose(before - pulled, 2 * radius * down + radius * k, rtol=1e-9)
    assert max(np.max(pushed - before), np.max(before - pulled)) == pytest.approx(bound, rel=1e-9)  # tight
    plans = random_plans(np.random.default_rng(2), kde.alphabet, kde.n_instances, 3, min(cap, 20))
    for n_participants in (N_USERS, N_USERS + 3):
        randomly = coefficients(kde, honest + kde.view(attack_batch(kde.n_instances, plans)), n_participants)
        assert np.all(np.abs(randomly - before) <= kde.manipulation_bound(3) * (1 + 1e-12))


def test_curated_baselines_move_by_the_users_own_bits():
    """A trusted curator accepts one bit per user and instance: k malicious users move a count by k."""
    family = RandomFourierFeatures(dimension=2, n_repetitions=2, seed=0)
    kde = ShuffledKDE(family=family, bitsum=CentralLaplaceBitSum.from_privacy(epsilon=1.0, n_users=N_USERS))
    honest = kde.sample_view(np.random.default_rng(0).normal(size=(N_USERS, 2)), rng=1)
    moved = kde.analyze(honest + kde.view(attack_batch(kde.n_instances, {1: 4})), n_participants=N_USERS).coefficients
    moved -= kde.analyze(honest, n_participants=N_USERS).coefficients
    np.testing.assert_allclose(moved, kde.manipulation_bound(4), rtol=1e-12)
    assert kde.manipulation_bound(4) == 2 * family.bound * 4


@pytest.mark.parametrize(("protocol", "label_privacy"), [("rr", "round"), ("vector", "round"), ("vector", "joint")])
def test_classifier_reports_both_rounds(protocol, label_privacy):
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal([0.5, 0], 0.1, (200, 2)), rng.normal([-0.5, 0], 0.1, (200, 2))])
    y = np.repeat([0, 1], 200)
    model = ShuffledKDEClassifier(
        classes=[0, 1], kernel="ip", protocol=protocol, label_privacy=label_privacy, epsilon=4.0, n_repetitions=4, random_state=0
    ).fit(X, y)
    bounds = model.manipulation_bounds(3)
    protocols = [p for p in model.protocols_ if p is not None]
    expected = max(p.manipulation_bound(3) for p in protocols)
    assert bounds["kde_coefficients"] == expected > 0
    if label_privacy == "joint":
        assert bounds["label_counts"] == expected / protocols[0].count_weight
    else:
        assert bounds["label_counts"] == 3.0
    if protocol == "vector":  # the Skellam sum's whole window: one attacker suffices
        assert model.manipulation_bounds(1)["kde_coefficients"] == expected
