"""`divisible_laplace_epsilon` from hypergeometric closed forms equals the pmf sums it replaces."""

import math

import numpy as np
import pytest

from privsum.shuffle.noise import negative_binomial_pmf, negative_binomial_truncated
from privsum.sums.multi_message import divisible_laplace_epsilon


def _pmf_sums(share, ratio, sensitivity):
    """The former computation: ``log P(D=0)/P(D=t)`` from the NB pmf truncated at tail mass 1e-30."""
    head, _ = negative_binomial_truncated(share, ratio, 1e-30)
    pmf = negative_binomial_pmf(np.arange(head.size + sensitivity), share, ratio)
    at_zero = float(np.dot(pmf[: head.size], pmf[: head.size]))
    at_shift = float(np.dot(pmf[sensitivity : sensitivity + head.size], pmf[: head.size]))
    return math.log(at_zero / at_shift) * (1 + 1e-12)


@pytest.mark.parametrize(
    ("share", "ratio", "sensitivity"),
    [
        (0.3, 0.99, 1),
        (0.01, 0.999, 3),
        (0.9, 0.5, 2),
        (0.5, 0.9, 400),
        (0.9, 0.99, 3),
        (0.9, 0.9999, 100),
        (0.999, 0.95, 7),
        pytest.param(0.95, 1 - 1e-5, 1000, marks=pytest.mark.slow),  # the pmf sums take seconds here
    ],
)
def test_closed_form_matches_the_pmf_sums(share, ratio, sensitivity):
    assert divisible_laplace_epsilon(share, ratio, sensitivity) == pytest.approx(_pmf_sums(share, ratio, sensitivity), rel=1e-13)


def test_share_one_is_the_discrete_laplace_and_smaller_shares_need_more_epsilon():
    ratio = math.exp(-0.25)
    assert divisible_laplace_epsilon(1.0, ratio, 4) == pytest.approx(1.0, rel=1e-15)
    values = [divisible_laplace_epsilon(share, ratio, 4) for share in (0.99, 0.9, 0.5, 0.1)]
    assert 1.0 < values[0] < values[1] < values[2] < values[3]


def test_ratios_near_one_are_fast_and_finite():
    epsilon = divisible_laplace_epsilon(0.9, math.exp(-0.05 / 65536), 65536)
    assert 0.05 < epsilon < 0.2
