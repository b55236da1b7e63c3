"""Shuffled and local randomized response. Randomised tests: fixed seeds, alpha = 1e-6."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privsum import InvalidParameterError, PrivacyLeakWarning
from privsum.accounting import GuaranteeEvent, PrivacyProfile
from privsum.bitsum import LocalRRBitSum, RRBitSum
from privsum.bitsum.exact import rr_profile, rr_worst_case_delta
from privsum.testing import ProtocolConformance, assert_mean, assert_same_distribution, assert_variance

N = 300


class TestRRConformance(ProtocolConformance):
    calibration_targets = (
        {"epsilon": 1.0, "delta": 1e-6, "n_users": 500},
        {"epsilon": 0.5, "delta": 1e-5, "n_users": 2000, "calibration": "analytic"},
    )

    def make_protocol(self):
        return RRBitSum(n_users=N, flip_probability=0.1, delta=1e-6)

    def make_input(self, rng):
        return rng.integers(0, 2, size=(N, 5))


class TestLocalRRConformance(ProtocolConformance):
    calibration_targets = ({"epsilon": 1.0, "n_users": 50}, {"epsilon": 2.0, "n_users": 50, "calibration": "analytic"})

    def make_protocol(self):
        return LocalRRBitSum(n_users=N, flip_probability=0.2)

    def make_input(self, rng):
        return rng.integers(0, 2, size=(N, 5))


def test_worst_case_recursion_matches_direct_computation_for_every_k():
    n, q, eps = 61, 0.05, np.array([0.2, 0.6, 1.5])
    direct = np.max([rr_profile(n, q, k).delta(eps) for k in range(n)], axis=0)
    np.testing.assert_allclose(rr_worst_case_delta(n, q, eps), direct, rtol=1e-9, atol=1e-15)


def test_all_others_zero_is_not_always_the_worst_neighbour():
    # Documented finding: k = 0 does not dominate at every epsilon, so RR calibrates against all k.
    n, q = 100, 0.01
    profiles = [rr_profile(n, q, k) for k in range(n)]
    assert not all(profiles[0].dominates(other) for other in profiles[1:])


def test_tight_small_n_meets_target_against_every_neighbour_exactly():
    eps, delta, n = 1.0, 1e-4, 400
    protocol = RRBitSum.from_privacy(epsilon=eps, delta=delta, n_users=n)
    worst = max(rr_profile(n, protocol.flip_probability, k).delta(eps) for k in range(n))
    assert worst <= delta * (1 + 1e-9)
    assert protocol.guarantee.epsilon <= eps and protocol.guarantee.delta == delta
    # and it is tight: 1% less flipping misses the target
    assert max(rr_profile(n, 0.99 * protocol.flip_probability, k).delta(eps) for k in range(n)) > delta


def test_tight_at_reference_size_beats_analytic():
    eps, delta, n = 1.0, 1e-6, 100_000
    tight = RRBitSum.from_privacy(epsilon=eps, delta=delta, n_users=n)
    analytic = RRBitSum.from_privacy(epsilon=eps, delta=delta, n_users=n, calibration="analytic")
    assert 0.00030 < tight.flip_probability < 0.00038  # reference: 0.00034
    assert abs(analytic.flip_probability - 64 * math.log(4 / delta) / (2 * n)) < 1e-12
    assert rr_worst_case_delta(n, tight.flip_probability, eps)[0] <= delta * (1 + 1e-9)
    assert tight.rmse() <= 0.4 * analytic.rmse()


def test_event_of_direct_construction_is_verified():
    protocol = RRBitSum(n_users=200, flip_probability=0.05, delta=1e-5)
    event = protocol.event
    assert isinstance(event, GuaranteeEvent)
    worst = rr_worst_case_delta(200, 0.05, event.guarantee.epsilon)[0]
    assert worst <= 1e-5 * (1 + 1e-9)
    assert rr_worst_case_delta(200, 0.05, event.guarantee.epsilon * 0.99)[0] > 1e-5


def test_fewer_participants_weaken_the_guarantee_and_warn():
    protocol = RRBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1000)
    fewer = protocol.event_for_participants(500)
    assert fewer.guarantee.epsilon > protocol.guarantee.epsilon
    assert protocol.event_for_participants(5000) == protocol.event
    with pytest.warns(PrivacyLeakWarning, match="event_for_participants"):
        protocol.randomize(np.zeros((500, 1), dtype=int), rng=0)
    with pytest.warns(PrivacyLeakWarning):
        protocol.sample_view(np.zeros((500, 1), dtype=int), rng=0)


@pytest.mark.parametrize("cls", [RRBitSum, LocalRRBitSum])
def test_unbiased_with_theoretical_variance(cls):
    n, instances = 400, 20_000
    protocol = (
        RRBitSum(n_users=n, flip_probability=0.08, delta=1e-6)
        if cls is RRBitSum
        else LocalRRBitSum(n_users=n, flip_probability=0.3)
    )
    rng = np.random.default_rng(3)
    bits = (rng.random((n, 1)) < 0.3).astype(int).repeat(instances, axis=1)
    estimates = protocol.run(bits, rng=4)
    assert_mean(estimates, bits[:, 0].sum(), variance=protocol.variance())
    assert_variance(estimates, protocol.variance())


def test_fast_and_faithful_paths_agree_in_distribution():
    protocol = RRBitSum(n_users=150, flip_probability=0.1, delta=1e-6)
    bits = np.random.default_rng(5).integers(0, 2, size=(150, 1)).repeat(3000, axis=1)
    fast = protocol.sample_view(bits, rng=6).count(1)
    faithful = protocol.view(protocol.shuffle(protocol.randomize(bits, rng=7), rng=8)).count(1)
    assert_same_distribution(fast, faithful)


def test_validation_names_the_parameter():
    with pytest.raises(InvalidParameterError, match="'flip_probability'"):
        RRBitSum(n_users=10, flip_probability=0.5, delta=1e-6)
    with pytest.raises(InvalidParameterError, match="'flip_probability'"):
        RRBitSum(n_users=10, flip_probability=float("nan"), delta=1e-6)
    with pytest.raises(InvalidParameterError, match="'delta'"):
        RRBitSum.from_privacy(epsilon=1.0, delta=0.0, n_users=10)
    with pytest.raises(InvalidParameterError, match="'n_users'"):
        RRBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=0, calibration="analytic")
    with pytest.raises(InvalidParameterError, match="'calibration'"):
        RRBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=100, calibration="loose")
    with pytest.raises(InvalidParameterError, match="'bits'"):
        RRBitSum(n_users=3, flip_probability=0.1, delta=1e-6).randomize(np.array([[2], [0], [1]]))


def test_local_rr_event_is_the_exact_rr_profile():
    protocol = LocalRRBitSum.from_privacy(epsilon=1.5, n_users=10)
    assert abs(protocol.flip_probability - 1 / (1 + math.exp(1.5))) < 1e-15
    assert isinstance(protocol.event.profile, PrivacyProfile)
    assert protocol.event_for_participants(2) == protocol.event
    assert abs(protocol.guarantee.epsilon - 1.5) < 1e-9 and protocol.guarantee.delta == 0.0


@settings(max_examples=8)
@given(epsilon=st.floats(0.3, 3.0), log_delta=st.floats(-9, -3), n=st.integers(50, 400))
def test_tight_calibration_never_overshoots(epsilon, log_delta, n):
    delta = 10.0**log_delta
    protocol = RRBitSum.from_privacy(epsilon=epsilon, delta=delta, n_users=n)
    assert rr_worst_case_delta(n, protocol.flip_probability, epsilon)[0] <= delta * (1 + 1e-9)
