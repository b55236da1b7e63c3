"""The split-and-mix distance bounds against the exact distance of the shuffled view, enumerated."""

from __future__ import annotations

import functools
import itertools
import math

import pytest

from privsum.exceptions import InvalidParameterError
from privsum.sums.multi_message import supported_security_bits
from privsum.sums.split_and_mix import (
    exact_share_distance,
    least_share_count,
    share_chi_square_bound,
    share_distance_bound,
    share_distance_floor,
)

# (n users, m shares, modulus q): every case small enough to enumerate q^(n m - 1) share vectors
TINY = [(3, 3, 2), (3, 3, 3), (3, 4, 2), (4, 3, 2), (3, 3, 4), (5, 3, 2), (3, 5, 2), (4, 4, 2), (2, 4, 3), (2, 5, 2)]


@functools.lru_cache
def _worst_exact(n_users: int, n_shares: int, modulus: int) -> float:
    """Largest exact distance to the ideal over every input vector (inputs and their rotations)."""
    inputs = itertools.product(range(modulus), repeat=n_users) if modulus**n_users <= 64 else [(0,) * n_users]
    return max(exact_share_distance(list(x), n_shares, modulus) for x in inputs)


@pytest.mark.parametrize(("n_users", "n_shares", "modulus"), TINY)
def test_chi_square_bound_dominates_the_exact_distance_and_is_close(n_users, n_shares, modulus):
    exact = _worst_exact(n_users, n_shares, modulus)
    bound = 0.5 * math.sqrt(share_chi_square_bound(n_users, n_shares, modulus))
    assert exact <= bound
    assert bound <= 2.1 * exact  # within about a factor 2 wherever it was enumerated


@pytest.mark.parametrize(("n_users", "n_shares", "modulus"), [case for case in TINY if case[0] >= 3])
def test_bbgn_bound_dominates_the_exact_distance(n_users, n_shares, modulus):
    exact = _worst_exact(n_users, n_shares, modulus)
    assert exact <= 2.0 ** -supported_security_bits(n_shares, modulus, n_users)


def test_exact_distance_is_zero_for_a_single_user_and_positive_otherwise():
    assert exact_share_distance([2], 3, 5) == pytest.approx(0.0, abs=1e-15)
    assert exact_share_distance([0, 1], 2, 3) > 0.0


def test_two_shares_are_not_bounded_by_the_chi_square_route():
    assert share_chi_square_bound(1_000, 2, 2**10) == math.inf


def test_distance_bound_is_the_smaller_bound_and_tensorises():
    n, q = 3_000, 2**20
    for shares in (8, 9, 11):
        union = min(1.0, 384 * 2.0 ** -supported_security_bits(shares, q, n))
        single = share_distance_bound(n, shares, q)
        joint = share_distance_bound(n, shares, q, n_views=384)
        assert joint <= union
        assert single <= joint <= math.sqrt(384) * single * (1 + 1e-6) or joint == union


def test_least_share_count_is_least():
    shares = least_share_count(1e-8, 2**20, 3_000, n_views=384)
    assert share_distance_bound(3_000, shares, 2**20, 384) <= 1e-8
    assert share_distance_bound(3_000, shares - 1, 2**20, 384) > 1e-8


def test_bound_grows_with_the_modulus_and_falls_with_users():
    assert share_chi_square_bound(500, 6, 2**12) < share_chi_square_bound(500, 6, 2**16)
    assert share_chi_square_bound(2_000, 6, 2**16) < share_chi_square_bound(500, 6, 2**16)


def test_enumeration_refuses_large_cases():
    with pytest.raises(InvalidParameterError, match="'inputs'"):
        exact_share_distance([0, 1, 2, 3], 4, 7)


# (n users, m shares, modulus q, law of each user's noise on Z_q): the bound averaged over the noise
NOISY = [
    (3, 3, 3, (0.5, 0.5, 0.0)),
    (3, 3, 4, (0.5, 0.25, 0.0, 0.25)),
    (3, 3, 4, (0.7, 0.1, 0.1, 0.1)),
    (2, 3, 4, (0.5, 0.5, 0.0, 0.0)),
    (2, 4, 4, (0.5, 0.25, 0.25, 0.0)),
    (2, 3, 5, (0.4, 0.3, 0.0, 0.0, 0.3)),
    (3, 4, 2, (0.75, 0.25)),
    (3, 3, 2, (0.5, 0.5)),
]


@pytest.mark.parametrize(("n_users", "n_shares", "modulus", "noise"), NOISY)
def test_averaged_bound_dominates_the_exact_mixture_distance(n_users, n_shares, modulus, noise):
    inputs = [(0,) * n_users, tuple(i % modulus for i in range(n_users)), (modulus - 1,) + (0,) * (n_users - 1)]
    exact = max(exact_share_distance(list(x), n_shares, modulus, noise=noise) for x in inputs)
    bound = 0.5 * math.sqrt(share_chi_square_bound(n_users, n_shares, modulus, value_mass=max(noise)))
    assert exact <= bound
    worst_case = 0.5 * math.sqrt(share_chi_square_bound(n_users, n_shares, modulus))
    assert bound <= worst_case
    if exact > 1e-9:  # uniform noise on Z_2 hides everything: nothing to be close to
        assert bound <= 3.5 * exact  # measured: 1.4 to 3.0


def test_averaged_bound_is_the_worst_case_at_mass_one_and_grows_with_the_mass():
    n, q = 3_000, 2**20
    assert share_chi_square_bound(n, 8, q, value_mass=1.0) == pytest.approx(share_chi_square_bound(n, 8, q), rel=1e-12)
    masses = [1e-6, 0.001, 0.0155, 0.1, 1.0]
    bounds = [share_chi_square_bound(n, 8, q, value_mass=mass) for mass in masses]
    assert bounds == sorted(bounds)
    assert bounds[2] < share_chi_square_bound(n, 8, q) / 50  # single pairs cost rho + 2/n instead of 1


def test_averaged_distance_bound_and_share_count():
    n, q, views = 1_000, 2**21, 65_536
    assert share_distance_bound(n, 9, q, views, value_mass=0.0016) < share_distance_bound(n, 9, q, views)
    averaged = least_share_count(1e-7, q, n, views, value_mass=0.0016)
    assert averaged < least_share_count(1e-7, q, n, views)
    assert share_distance_bound(n, averaged, q, views, value_mass=0.0016) <= 1e-7


@pytest.mark.parametrize("mass", [0.0, -0.1, 1.5, float("nan")])
def test_value_mass_is_validated(mass):
    with pytest.raises(InvalidParameterError, match="'value_mass'"):
        share_chi_square_bound(100, 5, 2**10, value_mass=mass)


@pytest.mark.parametrize("noise", [(0.5, 0.5), (0.5, 0.6, -0.1), (0.2, 0.2, 0.2)])
def test_enumeration_refuses_bad_noise(noise):
    with pytest.raises(InvalidParameterError, match="'noise'"):
        exact_share_distance([0, 1], 3, 3, noise=noise)


@pytest.mark.parametrize(
    ("n_users", "n_shares", "modulus", "n_views"),
    [(3_000, 7, 938_838, 384), (100_000, 5, 61_041_228, 384), (1_000, 9, 1_852_262, 65_536), (50, 4, 1_000, 1), (34, 3, 4, 1)],
)
def test_distance_floor_is_below_the_bound_at_every_value_mass(n_users, n_shares, modulus, n_views):
    floor = share_distance_floor(n_users, n_shares, modulus, n_views)
    for mass in (1e-300, 1e-3, 0.1, 1.0):
        assert floor <= share_distance_bound(n_users, n_shares, modulus, n_views, value_mass=mass)
    assert floor >= 0.01 * share_distance_bound(n_users, n_shares, modulus, n_views, value_mass=1e-300)  # and useful


@pytest.mark.parametrize(("n_users", "n_shares", "log2_modulus"), [(20, 4, 6), (3_000, 7, 20), (1_000, 9, 21)])
def test_the_chord_lies_above_the_recursion_at_the_value_mass(n_users, n_shares, log2_modulus):
    """The bound is the chord of a convex function of rho; the recursion run at rho itself stays below it."""
    from privsum.sums.split_and_mix import _chi_square

    for mass in (0.01, 0.1, 0.5):
        chord = share_chi_square_bound(n_users, n_shares, 2**log2_modulus, value_mass=mass)
        direct = _chi_square(n_users, n_shares, log2_modulus, max(mass, 2.0 ** (-log2_modulus / 2)))
        assert direct <= chord * (1 + 1e-9)
        assert chord <= 2 * direct  # the dominant single pairs are linear in rho: the chord is close
