"""Accounting for the multidimensional Skellam mechanism: a Rényi bound and a tight conversion to (epsilon, delta).

The Skellam distribution ``Sk(mu)`` is the law of ``Pois(mu) - Pois(mu)`` (variance ``2 mu``); its
pmf is ``P(k) = e^{-2 mu} I_{|k|}(2 mu)`` with ``I`` the modified Bessel function. It is
infinitely divisible: ``n`` independent ``Pois(mu/n) - Pois(mu/n)`` shares sum to exactly
``Sk(mu)``, which is why it suits distributed (shuffled, secure-aggregation) summation.

**The bound.** For an integer shift ``v`` and an integer Rényi order ``alpha >= 2``, Agarwal,
Kairouz & Liu bound the Rényi divergence of one coordinate by::

    D_alpha(Sk(mu) + v || Sk(mu)) <= alpha v^2 / (4 mu) + min(((2 alpha - 1) v^2 + 6 |v|) / (16 mu^2), 3 |v| / (4 mu))

(the same holds in the other direction by symmetry of ``Sk(mu)``: ``Sk(mu) - v`` has the law of
``-(Sk(mu) + v)``). Rényi divergences of product distributions add up over coordinates, and a sum
of minima is at most the minimum of the sums, so for a shift vector with ``||v||_2 <= Delta_2``
and ``||v||_1 <= Delta_1`` the ``d``-dimensional mechanism (independent ``Sk(mu)`` per coordinate)
is ``(alpha, rho(alpha))``-RDP with::

    rho(alpha) = alpha Delta_2^2 / (4 mu) + min(((2 alpha - 1) Delta_2^2 + 6 Delta_1) / (16 mu^2), 3 Delta_1 / (4 mu))

(`skellam_rdp`). The first term is the Gaussian mechanism's RDP at variance ``2 mu``. The
one-dimensional inequality is the paper's; the test suite checks it against the exact Rényi
divergence (computed from the pmf) on a grid of ``mu``, ``v`` and ``alpha``, and checks the
resulting (epsilon, delta) against the exact privacy-loss distributions of several worst-case
shift vectors composed over coordinates.

**The conversion** (Canonne, Kamath & Steinke, "The Discrete Gaussian for Differential Privacy",
NeurIPS 2020, Proposition 12; Asoodeh, Liao, Calmon, Kosut & Sankar, AISTATS 2021): an
``(alpha, rho)``-RDP mechanism is ``(epsilon, delta)``-DP with::

    delta = exp((alpha - 1)(rho - epsilon)) / alpha * (1 - 1/alpha)^(alpha - 1)

minimised over the orders (`rdp_delta`, `rdp_epsilon`).

References:
    Agarwal, Kairouz & Liu, "The Skellam Mechanism for Differentially Private Federated
    Learning", NeurIPS 2021; Canonne, Kamath & Steinke, "The Discrete Gaussian for Differential
    Privacy", NeurIPS 2020; Mironov, "Rényi Differential Privacy", CSF 2017.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from privsum._validation import as_array, check_array, check_delta, check_integer, check_real, invalid
from privsum.accounting.events import PrivacyEvent
from privsum.accounting.guarantee import Neighbouring, PrivacyGuarantee
from privsum.accounting.pld import DEFAULT_DISCRETIZATION, PLDPair

__all__ = ["RDP_ORDERS", "SkellamEvent", "rdp_delta", "rdp_epsilon", "skellam_rdp"]

#: The integer Rényi orders the conversion minimises over: every order up to 256, then a
#: geometric grid up to 10^7 (large orders matter only for very small privacy losses).
RDP_ORDERS: np.ndarray = np.unique(np.concatenate([np.arange(2, 257), np.round(np.geomspace(256, 1e7, 600))])).astype(float)


def skellam_rdp(orders: float | np.ndarray, *, mu: float, l2_sensitivity: float, l1_sensitivity: float) -> np.ndarray:
    """Rényi DP ``rho(alpha)`` of independent ``Sk(mu)`` noise per coordinate for shifts of bounded L2 and L1 norm.

    Args:
        orders: integer Rényi orders ``alpha >= 2``.
        mu: the Skellam parameter (each coordinate's noise has variance ``2 mu``).
        l2_sensitivity: ``Delta_2``, a bound on the L2 norm of the (integer) shift vector.
        l1_sensitivity: ``Delta_1``, a bound on its L1 norm.

    Returns:
        ``rho(alpha)`` for each order (see the module docstring).

    Examples:
        >>> float(skellam_rdp(2, mu=100.0, l2_sensitivity=2.0, l1_sensitivity=2.0)[0])
        0.02015
    """
    owner = "skellam_rdp"
    mu = check_real(mu, "mu", owner, low=0.0, low_open=True)
    l2 = check_real(l2_sensitivity, "l2_sensitivity", owner, low=0.0)
    l1 = check_real(l1_sensitivity, "l1_sensitivity", owner, low=0.0)
    if isinstance(orders, bool):
        raise invalid("orders", owner, "integers >= 2", orders)
    alpha = np.atleast_1d(check_array(orders, "orders", owner)).astype(float)
    if not (alpha.size and np.all(alpha >= 2) and np.all(alpha == np.round(alpha)) and np.all(np.isfinite(alpha))):
        raise invalid("orders", owner, "integers >= 2", orders)
    gaussian = alpha * (l2 * l2) / (4 * mu)  # l2 * l2: inf, never an OverflowError, for a huge bound
    # mu * mu (not mu**2): a huge mu gives inf there (a zero correction), never an OverflowError
    correction = np.minimum(((2 * alpha - 1) * (l2 * l2) + 6 * l1) / (16 * mu * mu), 3 * l1 / (4 * mu))
    return gaussian + correction


def _log_conversion_delta(orders: np.ndarray, rdp: np.ndarray, epsilon: float) -> np.ndarray:
    """``log delta`` of the Canonne-Kamath-Steinke conversion at each order."""
    return (orders - 1) * (rdp - epsilon) + (orders - 1) * np.log1p(-1 / orders) - np.log(orders)


def _orders_and_rdp(orders: np.ndarray, rdp: np.ndarray, owner: str) -> tuple[np.ndarray, np.ndarray]:
    """Rényi orders ``> 1`` and their RDP values ``>= 0`` (``inf``: no guarantee at that order), as float arrays of one shape."""
    alpha = np.atleast_1d(check_array(orders, "orders", owner, ndim=(0, 1))).astype(float)
    values = as_array(rdp, "rdp", owner)
    if not (values.dtype.kind in "iuf" and values.ndim <= 1):
        raise invalid("rdp", owner, "a 1-D array of real numbers", f"an array of dtype {values.dtype} and shape {values.shape}")
    values = np.atleast_1d(values).astype(float)
    if not np.all(values >= 0):  # NaN fails too
        raise invalid("rdp", owner, "values >= 0 (inf allowed, NaN not)", "an array with a negative or NaN entry")
    if not (alpha.size and np.all(alpha > 1)):
        raise invalid("orders", owner, "a non-empty array of orders > 1", alpha.size and float(alpha.min()))
    if not values.shape == alpha.shape:
        raise invalid("rdp", owner, f"one value per order (shape {alpha.shape})", f"shape {values.shape}")
    return alpha, values


def rdp_delta(orders: np.ndarray, rdp: np.ndarray, epsilon: float) -> float:
    """Least ``delta`` at ``epsilon`` implied by ``(alpha, rho(alpha))``-RDP at the given orders (capped at 1).

    Examples:
        >>> orders = np.arange(2.0, 200.0)
        >>> bool(1e-13 < rdp_delta(orders, orders * 0.01, 1.0) < 1e-12)
        True
    """
    epsilon = check_real(epsilon, "epsilon", "rdp_delta", low=0.0)
    orders, rdp = _orders_and_rdp(orders, rdp, "rdp_delta")
    return float(math.exp(min(0.0, float(np.min(_log_conversion_delta(orders, rdp, epsilon))))))


def rdp_epsilon(orders: np.ndarray, rdp: np.ndarray, delta: float) -> float:
    """Least ``epsilon`` at ``delta`` implied by ``(alpha, rho(alpha))``-RDP at the given orders.

    ``epsilon = min_alpha rho(alpha) + log(1 - 1/alpha) - (log delta + log alpha) / (alpha - 1)``.

    Examples:
        >>> orders = np.arange(2.0, 200.0)
        >>> round(rdp_epsilon(orders, orders * 0.01, 1e-6), 4)
        0.6217
    """
    delta = check_delta(delta, "rdp_epsilon", allow_zero=False)
    orders, rdp = _orders_and_rdp(orders, rdp, "rdp_epsilon")
    values = rdp + np.log1p(-1 / orders) - (math.log(delta) + np.log(orders)) / (orders - 1)
    return float(max(0.0, np.min(values)))


@dataclass(frozen=True)
class SkellamEvent(PrivacyEvent):
    """``Sk(mu)`` noise on every coordinate of an integer vector query with L2 and L1 sensitivities.

    Two terms outside the noise enter delta. ``statistical_distance`` ``eta``: the released view is
    within total variation ``eta`` of a function of the noisy query (e.g. a split-and-mix
    protocol's shares), which costs ``(1 + e^epsilon) eta``; ``extra_delta`` is added as it is.
    So ``delta(epsilon) = delta_rdp(epsilon) + (1 + e^epsilon) eta + extra_delta``, and
    `epsilon` returns the least epsilon (found by a monotone fixed-point iteration and then
    checked) at which that is at most the requested delta. The headline is
    ``(epsilon(headline_delta), headline_delta)``.

    ``count`` runs of the mechanism on the same users compose by Rényi DP: the curve is
    ``count * rho(alpha)``, and ``eta`` and ``extra_delta`` are counted ``count`` times (each run's
    view is within ``eta`` of its ideal counterpart, so the joint view is within ``count * eta``).
    That composes far better than the accountant's generic composition of headlines.

    Privacy:
        Under ``relation``: neighbouring inputs move the integer query by a vector of L2 norm at
        most ``l2_sensitivity`` and L1 norm at most ``l1_sensitivity``. The Rényi bound of
        `skellam_rdp`, converted by `rdp_epsilon` / `rdp_delta` over `RDP_ORDERS`. `pld` is the
        privacy-loss distribution of the worst ``(epsilon, delta)`` mechanism of the headline (it
        dominates the mechanism, but composes more loosely than Rényi composition of `rdp`).

    References:
        Agarwal, Kairouz & Liu, "The Skellam Mechanism for Differentially Private Federated
        Learning", NeurIPS 2021; Canonne, Kamath & Steinke, NeurIPS 2020.

    Examples:
        >>> event = SkellamEvent(mu=20_000.0, l2_sensitivity=40.0, l1_sensitivity=120.0, headline_delta=1e-6)
        >>> round(event.guarantee.epsilon, 3)
        0.9
        >>> event.delta(event.guarantee.epsilon) <= 1e-6
        True
    """

    mu: float
    l2_sensitivity: float
    l1_sensitivity: float
    headline_delta: float
    statistical_distance: float = 0.0
    extra_delta: float = 0.0
    relation: Neighbouring | str = Neighbouring.REPLACE_ONE
    count: int = 1

    def __post_init__(self) -> None:
        owner = "SkellamEvent"
        check_integer(self.count, "count", owner, low=1, high=10**9)
        check_real(self.mu, "mu", owner, low=0.0, low_open=True)
        check_real(self.l2_sensitivity, "l2_sensitivity", owner, low=0.0, low_open=True)
        check_real(self.l1_sensitivity, "l1_sensitivity", owner, low=self.l2_sensitivity)
        check_real(self.statistical_distance, "statistical_distance", owner, low=0.0, high=1.0)
        check_delta(self.extra_delta, owner, "extra_delta")
        check_real(self.headline_delta, "headline_delta", owner, low=0.0, high=1.0, low_open=True, high_open=True)
        object.__setattr__(self, "relation", Neighbouring.parse(self.relation, owner))

    def rdp(self, orders: float | np.ndarray = RDP_ORDERS) -> np.ndarray:
        """``count * rho(alpha)`` at integer orders (`skellam_rdp`); Rényi DP composes by adding these curves."""
        return self.count * skellam_rdp(
            orders, mu=self.mu, l2_sensitivity=self.l2_sensitivity, l1_sensitivity=self.l1_sensitivity
        )

    def compose(self, count: int) -> SkellamEvent:
        """``count`` sequential runs of this event, composed by Rényi DP (same headline delta).

        Examples:
            >>> event = SkellamEvent(mu=20_000.0, l2_sensitivity=40.0, l1_sensitivity=120.0, headline_delta=1e-6)
            >>> bool(event.guarantee.epsilon < event.compose(4).guarantee.epsilon < 4 * event.guarantee.epsilon)
            True
        """
        count = check_integer(count, "count", "SkellamEvent.compose", low=1, high=10**9)
        return replace(self, count=self.count * count)

    def delta(self, epsilon: float) -> float:
        """``delta_rdp(epsilon) + (1 + e^epsilon) eta + extra_delta`` (capped at 1)."""
        epsilon = check_real(epsilon, "epsilon", "SkellamEvent.delta", low=0.0)
        return min(1.0, rdp_delta(RDP_ORDERS, self.rdp(), epsilon) + self._outside(epsilon))

    def _outside(self, epsilon: float) -> float:
        if self.statistical_distance == 0:
            return self.count * self.extra_delta
        return self.count * ((1 + math.exp(min(epsilon, 700.0))) * self.statistical_distance + self.extra_delta)

    def epsilon(self, delta: float) -> float:
        """Least epsilon with ``delta(epsilon) <= delta`` (``inf`` when none).

        Start from the conversion at ``delta - (2 eta + extra_delta)`` (a lower bound on the
        answer) and iterate ``epsilon <- rdp_epsilon(delta - (1 + e^epsilon) eta - extra_delta)``:
        the iterates increase towards the least solution; the result is checked against `delta`.
        """
        delta = check_delta(delta, "SkellamEvent.epsilon")
        rdp = self.rdp()
        epsilon = 0.0
        for _ in range(100):
            room = delta - self._outside(epsilon)
            if not room > 0:
                return math.inf
            following = rdp_epsilon(RDP_ORDERS, rdp, room)
            if following <= epsilon * (1 + 1e-15):
                break
            epsilon = following
        for _ in range(200):  # never undershoot: nudge up until the profile meets delta
            if rdp_delta(RDP_ORDERS, rdp, epsilon) + self._outside(epsilon) <= delta:
                return epsilon
            epsilon = max(epsilon * (1 + 1e-12), epsilon + 1e-15)
        return math.inf  # pragma: no cover - the iteration converges

    @property
    def guarantee(self) -> PrivacyGuarantee:
        epsilon = self.epsilon(self.headline_delta)
        return PrivacyGuarantee(max(epsilon, 1e-300), self.headline_delta, self.relation)

    def pld(self, discretization: float = DEFAULT_DISCRETIZATION) -> PLDPair:
        return PLDPair.from_guarantee(self.guarantee, discretization=discretization)
