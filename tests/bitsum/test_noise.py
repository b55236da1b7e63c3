"""3NB and Pure bit sums. Randomised tests: fixed seeds, alpha = 1e-6."""

import math

import numpy as np
import pytest

from privsum import InvalidParameterError, PrivacyLeakWarning
from privsum.accounting import ProfileEvent
from privsum.bitsum import PureBitSum, ThreeNBBitSum
from privsum.bitsum.exact import pure_epsilon_bound, pure_epsilon_on_grid, signed_count_profile, signed_count_profile_grid
from privsum.shuffle.noise import discrete_laplace_pmf, discrete_laplace_variance
from privsum.testing import ProtocolConformance, assert_matches_pmf, assert_mean, assert_same_distribution, assert_variance

N = 200


class TestThreeNBConformance(ProtocolConformance):
    calibration_targets = (
        {"epsilon": 1.0, "delta": 1e-6, "n_users": 1000},
        {"epsilon": 0.3, "delta": 1e-8, "n_users": 1000, "calibration": "analytic"},
    )

    def make_protocol(self):
        return ThreeNBBitSum(n_users=N, noise_ratio=0.5, flooding_shape=20.0, flooding_ratio=0.9, delta=1e-6)

    def make_input(self, rng):
        return rng.integers(0, 2, size=(N, 4))


class TestPureConformance(ProtocolConformance):
    calibration_targets = ({"epsilon": 1.0, "n_users": 1000}, {"epsilon": 0.5, "n_users": 1000, "calibration": "analytic"})

    def make_protocol(self):
        return PureBitSum(n_users=N, drop_probability=0.4, noise_ratio=0.3, flooding_shape=5.0, flooding_ratio=0.5)

    def make_input(self, rng):
        return rng.integers(0, 2, size=(N, 4))


@pytest.mark.parametrize(
    "args", [(1.0, 0.5, 5.0, 0.7), (1.0, math.exp(-0.8), 45.0, math.exp(-0.04)), (1.0, 0.3, 0.0, 0.0), (1.0, 0.6, 3.0, 0.95)]
)
def test_one_dimensional_reduction_equals_the_two_count_grid(args):
    reduced, grid = signed_count_profile(*args), signed_count_profile_grid(*args)
    eps = np.linspace(0.0, 3.0, 31)
    # relative; the grid counts up to 3 tail_mass (default 1e-15) more as infinite loss: that absolute floor only
    np.testing.assert_allclose(reduced.delta(eps), grid.delta(eps), rtol=1e-9, atol=3e-15)


@pytest.mark.parametrize("calibration", ["tight", "analytic"])
def test_calibrated_3nb_meets_target_on_the_exact_two_count_grid(calibration):
    eps, delta = 1.0, 1e-6
    protocol = ThreeNBBitSum.from_privacy(epsilon=eps, delta=delta, n_users=500, calibration=calibration)
    grid = signed_count_profile_grid(1.0, protocol.noise_ratio, protocol.flooding_shape, protocol.flooding_ratio, tail_mass=1e-16)
    assert grid.delta(eps) <= delta * (1 + 1e-9)
    assert isinstance(protocol.event, ProfileEvent)


def test_tight_3nb_lowers_variance_without_more_messages():
    tight = ThreeNBBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=10_000)
    analytic = ThreeNBBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=10_000, calibration="analytic")
    assert tight.variance() < 0.75 * analytic.variance()
    assert tight.expected_messages_per_user <= analytic.expected_messages_per_user
    # tight really is tight: 1% less noise misses the target
    lighter = signed_count_profile(1.0, tight.noise_ratio**1.01, tight.flooding_shape, tight.flooding_ratio)
    assert lighter.delta(1.0) > 1e-6


def test_summed_noise_is_discrete_laplace_with_variance_2a_over_1_minus_a_squared():
    # The NB parameterisation: per-user NB(1/n, a) summed over n users is NB(1, a); X1 - X2 ~ DLap(a).
    n, instances, ratio = 50, 20_000, 0.6
    protocol = ThreeNBBitSum(n_users=n, noise_ratio=ratio, flooding_shape=0.0, flooding_ratio=0.0, delta=1e-6)
    bits = np.zeros((n, instances), dtype=int)
    plus, minus = protocol.user_message_counts(bits, rng=1)
    noise = (plus - minus).sum(axis=0)
    assert_variance(noise, 2 * ratio / (1 - ratio) ** 2)
    support = np.arange(-80, 81)
    assert_matches_pmf(noise, support, discrete_laplace_pmf(support, ratio))
    assert abs(discrete_laplace_variance(ratio) - protocol.variance()) < 1e-12


@pytest.mark.parametrize(
    "protocol",
    [
        ThreeNBBitSum(n_users=100, noise_ratio=0.5, flooding_shape=10.0, flooding_ratio=0.8, delta=1e-6),
        PureBitSum(n_users=100, drop_probability=0.3, noise_ratio=0.4, flooding_shape=4.0, flooding_ratio=0.5),
    ],
    ids=["3nb", "pure"],
)
def test_fast_and_faithful_paths_agree_in_distribution(protocol):
    bits = np.random.default_rng(2).integers(0, 2, size=(100, 1)).repeat(3000, axis=1)
    fast = protocol.sample_view(bits, rng=3)
    faithful = protocol.view(protocol.shuffle(protocol.randomize(bits, rng=4), rng=5))
    for value in (1, -1):
        assert_same_distribution(fast.count(value), faithful.count(value))
    assert_same_distribution(fast.count(1) - fast.count(-1), faithful.count(1) - faithful.count(-1))


@pytest.mark.parametrize(
    "protocol",
    [
        ThreeNBBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=300),
        PureBitSum.from_privacy(epsilon=1.0, n_users=300),
        PureBitSum(n_users=300, drop_probability=0.1, noise_ratio=0.5, flooding_shape=3.0, flooding_ratio=0.6),
    ],
    ids=["3nb", "pure", "pure-flooded"],
)
def test_unbiased_with_theoretical_variance(protocol):
    rng = np.random.default_rng(6)
    bits = (rng.random((300, 1)) < 0.4).astype(int).repeat(20_000, axis=1)
    true_sum = bits[:, 0].sum()
    estimates = protocol.run(bits, rng=7)
    assert_mean(estimates, true_sum, variance=protocol.variance(true_sum))
    assert_variance(estimates, protocol.variance(true_sum))


def test_messages_sent_match_expected_messages_including_flooding():
    protocol = PureBitSum(n_users=100, drop_probability=0.2, noise_ratio=0.5, flooding_shape=30.0, flooding_ratio=0.9)
    bits = np.ones((100, 2000), dtype=int)
    batch = protocol.randomize(bits, rng=8)
    plus, minus = protocol.user_message_counts(bits, rng=8)
    assert batch.n_messages == int(plus.sum() + minus.sum())
    total = (plus + minus).ravel()
    assert_mean(total, protocol.expected_messages_per_user)
    assert protocol.expected_messages(0.0) < protocol.expected_messages_per_user


def test_3nb_fewer_participants_weaken_the_guarantee_and_warn():
    protocol = ThreeNBBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1000)
    assert protocol.event_for_participants(500).guarantee.epsilon > protocol.guarantee.epsilon
    assert protocol.event_for_participants(2000) == protocol.event
    with pytest.warns(PrivacyLeakWarning):
        protocol.randomize(np.zeros((10, 1), dtype=int), rng=0)


def test_pure_epsilon_is_verified_exactly_on_small_n():
    for drop, shape, ratio, flooding in [
        (math.exp(-1.0), 1.0, (1 - math.exp(-1)) / (math.e - math.exp(-1)), (0.0, 0.0)),
        (0.3, 1.0, 0.5, (2.0, 0.6)),
        (0.05, 1.0, 0.4, (0.0, 0.0)),
    ]:
        bound = pure_epsilon_bound(drop, shape, ratio)
        on_grid = pure_epsilon_on_grid(6, drop, shape, ratio, *flooding)
        assert on_grid <= bound + 1e-9
        if -math.log(drop) >= bound - 1e-12:  # the bound is attained: it is the exact pure epsilon
            assert abs(on_grid - bound) < 1e-9


def test_pure_bound_for_fewer_participants_is_an_upper_bound_on_the_grid():
    protocol = PureBitSum.from_privacy(epsilon=1.0, n_users=8)
    fewer = protocol.event_for_participants(4)
    assert fewer.guarantee.epsilon > protocol.guarantee.epsilon
    on_grid = pure_epsilon_on_grid(4, protocol.drop_probability, 0.5, protocol.noise_ratio)
    assert on_grid <= fewer.guarantee.epsilon + 1e-9


def test_reference_parameters_are_not_epsilon_dp_and_say_so():
    reference = PureBitSum.from_reference_parameters(epsilon=1.0, n_users=20)
    q = 0.2 * 0.5 / (math.e * (1 - math.exp(-1)) ** 2 * 20)
    assert abs(reference.drop_probability - q) < 1e-15
    assert abs(reference.guarantee.epsilon - math.log(1 / q)) < 1e-12
    assert reference.guarantee.epsilon > 4.0  # far above the paper's epsilon = 1
    assert abs(pure_epsilon_on_grid(20, q, 1.0, reference.noise_ratio) - math.log(1 / q)) < 1e-9


def test_pure_without_drop_has_no_finite_epsilon():
    assert PureBitSum(n_users=10, drop_probability=0.0, noise_ratio=0.5).guarantee.epsilon == math.inf


def test_validation_names_the_parameter():
    with pytest.raises(InvalidParameterError, match="'drop_probability'"):
        PureBitSum(n_users=10, drop_probability=1.0, noise_ratio=0.5)
    with pytest.raises(InvalidParameterError, match="'drop_probability'"):
        PureBitSum(n_users=10, drop_probability=-0.1, noise_ratio=0.5)
    with pytest.raises(InvalidParameterError, match="'rho'"):
        PureBitSum.from_reference_parameters(epsilon=1.0, n_users=100, rho=0.6)
    with pytest.raises(InvalidParameterError, match="'rho'"):
        PureBitSum.from_reference_parameters(epsilon=1.0, n_users=100, rho=0.0)
    with pytest.raises(InvalidParameterError, match="'n_users'"):
        PureBitSum.from_reference_parameters(epsilon=0.01, n_users=1, rho=0.5)
    with pytest.raises(InvalidParameterError, match="'noise_ratio'"):
        ThreeNBBitSum(n_users=10, noise_ratio=0.0, flooding_shape=1.0, flooding_ratio=0.5, delta=1e-6)
    with pytest.raises(InvalidParameterError, match="'flooding_ratio'"):
        ThreeNBBitSum(n_users=10, noise_ratio=0.5, flooding_shape=1.0, flooding_ratio=1.0, delta=1e-6)
    with pytest.raises(InvalidParameterError, match="'delta'"):
        ThreeNBBitSum.from_privacy(epsilon=1.0, delta=0.0, n_users=10)
