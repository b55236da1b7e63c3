import math

import numpy as np
import pytest

from privsum import InvalidParameterError
from privsum.testing.audit import audit_privacy, clopper_pearson
from tests.shuffle.toy import ToyFlip

ALPHA = 1e-6  # false-alarm rate of every audit below


def rr_view(flip_probability):
    protocol = ToyFlip(flip_probability=flip_probability)

    def mechanism(bits, rng):
        return int(protocol.sample_view(bits, rng=rng).count(1)[0])

    return protocol, mechanism


def test_audit_stays_below_a_true_claim():
    protocol, mechanism = rr_view(0.2)
    dataset = np.zeros((3, 1), dtype=int)
    neighbour = dataset.copy()
    neighbour[0, 0] = 1
    result = audit_privacy(mechanism, dataset, neighbour, n_trials=40_000, alpha=ALPHA, rng=1)
    assert not result.refutes(protocol.guarantee.epsilon)
    assert result.epsilon_lower_bound > 0.3  # the audit has power: it finds a real part of the loss


def test_audit_catches_an_under_noised_claim():
    # Negative control: flip probability 0.05 (epsilon = log 19 ~ 2.94) but claimed as if 0.2 (log 4).
    _, mechanism = rr_view(0.05)
    claimed = math.log(4.0)
    dataset = np.zeros((1, 1), dtype=int)
    result = audit_privacy(mechanism, dataset, 1 - dataset, n_trials=40_000, alpha=ALPHA, rng=2)
    assert result.refutes(claimed)


def test_clopper_pearson_covers_known_extremes():
    assert clopper_pearson(0, 10, 0.05)[0] == 0.0
    assert clopper_pearson(10, 10, 0.05)[1] == 1.0
    low, high = clopper_pearson(300, 1000, 1e-6)
    assert low < 0.3 < high


def test_audit_validates_arguments():
    with pytest.raises(InvalidParameterError, match="'n_trials'"):
        audit_privacy(lambda d, r: 0, 0, 1, n_trials=5)
    with pytest.raises(InvalidParameterError, match="'alpha'"):
        audit_privacy(lambda d, r: 0, 0, 1, n_trials=100, alpha=0.0)
