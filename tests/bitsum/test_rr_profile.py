"""RR composed by its worst-case profile: the dominating pair of the maximum over every neighbour.

Every check is against an exact computation: the all-``k`` brute force
(`privsum.bitsum.exact.rr_worst_case_delta`) on small crowds, the branch-and-bound bound on large ones.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from privsum import InvalidParameterError
from privsum._convolution import convolve_pmfs, fft_error_bound
from privsum.accounting import GuaranteeEvent, PrivacyProfile, ProfileEvent, randomized_response_profile
from privsum.accounting.envelope import symmetric_pair_from_samples
from privsum.accounting.pld import PLDPair
from privsum.bitsum import RRBitSum
from privsum.bitsum import _rr_accounting as rr_module
from privsum.bitsum._rr_pairs import count_pair
from privsum.bitsum.exact import rr_profile, rr_worst_case_delta
from privsum.bitsum.rr import rr_worst_case_delta_bound, rr_worst_case_profile

# Float64 rounding in the brute force is not privacy loss: relative to the delta compared (measured
# at most 3e-13 relative on the crowds below), plus a floor of a few ulps of 1 for the mass it loses,
# measured as ``1 - sum(pmf)`` (rounding near 1 is absolute: 8 * 2.2e-16).
_BRUTE_RTOL = 1e-12
_BRUTE_FLOOR = 8 * np.finfo(float).eps


def _at_least_the_brute_force(mine, exact):
    return np.all(mine >= exact * (1 - _BRUTE_RTOL) - _BRUTE_FLOOR)


def _neighbour_pair(n, q, k, tail_mass, fft_delta_error=0.0):
    """The exact profile of ``k`` ones among the ``n - 1`` others (FFT only within ``fft_delta_error``)."""
    return count_pair(n - 1 - k, k, q, tail_mass, fft_delta_error).profile()


def _hockey_stick(p, q, epsilon):
    return float(np.maximum(p - math.exp(epsilon) * q, 0.0).sum())


@pytest.mark.parametrize(("n", "q"), [(2, 0.2), (41, 0.05), (120, 0.08), (300, 0.01)])
def test_worst_case_profile_is_the_maximum_over_every_neighbour(n, q):
    pair = rr_worst_case_profile(n, q, atol=1e-15)
    largest = math.log((1 - q) / q)
    on_grid = np.linspace(0.0, largest, 101)[:-1]  # multiples of the 1e-3 step: sample points
    between = np.random.default_rng(0).uniform(0.0, largest, 200)
    for eps in (on_grid, between):
        exact = rr_worst_case_delta(n, q, eps)
        mine = pair.delta(eps)
        assert _at_least_the_brute_force(mine, exact)
    exact = rr_worst_case_delta(n, q, on_grid)
    assert np.all(pair.delta(on_grid) <= exact * (1 + 1e-2) + 1e-13)
    # between samples the chords stay close to the maximum where delta matters
    relevant = exact > 1e-12
    assert np.all(pair.delta(on_grid + 5e-4)[relevant] <= rr_worst_case_delta(n, q, on_grid + 5e-4)[relevant] * 1.03 + 1e-13)


def test_pair_hockey_stick_equals_its_profile_in_both_directions():
    pair = rr_worst_case_profile(150, 0.07)
    for eps in (0.0, 0.1, 0.37, 1.0, 2.0):
        forward, backward = _hockey_stick(pair.p, pair.q, eps), _hockey_stick(pair.q, pair.p, eps)
        assert forward == pytest.approx(backward, rel=1e-9, abs=1e-18)
        assert pair.delta(eps) == pytest.approx(forward, rel=1e-9, abs=1e-18)
    assert abs(pair.p.sum() - 1.0) < 1e-9 and abs(pair.q.sum() - 1.0) < 1e-9
    assert pair.dominating_pair is pair


def test_composed_pair_dominates_every_single_neighbour_composition():
    n, q, count = 60, 0.1, 12
    composed = PLDPair.from_profile(rr_worst_case_profile(n, q)).self_compose(count)
    for k in (0, 7, 29, 45, 59):
        single = PLDPair.from_profile(rr_profile(n, q, k)).self_compose(count)
        for eps in (0.5, 1.0, 2.0, 3.0):
            assert composed.delta(eps) >= single.delta(eps) * (1 - 1e-9)


def test_large_crowd_profile_bounds_the_branch_and_bound_maximum():
    n, q = 40_000, 0.08
    pair = rr_worst_case_profile(n, q, atol=1e-16)
    eps = np.array([0.05, 0.1, 0.2, 0.4])
    reference = rr_worst_case_delta_bound(n, q, eps)
    # both are upper bounds; the reference's own slack is a relative 1e-9 plus an absolute 4e-30 (its tails)
    assert np.all(pair.delta(eps) >= reference * (1 - 1e-9) - 4e-30)
    # the samples' documented slack (the maximum at a stretched epsilon, or relative near 0), plus the chords'
    stretch, rtol = rr_module._ENVELOPE_STRETCH, rr_module._ENVELOPE_RTOL
    slack = np.maximum(rr_worst_case_delta_bound(n, q, eps / stretch), reference * (1 + rtol))
    assert np.all(pair.delta(eps) <= slack * 1.03 + 1e-15)
    assert np.all(pair.delta(eps) <= reference * 1.1 + 1e-15)  # and in these tails within 10 % of the maximum


def test_default_event_is_the_profile_and_the_generic_event_stays_reachable():
    protocol = RRBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=500)
    assert isinstance(protocol.event, ProfileEvent)
    assert protocol.guarantee.epsilon <= 1.0 and protocol.guarantee.delta == 1e-6
    assert rr_worst_case_delta(500, protocol.flip_probability, 1.0)[0] <= 1e-6 * (1 + 1e-9)
    generic = RRBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=500, composition="guarantee")
    assert isinstance(generic.event, GuaranteeEvent) and isinstance(protocol.generic_event, GuaranteeEvent)
    assert generic.flip_probability <= protocol.flip_probability  # the profile's slack never helps q
    # composing 50 instances: the profile is far sharper than the generic (epsilon, delta) mechanism
    sharp = protocol.event.pld().self_compose(50).epsilon(1e-5)
    loose = protocol.generic_event.pld().self_compose(50).epsilon(1e-5)
    assert sharp < 0.5 * loose
    with pytest.raises(InvalidParameterError, match="composition"):
        RRBitSum(n_users=10, flip_probability=0.1, delta=1e-6, composition="pld")


def test_event_for_fewer_participants_is_weaker():
    protocol = RRBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=400)
    fewer = protocol.event_for_participants(200)
    assert isinstance(fewer, ProfileEvent)
    assert fewer.guarantee.epsilon > protocol.guarantee.epsilon
    assert rr_worst_case_delta(200, protocol.flip_probability, fewer.guarantee.epsilon)[0] <= 1e-6 * (1 + 1e-9)


@settings(max_examples=10, deadline=None)
@given(epsilon=st.floats(0.3, 2.5), log_delta=st.floats(-9, -3), n=st.integers(20, 250))
def test_profile_calibration_never_overshoots(epsilon, log_delta, n):
    delta = 10.0**log_delta
    protocol = RRBitSum.from_privacy(epsilon=epsilon, delta=delta, n_users=n)
    assert protocol.guarantee.epsilon <= epsilon
    assert protocol.event.profile.delta(epsilon) <= delta * (1 + 1e-9)
    assert _at_least_the_brute_force(delta * (1 + 1e-9), rr_worst_case_delta(n, protocol.flip_probability, epsilon)[0])


def test_symmetric_pair_from_samples_reproduces_a_symmetric_profile_and_validates():
    rr = randomized_response_profile(1.3)
    grid = np.linspace(0.0, 1.3, 27)
    pair = symmetric_pair_from_samples(grid, rr.delta(grid))
    between = np.linspace(0.0, 2.0, 77)
    np.testing.assert_allclose(pair.delta(between), rr.delta(between), rtol=1e-12, atol=0)  # linear in e^eps: exact
    assert isinstance(pair, PrivacyProfile)
    with pytest.raises(InvalidParameterError, match="epsilons"):
        symmetric_pair_from_samples(np.array([0.1, 0.2]), np.array([0.1, 0.0]))
    with pytest.raises(InvalidParameterError, match="deltas"):
        symmetric_pair_from_samples(np.array([0.0, 0.2]), np.array([0.1]))
    # too steep for a symmetric pair's curve past 0 (mass would exceed 1): raised to the steepest line, still above
    steep = symmetric_pair_from_samples(np.array([0.0, 0.01]), np.array([0.9, 0.0]))
    assert abs(steep.p.sum() - 1.0) < 1e-12 and abs(steep.q.sum() - 1.0) < 1e-12
    assert steep.delta(0.0) >= 0.9 and steep.delta(0.01) >= 0.9 - 0.05 * (math.exp(0.01) - 1.0) - 1e-15


def _binomial_pmf(trials, q):
    mean, sd = trials * q, math.sqrt(trials * q * (1 - q))
    support = np.arange(max(0, int(mean - 40 * sd)), min(trials, int(mean + 40 * sd)) + 1)
    return stats.binom.pmf(support, trials, q)


@pytest.mark.parametrize(("first", "second", "q"), [(300_000, 120_000, 0.25), (60_000, 59_000, 0.1), (2_000_000, 5_000, 0.02)])
def test_fft_convolution_error_is_within_its_bound(first, second, q):
    a, b = _binomial_pmf(first, q), _binomial_pmf(second, q)[::-1]
    fast, bound = convolve_pmfs(a, b, allowed_error=1.0)
    slow = np.convolve(a, b)
    assert bound > 0  # the FFT was used
    assert np.abs(fast - slow).sum() <= bound
    assert bound == fft_error_bound(a, b) and np.all(fast >= 0)


def test_fft_pair_equals_direct_pair_within_the_stated_error():
    n, q, k = 700_000, 0.2, 300_000
    direct = _neighbour_pair(n, q, k, 1e-30, 0.0)
    fast = _neighbour_pair(n, q, k, 1e-30, 1.0)
    eps = np.array([0.0, 0.005, 0.01, 0.02])
    extra = fast.infinite_mass - direct.infinite_mass
    assert extra > 0  # the FFT error is counted as infinite loss
    assert np.all(fast.delta(eps) >= direct.delta(eps))
    assert np.all(fast.delta(eps) - direct.delta(eps) <= 2 * extra + 1e-15)
