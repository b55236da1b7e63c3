"""The Gaussian mechanism's exact privacy profile and its calibration (Balle & Wang's analytic Gaussian).

For a query of L2 sensitivity ``Delta`` released with ``N(0, sigma^2 I)`` noise, the privacy
profile is exactly (Balle & Wang, Theorem 8)::

    delta(epsilon) = Phi(Delta/(2 sigma) - epsilon sigma/Delta) - e^epsilon Phi(-Delta/(2 sigma) - epsilon sigma/Delta)

and depends on ``sigma`` and ``Delta`` only through ``sigma / Delta``. `gaussian_delta` evaluates
it stably in log space, `gaussian_epsilon` and `gaussian_sigma` invert it by bisection, always
returning the feasible end of the final bracket (the reported epsilon or noise is never smaller
than the exact one). `GaussianEvent` hands the mechanism to the accountant with that headline and
``dp-accounting``'s pessimistic Gaussian PLD for composition.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from privsum._validation import check_delta, check_epsilon, check_real, invalid
from privsum.accounting.events import PrivacyEvent
from privsum.accounting.guarantee import PrivacyGuarantee
from privsum.accounting.pld import DEFAULT_DISCRETIZATION, PLDPair, pld_library

__all__ = ["GaussianEvent", "gaussian_delta", "gaussian_epsilon", "gaussian_sigma"]

# Bisection stops when the bracket's relative width is below this.
_RELATIVE_TOLERANCE = 1e-12
_MAX_STEPS = 400


# Below this sigma / sensitivity the formula's terms overflow (and delta is 1 in float64 long before).
_NEGLIGIBLE_RATIO = 1e-300


def gaussian_delta(epsilon: float, *, sigma: float, sensitivity: float) -> float:
    """The exact ``delta(epsilon)`` of the Gaussian mechanism (Balle & Wang's formula).

    Args:
        epsilon: ``>= 0``.
        sigma: the noise standard deviation, ``> 0``.
        sensitivity: the query's L2 sensitivity ``Delta > 0`` under the relation of interest.

    References:
        Balle & Wang, *Improving the Gaussian Mechanism for Differential Privacy: Analytical
        Calibration and Optimal Denoising*, ICML 2018, Theorem 8.

    Examples:
        >>> f"{gaussian_delta(1.0, sigma=4.0, sensitivity=1.0):.4g}"
        '2.924e-06'
    """
    owner = "gaussian_delta"
    epsilon = check_real(epsilon, "epsilon", owner, low=0.0)
    sigma = check_real(sigma, "sigma", owner, low=0.0, low_open=True)
    sensitivity = check_real(sensitivity, "sensitivity", owner, low=0.0, low_open=True)
    return _delta(epsilon, sigma / sensitivity)


def _delta(epsilon: float, ratio: float) -> float:
    """``delta(epsilon)`` for ``sigma / Delta = ratio``: ``Phi(a) (1 - exp(epsilon + log Phi(b) - log Phi(a)))``."""
    from scipy.special import log_ndtr  # imported on use: scipy.special is slow to import

    if ratio < _NEGLIGIBLE_RATIO:  # Phi(1/(2 ratio)) is 1 and Phi(-1/(2 ratio)) is 0 in float64: no privacy
        return 1.0
    upper = 1.0 / (2.0 * ratio) - epsilon * ratio
    lower = -1.0 / (2.0 * ratio) - epsilon * ratio
    log_upper = float(log_ndtr(upper))
    log_lower = float(log_ndtr(lower))
    if log_upper == -math.inf:
        return 0.0
    exponent = min(epsilon + log_lower - log_upper, 0.0)  # < 0 mathematically; guards float rounding
    return max(0.0, math.exp(log_upper) * -math.expm1(exponent))


def gaussian_epsilon(delta: float, *, sigma: float, sensitivity: float) -> float:
    """The smallest ``epsilon`` with ``delta(epsilon) <= delta`` (rounded up, never below the exact value).

    Examples:
        >>> epsilon = gaussian_epsilon(1e-6, sigma=5.0, sensitivity=1.0)
        >>> gaussian_delta(epsilon, sigma=5.0, sensitivity=1.0) <= 1e-6
        True
    """
    owner = "gaussian_epsilon"
    delta = check_delta(delta, owner, allow_zero=False)
    sigma = check_real(sigma, "sigma", owner, low=0.0, low_open=True)
    sensitivity = check_real(sensitivity, "sensitivity", owner, low=0.0, low_open=True)
    ratio = sigma / sensitivity
    if _delta(0.0, ratio) <= delta:
        return 0.0
    high = 1.0
    while _delta(high, ratio) > delta:
        high *= 2.0
        if high > 1e6:
            raise invalid("delta", owner, "attainable with a finite epsilon", delta)
    return _bisect(lambda e: _delta(e, ratio) <= delta, 0.0, high)


def gaussian_sigma(epsilon: float, delta: float, *, sensitivity: float) -> float:
    """The smallest noise ``sigma`` whose Gaussian mechanism is ``(epsilon, delta)``-DP (rounded up).

    Args:
        epsilon: target epsilon ``> 0``.
        delta: target delta in ``(0, 1)``.
        sensitivity: L2 sensitivity ``Delta > 0`` of the query.

    Privacy:
        The returned ``sigma`` satisfies ``gaussian_delta(epsilon, sigma, Delta) <= delta``
        exactly as evaluated in float64 (bisection keeps the feasible end), and is within a
        relative ``1e-12`` of the smallest such value. The profile is for exact Gaussian noise:
        a floating-point sampler only approximates it (see the limitations page).

    References:
        Balle & Wang, *Improving the Gaussian Mechanism for Differential Privacy: Analytical
        Calibration and Optimal Denoising*, ICML 2018, Algorithm 1 (here by bisection on ``sigma``).

    Examples:
        >>> sigma = gaussian_sigma(1.0, 1e-6, sensitivity=2.0)
        >>> round(sigma, 4)
        8.4494
        >>> gaussian_delta(1.0, sigma=sigma, sensitivity=2.0) <= 1e-6
        True
    """
    owner = "gaussian_sigma"
    epsilon = check_epsilon(epsilon, owner)
    delta = check_delta(delta, owner, allow_zero=False)
    sensitivity = check_real(sensitivity, "sensitivity", owner, low=0.0, low_open=True)
    low, high = 1.0, 1.0
    while _delta(epsilon, high) > delta:
        low, high = high, high * 2.0
    while low > 1e-12 and _delta(epsilon, low) <= delta:
        high, low = low, low / 2.0
    return sensitivity * _bisect(lambda ratio: _delta(epsilon, ratio) <= delta, low, high)


def _bisect(feasible: object, low: float, high: float) -> float:
    """The feasible end of a bisection between infeasible ``low`` and feasible ``high`` (monotone)."""
    for _ in range(_MAX_STEPS):
        if high - low <= _RELATIVE_TOLERANCE * high:
            break
        middle = 0.5 * (low + high)
        if feasible(middle):  # type: ignore[operator]
            high = middle
        else:
            low = middle
    return high


@dataclass(frozen=True)
class GaussianEvent(PrivacyEvent):
    """The Gaussian mechanism with noise ``sigma`` on a query of L2 ``sensitivity`` (one release).

    ``headline`` must be met by the exact profile (checked at construction with `gaussian_delta`).
    Numerical composition uses ``dp-accounting``'s pessimistic PLD of the Gaussian mechanism.

    Privacy:
        Neighbours (the headline's relation) change the query by at most ``sensitivity`` in L2.

    Examples:
        >>> event = GaussianEvent(8.5, 2.0, PrivacyGuarantee(1.0, 1e-6))
        >>> event.guarantee.epsilon
        1.0
        >>> bool(event.pld().epsilon(1e-6) <= 1.0)
        True
    """

    sigma: float
    sensitivity: float
    headline: PrivacyGuarantee

    def __post_init__(self) -> None:
        owner = "GaussianEvent"
        check_real(self.sigma, "sigma", owner, low=0.0, low_open=True)
        check_real(self.sensitivity, "sensitivity", owner, low=0.0, low_open=True)
        if not isinstance(self.headline, PrivacyGuarantee):
            raise invalid("headline", owner, "a PrivacyGuarantee", self.headline)
        if self.headline.is_finite:
            achieved = _delta(self.headline.epsilon, self.sigma / self.sensitivity)
            if not achieved <= self.headline.delta:
                raise invalid("headline", owner, f"met by the mechanism (its delta at epsilon is {achieved:.6g})", self.headline)

    @property
    def guarantee(self) -> PrivacyGuarantee:
        return self.headline

    def pld(self, discretization: float = DEFAULT_DISCRETIZATION) -> PLDPair:
        pld = pld_library().from_gaussian_mechanism(
            self.sigma, sensitivity=self.sensitivity, value_discretization_interval=discretization, pessimistic_estimate=True
        )
        return PLDPair(pld, pld)

    def epsilon(self, delta: float) -> float:
        return gaussian_epsilon(delta, sigma=self.sigma, sensitivity=self.sensitivity)
