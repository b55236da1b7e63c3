"""Black-box audits of real protocols (false-alarm rate 1e-6 per audit).

Each audit runs the protocol on neighbouring datasets (one user's input changed, everyone else's
fixed) and lower-bounds epsilon at the protocol's own delta. A true claim must not be refuted; a
negative control (the same protocol with less noise than its claim assumes) must be. The first
three tests audit RR, local RR and 3NB on the faithful path one run at a time; the cases of
`tests.testing.audit_cases` cover every other protocol, the KDE and the private RACE release.
"""

import dataclasses

import numpy as np
import pytest

from privsum.bitsum import LocalRRBitSum, RRBitSum, ThreeNBBitSum
from privsum.testing.audit import audit_privacy
from tests.testing.audit_cases import all_cases

ALPHA = 1e-6


def counts_mechanism(protocol):
    def mechanism(bits, rng):
        view = protocol.view(protocol.randomize(bits, rng=rng))
        return tuple(int(view.count(value)[0]) for value in protocol.alphabet)

    return mechanism


def neighbours(n_users):
    dataset = np.zeros((n_users, 1), dtype=np.int8)
    neighbour = dataset.copy()
    neighbour[0, 0] = 1
    return dataset, neighbour


def test_shuffled_rr_claim_survives_and_an_under_noised_copy_is_caught():
    protocol = RRBitSum.from_privacy(epsilon=1.0, delta=1e-3, n_users=4)
    dataset, neighbour = neighbours(4)
    honest = audit_privacy(counts_mechanism(protocol), dataset, neighbour, n_trials=30_000, delta=1e-3, alpha=ALPHA, rng=0)
    assert not honest.refutes(protocol.guarantee.epsilon)
    weaker = dataclasses.replace(protocol, flip_probability=protocol.flip_probability / 8)
    caught = audit_privacy(counts_mechanism(weaker), dataset, neighbour, n_trials=30_000, delta=1e-3, alpha=ALPHA, rng=1)
    assert caught.refutes(protocol.guarantee.epsilon)


def test_local_rr_claim_survives():
    protocol = LocalRRBitSum.from_privacy(epsilon=1.0, n_users=3)
    dataset, neighbour = neighbours(3)
    result = audit_privacy(counts_mechanism(protocol), dataset, neighbour, n_trials=30_000, alpha=ALPHA, rng=2)
    assert not result.refutes(protocol.guarantee.epsilon)
    assert result.epsilon_lower_bound > 0.5  # the audit has power against a 1.0-LDP randomizer


def test_three_nb_claim_survives_and_a_nearly_noise_free_copy_is_caught():
    protocol = ThreeNBBitSum.from_privacy(epsilon=1.0, delta=1e-3, n_users=3)
    dataset, neighbour = neighbours(3)
    honest = audit_privacy(counts_mechanism(protocol), dataset, neighbour, n_trials=20_000, delta=1e-3, alpha=ALPHA, rng=3)
    assert not honest.refutes(protocol.guarantee.epsilon)
    no_noise = dataclasses.replace(protocol, noise_ratio=1e-3, flooding_ratio=1e-3)
    caught = audit_privacy(counts_mechanism(no_noise), dataset, neighbour, n_trials=2_000, delta=1e-3, alpha=ALPHA, rng=4)
    assert caught.refutes(protocol.guarantee.epsilon)


CASES = all_cases()
FAITHFUL = [case for case in CASES if case.faithful_trials]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_claim_survives_the_audit_and_the_negative_control_is_caught(case):
    honest = case.audit()
    assert not honest.refutes(case.claimed.epsilon)
    assert honest.epsilon_lower_bound > 0.2 * case.claimed.epsilon  # the audit has power on this pair
    assert case.audit(control=True).refutes(case.claimed.epsilon)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_claim_survives_a_larger_audit(case):
    honest = case.audit(n_trials=case.slow_trials, seed=1)
    assert not honest.refutes(case.claimed.epsilon)
    assert case.audit(control=True, n_trials=case.slow_trials, seed=1).refutes(case.claimed.epsilon)


@pytest.mark.slow
@pytest.mark.parametrize("case", FAITHFUL, ids=lambda case: case.name)
def test_claim_survives_the_audit_on_the_faithful_path(case):
    honest = case.audit(n_trials=case.faithful_trials, seed=2, path="faithful")
    assert not honest.refutes(case.claimed.epsilon)
    assert case.audit(control=True, n_trials=case.faithful_trials, seed=2, path="faithful").refutes(case.claimed.epsilon)
