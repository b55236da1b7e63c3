"""Share counts: BBGN20's bound (the paper's worked example, its inverse) and the guarantee the share bounds back."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from privsum.exceptions import InvalidParameterError
from privsum.sums import MultiMessageSum, default_share_count
from privsum.sums.multi_message import supported_security_bits
from privsum.sums.split_and_mix import share_distance_bound


def test_reproduces_the_papers_worked_example():
    """n = 10^4 users summing 32-bit numbers (q >= n 2^32) with 12 shares: statistical distance 2^-40."""
    modulus = 2 ** math.ceil(math.log2(10_000 * 2**32))
    assert default_share_count(40, modulus, 10_000) == 12
    assert supported_security_bits(12, modulus, 10_000) >= 40
    assert supported_security_bits(11, modulus, 10_000) < 40


@given(
    security_bits=st.floats(0.5, 200),
    log_modulus=st.integers(1, 46),
    n_users=st.integers(3, 10**9),
)
def test_default_count_is_the_least_count_the_bound_backs(security_bits, log_modulus, n_users):
    shares = default_share_count(security_bits, 2**log_modulus, n_users)
    assert supported_security_bits(shares, 2**log_modulus, n_users) >= security_bits - 1e-9
    if shares > 2:
        assert supported_security_bits(shares - 1, 2**log_modulus, n_users) < security_bits


def test_bound_needs_three_users():
    with pytest.raises(InvalidParameterError, match="'n_users'"):
        default_share_count(20, 2**10, 2)


def test_from_privacy_refuses_too_few_shares():
    least = MultiMessageSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1_000, domain=4).n_shares
    with pytest.raises(InvalidParameterError, match="'n_shares'"):
        MultiMessageSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1_000, domain=4, n_shares=least - 1)


def test_guarantee_never_claims_more_than_the_bound_backs():
    protocol = MultiMessageSum(n_users=500, domain=4, noise_ratio=0.6, n_shares=5, modulus=4096, share_security_bits=60.0)
    bbgn = supported_security_bits(5, 4096, 500)
    chi_square = -math.log2(share_distance_bound(500, 5, 4096))
    assert chi_square > bbgn  # the computed bound backs more here
    assert protocol.backed_security_bits == max(bbgn, chi_square) < 60.0
    expected = (1 + math.exp(protocol.epsilon)) * 2.0**-protocol.backed_security_bits
    assert protocol.guarantee.delta == pytest.approx(min(expected, 1))


def test_from_privacy_takes_the_least_count_either_bound_backs():
    protocol = MultiMessageSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1_000, domain=8)
    sigma = math.log2((1 + math.e) / 1e-6)
    assert protocol.n_shares < default_share_count(sigma, protocol.modulus, 1_000)  # fewer than BBGN20's count
    assert share_distance_bound(1_000, protocol.n_shares, protocol.modulus) <= 2.0**-sigma
    assert share_distance_bound(1_000, protocol.n_shares - 1, protocol.modulus) > 2.0**-sigma


def test_calibrated_protocol_meets_its_target():
    protocol = MultiMessageSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1_000, domain=4)
    assert protocol.guarantee.epsilon == pytest.approx(1.0)
    assert protocol.guarantee.delta <= 1e-6 * (1 + 1e-9)
