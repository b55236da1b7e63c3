"""`divisible_laplace_epsilon` reuses the truncated head's pmf: bit-identical to evaluating it twice."""

import math

import numpy as np
import pytest

from privsum.shuffle.noise import negative_binomial_pmf, negative_binomial_truncated
from privsum.sums.multi_message import divisible_laplace_epsilon


def _twice_evaluated(share, ratio, sensitivity):
    head, _ = negative_binomial_truncated(share, ratio, 1e-30)
    pmf = negative_binomial_pmf(np.arange(head.size + sensitivity), share, ratio)
    at_zero = float(np.dot(pmf[: head.size], pmf[: head.size]))
    at_shift = float(np.dot(pmf[sensitivity : sensitivity + head.size], pmf[: head.size]))
    return math.log(at_zero / at_shift) * (1 + 1e-12)


@pytest.mark.parametrize(("share", "ratio", "sensitivity"), [(0.3, 0.99, 1), (0.01, 0.999, 3), (0.9, 0.5, 2), (0.5, 0.9, 400)])
def test_same_epsilon_as_the_two_pass_evaluation(share, ratio, sensitivity):
    assert divisible_laplace_epsilon(share, ratio, sensitivity) == _twice_evaluated(share, ratio, sensitivity)
