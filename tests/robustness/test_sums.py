"""Manipulation bounds of the real and vector sums: exact shifts under worst-case and random attacks."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from privsum.shuffle import MessageBatch
from privsum.shuffle.sparse import SparseMessageHistogram
from privsum.sums import (
    BlanketRealSum,
    CentralGaussianVectorSum,
    CorrelatedNoiseSum,
    ExactVectorSum,
    MultiMessageSum,
    ShuffledVectorSum,
    SkellamVectorSum,
)
from privsum.sums.sparse_shares import SparseMultiMessageSum
from tests.robustness.attacks import attack_batch, random_plans, shift

N_USERS = 400


def test_blanket_worst_attack_reaches_the_bound():
    protocol = BlanketRealSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=N_USERS, calibration="analytic")
    honest = protocol.sample_view(np.random.default_rng(0).random((N_USERS, 3)), rng=1)
    k, gamma = protocol.precision, protocol.blanket_probability
    for n_malicious in (1, 9):
        bound = protocol.manipulation_bound(n_malicious)
        assert bound == pytest.approx(n_malicious * (1 - gamma / 2) / (1 - gamma), rel=1e-12)
        np.testing.assert_allclose(shift(protocol, honest, attack_batch(3, {k: n_malicious})), bound, rtol=1e-9)
    rng = np.random.default_rng(2)
    plans = random_plans(rng, protocol.alphabet, 3, 12, protocol.per_sender_message_cap())
    assert np.all(np.abs(shift(protocol, honest, attack_batch(3, plans))) <= protocol.manipulation_bound(12) * (1 + 1e-12))


def test_correlated_worst_attack_reaches_the_bound():
    protocol = CorrelatedNoiseSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=N_USERS, domain=3)
    honest = protocol.sample_view(np.random.default_rng(0).integers(0, 4, size=(N_USERS, 2)), rng=1)
    cap = protocol.per_sender_message_cap(1e-6)
    top = protocol.levels
    for n_malicious in (1, 2):
        bound = protocol.manipulation_bound(n_malicious, cap=cap)
        assert bound == pytest.approx(n_malicious * cap * protocol.domain, rel=1e-12)
        for sign in (1, -1):
            moved = shift(protocol, honest, attack_batch(2, {sign * top: n_malicious * cap}))
            np.testing.assert_allclose(moved, sign * bound, rtol=1e-9)
    plans = random_plans(np.random.default_rng(3), protocol.alphabet, 2, 3, 50)  # within the cap
    assert np.all(np.abs(shift(protocol, honest, attack_batch(2, plans))) <= protocol.manipulation_bound(3))


@pytest.mark.parametrize("cls", [MultiMessageSum, SparseMultiMessageSum])
def test_one_share_sender_sets_the_estimate_anywhere_in_the_window(cls):
    """BBGN20 has no useful bound: one sender's shares move the estimate to every value of the window."""
    protocol = cls.from_privacy(epsilon=1.0, delta=1e-6, n_users=N_USERS, domain=4)
    q, m = protocol.modulus, protocol.n_shares
    centre = protocol.n_users * protocol.domain // 2
    low, high = centre - q // 2, centre + q - 1 - q // 2
    assert protocol.manipulation_bound(1) == protocol.manipulation_bound(5) == q - 1 == high - low
    assert protocol.per_sender_message_cap() == m
    honest = protocol.sample_view(np.random.default_rng(0).integers(0, 5, size=N_USERS), rng=1)
    honest_residue = int((protocol.analyze(honest)[0] - centre) % q + centre) % q
    for target in (low, high, centre, low + 17):
        shares = np.random.default_rng(target % 1000).integers(0, q, size=m)
        shares[-1] = (target - honest_residue - shares[:-1].sum()) % q
        attack = MessageBatch(np.zeros(m, dtype=np.int64), shares, 1)
        attacked = protocol.view(attack) + protocol.view(honest)
        assert protocol.analyze(attacked)[0] == target
    # from one edge of the window to the other: the bound is reached
    at_low = _shares_view(protocol, low, m * N_USERS)
    shares = np.zeros(m, dtype=np.int64)
    shares[0] = q - 1
    moved = protocol.analyze(protocol.view(at_low) + protocol.view(MessageBatch(np.zeros(m, dtype=np.int64), shares, 1)))
    assert moved[0] - protocol.analyze(at_low)[0] == q - 1


def _shares_view(protocol, target: int, n_messages: int):
    """A view of ``n_messages`` uniform shares whose sum is ``target`` modulo ``q`` (what honest users could send)."""
    q = protocol.modulus
    shares = np.random.default_rng(7).integers(0, q, size=n_messages)
    shares[-1] = (target - shares[:-1].sum()) % q
    return protocol.view(MessageBatch(np.zeros(n_messages, dtype=np.int64), shares, 1))


def test_skellam_one_sender_spans_the_decoding_window():
    protocol = SkellamVectorSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=N_USERS, dimension=3, norm_bound=1.0)
    q, m, d = protocol.modulus, protocol.n_shares, protocol.dimension
    assert protocol.manipulation_bound(1) == pytest.approx((q - 1) / protocol.scale, rel=1e-12)
    assert protocol.per_sender_message_cap() == m
    half = q // 2
    lowest, highest = -(half - 1), q - half  # the decoded residues' range
    honest = _residue_view(np.full(d, lowest % q), d)
    attack = _residue_view(np.full(d, highest - lowest), d)
    moved = protocol.analyze(honest + attack) - protocol.analyze(honest)
    np.testing.assert_allclose(moved, protocol.manipulation_bound(1), rtol=1e-12)


def _residue_view(residues: np.ndarray, dimension: int) -> SparseMessageHistogram:
    """One message per coordinate carrying the given residue (a sender's shares, summed)."""
    ones = np.ones(dimension, dtype=np.int64)
    return SparseMessageHistogram.from_pairs(np.arange(dimension), residues.astype(np.int64), ones, dimension)


@pytest.mark.parametrize("symmetric", [False, True])
def test_vector_sum_sampling_rate_attack_reaches_the_bound(symmetric):
    base = ShuffledVectorSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=N_USERS, dimension=4, symmetric=symmetric)
    protocol = dataclasses.replace(base, estimator="sampling_rate")
    low_end = -1.0 if symmetric else 0.0
    honest = protocol.sample_view(np.random.default_rng(0).uniform(low_end, 1.0, size=(N_USERS, 4)), rng=1)
    k, t, d = protocol.precision, protocol.samples, protocol.dimension
    assert t == 1  # each attacker sends its one message to coordinate 0
    n_malicious = 3
    bound = protocol.manipulation_bound(n_malicious)
    up = shift(protocol, honest, attack_batch(d, [{k: n_malicious}, {}, {}, {}]))
    assert np.all(np.abs(up) <= bound * (1 + 1e-12))
    # the other direction: value 0 on coordinate 0 (symmetric: every attacker uses all t messages)
    down = shift(protocol, honest, attack_batch(d, [{0: n_malicious}, {}, {}, {}]))
    assert np.all(np.abs(down) <= bound * (1 + 1e-12))
    assert max(abs(up[0]), abs(down[0])) == pytest.approx(bound, rel=1e-9)


def test_vector_sum_report_count_random_attacks_stay_within_the_bound():
    protocol = ShuffledVectorSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=N_USERS, dimension=4)
    honest = protocol.sample_view(np.random.default_rng(0).random((N_USERS, 4)), rng=1)
    rng = np.random.default_rng(5)
    for n_malicious in (1, 3, 10):
        senders = rng.integers(0, protocol.dimension, size=n_malicious)  # t = 1 message each
        values = rng.integers(0, protocol.precision + 1, size=n_malicious)
        moved = shift(protocol, honest, MessageBatch(senders, values, protocol.dimension))
        assert np.all(np.abs(moved) <= protocol.manipulation_bound(n_malicious))
    # the worst case: a coordinate nobody honest reported on, moved by one attacker from n/2 to n u_max
    empty = protocol.view(MessageBatch(np.ones(N_USERS, dtype=np.int64), np.zeros(N_USERS, dtype=np.int64), protocol.dimension))
    moved = shift(protocol, empty, MessageBatch(np.zeros(1, dtype=np.int64), np.array([protocol.precision]), protocol.dimension))
    assert abs(moved[0]) > N_USERS / 2 and abs(moved[0]) <= protocol.manipulation_bound(1)


def test_curated_vector_sums_move_by_the_accepted_norm():
    exact = ExactVectorSum(n_users=10, dimension=3, norm_bound=2.0)
    honest = np.random.default_rng(0).normal(size=(10, 3)) * 0.1
    attackers = np.tile([[2.0, 0.0, 0.0]], (3, 1))
    moved = exact.run(np.vstack([honest, attackers])) - exact.run(honest)
    assert moved[0] == pytest.approx(6.0) and moved[0] <= exact.manipulation_bound(3)
    assert exact.manipulation_bound(3) == pytest.approx(6.0, rel=1e-11)
    gaussian = CentralGaussianVectorSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=10, dimension=3, norm_bound=2.0)
    assert gaussian.manipulation_bound(3) == exact.manipulation_bound(3)
