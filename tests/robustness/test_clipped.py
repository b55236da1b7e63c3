"""Manipulation bounds of the clipped sums: the threshold rule adds or drops honest sub-domains."""

from __future__ import annotations

import numpy as np
import pytest

from privsum.clipping import ClippedSum, ClippedVectorSum, SparseVectorAggregation
from privsum.shuffle import MessageBatch
from tests.robustness.attacks import random_plans

N_USERS = 300


@pytest.fixture(scope="module")
def clipped() -> ClippedSum:
    return ClippedSum.from_privacy(epsilon=2.0, delta=1e-6, n_users=N_USERS, domain=2**3, method="correlated")


def messages(plans: dict[int, tuple[int, int]], n_instances: int) -> MessageBatch:
    """``plans[instance] = (value, count)``."""
    instances = np.concatenate([np.full(count, instance) for instance, (_, count) in plans.items()])
    values = np.concatenate([np.full(count, value) for value, count in plans.values()])
    return MessageBatch(instances.astype(np.int64), values.astype(np.int64), n_instances)


def test_dropping_every_sub_domain_nearly_reaches_the_bound(clipped):
    """Honest ``S_j = T_j + A_j - step`` (all pass); the attack pulls each down by ``A_j``, so only ``S_0`` stays."""
    n_malicious, cap = 1, clipped.per_sender_message_cap()
    width = clipped.n_sub_domains
    attack_bounds = clipped.sub_domain_manipulation_bounds(n_malicious)
    steps = np.array([p.scale for p in clipped.instances])
    honest_plan = {j: (1, round((clipped.thresholds[j] + attack_bounds[j]) / steps[j]) - 1) for j in range(1, width)}
    attack_plan = {j: (-p.levels, n_malicious * cap) for j, p in enumerate(clipped.instances)}
    honest = clipped.view(messages(honest_plan, width))
    attacked = honest + clipped.view(messages(attack_plan, width))
    assert clipped.analyze_details(honest).clipping_index[0] == width - 1
    assert clipped.analyze_details(attacked).clipping_index[0] == 0
    moved = clipped.analyze(attacked)[0] - clipped.analyze(honest)[0]
    bound = clipped.manipulation_bound(n_malicious)
    assert -moved == pytest.approx(bound - steps[1:].sum(), rel=1e-12)
    assert -moved <= bound


def test_random_attacks_on_an_honest_view_stay_within_the_bound(clipped):
    rng = np.random.default_rng(0)
    honest = clipped.sample_view(rng.integers(0, 6, size=(N_USERS, 4)), rng=1)
    details = clipped.analyze_details(honest)
    assert np.all(details.sub_domain_estimates >= -clipped.thresholds)  # the bound's condition (probability >= 1 - beta)
    cap = clipped.per_sender_message_cap()
    for n_malicious in (1, 3):
        plans = []
        for j in range(honest.n_instances):
            protocol = clipped.instances[j % clipped.n_sub_domains]
            plans.append(random_plans(rng, protocol.alphabet, 1, n_malicious, min(cap, 40))[0])
        instances = np.concatenate([np.full(sum(p.values()), i) for i, p in enumerate(plans)]).astype(np.int64)
        values = np.concatenate([np.repeat(list(p), list(p.values())) for p in plans if p]).astype(np.int64)
        attacked = honest + clipped.view(MessageBatch(instances, values, honest.n_instances))
        moved = clipped.analyze(attacked) - clipped.analyze(honest)
        assert np.all(np.abs(moved) <= clipped.manipulation_bound(n_malicious))


def test_vector_clipped_sums_state_finite_bounds_for_correlated_instances():
    vector = ClippedVectorSum.from_privacy(
        epsilon=4.0, delta=1e-6, n_users=N_USERS, dimension=3, radius=1.0, levels=2**3, method="correlated"
    )
    column = vector.coordinate.manipulation_bound(2)
    assert vector.manipulation_bound(2) == pytest.approx(2 * np.sqrt(vector.padded_dimension) * vector.step * column)
    assert vector.manipulation_bound(0) == 0.0
    sparse = SparseVectorAggregation.from_privacy(epsilon=4.0, delta=1e-6, n_users=N_USERS, dimension=4, method="correlated")
    assert 0 < sparse.manipulation_bound(1) < sparse.manipulation_bound(2) < np.inf
    assert sparse.manipulation_bound(0) == 0.0


def test_sparse_aggregation_random_attacks_stay_within_the_bound():
    protocol = SparseVectorAggregation.from_privacy(epsilon=4.0, delta=1e-6, n_users=N_USERS, dimension=4, method="correlated")
    rng = np.random.default_rng(2)
    honest = protocol.sample_view(rng.integers(0, 2, size=(N_USERS, 4)), rng=3)
    n_instances = honest.n_instances
    instances_of = [protocol.count] * protocol.n_levels + [p for p in protocol.levels for _ in range(protocol.dimension)]
    cap = protocol.per_sender_message_cap()
    for n_malicious in (1, 2):
        plans = [random_plans(rng, p.alphabet, 1, n_malicious, min(cap, 30))[0] for p in instances_of]
        instances = np.concatenate([np.full(sum(p.values()), i) for i, p in enumerate(plans)]).astype(np.int64)
        values = np.concatenate([np.repeat(list(p), list(p.values())) for p in plans if p]).astype(np.int64)
        attacked = honest + protocol.view(MessageBatch(instances, values, n_instances))
        moved = protocol.analyze(attacked) - protocol.analyze(honest)
        assert np.all(np.abs(moved) <= protocol.manipulation_bound(n_malicious))
