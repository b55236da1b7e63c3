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
