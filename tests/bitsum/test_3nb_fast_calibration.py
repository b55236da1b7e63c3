"""The 3NB tight calibration's fast path: one-pass exact delta and regula falsi, against the exact profile."""

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privsum import InvalidParameterError
from privsum.accounting import calibrate
from privsum.bitsum import ThreeNBBitSum
from privsum.bitsum.exact import signed_count_delta, signed_count_profile


@given(
    noise_ratio=st.floats(0.01, 0.995),
    flooding_shape=st.floats(0.0, 80.0),
    flooding_ratio=st.floats(0.0, 0.999),
    epsilon=st.floats(0.0, 4.0),
)
@settings(max_examples=60, deadline=None)
def test_one_pass_delta_equals_the_profile(noise_ratio, flooding_shape, flooding_ratio, epsilon):
    profile = signed_count_profile(1.0, noise_ratio, flooding_shape, flooding_ratio, tail_mass=1e-15)
    fast = signed_count_delta(noise_ratio, flooding_shape, flooding_ratio, epsilon, tail_mass=1e-15)
    # Same sums in another order; the profile's suffix sums cancel a little (1e-10 relative seen).
    assert fast == pytest.approx(profile.delta(epsilon), rel=1e-9, abs=1e-300)


def test_one_pass_delta_at_the_paper_setting_and_its_breakpoints():
    # n = 40,000, I = 768 RFF, epsilon = 2, delta = 1e-6: epsilon0 about 0.0163, delta0 = 1e-6 / 1536.
    args = (0.98425, 66.4573, 0.99934747)
    profile = signed_count_profile(1.0, *args, tail_mass=6.5e-16)
    points = np.concatenate([[0.0, 0.0163], profile.breakpoints()[:50]])
    for epsilon in points:
        fast = signed_count_delta(*args, float(epsilon), tail_mass=6.5e-16)
        assert fast == pytest.approx(profile.delta(float(epsilon)), rel=1e-9)


def test_one_pass_delta_validates_and_bounds_work():
    with pytest.raises(InvalidParameterError, match="'noise_ratio'"):
        signed_count_delta(0.0, 1.0, 0.5, 1.0)
    with pytest.raises(InvalidParameterError, match="'epsilon'"):
        signed_count_delta(0.5, 1.0, 0.5, -1.0)
    with pytest.raises(InvalidParameterError, match="'flooding_ratio'"):
        signed_count_delta(0.5, 50.0, 1.0 - 1e-12, 1.0)  # a pmf beyond the work bound


@pytest.mark.parametrize(
    ("epsilon", "delta", "n_users"), [(0.0163, 6.5e-10, 40_000), (1.0, 1e-6, 1000), (0.1, 1e-8, 500), (3.0, 1e-9, 10)]
)
def test_tight_3nb_meets_the_exact_profile_and_matches_bisection(epsilon, delta, n_users):
    protocol = ThreeNBBitSum.from_privacy(epsilon=epsilon, delta=delta, n_users=n_users)
    tail = min(1e-15, 1e-6 * delta)
    exact = signed_count_profile(1.0, protocol.noise_ratio, protocol.flooding_shape, protocol.flooding_ratio, tail_mass=tail)
    achieved = exact.delta(epsilon)
    assert achieved <= delta * (1 + 1e-9)  # never overshoots, on the profile itself
    assert achieved >= delta * (1 - 1e-2)  # stops within 1% below the target

    def slow_delta(share):  # the previous calibration: bisection on the full profile
        ratio = math.exp(-share * epsilon)
        return signed_count_profile(1.0, ratio, protocol.flooding_shape, protocol.flooding_ratio, tail_mass=tail).delta(epsilon)

    share = calibrate(slow_delta, target_delta=delta, lower=0.5, upper=1.0, more_private="decreasing", tolerance=1e-5)
    bisected = ThreeNBBitSum(
        n_users=n_users,
        noise_ratio=math.exp(-share * epsilon),
        flooding_shape=protocol.flooding_shape,
        flooding_ratio=protocol.flooding_ratio,
        delta=delta,
    )
    # The variance is the least up to the stopping rules of either search.
    assert protocol.variance() == pytest.approx(bisected.variance(), rel=1e-3)


@pytest.mark.parametrize("epsilon", [0.01, 1e-6])
def test_small_epsilon_is_fast_or_refused_by_name(epsilon):
    start = time.perf_counter()
    try:
        protocol = ThreeNBBitSum.from_privacy(epsilon=epsilon, delta=1e-6, n_users=1000)
    except InvalidParameterError as error:
        assert "'epsilon'" in str(error)
    else:
        assert protocol.event.profile.delta(epsilon) <= 1e-6 * (1 + 1e-9)
    assert time.perf_counter() - start < 30.0  # was 28 s at epsilon = 0.01 and did not finish at 1e-6
