import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privsum import InvalidParameterError
from privsum.accounting import calibrate, randomized_response_profile


@given(target_epsilon=st.floats(0.05, 3.0), target_delta=st.floats(1e-10, 0.2), categories=st.integers(2, 10))
@settings(max_examples=100, deadline=None)
def test_calibration_never_overshoots(target_epsilon, target_delta, categories):
    # Noise parameter: the RR epsilon0 (smaller = more private), calibrated against its exact profile.
    def delta_at(epsilon0):
        return randomized_response_profile(epsilon0, categories).delta(target_epsilon)

    epsilon0 = calibrate(delta_at, target_delta=target_delta, lower=1e-6, upper=20.0, more_private="decreasing")
    assert delta_at(epsilon0) <= target_delta
    assert epsilon0 >= target_epsilon * (1 - 1e-5)  # as tight as the trivial choice, up to the bisection tolerance


def test_calibration_is_tight():
    value = calibrate(
        lambda t: math.exp(-t), target_delta=1e-6, lower=0.0, upper=50.0, more_private="increasing", tolerance=1e-10
    )
    assert value == pytest.approx(math.log(1e6), rel=1e-8)
    assert math.exp(-value) <= 1e-6


def test_calibration_raises_when_target_unreachable():
    with pytest.raises(InvalidParameterError, match="'upper'"):
        calibrate(lambda t: 0.5, target_delta=1e-6, lower=0.0, upper=1.0, more_private="increasing")


@pytest.mark.parametrize("target", [math.nan, -1.0, 1.0])
def test_calibration_validates_target(target):
    with pytest.raises(InvalidParameterError, match="'target_delta'"):
        calibrate(lambda t: 0.0, target_delta=target, lower=0.0, upper=1.0, more_private="increasing")
