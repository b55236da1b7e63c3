"""Shuffled and local randomized response. Randomised tests: fixed seeds, alpha = 1e-6."""

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privsum import InvalidParameterError, PrivacyLeakWarning
from privsum.accounting import GuaranteeEvent, PrivacyProfile
from privsum.bitsum import LocalRRBitSum, RRBitSum
from privsum.bitsum._rr_worst_case import block_pair
from privsum.bitsum.exact import rr_profile, rr_worst_case_delta
from privsum.bitsum.rr import rr_worst_case_delta_bound, rr_worst_case_epsilon
from privsum.shuffle import UserChunks
from privsum.testing import ProtocolConformance, assert_mean, assert_same_distribution, assert_variance

N = 300
# Absolute float accuracy of the float brute force's delta (measured 3e-20 against 50 digits at n = 38).
_REFERENCE_ATOL = 1e-18


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
    np.testing.assert_allclose(rr_worst_case_delta(n, q, eps), direct, rtol=1e-9, atol=0)


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
    protocol = RRBitSum(n_users=200, flip_probability=0.05, delta=1e-5, composition="guarantee")
    event = protocol.event
    assert protocol.generic_event == event
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


def _bits(shape, dtype, seed=0):
    return (np.random.default_rng(seed).random(shape) < 0.3).astype(dtype)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int64, bool])
@pytest.mark.parametrize("shape", [(1000, 3), (7, 40_000), (513,)])
def test_streamed_faithful_view_is_the_histogram_of_the_listed_messages(dtype, shape):
    # The counting faithful view draws the same uniforms in the same order as `randomize`.
    protocol = RRBitSum(n_users=5, flip_probability=0.2, delta=1e-6)
    bits = _bits(shape, dtype)
    counted = protocol.partial_view(bits, rng=11, path="faithful").histogram.counts
    listed = protocol.view(protocol.randomize(bits, rng=11)).counts
    np.testing.assert_array_equal(counted, listed)


def test_streamed_faithful_view_of_a_strided_array_is_the_histogram_of_the_listed_messages():
    protocol = LocalRRBitSum(n_users=5, flip_probability=0.3)
    bits = _bits((900, 8), np.int8)[::3, ::-2]
    counted = protocol.partial_view(bits, rng=12, path="faithful").histogram.counts
    listed = protocol.view(protocol.randomize(np.ascontiguousarray(bits), rng=12)).counts
    np.testing.assert_array_equal(counted, listed)


def test_streamed_fast_and_faithful_paths_agree_in_distribution():
    protocol = RRBitSum(n_users=700, flip_probability=0.1, delta=1e-6)
    bits = _bits((700, 1), np.int8, seed=13).repeat(3000, axis=1)
    chunks = [bits[:300], bits[300:]]  # the first chunk spans two blocks of users
    fast = protocol.sample_view_streamed(UserChunks(chunks), rng=14, path="fast").count(1)
    faithful = protocol.sample_view_streamed(UserChunks(chunks), rng=15, path="faithful").count(1)
    assert_same_distribution(fast, faithful)
    assert_mean(faithful, 0.9 * bits[:, 0].sum() + 0.1 * (700 - bits[:, 0].sum()), variance=700 * 0.1 * 0.9)


@pytest.mark.parametrize("bad", [np.array([[0, 2]], np.int8), np.array([[0, -1]], np.int8), np.array([[1, 255]], np.uint8)])
@pytest.mark.parametrize("path", ["fast", "faithful"])
def test_bits_outside_zero_one_raise_on_both_streamed_paths(bad, path):
    with pytest.raises(InvalidParameterError, match="'bits'"):
        RRBitSum(n_users=1, flip_probability=0.1, delta=1e-6).partial_view(bad, rng=0, path=path)


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


def _brute_force_worst_delta(n, q, eps):
    """Reference: every neighbour k = 0..n-1, one exact profile each."""
    return np.max([np.atleast_1d(rr_profile(n, q, k).delta(eps)) for k in range(n)], axis=0)


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 120),
    q=st.floats(0.002, 0.45),
    eps=st.lists(st.floats(0.0, 4.0), min_size=1, max_size=4),
)
def test_branch_and_bound_matches_every_neighbour_brute_force(n, q, eps):
    eps = np.array(eps)
    brute = _brute_force_worst_delta(n, q, eps)
    bound = rr_worst_case_delta_bound(n, q, eps)
    # never below the exact maximum (rr_profile drops tails of 1e-18, the bound 1e-30) ...
    assert np.all(bound >= brute * (1 - 1e-12) - 1e-17)
    # ... and above it only by the documented relative slack
    assert np.all(bound <= brute * (1 + 1e-9) + 1e-15)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 80), q=st.floats(0.005, 0.45), data=st.data())
def test_block_pair_dominates_every_neighbour_of_its_block(n, q, data):
    first = data.draw(st.integers(0, n - 1))
    last = data.draw(st.integers(first, n - 1))
    block = block_pair(n, q, first, last, 1e-30).profile()
    for k in range(first, last + 1):
        neighbour = rr_profile(n, q, k)
        # exact check as in PrivacyProfile.dominates (both curves are piecewise a - b e^eps between
        # the union of breakpoints), with an absolute allowance for float rounding near delta = 0
        grid = np.union1d(block.breakpoints(), neighbour.breakpoints())
        assert np.all(block.delta(grid) >= neighbour.delta(grid) * (1 - 1e-12) - 1e-15)
        assert block.infinite_mass >= neighbour.infinite_mass - 1e-15


@settings(max_examples=15, deadline=None)
@given(n=st.integers(2, 150), q=st.floats(0.005, 0.45), log_delta=st.floats(-12, -2))
def test_worst_case_epsilon_matches_every_neighbour_brute_force(n, q, log_delta):
    delta = 10.0**log_delta
    brute = max(rr_profile(n, q, k, tail_mass=1e-30).epsilon(delta) for k in range(n))
    epsilon = rr_worst_case_epsilon(n, q, delta)
    assert epsilon <= brute * (1 + 1e-9) + 1e-12
    # Not below the exact epsilon: every neighbour's delta at it meets the target. The float
    # reference is accurate to an absolute _REFERENCE_ATOL only (its sums cancel from masses of
    # order 1 down to delta), so a lower epsilon than the reference's is accepted within that.
    assert _brute_force_worst_delta(n, q, epsilon)[0] <= delta * (1 + 1e-9) + _REFERENCE_ATOL


def _exact_worst_delta(n, q, epsilon, digits=50):
    """Every neighbour's delta in 50-digit arithmetic (small n only)."""
    mpmath.mp.dps = digits
    q, x = mpmath.mpf(q), mpmath.exp(mpmath.mpf(epsilon))

    def binomial(trials):
        return [mpmath.binomial(trials, j) * q**j * (1 - q) ** (trials - j) for j in range(trials + 1)]

    worst = mpmath.mpf(0)
    for k in range(n):
        others = {}
        for i, a in enumerate(binomial(n - 1 - k)):
            for j, b in enumerate(binomial(k)):
                others[i - j] = others.get(i - j, 0) + a * b
        support = range(min(others) - 1, max(others) + 2)
        p = [(1 - q) * others.get(v, 0) + q * others.get(v - 1, 0) for v in support]
        r = [q * others.get(v, 0) + (1 - q) * others.get(v - 1, 0) for v in support]
        forward = sum(max(a - x * b, 0) for a, b in zip(p, r, strict=True))
        backward = sum(max(b - x * a, 0) for a, b in zip(p, r, strict=True))
        worst = max(worst, forward, backward)
    return worst


def test_worst_case_epsilon_is_feasible_in_exact_arithmetic_where_the_float_reference_is_not():
    """A case where the float reference's delta is off by 3e-20 (relative 3e-8) at delta = 1e-12."""
    n, q, delta = 38, 0.208984375, 1e-12
    epsilon = rr_worst_case_epsilon(n, q, delta)
    assert _exact_worst_delta(n, q, epsilon) <= delta
    assert _exact_worst_delta(n, q, epsilon * (1 - 1e-9)) > delta  # and tight to the stated 1e-9
    assert abs(_exact_worst_delta(n, q, epsilon) - rr_worst_case_delta_bound(n, q, epsilon)[0]) <= _REFERENCE_ATOL


def test_branch_and_bound_matches_the_recursion_at_a_large_size():
    n, q = 20_000, 0.0017  # the worst k is 0 at epsilon 1 and interior (k ~ 47) at 0.7
    eps = np.array([0.3, 0.7, 1.0, 1.5])
    reference, reference_k = rr_worst_case_delta(n, q, eps, return_worst_k=True)
    bound = rr_worst_case_delta_bound(n, q, eps)
    np.testing.assert_allclose(bound, reference, rtol=1e-9, atol=0)
    assert reference_k[1] > 0  # the interior worst case is really exercised
    worst_at_07 = rr_worst_case_delta_bound(n, q, 0.7, return_worst_k=True)[1][0]
    assert worst_at_07 == reference_k[1]


def test_million_users_accounting_is_verified_against_blocks():
    n = 1_000_000
    protocol = RRBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=n)
    assert rr_worst_case_delta_bound(n, protocol.flip_probability, 1.0)[0] <= 1e-6 * (1 + 1e-9)
    assert rr_worst_case_delta_bound(n, 0.99 * protocol.flip_probability, 1.0)[0] > 1e-6
    epsilon = RRBitSum(n_users=n, flip_probability=protocol.flip_probability, delta=1e-6).guarantee.epsilon
    assert 0.999 < epsilon <= 1.0 + 1e-8
