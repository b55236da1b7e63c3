"""Black-box audits of real protocols on their faithful path (false-alarm rate 1e-6 per audit).

Each audit runs the protocol on neighbouring datasets (one user's bit flipped, everyone else's
bits fixed) and lower-bounds epsilon at the protocol's own delta. A true claim must not be
refuted; a negative control (the same protocol with less noise than its claim assumes) must be.
"""

import dataclasses

import numpy as np

from privsum.bitsum import LocalRRBitSum, RRBitSum, ThreeNBBitSum
from privsum.testing.audit import audit_privacy

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
