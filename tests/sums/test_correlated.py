"""Tests of the GKMPS21 correlated-noise integer sum. Statistical tests: false-alarm rate alpha = 1e-6, fixed seeds."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from privsum.exceptions import InvalidParameterError
from privsum.shuffle.noise import discrete_laplace_variance
from privsum.sums import CorrelatedNoiseSum, gkmps_parameters
from privsum.sums._correlated_verification import triple as _triple
from privsum.testing import ProtocolConformance, assert_matches_pmf, assert_mean, assert_same_distribution, assert_variance


def _protocol(domain: int, *, n_users: int = 50, levels: int | None = None, epsilon: float = 1.0) -> CorrelatedNoiseSum:
    return CorrelatedNoiseSum.from_privacy(epsilon=epsilon, delta=1e-6, n_users=n_users, domain=domain, levels=levels)


class TestCorrelatedConformance(ProtocolConformance):
    calibration_targets = (
        {"epsilon": 1.0, "delta": 1e-6, "n_users": 100, "domain": 1, "calibration": "tight"},
        {"epsilon": 1.0, "delta": 1e-6, "n_users": 100, "domain": 2, "calibration": "tight"},
    )

    def make_protocol(self) -> CorrelatedNoiseSum:
        return _protocol(3, n_users=100, epsilon=4.0)

    def make_input(self, rng: np.random.Generator) -> np.ndarray:
        return rng.integers(0, 4, size=(100, 2))


@pytest.mark.parametrize("path", ["fast", "faithful"])
def test_summed_noise_is_discrete_laplace(path):
    """The NB parameterisation: per-user NB(1/n) shares must sum to DLap(a) (variance 2a/(1-a)^2)."""
    protocol = _protocol(1, n_users=50)
    x = np.zeros((50, 1), dtype=int)
    rng = np.random.default_rng(30)
    noise = np.array([protocol.run(x, rng=rng, path=path)[0] for _ in range(4_000)])
    expected = discrete_laplace_variance(protocol.central_ratio)
    assert_mean(noise, 0.0, variance=expected)
    assert_variance(noise, expected)


def test_fast_and_faithful_views_agree_in_distribution():
    protocol = _protocol(2, n_users=40, epsilon=4.0)
    x = np.arange(40) % 3
    rng = np.random.default_rng(31)
    fast = [protocol.sample_view(x, rng=rng) for _ in range(1_500)]
    faithful = [protocol.view(protocol.shuffle(protocol.randomize(x, rng=rng), rng=rng)) for _ in range(1_500)]
    for column in range(len(protocol.alphabet)):
        assert_same_distribution(np.array([v.counts[0, column] for v in fast]), np.array([v.counts[0, column] for v in faithful]))


def test_expected_messages_per_user_matches_the_faithful_path():
    protocol = _protocol(2, n_users=30, epsilon=4.0)
    x = np.ones(30, dtype=int)  # every user sends its data message
    rng = np.random.default_rng(32)
    per_user = np.array([protocol.randomize(x, rng=rng).n_messages / 30 for _ in range(400)])
    assert_mean(per_user, protocol.expected_messages_per_user)


def test_count_view_follows_the_exact_distribution_used_for_verification():
    """For D = 1 the view is (A + P, B + P); the verification's grid must be its law."""
    protocol = _protocol(1, n_users=20, epsilon=2.0)
    grid, k_b = protocol._central_block()
    rng = np.random.default_rng(33)
    views = [protocol.sample_view(np.zeros(20, dtype=int), rng=rng).counts[0] for _ in range(20_000)]
    minus, plus = np.array(views).T  # alphabet (-1, 1)
    cells = (plus - minus + k_b) * grid.shape[1] + minus
    assert_matches_pmf(cells, np.arange(grid.size), grid.ravel())


@pytest.mark.parametrize("domain", [1, 2])
def test_verified_delta_is_below_the_claimed_delta(domain):
    """For D <= 2 the latent shift is a bijection of the count view, so this is the exact delta (pessimistic PLD)."""
    protocol = _protocol(domain, n_users=10)
    assert protocol.verify() <= protocol.delta
    assert protocol.verified_epsilon(protocol.delta) <= protocol.epsilon
    # without flooding the check must fail: the count of +1 and -1 messages would leak the data
    weak = dataclasses.replace(protocol, pair_shape=1e-3) if domain == 1 else None
    if weak is not None:
        assert weak.verify() > protocol.delta


@given(levels=st.integers(1, 12), data=st.data())
def test_latent_shift_reproduces_the_change_of_one_value(levels, data):
    protocol = CorrelatedNoiseSum(
        n_users=2, domain=levels, levels=levels, epsilon=1.0, delta=1e-6, **gkmps_parameters(1.0, 1e-6, levels)
    )
    value = data.draw(st.integers(0, levels))
    other = data.draw(st.integers(0, levels))
    (plus, minus), triples = protocol.shift(value, other)
    moved = np.zeros(2 * levels + 1, dtype=int)
    moved[levels + 1] += plus
    moved[levels - 1] += minus
    for kind, amount in triples.items():
        for message in _triple(kind):
            moved[levels + message] += amount
    expected = np.zeros(2 * levels + 1, dtype=int)
    expected[levels + other] += 1
    expected[levels + value] -= 1
    expected[levels] = 0
    moved[levels] = 0
    np.testing.assert_array_equal(moved, expected)


def test_random_rounding_is_unbiased_with_the_stated_variance():
    protocol = _protocol(100, n_users=200, levels=4, epsilon=2.0)
    rng = np.random.default_rng(34)
    x = rng.integers(0, 101, size=200)
    estimates = np.array([protocol.run(x, rng=rng)[0] for _ in range(3_000)])
    variance = float(protocol.variance(x)[0])
    assert_mean(estimates, x.sum(), variance=variance)
    assert_variance(estimates, variance)
    assert protocol.scale == 25.0


def test_error_bound_holds():
    protocol = _protocol(3, n_users=50, epsilon=2.0)
    x = np.full(50, 3)
    rng = np.random.default_rng(35)
    errors = np.array([protocol.run(x, rng=rng)[0] - 150 for _ in range(2_000)])
    assert np.all(np.abs(errors) <= protocol.error_bound(1e-10))


def test_many_instances_are_independent_and_tagged():
    protocol = _protocol(2, n_users=30, epsilon=4.0)
    x = np.stack([np.zeros(30, dtype=int), np.full(30, 2)], axis=1)
    messages = protocol.randomize(x, rng=36)
    assert messages.n_instances == 2
    estimates = protocol.analyze(messages)
    assert estimates.shape == (2,)
    assert protocol.bits_per_message(2) == 1 + protocol.bits_per_message()


def test_validation_names_the_parameter():
    protocol = _protocol(3, n_users=10)
    with pytest.raises(InvalidParameterError, match="'x'"):
        protocol.run(np.full(10, 4))
    with pytest.raises(InvalidParameterError, match="'x'"):
        protocol.run(np.full(10, 1.5))
    with pytest.raises(InvalidParameterError, match="'levels'"):
        CorrelatedNoiseSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=10, domain=3, levels=4)
    with pytest.raises(InvalidParameterError, match="'levels'"):
        CorrelatedNoiseSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=10, domain=9, calibration="tight")
    with pytest.raises(InvalidParameterError, match="'triple_ratios'"):
        dataclasses.replace(protocol, triple_ratios=(0.5,))
    with pytest.raises(InvalidParameterError, match="'delta'"):
        CorrelatedNoiseSum.from_privacy(epsilon=1.0, delta=0.0, n_users=10, domain=3)
    clipped = dataclasses.replace(protocol, clip=True)
    assert clipped.analyze(clipped.randomize(np.full(10, 7), rng=0)).shape == (1,)


# ----------------------------------------------------------------- dropouts
def test_fewer_participants_leave_less_noise_and_a_weaker_verified_guarantee():
    from privsum import PrivacyLeakWarning

    protocol = _protocol(1, n_users=40, epsilon=2.0)
    full = protocol.verified_epsilon(1e-6)
    achieved = [protocol.event_for_participants(m).guarantee.epsilon for m in (30, 20, 10)]
    assert full < achieved[0] < achieved[1] < achieved[2]
    assert protocol.event_for_participants(40) == protocol.event == protocol.event_for_participants(80)
    with pytest.warns(PrivacyLeakWarning, match="event_for_participants"):
        protocol.run(np.zeros(20, dtype=int), rng=0)


def test_verification_for_fewer_participants_matches_the_sampled_view_and_an_exact_profile():
    """With 10 of 40 users the view is (A + P, B + P) with every shape divided by 4: check the law and the epsilon."""
    from privsum.accounting import PrivacyProfile

    protocol = _protocol(1, n_users=40, epsilon=2.0)
    grid, k_b = protocol._central_block(0.25)
    rng = np.random.default_rng(34)
    with pytest.warns(Warning):
        views = [protocol.sample_view(np.zeros(10, dtype=int), rng=rng).counts[0] for _ in range(20_000)]
    minus, plus = np.array(views).T
    cells = (plus - minus + k_b) * grid.shape[1] + minus
    assert_matches_pmf(cells, np.arange(grid.size), grid.ravel())
    # exact hockey-stick of the shift by one +1 message, in (A - B, B + P) coordinates: one row down
    p = np.pad(grid, ((1, 1), (0, 0)))
    q = np.roll(p, 1, axis=0)
    exact = PrivacyProfile(p.ravel(), q.ravel(), p_tail=3e-14, q_tail=3e-14).epsilon(1e-6)
    reported = protocol.event_for_participants(10).guarantee.epsilon
    assert exact <= reported * (1 + 1e-6) and reported <= exact * 1.05 + 1e-3


def test_fewer_participants_variance_counts_the_noise_present():
    protocol = _protocol(1, n_users=40, epsilon=2.0)
    x = np.ones(20, dtype=int)
    with pytest.warns(Warning):
        estimates = np.array([protocol.run(x, rng=seed)[0] for seed in range(2_000)])
    assert_variance(estimates, float(protocol.variance(x)[0]))
    assert float(protocol.variance(x)[0]) == pytest.approx(discrete_laplace_variance(protocol.central_ratio) / 2)


def test_unverifiable_levels_report_no_guarantee_for_fewer_participants():
    protocol = _protocol(9, n_users=50)
    assert protocol.event_for_participants(25).guarantee.epsilon == float("inf")


def test_flooding_spread_uses_the_natural_log_and_floods_less():
    import math

    for levels in (1, 2, 3, 4, 8):  # ceil(ln D) == ceil(log2 D): the same parameters
        assert gkmps_parameters(1.0, 1e-6, levels) == gkmps_parameters(1.0, 1e-6, levels, spread_log="log2")
    for levels in (5, 6, 7, 317):
        natural, base_two = gkmps_parameters(1.0, 1e-6, levels), gkmps_parameters(1.0, 1e-6, levels, spread_log="log2")
        spread = levels * (math.ceil(math.log(levels)) + 1)
        expected = tuple(math.exp(-0.1 * 0.15 / math.ceil(spread / size)) for size in range(2, levels + 1))
        assert natural["triple_ratios"] == pytest.approx(expected, rel=1e-15)
        assert all(a <= b for a, b in zip(natural["triple_ratios"], base_two["triple_ratios"], strict=True))
    common = {"epsilon": 1.0, "delta": 1e-6, "n_users": 10_000, "domain": 317}
    fewer = CorrelatedNoiseSum.from_privacy(**common).expected_messages_per_user
    more = CorrelatedNoiseSum.from_privacy(**common, spread_log="log2").expected_messages_per_user
    assert fewer < more / 1.4  # 31,712 against 45,111 messages per user
    with pytest.raises(InvalidParameterError, match="'spread_log'"):
        gkmps_parameters(1.0, 1e-6, 5, spread_log="log10")


def test_natural_log_flooding_meets_the_target_on_its_worst_pair():
    """The default-run representative of the slow checks below: D = 5, the smallest level count where ln and
    log2 give different spreads, on the rounded values farthest apart (the worst pair: measured for D = 5, 6, 7)."""
    protocol = CorrelatedNoiseSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1_000, domain=5)
    assert protocol.privacy_profile_bound(0, 5).delta(1.0) <= 1e-6


@pytest.mark.slow
@pytest.mark.parametrize("levels", [6, 7])
def test_natural_log_flooding_is_verified_at_six_and_seven_levels(levels):
    """`gkmps_parameters` says D = 6 and 7 with the natural log meet a claimed (1, 1e-6): `verify` checks every pair."""
    protocol = CorrelatedNoiseSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1_000, domain=levels)
    assert protocol.verify() <= 1e-6


@pytest.mark.slow
def test_natural_log_flooding_is_verified_where_it_differs():
    # D = 5 is the smallest level count where ln and log2 give different spreads; the exact check must back it.
    protocol = CorrelatedNoiseSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1_000, domain=5, calibration="tight")
    assert protocol.verified and protocol.guarantee.epsilon <= 1.0


@pytest.mark.parametrize("levels", [1, 3])
def test_geometric_central_block_equals_the_direct_sum(levels):
    import privsum.sums._correlated_verification as correlated
    from privsum.shuffle.noise import negative_binomial_truncated

    protocol = CorrelatedNoiseSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1_000, domain=levels)
    a_pmf, _ = negative_binomial_truncated(1.0, protocol.central_ratio, correlated._TAIL)
    p_pmf, _ = negative_binomial_truncated(protocol.pair_shape, protocol.pair_ratio, correlated._TAIL)
    k = a_pmf.size - 1
    fast = correlated._geometric_block(a_pmf[0], protocol.central_ratio, p_pmf, k)
    direct = correlated._direct_block(a_pmf, p_pmf, k)
    assert fast.shape == direct.shape and np.all(fast >= 0)
    visible = direct > 1e-25
    np.testing.assert_allclose(fast[visible], direct[visible], rtol=1e-10)
    assert np.max(np.abs(fast - direct)) < 1e-17


def test_verified_epsilon_is_unchanged_by_the_fast_block(monkeypatch):
    import privsum.sums._correlated_verification as correlated

    protocol = CorrelatedNoiseSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1_000, domain=2)
    fast = protocol.verified_epsilon(1e-6)
    monkeypatch.setattr(
        correlated,
        "_geometric_block",
        lambda first, ratio, p_pmf, k: correlated._direct_block(first * ratio ** np.arange(k + 1), p_pmf, k),
    )
    direct = dataclasses.replace(protocol).verified_epsilon(1e-6)  # a fresh object: no cached block
    assert fast == pytest.approx(direct, rel=1e-9)
