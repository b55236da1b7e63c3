"""Manipulation bounds of the bit sums: exact shifts under worst-case and random well-formed attacks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privsum.bitsum import LocalRRBitSum, PureBitSum, RRBitSum, ThreeNBBitSum
from privsum.exceptions import InvalidParameterError
from tests.robustness.attacks import attack_batch, random_plans, shift

N_USERS, N_INSTANCES = 500, 6


def honest_view(protocol, seed: int = 0):
    bits = np.random.default_rng(seed).integers(0, 2, size=(N_USERS, N_INSTANCES))
    return protocol.sample_view(bits, rng=seed + 1)


RR_PROTOCOLS = [
    RRBitSum(n_users=N_USERS, flip_probability=0.1, delta=1e-6),
    LocalRRBitSum.from_privacy(epsilon=1.0, n_users=N_USERS),
]


@pytest.mark.parametrize("protocol", RR_PROTOCOLS, ids=lambda p: type(p).__name__)
@pytest.mark.parametrize("n_malicious", [1, 7])
def test_rr_worst_attack_reaches_the_bound(protocol, n_malicious):
    q = protocol.flip_probability
    bound = protocol.manipulation_bound(n_malicious)
    assert bound == pytest.approx(n_malicious * (1 - q) / (1 - 2 * q), rel=1e-12)
    assert protocol.per_sender_message_cap() == 1
    moved = shift(protocol, honest_view(protocol), attack_batch(N_INSTANCES, {1: n_malicious}))
    np.testing.assert_allclose(moved, bound, rtol=1e-9)
    down = shift(protocol, honest_view(protocol), attack_batch(N_INSTANCES, {0: n_malicious}))
    np.testing.assert_allclose(down, -n_malicious * q / (1 - 2 * q), rtol=1e-9)  # the other direction is weaker
    assert protocol.largest_decrease(n_malicious) == pytest.approx(n_malicious * q / (1 - 2 * q), rel=1e-12)


@pytest.mark.parametrize("protocol", RR_PROTOCOLS, ids=lambda p: type(p).__name__)
def test_rr_random_attacks_stay_within_the_bound(protocol):
    rng = np.random.default_rng(3)
    honest = honest_view(protocol)
    for n_malicious in (1, 4, 20):
        plans = random_plans(rng, protocol.alphabet, N_INSTANCES, n_malicious, protocol.per_sender_message_cap())
        moved = shift(protocol, honest, attack_batch(N_INSTANCES, plans))
        assert np.all(np.abs(moved) <= protocol.manipulation_bound(n_malicious) * (1 + 1e-12))


SIGNED = [
    ThreeNBBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=N_USERS),
    PureBitSum.from_privacy(epsilon=1.0, n_users=N_USERS),
]


@pytest.mark.parametrize("protocol", SIGNED, ids=lambda p: type(p).__name__)
def test_signed_counts_worst_attack_reaches_the_bound(protocol):
    cap = protocol.per_sender_message_cap()
    scale = 1 / (1 - protocol.drop_probability)
    for n_malicious in (1, 3):
        bound = protocol.manipulation_bound(n_malicious)
        assert bound == pytest.approx(n_malicious * cap * scale, rel=1e-12)
        for sign in (1, -1):
            moved = shift(protocol, honest_view(protocol), attack_batch(N_INSTANCES, {sign: n_malicious * cap}))
            np.testing.assert_allclose(moved, sign * bound, rtol=1e-9)
        assert protocol.largest_decrease(n_malicious) == bound


@pytest.mark.parametrize("protocol", SIGNED, ids=lambda p: type(p).__name__)
def test_signed_counts_random_attacks_stay_within_the_bound(protocol):
    rng = np.random.default_rng(4)
    honest = honest_view(protocol)
    cap = protocol.per_sender_message_cap()
    for n_malicious in (1, 5):
        plans = random_plans(rng, protocol.alphabet, N_INSTANCES, n_malicious, cap)
        moved = shift(protocol, honest, attack_batch(N_INSTANCES, plans))
        assert np.all(np.abs(moved) <= protocol.manipulation_bound(n_malicious) * (1 + 1e-12))


def test_no_malicious_sender_moves_nothing():
    for protocol in RR_PROTOCOLS + SIGNED:
        assert protocol.manipulation_bound(0) == 0.0


def test_cap_grows_as_the_tail_probability_shrinks():
    protocol = SIGNED[0]
    caps = [protocol.per_sender_message_cap(tail) for tail in (1e-3, 1e-6, 1e-12)]
    assert caps == sorted(caps) and caps[0] < caps[-1]
    assert protocol.manipulation_bound(2, cap=caps[0]) == 2 * caps[0]


@pytest.mark.parametrize("bad", [0.0, 1.0, -1e-3, math.nan, "0.1"])
def test_bad_tail_probability_is_refused(bad):
    with pytest.raises(InvalidParameterError, match="tail_probability"):
        SIGNED[0].per_sender_message_cap(bad)


@pytest.mark.parametrize("bad", [-1, 1.5, math.nan, True])
def test_bad_number_of_malicious_senders_is_refused(bad):
    with pytest.raises(InvalidParameterError, match="n_malicious"):
        RR_PROTOCOLS[0].manipulation_bound(bad)


@pytest.mark.parametrize("bad", [0, -2, 1.5, "3"])
def test_bad_cap_is_refused(bad):
    with pytest.raises(InvalidParameterError, match="'cap'"):
        SIGNED[0].manipulation_bound(1, cap=bad)


def test_a_deployment_cap_scales_the_bound():
    """The bound at the cap a shuffler actually enforces (e.g. one computed for many instances at once)."""
    protocol = SIGNED[0]
    assert protocol.manipulation_bound(3, cap=50) == 150.0
    honest = honest_view(protocol)
    moved = shift(protocol, honest, attack_batch(N_INSTANCES, {1: 3 * 50}))
    np.testing.assert_allclose(moved, 150.0, rtol=1e-12)
