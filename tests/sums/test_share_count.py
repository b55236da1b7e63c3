"""BBGN20's share-count bound: the paper's worked example, its inverse, and the guarantee it backs."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from privsum.exceptions import InvalidParameterError
from privsum.sums import MultiMessageSum, default_share_count
from privsum.sums.multi_message import supported_security_bits


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
    protocol = MultiMessageSum(n_users=50, domain=4, noise_ratio=0.6, n_shares=3, modulus=512, share_security_bits=60.0)
    backed = supported_security_bits(3, 512, 50)
    assert protocol.backed_security_bits == backed
    assert protocol.guarantee.delta == pytest.approx(min((1 + math.exp(protocol.epsilon)) * 2.0**-backed, 1 - 1e-16))


def test_calibrated_protocol_meets_its_target():
    protocol = MultiMessageSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1_000, domain=4)
    assert protocol.guarantee.epsilon == pytest.approx(1.0)
    assert protocol.guarantee.delta <= 1e-6 * (1 + 1e-9)
