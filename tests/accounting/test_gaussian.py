"""Analytic Gaussian: the closed form against numerical integration, calibrations never overshoot."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from privsum.accounting import GaussianEvent, PrivacyGuarantee, gaussian_delta, gaussian_epsilon, gaussian_sigma
from privsum.exceptions import InvalidParameterError


def hockey_stick(epsilon: float, sigma: float, sensitivity: float) -> float:
    """``int max(0, p(x) - e^eps q(x)) dx`` for ``p = N(0, sigma^2)``, ``q = N(Delta, sigma^2)``, by quadrature.

    The integrand is positive exactly left of ``x* = Delta/2 - eps sigma^2 / Delta``.
    """
    crossing = sensitivity / 2 - epsilon * sigma**2 / sensitivity

    def integrand(x: float) -> float:
        return stats.norm.pdf(x, 0.0, sigma) - math.exp(epsilon) * stats.norm.pdf(x, sensitivity, sigma)

    value, _ = integrate.quad(integrand, crossing - 40 * sigma, crossing, epsabs=1e-15, epsrel=1e-10, limit=200)
    return value


@pytest.mark.parametrize(
    ("epsilon", "sigma", "sensitivity"),
    [(0.5, 2.0, 1.0), (1.0, 8.45, 2.0), (3.0, 1.0, 1.0), (0.1, 30.0, 2.0), (2.0, 0.7, 1.5)],
)
def test_closed_form_matches_quadrature(epsilon: float, sigma: float, sensitivity: float) -> None:
    exact = hockey_stick(epsilon, sigma, sensitivity)
    assert gaussian_delta(epsilon, sigma=sigma, sensitivity=sensitivity) == pytest.approx(exact, rel=1e-6, abs=1e-14)


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0, 8.0])
@pytest.mark.parametrize("delta", [1e-5, 1e-6, 1e-10])
@pytest.mark.parametrize("sensitivity", [1.0, 2.0, 2.0 * math.sqrt(768)])
def test_sigma_never_overshoots_and_is_tight(epsilon: float, delta: float, sensitivity: float) -> None:
    sigma = gaussian_sigma(epsilon, delta, sensitivity=sensitivity)
    assert gaussian_delta(epsilon, sigma=sigma, sensitivity=sensitivity) <= delta
    assert gaussian_delta(epsilon, sigma=sigma * (1 - 1e-8), sensitivity=sensitivity) > delta
    # the quadrature of the exact divergence agrees that the target is met (to its accuracy)
    assert hockey_stick(epsilon, sigma, sensitivity) <= delta * (1 + 1e-6)


@pytest.mark.parametrize(("sigma", "delta"), [(5.0, 1e-6), (1.0, 1e-3), (20.0, 1e-9)])
def test_epsilon_is_the_least_feasible(sigma: float, delta: float) -> None:
    epsilon = gaussian_epsilon(delta, sigma=sigma, sensitivity=1.0)
    assert gaussian_delta(epsilon, sigma=sigma, sensitivity=1.0) <= delta
    assert gaussian_delta(epsilon * (1 - 1e-8), sigma=sigma, sensitivity=1.0) > delta


def test_round_trip_and_scale_invariance() -> None:
    sigma = gaussian_sigma(1.0, 1e-6, sensitivity=1.0)
    assert gaussian_sigma(1.0, 1e-6, sensitivity=3.0) == pytest.approx(3 * sigma, rel=1e-10)
    assert gaussian_epsilon(1e-6, sigma=sigma, sensitivity=1.0) == pytest.approx(1.0, rel=1e-9)


def test_known_value_against_dp_accounting_pld() -> None:
    # dp-accounting's pessimistic PLD of the same mechanism can only report a larger epsilon, and close to it
    event = GaussianEvent(gaussian_sigma(1.0, 1e-6, sensitivity=2.0), 2.0, PrivacyGuarantee(1.0, 1e-6))
    pld_epsilon = event.pld().epsilon(1e-6)
    assert 1.0 - 1e-6 <= pld_epsilon <= 1.0 + 1e-2
    assert event.epsilon(1e-6) <= 1.0


def test_event_refuses_a_headline_the_mechanism_does_not_meet() -> None:
    with pytest.raises(InvalidParameterError, match="'headline' parameter of GaussianEvent"):
        GaussianEvent(1.0, 2.0, PrivacyGuarantee(1.0, 1e-6))


def test_composition_through_the_pld_is_close_to_the_exact_composed_gaussian() -> None:
    # k compositions of N(0, s^2) with sensitivity D is one Gaussian with sensitivity D sqrt(k)
    sigma, k = 10.0, 9
    event = GaussianEvent(sigma, 1.0, PrivacyGuarantee(gaussian_epsilon(1e-6, sigma=sigma, sensitivity=1.0), 1e-6))
    composed = event.pld().self_compose(k).epsilon(1e-6)
    exact = gaussian_epsilon(1e-6, sigma=sigma, sensitivity=math.sqrt(k))
    assert exact <= composed <= exact + 1e-2


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: gaussian_sigma(0.0, 1e-6, sensitivity=1.0), "epsilon"),
        (lambda: gaussian_sigma(1.0, 0.0, sensitivity=1.0), "delta"),
        (lambda: gaussian_sigma(1.0, 1e-6, sensitivity=-1.0), "sensitivity"),
        (lambda: gaussian_delta(float("nan"), sigma=1.0, sensitivity=1.0), "epsilon"),
        (lambda: gaussian_delta(1.0, sigma=0.0, sensitivity=1.0), "sigma"),
        (lambda: gaussian_epsilon(1.0, sigma=1.0, sensitivity=1.0), "delta"),
        (lambda: GaussianEvent(np.inf, 1.0, PrivacyGuarantee(1.0, 1e-6)), "sigma"),
    ],
)
def test_bad_input_names_the_parameter(call, name: str) -> None:
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter"):
        call()


def test_a_subnormal_sigma_has_no_privacy_rather_than_a_division_error():
    """Fuzz finding: sigma / sensitivity underflowing to 0 divided by zero; delta is 1 in float64 there."""
    assert gaussian_delta(1.0, sigma=5e-324, sensitivity=2.0) == 1.0
    with pytest.raises(InvalidParameterError, match="'headline' parameter of GaussianEvent"):
        GaussianEvent(sigma=5e-324, sensitivity=2.0, headline=PrivacyGuarantee(1.0, 1e-6))
    with pytest.raises(InvalidParameterError, match="'delta' parameter of gaussian_epsilon"):
        gaussian_epsilon(1e-6, sigma=5e-324, sensitivity=2.0)
