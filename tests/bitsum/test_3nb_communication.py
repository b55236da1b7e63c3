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
from privsum.testing.stats import assert_mean


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
    np.testing.assert_allclose(fast.delta(eps), grid.delta(eps), rtol=1e-9, atol=3e-16)  # floor: 3 tail_mass (see test_noise)
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


def _summed_means(protocol: ThreeNBBitSum) -> float:
    """``p/(1-p) + r' p'/(1-p')``: the noise and flooding messages of all users, per instance."""
    p, r, a = protocol.noise_ratio, protocol.flooding_shape, protocol.flooding_ratio
    return p / (1 - p) + r * a / (1 - a)


def test_variance_factor_trades_variance_for_messages_within_its_bound():
    eps, delta, n = 1.0, 1e-6, 1000
    paper = ThreeNBBitSum.from_privacy(epsilon=eps, delta=delta, n_users=n)
    default = ThreeNBBitSum.from_privacy(epsilon=eps, delta=delta, n_users=n, flooding="communication")
    explicit = ThreeNBBitSum.from_privacy(
        epsilon=eps, delta=delta, n_users=n, flooding="communication", variance_factor=COMMUNICATION_VARIANCE_FACTOR
    )
    assert explicit == default  # None means the stated default factor
    cheaper = ThreeNBBitSum.from_privacy(epsilon=eps, delta=delta, n_users=n, flooding="communication", variance_factor=4.0)
    grid = signed_count_profile_grid(1.0, cheaper.noise_ratio, cheaper.flooding_shape, cheaper.flooding_ratio, tail_mass=1e-16)
    assert grid.delta(eps) <= delta * (1 + 1e-9)
    assert cheaper.guarantee.epsilon <= eps
    assert cheaper.variance() <= 4.0 * paper.variance() * (1 + 1e-9)
    assert cheaper.expected_messages_per_user < default.expected_messages_per_user < paper.expected_messages_per_user


# (epsilon, delta, n, variance factor): small epsilon (the bound wins), large factor at epsilon 2
# (an interior noise ratio wins), a small delta with the default factor.
GRID_SETTINGS = [
    (1.0, 1e-6, 1000, 2.0),
    (2.0, 1e-5, 300, 16.0),
    pytest.param(0.5, 1e-8, 5000, 1.1, marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("eps", "delta", "n", "factor"), GRID_SETTINGS)
def test_no_point_of_a_coarse_exhaustive_grid_is_cheaper_and_feasible(eps, delta, n, factor):
    """Every grid point ``(p, r', p')`` within the variance bound that sends fewer messages misses the target."""
    paper = ThreeNBBitSum.from_privacy(epsilon=eps, delta=delta, n_users=n)
    cheap = ThreeNBBitSum.from_privacy(epsilon=eps, delta=delta, n_users=n, flooding="communication", variance_factor=factor)
    calibrated = _summed_means(cheap)
    most_noise, least_noise = -math.log(cheap.noise_ratio), -math.log(paper.noise_ratio)
    bound = factor * paper.variance()
    checked = 0
    for log_ratio in np.linspace(min(most_noise, least_noise), least_noise, 4):
        p = math.exp(-log_ratio)
        assert 2 * p / (1 - p) ** 2 <= bound * (1 + 1e-9)
        for shape in (1, 2, 4, 8, 12, 16, 20, 24, 32, 48, 64, 96):
            for gap in np.geomspace(1e-5, 0.9, 60):
                ratio = 1.0 - gap
                if p / (1 - p) + shape * ratio / gap >= calibrated:
                    continue
                checked += 1
                exact = signed_count_profile(1.0, p, float(shape), ratio, tail_mass=1e-16)
                assert exact.delta(eps) > delta, (p, shape, ratio)
    assert checked > 100  # the grid reaches below the calibrated point
    assert cheap.expected_messages_per_user < paper.expected_messages_per_user


def test_variance_factor_is_validated_by_name():
    for bad in (0.5, 17.0, math.nan, "2", True):
        with pytest.raises(InvalidParameterError, match="'variance_factor' parameter of ThreeNBBitSum"):
            ThreeNBBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=100, flooding="communication", variance_factor=bad)
    with pytest.raises(InvalidParameterError, match="'variance_factor'.*None unless flooding='communication'"):
        ThreeNBBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=100, variance_factor=2.0)


def test_communication_messages_sent_match_expected_messages():
    protocol = ThreeNBBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=200, flooding="communication", variance_factor=4.0)
    assert protocol.flooding_shape > 0 and protocol.flooding_ratio > 0
    bits = np.ones((200, 1000), dtype=int)
    plus, minus = protocol.user_message_counts(bits, rng=11)
    assert_mean((plus + minus).ravel(), protocol.expected_messages_per_user)
    zeros_plus, zeros_minus = protocol.user_message_counts(np.zeros_like(bits), rng=12)
    assert_mean((zeros_plus + zeros_minus).ravel(), protocol.expected_messages(0.0))


def test_kde_calibration_cache_keys_include_the_variance_factor():
    from privsum.kde import ShuffledKDE
    from privsum.lsq import RandomSigns

    family = RandomSigns(dimension=4, n_repetitions=4, seed=0)
    common = {"family": family, "protocol": "3nb", "epsilon": 2.0, "delta": 1e-6, "n_users": 500}
    low = ShuffledKDE.from_privacy(**common, protocol_options={"flooding": "communication"})
    high = ShuffledKDE.from_privacy(**common, protocol_options={"flooding": "communication", "variance_factor": 4.0})
    assert low.bitsum != high.bitsum
    assert high.bitsum.expected_messages_per_user < low.bitsum.expected_messages_per_user
    for kde in (low, high):  # the composed guarantee is still the tight composition of the exact profile
        assert kde.guarantee.epsilon <= 2.0 and kde.guarantee.delta == 1e-6
