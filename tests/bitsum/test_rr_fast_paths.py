"""The fast paths of RR's exact accounting, each against the slow computation it replaces.

Deterministic (no randomness): exact comparisons with stated tolerances.
"""

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from privsum._binomial import binomial_pmf
from privsum.accounting.calibration import calibrate
from privsum.accounting.guarantee import Neighbouring
from privsum.accounting.profile import PrivacyProfile
from privsum.bitsum import RRBitSum
from privsum.bitsum._rr_accounting import meets_flip_target, tight_flip_probability
from privsum.bitsum._rr_pairs import CountPair, count_pair
from privsum.bitsum._rr_worst_case import block_pair, cover, seed_ks
from privsum.bitsum.exact import rr_profile, rr_worst_case_delta
from privsum.exceptions import InvalidParameterError

# binomial_pmf's stated accuracy (relative), within 15 standard deviations of the mean
_BINOMIAL_RTOL = 1e-10


def _exact_binomial(trials, k, probability):
    with mpmath.workdps(40):
        p = mpmath.mpf(probability)
        return mpmath.binomial(trials, k) * p**k * (1 - p) ** (trials - k)


@pytest.mark.parametrize("trials", [1, 2, 7, 16, 17, 300, 40_000, 10**6, 10**9])
@pytest.mark.parametrize("probability", [1e-6, 3.4e-4, 0.0777, 0.25, 0.4999, 0.9])
def test_binomial_pmf_matches_40_digit_arithmetic(trials, probability):
    mean, spread = trials * probability, math.sqrt(trials * probability * (1 - probability))
    low = max(0, math.floor(mean - 15 * spread - 3))
    high = min(trials, math.ceil(mean + 15 * spread + 3))
    values = binomial_pmf(low, high, trials, probability)
    assert values.shape == (high - low + 1,)
    picks = sorted({low, high, *np.linspace(low, high, 9).astype(int).tolist(), min(high, max(low, round(mean)))})
    for k in picks:
        exact = _exact_binomial(trials, k, probability)
        if exact < mpmath.mpf("1e-300"):
            assert values[k - low] < 1e-290
            continue
        assert abs(mpmath.mpf(float(values[k - low])) / exact - 1) <= _BINOMIAL_RTOL


@settings(max_examples=30, deadline=None)
@given(trials=st.integers(0, 5000), probability=st.floats(1e-4, 0.9999), data=st.data())
def test_binomial_pmf_matches_scipy_on_any_window(trials, probability, data):
    low = data.draw(st.integers(0, trials))
    high = data.draw(st.integers(low, trials))
    ours = binomial_pmf(low, high, trials, probability)
    reference = stats.binom.pmf(np.arange(low, high + 1), trials, probability)
    big = reference > 1e-280  # both underflow together below
    np.testing.assert_allclose(ours[big], reference[big], rtol=1e-10)
    assert np.all(ours[~big] < 1e-270)


def _neighbour_pair(n, q, k, tail_mass, fft_delta_error=0.0):
    """The exact profile of ``k`` ones among the ``n - 1`` others (FFT only within ``fft_delta_error``)."""
    return count_pair(n - 1 - k, k, q, tail_mass, fft_delta_error).profile()


def _profiles_equal(first, second):
    grid = np.union1d(first.breakpoints(), np.linspace(0.0, 5.0, 101))
    np.testing.assert_array_equal(first.delta(grid), second.delta(grid))
    np.testing.assert_array_equal(first.breakpoints(), second.breakpoints())
    for delta in (1e-12, 1e-6, 0.1):
        assert first.epsilon(delta) == second.epsilon(delta)
    assert first.infinite_mass == second.infinite_mass


@settings(max_examples=30, deadline=None)
@given(
    p=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=12),
    q=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=12),
    tail=st.floats(0.0, 0.1),
)
def test_trusted_profile_equals_the_validated_one(p, q, tail):
    size = min(len(p), len(q))
    p = np.array(p[:size]) / max(1.0, 1.2 * sum(p[:size]))
    q = np.array(q[:size]) / max(1.0, 1.2 * sum(q[:size]))
    checked = PrivacyProfile(p, q, neighbouring="replace-one", p_tail=tail, q_tail=tail / 2)
    trusted = PrivacyProfile._trusted(p, q, neighbouring=Neighbouring.REPLACE_ONE, p_tail=tail, q_tail=tail / 2)
    _profiles_equal(checked, trusted)


def test_rr_pair_equals_the_validated_profile_of_its_pmfs():
    pair = _neighbour_pair(40_000, 0.0777, 3, 1e-30, 6.5e-14)
    checked = PrivacyProfile(pair.p, pair.q, neighbouring="replace-one", p_tail=pair.p_tail, q_tail=pair.q_tail)
    _profiles_equal(pair, checked)


@settings(max_examples=40, deadline=None)
@given(scale=st.floats(0.1, 30.0), power=st.floats(0.5, 3.0), log_target=st.floats(-25.0, -1.0), use_start=st.booleans())
def test_regula_falsi_meets_the_target_and_agrees_with_bisection(scale, power, log_target, use_start):
    """A delta falling in theta like exp(-scale (theta + 28)^power): both searches land within the tolerance."""
    target = math.exp(log_target)

    def delta_at(theta):
        return math.exp(-scale * (theta + 28.0) ** power)

    risky, safe = math.log(1e-12), math.log(0.3)

    def illinois(lower):  # the RR calibration's search, from a start at or below the answer
        return calibrate(delta_at, target_delta=target, lower=lower, upper=safe, more_private="increasing", method="illinois")

    if delta_at(safe) > target:
        with pytest.raises(InvalidParameterError):
            illinois(risky)
        return
    root = -28.0 + (-log_target / scale) ** (1.0 / power)
    start = min(max(root - 0.5, risky), safe) if use_start else None
    ours = illinois(risky if start is None or start >= safe else start)
    bisection = calibrate(delta_at, target_delta=target, lower=risky, upper=safe, more_private="increasing")
    assert delta_at(ours) <= target
    tolerance = 1e-6 * max(1.0, abs(ours))
    assert ours == risky or ours - root <= tolerance
    assert abs(ours - bisection) <= 2 * tolerance


@pytest.mark.parametrize(("epsilon", "delta", "n_users"), [(1.0, 1e-6, 2000), (0.05, 6.5e-10, 40_000), (0.3, 1e-8, 5000)])
def test_calibrated_flip_is_the_bisections_within_its_tolerance(epsilon, delta, n_users):
    """The regula-falsi calibration against the bisection it replaced, on the same neighbours."""
    flip, bound = tight_flip_probability(epsilon, delta, n_users)
    assert bound <= delta * (1 + 1e-9)
    meets, _, verified = meets_flip_target(n_users, flip, epsilon, delta)
    assert meets and verified == bound
    tail, fft = min(1e-30, 1e-10 * delta), 1e-4 * delta
    local = 1.0 / (1.0 + math.exp(epsilon))
    # the neighbours the calibration ended up constrained by (k = 0 and the first violators)
    ks = [0, 1, 2, 3, 4, 5]

    def delta_at(log_flip):
        return max(float(_neighbour_pair(n_users, math.exp(log_flip), k, tail, fft).delta(epsilon)) for k in ks)

    bisection = calibrate(delta_at, target_delta=delta, lower=math.log(1e-12), upper=math.log(local), more_private="increasing")
    assert abs(math.log(flip) - bisection) <= 2e-6 * max(1.0, abs(bisection)) + 1e-6
    protocol = RRBitSum.from_privacy(epsilon=epsilon, delta=delta, n_users=n_users)
    assert protocol.flip_probability == flip
    assert protocol.event.profile.delta(epsilon) <= delta * (1 + 1e-9)
    if n_users <= 5000:  # every neighbour visited
        assert rr_worst_case_delta(n_users, flip, epsilon)[0] <= delta * (1 + 1e-9)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 3000), q=st.floats(0.001, 0.49), data=st.data(), epsilon=st.floats(0.0, 6.0))
def test_direct_hockey_stick_equals_the_profile(n, q, data, epsilon):
    """The threshold checks' direct sum against the sorted-loss profile of the same pair."""
    first = data.draw(st.integers(0, (n - 1) // 2))
    last = data.draw(st.integers(first, (n - 1) // 2))
    pair = block_pair(n, q, first, last, 1e-30, 1e-14)
    exact = pair.profile().delta(epsilon)
    assert abs(pair.delta_at(epsilon) - exact) <= 1e-12 * exact + 1e-17


@settings(max_examples=60, deadline=None)
@given(half=st.integers(0, 3000), data=st.data())
def test_cover_offers_every_neighbour_to_exactly_one_settled_block_or_seed(half, data):
    """Whatever the blocks' outcomes, the settled blocks and the seeds partition ``0..half``."""
    covered = np.zeros(half + 1, dtype=int)
    outcomes = data.draw(st.lists(st.booleans(), min_size=1, max_size=50))
    attempts = [0]

    def attempt(first, last):
        assert 0 <= first <= last <= half
        settled = first == last or outcomes[attempts[0] % len(outcomes)]
        attempts[0] += 1
        if settled:
            covered[first : last + 1] += 1
        return settled

    cover(half, attempt)
    assert np.all(covered == 1)
    assert set(seed_ks(half)) <= set(range(half + 1))


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 5000), q=st.floats(0.002, 0.45), data=st.data())
def test_pair_searches_equal_the_whole_support_evaluation(n, q, data):
    """The dot-product searches (large pairs) against the same pair convolved in full (small pairs)."""
    k = data.draw(st.integers(0, n - 1))
    whole = CountPair(n - 1 - k, k, q, 1e-30)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("privsum.bitsum._rr_pairs._FULL_PAIR_WORK", 0)
        searched = CountPair(n - 1 - k, k, q, 1e-30)
    for epsilon in (0.0, 0.01, 0.2, 1.0, 4.0):
        exact = whole.delta_at(epsilon)
        assert abs(searched.delta_at(epsilon) - exact) <= 1e-9 * exact + 1e-17
    for delta in (1e-2, 1e-6, 1e-12):
        exact = whole.epsilon(delta)
        assert abs(searched.epsilon(delta) - exact) <= 1e-9 * exact + 1e-12


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 3000), q=st.floats(0.002, 0.45), data=st.data())
def test_pair_epsilon_is_the_reference_profiles(n, q, data):
    """One pair's exact inverse against the sorted-loss profile of the reference module."""
    k = data.draw(st.integers(0, n - 1))
    pair = CountPair(n - 1 - k, k, q, 1e-30)
    reference = rr_profile(n, q, k, tail_mass=1e-30)
    for delta in (1e-3, 1e-6, 1e-9, 1e-12):
        expected = reference.epsilon(delta)
        assert abs(pair.epsilon(delta) - expected) <= 1e-9 * expected + 1e-12
        assert pair.delta_at(pair.epsilon(delta)) <= delta
