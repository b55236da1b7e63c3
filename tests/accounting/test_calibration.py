import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privsum import InvalidParameterError
from privsum.accounting import calibrate, randomized_response_profile
from privsum.accounting.calibration import bisect_last


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


def _counted(function):
    calls = []

    def wrapped(theta):
        calls.append(theta)
        return function(theta)

    return wrapped, calls


@given(target_epsilon=st.floats(0.05, 3.0), target_delta=st.floats(1e-10, 0.2), categories=st.integers(2, 10))
@settings(max_examples=100, deadline=None)
def test_illinois_never_overshoots_and_matches_bisection(target_epsilon, target_delta, categories):
    def delta_at(epsilon0):
        return randomized_response_profile(epsilon0, categories).delta(target_epsilon)

    options = dict(target_delta=target_delta, lower=1e-6, upper=20.0, more_private="decreasing", tolerance=1e-8)
    bisection = calibrate(delta_at, **options)
    illinois = calibrate(delta_at, method="illinois", **options)
    assert delta_at(illinois) <= target_delta
    assert illinois == pytest.approx(bisection, abs=2e-8)  # each within the bracket tolerance (1e-8) of the least noise


def test_illinois_needs_fewer_evaluations_on_a_smooth_profile():
    # delta = e^-theta^2: log delta is smooth, the regime of exact noise profiles.
    options = dict(target_delta=1e-9, lower=0.0, upper=20.0, more_private="increasing", tolerance=1e-10)
    bisection, bisection_calls = _counted(lambda t: math.exp(-t * t))
    illinois, illinois_calls = _counted(lambda t: math.exp(-t * t))
    slow = calibrate(bisection, **options)
    fast = calibrate(illinois, method="illinois", **options)
    assert math.exp(-fast * fast) <= 1e-9 and fast == pytest.approx(slow, rel=1e-9)
    assert len(illinois_calls) * 2 <= len(bisection_calls), (len(illinois_calls), len(bisection_calls))


@pytest.mark.parametrize("method", ["bisection", "illinois"])
def test_delta_rtol_stops_inside_the_band(method):
    def delta_at(theta):
        return math.exp(-theta)

    theta = calibrate(
        delta_at, target_delta=1e-6, lower=0.0, upper=50.0, more_private="increasing", method=method, delta_rtol=1e-2
    )
    assert 1e-6 * (1 - 1e-2) <= delta_at(theta) <= 1e-6


def test_illinois_handles_a_plateau_and_a_zero_target():
    # delta is flat (at its floor) over most of the bracket, then steep: the secant alone would crawl.
    def delta_at(theta):
        return max(1e-16, math.exp(-200 * (1 - theta)) - 1e-80)

    theta = calibrate(delta_at, target_delta=1e-9, lower=0.0, upper=1.0, more_private="decreasing", method="illinois")
    assert delta_at(theta) <= 1e-9 and theta == pytest.approx(1 + math.log(1e-9) / 200, abs=1e-5)
    zero = calibrate(
        lambda t: max(0.0, 0.5 - t), target_delta=0.0, lower=0.0, upper=1.0, more_private="increasing", method="illinois"
    )
    assert zero >= 0.5 and zero == pytest.approx(0.5, abs=1e-5)


@pytest.mark.parametrize(("name", "value"), [("method", "secant"), ("delta_rtol", 1.0), ("delta_rtol", -0.1)])
def test_calibration_validates_search_options(name, value):
    with pytest.raises(InvalidParameterError, match=f"'{name}'"):
        calibrate(lambda t: 0.0, target_delta=0.1, lower=0.0, upper=1.0, more_private="increasing", **{name: value})


@settings(max_examples=30, deadline=None)
@given(st.floats(-50.0, 50.0), st.floats(1e-3, 100.0), st.floats(0.0, 1.0), st.sampled_from([1e-9, 1e-3, 0.5]))
def test_bisect_last_keeps_the_end_that_holds(low, width, fraction, tolerance):
    boundary = low + fraction * width
    asked = []

    def below(point):
        asked.append(point)
        return point <= boundary

    found = bisect_last(below, low, low + width, tolerance=tolerance)
    assert found <= boundary and low <= found < low + width  # never past the boundary
    assert boundary - found <= max(tolerance, 1e-12 * max(1.0, abs(boundary)))
    assert low not in asked and len(asked) <= 2 + max(0.0, math.log2(width / tolerance))


@pytest.mark.parametrize("name, value", [("tolerance", 0.0), ("tolerance", math.nan), ("low", math.inf), ("predicate", None)])
def test_bisect_last_validates(name, value):
    arguments = {"predicate": lambda point: True, "low": 0.0, "high": 1.0, "tolerance": 1e-3, name: value}
    with pytest.raises(InvalidParameterError, match=name):
        bisect_last(arguments.pop("predicate"), arguments.pop("low"), arguments.pop("high"), **arguments)
