"""PLD fast paths: trimmed extreme losses (pessimistic) and the vectorised epsilon, against dp-accounting's own."""

import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld_lib

from privsum.accounting import PLDPair, PrivacyGuarantee, randomized_response_profile
from privsum.accounting import pld as pld_module
from privsum.bitsum.exact import rr_profile, signed_count_profile


def _untrimmed(p, q, p_tail=0.0, q_tail=0.0):
    """The same pessimistic PLD (losses split between grid points) through dp-accounting's dictionary constructor, no trimming."""

    def one(upper, lower, tail):
        finite = (upper > 0) & (lower > 0)
        losses = np.log(upper[finite]) - np.log(lower[finite])
        indices, weights = pld_module._split_on_grid(losses, upper[finite], 1e-4)
        rounded = {}
        for index, mass in zip(indices.tolist(), weights.tolist(), strict=True):
            rounded[index] = rounded.get(index, 0.0) + mass
        infinite = float(upper[(upper > 0) & (lower == 0)].sum()) + tail
        return pld_lib.PrivacyLossDistribution.create_from_rounded_probability(rounded, infinite, 1e-4, pessimistic_estimate=True)

    return PLDPair(one(p, q, p_tail), one(q, p, q_tail))


PROFILES = [
    signed_count_profile(1.0, 0.98425, 66.4573, 0.99934747, tail_mass=6.5e-16),  # 3NB, paper setting
    signed_count_profile(1.0, math.exp(-0.8), 20.0, math.exp(-0.04)),
    rr_profile(2000, 0.1),
    randomized_response_profile(0.3),
]


NAMES = ["3nb-paper", "3nb-small", "rr", "k-rr"]
# Composing the untrimmed reference 768 times takes 6-15 s for the wider profiles: slow runs only.
SLOW = {("3nb-small", 768), ("k-rr", 768)}
CASES = [
    pytest.param(profile, count, id=f"{name}-{count}", marks=[pytest.mark.slow] if (name, count) in SLOW else [])
    for profile, name in zip(PROFILES, NAMES, strict=True)
    for count in (1, 30, 768)
]


@pytest.mark.parametrize(("profile", "count"), CASES)
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # dp-accounting's bounds on the untrimmed tails
def test_trimming_is_pessimistic_and_moves_at_most_the_stated_mass(profile, count):
    trimmed = PLDPair.from_profile(profile).self_compose(count)
    full = _untrimmed(profile.p, profile.q, profile.p_tail, profile.q_tail).self_compose(count)
    errors = trimmed.absolute_error + full.absolute_error  # both compositions' certified round-off
    for epsilon in (0.0, 0.05, 0.5, 1.0, 2.0, 4.0):
        reference = full.delta(epsilon)
        # Never below the untrimmed PLD up to the two compositions' round-off, and above it by at
        # most count * LOSS_TAIL_MASS (and the round-off).
        assert trimmed.delta(epsilon) >= reference * (1 - 2e-9) - errors
        assert trimmed.delta(epsilon) <= reference * (1 + 2e-9) + count * pld_module.LOSS_TAIL_MASS + errors
    for delta in (1e-3, 1e-6, 1e-9):
        assert trimmed.epsilon(delta) >= full.epsilon(delta * (1 + 1e-8) + 2 * errors) * (1 - 1e-9)


def test_trimming_shrinks_the_paper_setting_pld():
    profile = PROFILES[0]
    trimmed = PLDPair.from_profile(profile).forward._pmf_remove.to_dense_pmf().size
    full = _untrimmed(profile.p, profile.q, profile.p_tail, profile.q_tail).forward._pmf_remove.to_dense_pmf().size
    assert trimmed * 20 < full, (trimmed, full)  # losses up to 4.2 carry less than 1e-34


def test_trim_keeps_all_when_every_mass_is_tiny_and_counts_what_it_moves():
    rounded, masses = np.arange(5), np.array([1e-20, 2e-20, 0.5, 0.5 - 3e-20, 1e-20])
    kept_losses, kept, moved = pld_module._trim_extreme_losses(rounded, masses, 1e-18)
    assert kept_losses.tolist() == [2, 3] and moved == pytest.approx(1e-20)
    assert kept[0] == pytest.approx(0.5 + 3e-20, rel=1e-15) and kept.sum() + moved == pytest.approx(masses.sum())
    tiny = np.array([1e-30, 1e-30])
    assert pld_module._trim_extreme_losses(np.arange(2), tiny, 1e-18)[1].tolist() == tiny.tolist()


@pytest.mark.parametrize(
    "pair",
    [
        PLDPair.from_profile(randomized_response_profile(0.5)).self_compose(20),
        PLDPair.from_guarantee(PrivacyGuarantee(0.016, 6.5e-10)).self_compose(768),
        PLDPair.from_profile(PROFILES[0]).self_compose(768),
        PLDPair.from_profile(rr_profile(500, 0.2)),  # sparse PMF: dp-accounting's own path
    ],
    ids=["rr-20", "generic-768", "3nb-768", "sparse"],
)
@pytest.mark.parametrize("delta", [0.9, 0.5, 1e-3, 1e-6, 1e-9, 1e-12])
def test_vectorised_epsilon_equals_dp_accounting(pair, delta):
    for pmf in pair._all_pmfs():
        theirs = max(0.0, pmf.get_epsilon_for_delta(delta))
        ours = pld_module._pmf_epsilon(pmf, delta)
        if math.isinf(theirs):
            assert math.isinf(ours)
        else:  # dp-accounting accumulates its loss grid by repeated subtraction: 1e-11 apart at most
            assert ours == pytest.approx(theirs, rel=1e-10, abs=1e-10)
    reported = pair.epsilon(delta)  # with the certified errors added
    if math.isfinite(reported):
        assert pair.delta(reported) <= delta * (1 + 1e-6)  # dp-accounting's own pair is as far apart (its loss grid)


@pytest.mark.parametrize("profile", PROFILES, ids=["3nb-paper", "3nb-analytic", "rr", "randomized-response"])
@pytest.mark.parametrize("interval", [1e-4, 1e-3, 2.0**-10])
def test_split_losses_dominate_the_profile_exactly_at_grid_points_and_beat_rounding_up(profile, interval):
    """Each loss's mass split between the grid points around it: never below the exact profile, equal to it on the grid."""
    pld = PLDPair.from_profile(profile, discretization=interval)
    grid_points = interval * np.arange(0, 400, 7)
    between = grid_points + 0.37 * interval
    for epsilon in np.concatenate([grid_points, between]):
        exact = profile.delta(epsilon)
        assert pld.delta(epsilon) >= exact * (1 - 1e-9) - 1e-15
    for epsilon in grid_points:  # equal at every multiple of the interval (up to the reported margin)
        assert pld.delta(epsilon) <= profile.delta(epsilon) * (1 + 2e-9) + 1e-15
    rounded_up = _rounded_up(profile.p, profile.q, profile.p_tail, profile.q_tail, interval).self_compose(20)
    assert pld.self_compose(20).epsilon(1e-6) <= rounded_up.epsilon(1e-6) + 1e-12


def _rounded_up(p, q, p_tail, q_tail, interval):
    """Every loss rounded up to the grid (the construction the split replaces)."""

    def one(upper, lower, tail):
        finite = (upper > 0) & (lower > 0)
        indices = np.ceil((np.log(upper[finite]) - np.log(lower[finite])) / interval).astype(np.int64)
        rounded = {}
        for index, mass in zip(indices.tolist(), upper[finite].tolist(), strict=True):
            rounded[index] = rounded.get(index, 0.0) + mass
        infinite = float(upper[(upper > 0) & (lower == 0)].sum()) + tail
        make = pld_lib.PrivacyLossDistribution.create_from_rounded_probability
        return make(rounded, infinite, interval, pessimistic_estimate=True)

    return PLDPair(one(p, q, p_tail), one(q, p, q_tail))
