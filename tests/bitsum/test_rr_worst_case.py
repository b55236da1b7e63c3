"""RR's worst case over every neighbour with a work budget, coin block bounds and exact envelope composition.

Deterministic (no randomness): every bound is checked against the all-``k`` brute force
(`privsum.bitsum.exact.rr_profile` for each ``k``) on crowds small enough to visit every neighbour.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, signal, stats

from privsum.accounting import ComposedEvent
from privsum.accounting.pld import PLDPair
from privsum.bitsum import RRBitSum
from privsum.bitsum import _rr_accounting as rr_module
from privsum.bitsum._rr_compositions import _gaussian_flip_estimate
from privsum.bitsum._rr_worst_case import coin_block_pair, worst_case_epsilon, worst_case_samples
from privsum.bitsum.exact import rr_profile, rr_worst_case_delta


def _brute_epsilon(n, q, delta):
    return max(rr_profile(n, q, k, tail_mass=1e-30).epsilon(delta) for k in range(n))


@settings(max_examples=12, deadline=None)
@given(n=st.integers(40, 160), q=st.floats(0.01, 0.45), data=st.data())
def test_coin_block_bound_dominates_every_neighbour_of_its_block(n, q, data):
    first = data.draw(st.integers(0, n - 2))
    last = data.draw(st.integers(first + 1, n - 1))
    pair, extra = coin_block_pair(n, q, first, last, 1e-12)
    bound = pair.profile()
    grid = np.linspace(0.0, math.log((1 - q) / q), 60)
    for k in range(first, last + 1):
        exact = rr_profile(n, q, k, tail_mass=1e-30).delta(grid)
        assert np.all(bound.delta(grid) + extra >= exact * (1 - 1e-12) - 1e-15)


def test_coin_block_keeps_noise_the_plain_block_bound_drops():
    n, q, first, last = 20_000, 0.25, 100, 3_100
    pair, extra = coin_block_pair(n, q, first, last, 1e-20)
    plain = rr_module.count_pair(n - 1 - last, first, q, 1e-20)
    assert pair.epsilon(1e-8 - extra) < plain.epsilon(1e-8)  # tighter
    assert pair.epsilon(1e-8 - extra) >= _exact_at(n, q, first, 1e-8)  # and still above the block's first neighbour


def _exact_at(n, q, k, delta):
    return rr_module.count_pair(n - 1 - k, k, q, 1e-20).epsilon(delta)


@settings(max_examples=12, deadline=None)
@given(n=st.integers(20, 150), q=st.floats(0.01, 0.45), log_delta=st.floats(-10, -3), work=st.floats(50, 5000))
def test_budgeted_epsilon_is_an_upper_bound(n, q, log_delta, work):
    """Tiny budgets force the loose phase and the coarse coin blocks: never below the brute force.

    (Their slack on so few users can be several percent: a coarse block is a tenth of the users.)
    """
    delta = 10.0**log_delta
    brute = _brute_epsilon(n, q, delta)
    budgeted = worst_case_epsilon(n, q, delta, rtol=1e-9, tail_mass=1e-30, work=work)
    assert budgeted >= brute * (1 - 1e-9) - 1e-12
    assert budgeted <= brute * 1.25 + 1e-12


def test_ample_budget_is_exact_and_a_large_crowd_stays_within_its_slack():
    n, q, delta = 300, 0.2, 1e-7
    exact = worst_case_epsilon(n, q, delta, rtol=1e-9, tail_mass=1e-30)
    assert worst_case_epsilon(n, q, delta, rtol=1e-9, tail_mass=1e-30, work=1e9) == exact
    # 10^5 users at q = 1/4: the headline's budget suffices for the 1e-9 worst case
    exact_at_scale = rr_module.rr_worst_case_epsilon(100_000, 0.25, 1e-8)
    assert abs(rr_module.headline_epsilon(100_000, 0.25, 1e-8) / exact_at_scale - 1) <= 1e-9
    # 560,000 users: within the loose phase's 1e-3 of the exact maximum, computed independently below
    n, q, delta = 560_000, 0.25, 1e-8
    headline = rr_module.headline_epsilon(n, q, delta)
    at_all_zeros = _independent_epsilon(n, q, 0, delta)  # k = 0 attains the exact search's maximum, 0.0062207037
    assert at_all_zeros <= headline <= at_all_zeros * (1 + 1.1e-3)
    for k in (1, 10, 1_000, 140_000, (n - 1) // 2, n - 11, n - 1):  # and the headline is backed at other neighbours
        assert _independent_delta(n, q, k, headline) <= delta


# --- an independent reference: the count's two laws from scipy's binomial pmf, hockey-stick sums ---


def _independent_pmfs(n: int, q: float, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Laws of the number of 1-reports when the target holds 0 and 1; the others hold ``k`` ones.

    The others' reports of 1 are ``Bin(n-1-k, q) + Bin(k, 1-q)``; each binomial is kept within 15
    standard deviations of its mean (the mass beyond is below 1e-45 by Bernstein's inequality).
    """
    laws = []
    for trials, p in ((n - 1 - k, q), (k, 1 - q)):
        spread = 15 * math.sqrt(trials * p * (1 - p)) + 20
        low, high = max(0, math.floor(trials * p - spread)), min(trials, math.ceil(trials * p + spread))
        laws.append(np.concatenate([np.zeros(low), stats.binom.pmf(np.arange(low, high + 1), trials, p)]))
    others = signal.fftconvolve(*laws) if min(law.size for law in laws) > 1 else np.convolve(*laws)
    others = np.append(np.maximum(others, 0.0), 0.0)  # fftconvolve leaves +-1e-20 noise where the pmf is 0
    reports_one = np.roll(others, 1)
    return (1 - q) * others + q * reports_one, q * others + (1 - q) * reports_one


def _independent_delta(n: int, q: float, k: int, epsilon: float) -> float:
    """``max(HS_e(P||Q), HS_e(Q||P))`` by direct summation."""
    first, second = _independent_pmfs(n, q, k)
    scale = math.exp(epsilon)
    return max(float(np.maximum(a - scale * b, 0.0).sum()) for a, b in ((first, second), (second, first)))


def _independent_epsilon(n: int, q: float, k: int, delta: float) -> float:
    first, second = _independent_pmfs(n, q, k)

    def excess(epsilon: float) -> float:
        scale = math.exp(epsilon)
        return max(float(np.maximum(a - scale * b, 0.0).sum()) for a, b in ((first, second), (second, first))) - delta

    return optimize.brentq(excess, 0.0, math.log((1 - q) / q), xtol=1e-14, rtol=1e-12)


@pytest.mark.slow
def test_headline_at_scale_is_backed_at_every_sampled_neighbour_independently():
    """At 560,000 users: the first 1,000 neighbours (where the maximum sits) and every 700th after it.

    Both directions are checked at each ``k``, so ``k`` and ``n - 1 - k`` (the reflected neighbour) are covered.
    """
    n, q, delta = 560_000, 0.25, 1e-8
    headline = rr_module.headline_epsilon(n, q, delta)
    worst = max(_independent_delta(n, q, k, headline) for k in sorted({*range(1_000), *range(0, n, 700)}))
    assert worst <= delta


def test_the_independent_reference_matches_the_exact_profile_on_a_small_crowd():
    """The reference above agrees with `privsum.bitsum.exact.rr_profile` where both are exact."""
    for k in (0, 7, 150, 299):
        exact = rr_profile(300, 0.2, k, tail_mass=1e-30).epsilon(1e-6)
        assert abs(_independent_epsilon(300, 0.2, k, 1e-6) / exact - 1) <= 1e-9


@settings(max_examples=8, deadline=None)
@given(n=st.integers(20, 150), q=st.floats(0.02, 0.45), work=st.floats(100, 3000))
def test_budgeted_samples_bound_the_maximum_over_every_neighbour(n, q, work):
    grid = np.linspace(0.0, math.log((1 - q) / q), 80)
    atol = 1e-14  # the samples' documented absolute slack; beyond it only float64 rounding (relative)
    samples = worst_case_samples(n, q, grid, stretch=1.0025, rtol=5e-3, atol=atol, tail_mass=1e-20, work=work)
    exact = rr_worst_case_delta(n, q, grid)
    assert np.all(samples >= exact * (1 - 1e-12) - atol)


def test_guarantee_is_the_events_headline_and_needs_no_profile():
    protocol = RRBitSum(n_users=5_000, flip_probability=0.08, delta=1e-7)
    headline = protocol.guarantee
    assert "event" not in protocol.__dict__  # the headline alone builds no profile
    assert protocol.event.guarantee == headline
    assert rr_worst_case_delta(5_000, 0.08, headline.epsilon)[0] <= 1e-7 * (1 + 1e-9)


def test_envelope_composes_exactly_at_its_own_step():
    """On its power-of-two grid the envelope's losses are exact: finer grids give the same composition."""
    event = RRBitSum(n_users=3_000, flip_probability=0.1, delta=1e-8).event
    step = event.native_discretization
    assert step == 2.0**-10
    composed = ComposedEvent(event, 50)
    native = composed.pld(step).epsilon(1e-6)
    finer = composed.pld(step / 16).epsilon(1e-6)
    rounded = composed.pld(1e-4).epsilon(1e-6)  # losses rounded up to another grid: pessimistic
    assert abs(native - finer) <= 1e-9 * native + step / 16  # only the headline atom may round differently
    assert native <= rounded + 1e-12
    assert composed.epsilon(1e-6) == native  # an event's own epsilon uses its native step


def test_symmetric_envelope_has_one_pld_for_both_directions():
    event = RRBitSum(n_users=2_000, flip_probability=0.1, delta=1e-8).event
    pld = PLDPair.from_profile(event.profile, discretization=event.native_discretization)
    assert pld.forward is pld.backward


def test_gaussian_start_is_near_the_calibrated_flip():
    n, count, epsilon, delta = 40_000, 768, 2.0, 1e-6
    estimate = _gaussian_flip_estimate(epsilon, delta, n, count)
    assert 0 < estimate < 0.5
    from privsum.kde import ShuffledKDE
    from privsum.lsq import RandomFourierFeatures

    family = RandomFourierFeatures(dimension=768, n_repetitions=768, seed=0)
    kde = ShuffledKDE.from_privacy(family=family, protocol="rr", epsilon=epsilon, delta=delta, n_users=n)
    assert kde.guarantee.epsilon <= epsilon and kde.guarantee.epsilon >= epsilon * (1 - 2.1e-3)
    assert abs(kde.bitsum.flip_probability / estimate - 1) < 0.05
