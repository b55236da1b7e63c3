"""3NB with communication-optimal flooding, and the fast exact two-count profile.

Every calibration is checked against the exact two-count profile on the full two-dimensional grid
(`signed_count_profile_grid`), independent of the one-dimensional reduction the calibration uses.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from privsum import InvalidParameterError
from privsum.accounting import PrivacyProfile
from privsum.bitsum import ThreeNBBitSum
from privsum.bitsum.exact import _plus_geometric, signed_count_profile, signed_count_profile_grid
from privsum.bitsum.noise import COMMUNICATION_VARIANCE_FACTOR


def test_communication_flooding_meets_the_target_on_the_exact_grid_with_fewer_messages():
    eps, delta, n = 1.0, 1e-6, 1000
    paper = ThreeNBBitSum.from_privacy(epsilon=eps, delta=delta, n_users=n, flooding="paper")
    cheap = ThreeNBBitSum.from_privacy(epsilon=eps, delta=delta, n_users=n, flooding="communication")
    grid = signed_count_profile_grid(1.0, cheap.noise_ratio, cheap.flooding_shape, cheap.flooding_ratio, tail_mass=1e-16)
    assert grid.delta(eps) <= delta * (1 + 1e-9)
    assert cheap.guarantee.epsilon <= eps and cheap.guarantee.delta == delta
    assert cheap.variance() <= COMMUNICATION_VARIANCE_FACTOR * paper.variance() * (1 + 1e-9)
    assert cheap.expected_messages_per_user < 0.7 * paper.expected_messages_per_user
    # the paper's constants stay reachable by name (and are the default)
    default = ThreeNBBitSum.from_privacy(epsilon=eps, delta=delta, n_users=n)
    assert default == paper and math.isclose(paper.flooding_shape, 3 * (1 + math.log(1 / delta)))
    assert math.isclose(paper.flooding_ratio, math.exp(-0.04 * eps))


@settings(max_examples=6, deadline=None)
@given(epsilon=st.floats(0.3, 2.0), log_delta=st.floats(-9, -4))
def test_communication_flooding_never_overshoots(epsilon, log_delta):
    delta = 10.0**log_delta
    protocol = ThreeNBBitSum.from_privacy(epsilon=epsilon, delta=delta, n_users=2000, flooding="communication")
    exact = signed_count_profile_grid(
        1.0, protocol.noise_ratio, protocol.flooding_shape, protocol.flooding_ratio, tail_mass=min(1e-16, 1e-8 * delta)
    )
    assert exact.delta(epsilon) <= delta * (1 + 1e-9)


def test_flooding_choice_is_validated():
    with pytest.raises(InvalidParameterError, match="flooding"):
        ThreeNBBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=100, flooding="none")
    with pytest.raises(InvalidParameterError, match="calibration"):
        ThreeNBBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=100, calibration="analytic", flooding="communication")


@pytest.mark.parametrize(("shape", "ratio", "hidden"), [(5.0, 0.7, 0.25), (66.0, 0.999, 0.97), (0.5, 0.9, 0.5)])
def test_geometric_recursion_equals_the_direct_convolution(shape, ratio, hidden):
    flooding = stats.nbinom.pmf(np.arange(4000), shape, 1 - ratio)
    fast, dropped = _plus_geometric(flooding, hidden, 1e-18)
    geometric = stats.nbinom.pmf(np.arange(fast.size), 1, 1 - hidden)
    slow = np.convolve(flooding, geometric)[: fast.size]
    np.testing.assert_allclose(fast, slow, rtol=1e-10, atol=1e-300)
    assert dropped <= 1e-18 and abs(1 - dropped - fast.sum() - stats.nbinom.sf(3999, shape, 1 - ratio)) < 1e-12


def test_fast_profile_equals_the_two_dimensional_grid_at_paper_like_parameters():
    args = (1.0, math.exp(-0.9), 40.0, math.exp(-0.04))
    fast, grid = signed_count_profile(*args, tail_mass=1e-16), signed_count_profile_grid(*args, tail_mass=1e-16)
    eps = np.linspace(0.0, 2.0, 41)
    np.testing.assert_allclose(fast.delta(eps), grid.delta(eps), rtol=1e-9, atol=1e-14)
    assert isinstance(fast, PrivacyProfile)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sort_free_losses_equal_the_sorted_profile(seed):
    rng = np.random.default_rng(seed)
    base = signed_count_profile(1.0, 0.6, 12.0, 0.9, tail_mass=1e-14)  # one leading point, then a monotone run
    order = rng.permutation(base.p.size)  # the same pair with its support shuffled: general (sorting) path
    shuffled = PrivacyProfile(base.p[order], base.q[order], p_tail=base.p_tail, q_tail=base.q_tail)
    eps = np.linspace(0.0, 3.0, 61)
    np.testing.assert_allclose(base.delta(eps), shuffled.delta(eps), rtol=1e-12, atol=1e-18)
    for delta in (1e-3, 1e-6, 1e-9):
        assert base.epsilon(delta) == pytest.approx(shuffled.epsilon(delta), rel=1e-9)
