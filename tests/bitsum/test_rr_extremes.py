"""RR's worst case at the edges: tiny deltas, crowds too large for exact windows, budgets that run out.

Deterministic (no randomness): bounds are checked against the brute force over every neighbour
(`privsum.bitsum.exact`) where the crowd is small enough, and against the local epsilon everywhere.
"""

import math

import numpy as np
import pytest

from privsum.bitsum import RRBitSum, rr_worst_case_delta_bound, rr_worst_case_epsilon, rr_worst_case_profile
from privsum.bitsum import _rr_accounting as rr_module
from privsum.bitsum import _rr_pairs as pairs_module
from privsum.bitsum._rr_pairs import largest_crowd, window_points
from privsum.bitsum._rr_worst_case import OutOfWorkError, coin_block_pair, meets_target
from privsum.bitsum.exact import rr_profile, rr_worst_case_delta
from privsum.exceptions import InvalidParameterError

HUGE = 2**62


@pytest.mark.parametrize("delta", [1e-300, 1e-320, 5e-324])
def test_tiny_deltas_give_a_finite_bound_never_above_the_local_epsilon(delta):
    q = 0.25
    epsilon = RRBitSum(n_users=1_000_000, flip_probability=q, delta=delta).guarantee.epsilon
    assert 0 < epsilon <= math.log((1 - q) / q) + 1e-9


@pytest.mark.slow
def test_tiny_delta_bound_holds_against_the_brute_force():
    """At delta = 1e-300 with 2,600 users (all-zero count: 0.7^2600 = 1e-403) the bound is below the local epsilon, exact."""
    n, q, delta = 2_600, 0.3, 1e-300
    epsilon = rr_worst_case_epsilon(n, q, delta)
    assert epsilon < math.log((1 - q) / q)
    profiles = [rr_profile(n, q, k, tail_mass=1e-306) for k in range(n)]

    def worst(e):
        return max(profile.delta(e) for profile in profiles)

    assert worst(epsilon) <= delta * (1 + 1e-9)
    assert worst(epsilon * (1 - 1e-6)) > delta  # and it is tight


def test_tiny_delta_bound_holds_against_the_edges_of_the_brute_force():
    """The slow test above on the neighbours that set it (all-zero and all-one others) and a sample between."""
    n, q, delta = 2_600, 0.3, 1e-300
    epsilon = rr_worst_case_epsilon(n, q, delta)
    assert epsilon < math.log((1 - q) / q)
    neighbours = sorted({*range(20), *range(n - 20, n), *range(0, n, 200)})
    profiles = [rr_profile(n, q, k, tail_mass=1e-306) for k in neighbours]
    assert max(profile.delta(epsilon) for profile in profiles) <= delta * (1 + 1e-9)
    assert profiles[0].delta(epsilon * (1 - 1e-6)) > delta  # tight at k = 0


def test_headline_never_exceeds_the_local_epsilon():
    q = 1e-12
    assert RRBitSum(n_users=3, flip_probability=q, delta=1e-8).guarantee.epsilon <= math.log((1 - q) / q) + 1e-9


def test_largest_crowd_is_the_last_whose_window_fits():
    for q, tail in [(0.25, 1e-20), (0.01, 1e-30), (1e-6, 1e-20)]:
        crowd = largest_crowd(q, tail, 2**20)
        assert window_points(crowd - 1, q, tail) <= 2**20
        assert window_points(crowd, q, tail) > 2**20
    assert largest_crowd(1e-15, 1e-20, 2**20) == 2**63 - 1  # windows never that wide


def test_a_crowd_too_large_for_exact_windows_is_bounded_by_the_largest_computable_one():
    q, delta = 0.25, 1e-8
    crowd = rr_module._computed_crowd(HUGE, q, rr_module._bound_tail(delta))
    assert crowd < HUGE
    huge = RRBitSum(n_users=HUGE, flip_probability=q, delta=delta)
    assert huge.guarantee.epsilon == rr_module.headline_epsilon(crowd, q, delta)
    # the huge crowd's event is a generic pair (its profile would take minutes), with the same headline
    assert huge.event.guarantee == huge.guarantee


@pytest.mark.parametrize("n_small", [30, 57, 90])
def test_more_users_never_need_a_larger_epsilon(n_small):
    """The bound used for crowds too large to compute: n users' worst case is at most that of fewer."""
    q = 0.2
    grid = np.linspace(0.0, math.log((1 - q) / q), 40)
    small = rr_worst_case_delta(n_small, q, grid)
    for n in (n_small + 1, 2 * n_small, 5 * n_small):
        assert np.all(rr_worst_case_delta(n, q, grid) <= small + 1e-15)


@pytest.mark.parametrize(
    "call",
    [
        lambda: rr_worst_case_epsilon(HUGE, 0.25, 1e-8),
        lambda: rr_worst_case_delta_bound(HUGE, 0.25, 0.1),
        lambda: rr_worst_case_profile(HUGE, 0.25),
    ],
)
def test_exact_functions_refuse_crowds_beyond_their_windows_by_name(call):
    with pytest.raises(InvalidParameterError, match="n_users"):
        call()


def test_pair_without_affordable_coins_dominates_the_pair_with_them(monkeypatch):
    n, q, first, last, delta = 3_000, 0.2, 40, 1_200, 1e-8
    with_coins, extra = coin_block_pair(n, q, first, last, 1e-20)
    pairs_module.clear_caches()
    monkeypatch.setattr(pairs_module, "_COIN_DIRECT_WORK", 0)  # no coin convolution is affordable
    without, _ = coin_block_pair(n, q, first, last, 1e-20)
    pairs_module.clear_caches()
    grid = np.linspace(0.0, 1.0, 30)
    assert all(without.delta_at(e) >= with_coins.delta_at(e) - 1e-15 for e in grid)
    assert without.epsilon(delta) > with_coins.epsilon(delta - extra)  # the coins were worth keeping


def test_verification_out_of_work_raises_and_the_headline_calibration_still_meets_the_target(monkeypatch):
    n, epsilon, delta = 4_000, 0.5, 1e-7
    exact = RRBitSum.from_privacy(epsilon=epsilon, delta=delta, n_users=n).flip_probability
    with pytest.raises(OutOfWorkError):
        meets_target(n, exact, epsilon, delta, tail_mass=1e-20, work=1.0)
    monkeypatch.setattr(rr_module, "_VERIFY_WORK", 1.0)  # every check runs out: the headline decides
    headline = RRBitSum.from_privacy(epsilon=epsilon, delta=delta, n_users=n)
    assert exact <= headline.flip_probability <= exact * 1.05
    assert rr_worst_case_delta(n, headline.flip_probability, epsilon)[0] <= delta * (1 + 1e-9)
    assert headline.guarantee.epsilon == epsilon
