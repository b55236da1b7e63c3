"""The Skellam Rényi bound and its (epsilon, delta) conversion, checked against exact computations.

* the one-dimensional Rényi bound against the exact Rényi divergence of shifted Skellam pmfs;
* the conversion against dp-accounting's implementation of the same proposition;
* the headline epsilon against the exact privacy-loss distributions of worst-case shift vectors
  (all mass on one coordinate, spread evenly, in between, unit entries) composed over
  coordinates, in both directions, with a negative control (half the noise) that must fail.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import ive, logsumexp

from privsum.accounting import (
    RDP_ORDERS,
    ComposedEvent,
    PLDPair,
    PrivacyAccountant,
    SkellamEvent,
    rdp_delta,
    rdp_epsilon,
    skellam_rdp,
)
from privsum.exceptions import InvalidParameterError


def skellam_log_pmf(values: np.ndarray, mu: float) -> np.ndarray:
    """``log P(Sk(mu) = k) = log(e^{-2 mu} I_|k|(2 mu))``, exact to floating point (``ive`` is scaled)."""
    with np.errstate(divide="ignore"):
        return np.log(ive(np.abs(values), 2 * mu))


def _support(mu: float, shift: int) -> np.ndarray:
    half = int(abs(shift) + 40 * math.sqrt(2 * mu) + 60)
    return np.arange(-half, half + 1)


def exact_renyi(order: int, mu: float, shift: int) -> float:
    """``D_alpha(Sk(mu) + shift || Sk(mu))`` summed over a support holding all but ~e^-800 of the mass."""
    k = _support(mu, shift)
    log_p, log_q = skellam_log_pmf(k - shift, mu), skellam_log_pmf(k, mu)
    keep = np.isfinite(log_p) & np.isfinite(log_q)
    return float(logsumexp(order * log_p[keep] + (1 - order) * log_q[keep]) / (order - 1))


@pytest.mark.parametrize("mu", [0.5, 2.0, 10.0, 120.0, 2_000.0])
@pytest.mark.parametrize("shift", [1, 2, 5, 17, 60])
def test_one_dimensional_renyi_bound_holds(mu, shift):
    """Agarwal-Kairouz-Liu's per-coordinate bound is above the exact divergence, for every order tried."""
    orders = np.array([2, 3, 4, 7, 12, 30, 80])
    bound = skellam_rdp(orders, mu=mu, l2_sensitivity=shift, l1_sensitivity=shift)
    for order, limit in zip(orders, bound, strict=True):
        exact = exact_renyi(int(order), mu, shift)
        assert exact <= limit * (1 + 1e-9) + 1e-12, (mu, shift, order, exact, limit)
        # the bound is not vacuous: within a factor 2 of the exact value where it is small
        if limit < 1:
            assert exact >= 0.5 * limit, (mu, shift, order, exact, limit)


def test_renyi_bound_is_additive_over_coordinates():
    """Sum of per-coordinate bounds <= the vector bound at the same L2 and L1 norms."""
    shifts = np.array([3, 1, 1, 4, 0, 2])
    l2, l1 = math.sqrt(float(np.sum(shifts**2))), float(np.abs(shifts).sum())
    orders = np.arange(2.0, 40.0)
    per_coordinate = sum(skellam_rdp(orders, mu=25.0, l2_sensitivity=int(v), l1_sensitivity=int(v)) for v in shifts)
    assert np.all(per_coordinate <= skellam_rdp(orders, mu=25.0, l2_sensitivity=l2, l1_sensitivity=l1) * (1 + 1e-12))


@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-10])
@pytest.mark.parametrize("rho", [0.002, 0.05, 0.5])
def test_conversion_matches_dp_accounting(delta, rho):
    """Our conversion is the same proposition dp-accounting implements (Gaussian RDP curve alpha * rho)."""
    orders = np.arange(2.0, 257.0)
    reference, _ = rdp_privacy_accountant.compute_epsilon(orders, orders * rho, delta)
    assert rdp_epsilon(orders, orders * rho, delta) == pytest.approx(reference, rel=1e-9, abs=1e-12)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.floats(1e-4, 2.0), st.floats(1e-12, 1e-2))
def test_conversion_round_trip(rho, delta):
    """``rdp_delta(rdp_epsilon(delta)) <= delta``: the two directions are consistent and safe."""
    epsilon = rdp_epsilon(RDP_ORDERS, RDP_ORDERS * rho, delta)
    assert rdp_delta(RDP_ORDERS, RDP_ORDERS * rho, epsilon) <= delta * (1 + 1e-9)


# --------------------------------------------------------------------------- exact verification
def _shift_vectors(l2: float, l1: float, dimension: int) -> dict[str, np.ndarray]:
    """Integer shift vectors with ``||v||_2 <= l2`` and ``||v||_1 <= l1`` (as large as fits)."""

    def fill(support: int) -> np.ndarray:
        vector = np.zeros(dimension, dtype=np.int64)
        vector[:support] = math.floor(l2 / math.sqrt(support))
        for index in range(support):  # add ones while both norms allow
            vector[index] += 1
            if np.sum(vector**2) > l2**2 + 1e-9 or np.abs(vector).sum() > l1 + 1e-9:
                vector[index] -= 1
                break
        return vector

    vectors = {"one coordinate": fill(1), "two coordinates": fill(2), "in between": fill(max(1, dimension // 4))}
    vectors["spread evenly"] = fill(dimension)
    ones = min(dimension, math.floor(l2**2 + 1e-9), math.floor(l1 + 1e-9))
    vectors["unit entries"] = np.r_[np.ones(ones, dtype=np.int64), np.zeros(dimension - ones, dtype=np.int64)]
    for vector in vectors.values():
        assert np.sum(vector**2) <= l2**2 + 1e-9 and np.abs(vector).sum() <= l1 + 1e-9
    return vectors


def exact_pld(mu: float, shifts: np.ndarray, discretization: float = 1e-4) -> PLDPair:
    """Pessimistic PLD pair of ``Sk(mu)^d + v`` vs ``Sk(mu)^d``: per-coordinate pmfs, composed over coordinates.

    Mass outside the truncated support counts as infinite loss (pessimistic).
    """
    values, counts = np.unique(np.abs(shifts[shifts != 0]), return_counts=True)
    total = None
    for value, count in zip(values.tolist(), counts.tolist(), strict=True):
        k = _support(mu, value)
        p, q = np.exp(skellam_log_pmf(k - value, mu)), np.exp(skellam_log_pmf(k, mu))
        pair = PLDPair.from_distributions(
            p, q, p_tail=max(0.0, 1 - p.sum()), q_tail=max(0.0, 1 - q.sum()), discretization=discretization
        ).self_compose(count)
        total = pair if total is None else total.compose(pair)
    return total


CASES = [  # (mu, dimension, L2 bound of the shift, L1 bound of the shift); measured margins ~8% (reported 1.016 vs 0.941)
    (160.0, 16, 4.0, 16.0),  # L1 = L2^2: unit entries are the extreme
    pytest.param(2_600.0, 64, 20.0, 160.0, marks=pytest.mark.slow),
    pytest.param(40_000.0, 8, 80.0, 80 * math.sqrt(8), marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("mu", "dimension", "l2", "l1"), CASES)
@pytest.mark.parametrize("delta", [1e-6, pytest.param(1e-3, marks=pytest.mark.slow)])
def test_reported_epsilon_dominates_exact_plds(mu, dimension, l2, l1, delta):
    """For every worst-case shape of shift, the exact composed epsilon at delta is below the reported one."""
    event = SkellamEvent(mu=mu, l2_sensitivity=l2, l1_sensitivity=l1, headline_delta=delta)
    reported = event.guarantee.epsilon
    exact = {}
    for name, shifts in _shift_vectors(l2, l1, dimension).items():
        pld = exact_pld(mu, shifts)
        exact[name] = pld.epsilon(delta)
        assert exact[name] <= reported, (name, exact[name], reported)
        assert pld.delta(reported) <= delta * (1 + 1e-9), (name, pld.delta(reported), delta)
    # and the bound is not vacuous: the worst shape is within 25% of it
    assert max(exact.values()) >= 0.75 * reported, (exact, reported)


@pytest.mark.parametrize(("mu", "dimension", "l2", "l1"), [case.values for case in CASES[1:]])
def test_reported_epsilon_dominates_coarse_exact_plds_at_scale(mu, dimension, l2, l1):
    """The slow cases above in the default run on a 10x coarser grid: its pessimistic rounding only adds loss,
    so each coarse epsilon is still at least the exact one (measured: within 2e-4 of the fine grid's)."""
    reported = SkellamEvent(mu=mu, l2_sensitivity=l2, l1_sensitivity=l1, headline_delta=1e-6).guarantee.epsilon
    for name, shifts in _shift_vectors(l2, l1, dimension).items():
        assert exact_pld(mu, shifts, discretization=1e-3).epsilon(1e-6) <= reported, name


@pytest.mark.parametrize(("mu", "dimension", "l2", "l1"), CASES)
def test_negative_control_half_the_noise_fails(mu, dimension, l2, l1):
    """Reporting the epsilon of mu for noise mu/2 is caught by the same exact check."""
    delta = 1e-6
    reported = SkellamEvent(mu=mu, l2_sensitivity=l2, l1_sensitivity=l1, headline_delta=delta).guarantee.epsilon
    worst = max(exact_pld(mu / 2, shifts).epsilon(delta) for shifts in _shift_vectors(l2, l1, dimension).values())
    assert worst > reported


# --------------------------------------------------------------------------- the event
def test_event_terms_outside_the_noise():
    base = SkellamEvent(mu=500.0, l2_sensitivity=10.0, l1_sensitivity=30.0, headline_delta=1e-6)
    shares = SkellamEvent(
        mu=500.0, l2_sensitivity=10.0, l1_sensitivity=30.0, headline_delta=1e-6, statistical_distance=1e-8, extra_delta=1e-8
    )
    epsilon = shares.guarantee.epsilon
    assert epsilon > base.guarantee.epsilon
    assert shares.delta(epsilon) <= 1e-6 * (1 + 1e-12)
    noise_part = rdp_delta(RDP_ORDERS, shares.rdp(), epsilon)
    assert shares.delta(epsilon) == pytest.approx(noise_part + (1 + math.exp(epsilon)) * 1e-8 + 1e-8, rel=1e-9)
    too_far = SkellamEvent(mu=500.0, l2_sensitivity=10.0, l1_sensitivity=30.0, headline_delta=1e-6, statistical_distance=1e-6)
    assert too_far.guarantee.epsilon == math.inf


def test_event_composes_in_the_accountant():
    event = SkellamEvent(mu=2_000.0, l2_sensitivity=40.0, l1_sensitivity=120.0, headline_delta=1e-6)
    accountant = PrivacyAccountant()
    accountant.compose(event, count=3)
    total = accountant.epsilon(3e-6)
    assert total <= 3 * event.guarantee.epsilon * (1 + 1e-9)
    assert accountant.epsilon(3e-6, method="basic") == pytest.approx(3 * event.guarantee.epsilon)
    assert ComposedEvent(event, 2).pld().epsilon(2e-6) <= 2 * event.guarantee.epsilon + 1e-3
    # the PLD is the headline's worst-case pair (pessimistically discretised: one interval above epsilon)
    assert event.pld().delta(event.guarantee.epsilon + 2e-4) <= 1e-6 * (1 + 1e-6)


def test_rdp_curve_composes_by_addition():
    event = SkellamEvent(mu=2_000.0, l2_sensitivity=40.0, l1_sensitivity=120.0, headline_delta=1e-6)
    twice = rdp_epsilon(RDP_ORDERS, 2 * event.rdp(), 1e-6)
    assert event.guarantee.epsilon < twice < 2 * event.guarantee.epsilon
    assert event.compose(2).guarantee.epsilon == pytest.approx(twice)
    assert event.compose(2).compose(3).count == 6


def test_composed_event_dominates_exact_composition():
    """Four runs: the Rényi-composed epsilon dominates the exact PLD of the worst shapes composed four times."""
    mu, dimension, l2, l1 = CASES[0]
    composed = SkellamEvent(mu=mu, l2_sensitivity=l2, l1_sensitivity=l1, headline_delta=1e-6).compose(4)
    reported = composed.guarantee.epsilon
    for name in ("one coordinate", "spread evenly"):
        shifts = _shift_vectors(l2, l1, dimension)[name]
        assert exact_pld(mu, np.tile(shifts, 4)).epsilon(1e-6) <= reported, name
    half = max(exact_pld(mu / 2, np.tile(v, 4)).epsilon(1e-6) for v in _shift_vectors(l2, l1, dimension).values())
    assert half > reported


@pytest.mark.parametrize(
    ("changes", "name"),
    [
        ({"mu": 0.0}, "mu"),
        ({"mu": math.nan}, "mu"),
        ({"l2_sensitivity": -1.0}, "l2_sensitivity"),
        ({"l1_sensitivity": 1.0}, "l1_sensitivity"),  # below the L2 norm: impossible
        ({"headline_delta": 0.0}, "headline_delta"),
        ({"statistical_distance": 1.5}, "statistical_distance"),
        ({"relation": "sideways"}, "neighbouring"),
        ({"count": 0}, "count"),
    ],
)
def test_event_rejects_bad_parameters(changes, name):
    parameters = {"mu": 10.0, "l2_sensitivity": 2.0, "l1_sensitivity": 2.0, "headline_delta": 1e-6} | changes
    with pytest.raises(InvalidParameterError, match=f"'{name}'"):
        SkellamEvent(**parameters)


@pytest.mark.parametrize("orders", [1.0, 2.5, [], np.nan])
def test_rdp_rejects_bad_orders(orders):
    with pytest.raises(InvalidParameterError, match="'orders'"):
        skellam_rdp(orders, mu=1.0, l2_sensitivity=1.0, l1_sensitivity=1.0)
