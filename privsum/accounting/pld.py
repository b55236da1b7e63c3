"""Numerical composition of privacy-loss distributions (PLDs) with ``dp-accounting``.

A `PLDPair` holds the PLD of each direction of a neighbouring pair (``P`` vs ``Q`` and ``Q`` vs
``P``); composing two pairs composes each direction, and the reported delta or epsilon is the
maximum of the two. All PLDs are built with pessimistic discretisation (a dominating pair of the
one given, exact at every multiple of the discretisation), so every number is an upper bound on
the true privacy loss; the float rounding of the FFT composition is covered by rounding every
reported epsilon and delta up by a relative `ROUNDING_MARGIN` (epsilon also by ``1e-12``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from privsum._validation import check_delta, check_integer, check_real, invalid
from privsum.accounting.guarantee import PrivacyGuarantee
from privsum.accounting.profile import PrivacyProfile

if TYPE_CHECKING:  # pragma: no cover - imported lazily: dp-accounting pulls in scipy.stats and scipy.signal
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

__all__ = ["DEFAULT_DISCRETIZATION", "PLDPair"]

DEFAULT_DISCRETIZATION = 1e-4
# Largest epsilon of a guarantee turned into a PLD (the worst (epsilon, delta) mechanism needs e^epsilon).
_MAX_PLD_EPSILON = 500.0
#: Self-compositions up to this count use dp-accounting's ``self_compose`` unchanged; larger
#: counts use `_self_compose_large` (the same FFT power with a Chernoff window that stays
#: narrow at any count).
DIRECT_SELF_COMPOSE_MAX = 4096
#: Tail mass a self-composition may truncate (counted as infinite loss, as dp-accounting does).
_TAIL_MASS_TRUNCATION = 1e-15
#: Largest composed PMF (entries) a self-composition builds.
_MAX_COMPOSED_ENTRIES = 1 << 24
#: Mass of a profile's PLD (each direction) whose extreme losses may be moved pessimistically:
#: at most half of it from the lowest losses up to a higher one, at most half from the highest
#: losses to infinity. Each move raises delta at every epsilon (also after composition, by at most
#: the count times this mass), and it keeps the PLD's support to the losses that carry mass.
LOSS_TAIL_MASS = 1e-18
#: Relative round-up of every reported epsilon and delta for the FFT composition's float rounding
#: (of order 1e-10 relative in the composed epsilon where an exact composition is known, e.g.
#: binary randomized response composed 200 times).
ROUNDING_MARGIN = 1e-9
_ABSOLUTE_EPSILON_MARGIN = 1e-12


def pld_library() -> ModuleType:
    """``dp_accounting.pld.privacy_loss_distribution``, imported on first use (it is slow to import)."""
    from dp_accounting.pld import privacy_loss_distribution

    return privacy_loss_distribution


@dataclass(frozen=True)
class PLDPair:
    """Privacy-loss distributions of both directions of a (possibly composed) neighbouring pair.

    Examples:
        >>> from privsum.accounting import randomized_response_profile
        >>> once = PLDPair.from_profile(randomized_response_profile(0.5))
        >>> twice = once.self_compose(2)
        >>> 0.99 < twice.epsilon(1e-9) <= 1.0 + 1e-3
        True
    """

    forward: pld_lib.PrivacyLossDistribution
    backward: pld_lib.PrivacyLossDistribution

    @classmethod
    def from_profile(cls, profile: PrivacyProfile, *, discretization: float = DEFAULT_DISCRETIZATION) -> PLDPair:
        """PLDs of the profile's (dominating) pair, pessimistically discretised.

        A sampled envelope (`~privsum.accounting.envelope.SampledEnvelope`) carries its exact
        losses: they are discretised from those rather than from logarithms of its masses, so a
        loss that is a multiple of ``discretization`` (all of them but the extra samples' at the
        envelope's ``loss_step``) is represented exactly.
        """
        pair = profile.dominating_pair
        losses = getattr(pair, "losses", None)
        if losses is None:
            return cls.from_distributions(pair.p, pair.q, p_tail=pair.p_tail, q_tail=pair.q_tail, discretization=discretization)
        interval = check_real(discretization, "discretization", "PLDPair.from_profile", low=0.0, low_open=True)
        forward = _one_direction(pair.p, pair.q, pair.p_tail, interval, losses)
        return cls(forward, forward)  # an envelope's pair is symmetric by construction

    @classmethod
    def from_distributions(
        cls,
        p: np.ndarray,
        q: np.ndarray,
        *,
        p_tail: float = 0.0,
        q_tail: float = 0.0,
        discretization: float = DEFAULT_DISCRETIZATION,
    ) -> PLDPair:
        """PLDs of a neighbouring pair given as probability arrays on a common support.

        The caller vouches that ``(p, q)`` is a dominating pair; masses outside the support
        (``p_tail``, ``q_tail``) count as infinite loss. A symmetric pair (``q`` is ``p``
        reversed, equal tails) has one PLD for both directions, built and composed once.
        """
        interval = check_real(discretization, "discretization", "PLDPair.from_distributions", low=0.0, low_open=True)
        p = np.asarray(p, dtype=float).ravel()
        q = np.asarray(q, dtype=float).ravel()
        if p.shape != q.shape:
            raise invalid("q", "PLDPair.from_distributions", f"an array of the same size as p ({p.size})", q.size)
        forward = _one_direction(p, q, p_tail, interval)
        if p_tail == q_tail and np.array_equal(p, q[::-1]):  # a symmetric pair: both directions are one PLD
            return cls(forward, forward)
        return cls(forward, _one_direction(q, p, q_tail, interval))

    @classmethod
    def from_guarantee(cls, guarantee: PrivacyGuarantee, *, discretization: float = DEFAULT_DISCRETIZATION) -> PLDPair:
        """The PLD of the worst mechanism that is (epsilon, delta)-DP (symmetric)."""
        if not guarantee.is_finite:
            raise invalid("guarantee", "PLDPair.from_guarantee", "a guarantee with finite epsilon", guarantee)
        if not guarantee.epsilon <= _MAX_PLD_EPSILON:  # its PLD needs e^epsilon, which overflows near 710
            raise invalid(
                "guarantee",
                "PLDPair.from_guarantee",
                f"a guarantee with epsilon at most {_MAX_PLD_EPSILON:g} for numerical (PLD) accounting",
                guarantee,
            )
        from dp_accounting.pld.common import DifferentialPrivacyParameters

        parameters = DifferentialPrivacyParameters(guarantee.epsilon, guarantee.delta)
        pld = pld_library().from_privacy_parameters(parameters, value_discretization_interval=discretization)
        return cls(pld, pld)

    def compose(self, other: PLDPair) -> PLDPair:
        """Composition with another pair, direction by direction."""
        return PLDPair(self.forward.compose(other.forward), self.backward.compose(other.backward))

    def self_compose(self, count: int) -> PLDPair:
        """``count``-fold composition with itself, in time logarithmic in ``count`` (FFT power).

        Up to `DIRECT_SELF_COMPOSE_MAX` this is dp-accounting's ``self_compose``. Beyond, the same
        FFT power is evaluated on a window chosen by Chernoff bounds over a fine grid of orders
        (dp-accounting's fixed grid gives windows that grow linearly in ``count``, so ``10**9``
        compositions would not fit in memory); the truncated tails (mass at most ``1e-15``) count
        as infinite loss, as in dp-accounting, so the result stays an upper bound.

        Raises:
            InvalidParameterError: the composed distribution would need more than ``2**24``
                entries at this discretisation (use a coarser one).
        """
        count = check_integer(count, "count", "PLDPair.self_compose", low=1)
        if count == 1:
            return self
        forward = _self_compose_distribution(self.forward, count)
        backward = forward if self.backward is self.forward else _self_compose_distribution(self.backward, count)
        return PLDPair(forward, backward)

    def delta(self, epsilon: float) -> float:
        """Upper bound on delta at ``epsilon`` (maximum over both directions, rounded up for float rounding)."""
        epsilon = check_real(epsilon, "epsilon", "PLDPair.delta", low=0.0)
        computed = max(self.forward.get_delta_for_epsilon(epsilon), self.backward.get_delta_for_epsilon(epsilon))
        return float(min(1.0, computed * (1.0 + ROUNDING_MARGIN)))

    def epsilon(self, delta: float) -> float:
        """Upper bound on epsilon at ``delta`` (maximum over both directions, at least 0, rounded up for float rounding)."""
        delta = check_delta(delta, "PLDPair.epsilon")
        directions = [self.forward] if self.backward is self.forward else [self.forward, self.backward]
        computed = max(0.0, *(_distribution_epsilon(direction, delta) for direction in directions))
        return float(computed * (1.0 + ROUNDING_MARGIN) + _ABSOLUTE_EPSILON_MARGIN) if computed > 0.0 else 0.0


def _one_direction(
    upper: np.ndarray, lower: np.ndarray, upper_tail: float, interval: float, exact_losses: np.ndarray | None = None
) -> pld_lib.PrivacyLossDistribution:
    """Pessimistic PLD of ``upper`` vs ``lower``, vectorised.

    Each loss (``log(upper/lower)``, or ``exact_losses`` when given) between two multiples
    ``a < l < b`` of ``interval`` has its mass ``w`` split between them, ``w_b = w (1 - e^(a-l)) /
    (1 - e^(a-b))`` at ``b`` and the rest at ``a``: both the mass and its ``e^-loss``-weighted
    mass (the other distribution's) are kept, so the hockey-stick curve is unchanged at every
    multiple of ``interval`` and at every epsilon below ``a``, and is the chord (above the convex
    curve) in between: a dominating pair, tighter than rounding every loss up (Doroshenko,
    Ghazi, Kamath, Kumar & Manurangsi, "Connect the Dots: Tighter Discrete Approximations of
    Privacy Loss Distributions", PETS 2022). Upper mass where lower is zero, and the upper mass
    outside the support (``upper_tail``), become infinite loss.
    """
    finite = (upper > 0) & (lower > 0)
    infinite_mass = float(upper[(upper > 0) & (lower == 0)].sum()) + upper_tail
    losses = np.log(upper[finite]) - np.log(lower[finite]) if exact_losses is None else exact_losses[finite]
    rounded_pmf = {}
    if losses.size:
        indices, weights = _split_on_grid(losses, upper[finite], interval)
        lowest = int(indices.min())
        span = int(indices.max()) - lowest + 1
        if span <= 4 * indices.size + 1024:  # a dense histogram: no sort (losses are bounded by the interval grid)
            masses = np.bincount(indices - lowest, weights=weights, minlength=span)
            rounded = np.arange(lowest, lowest + span)
        else:
            rounded, inverse = np.unique(indices, return_inverse=True)
            masses = np.bincount(inverse.ravel(), weights=weights, minlength=rounded.size)
        rounded, masses, moved_to_infinity = _trim_extreme_losses(rounded, masses, LOSS_TAIL_MASS)
        infinite_mass += moved_to_infinity
        present = np.flatnonzero(masses)
        rounded_pmf = dict(zip(rounded[present].tolist(), masses[present].tolist(), strict=True))
    return pld_library().PrivacyLossDistribution.create_from_rounded_probability(
        rounded_pmf, infinite_mass, interval, pessimistic_estimate=True
    )


def _split_on_grid(losses: np.ndarray, masses: np.ndarray, interval: float) -> tuple[np.ndarray, np.ndarray]:
    """Grid indices and masses of `_one_direction`'s split: each loss's mass on the multiples of ``interval`` around it."""
    nearest = np.rint(losses / interval)
    on_grid = nearest * interval == losses
    below = np.where(on_grid, nearest, np.floor(losses / interval))
    above = below + 1.0
    # share at the multiple above: (1 - e^(a - l)) / (1 - e^(a - b)), by expm1 (stable for tiny steps)
    share = np.where(on_grid, 0.0, np.expm1(below * interval - losses) / np.expm1(-interval))
    share = np.clip(share, 0.0, 1.0)
    indices = np.concatenate([below, above]).astype(np.int64)
    return indices, np.concatenate([masses * (1.0 - share), masses * share])


def _distribution_epsilon(distribution: pld_lib.PrivacyLossDistribution, delta: float) -> float:
    """``distribution.get_epsilon_for_delta(delta)``, vectorised for dense PMFs (dp-accounting loops in Python)."""
    pmfs = [distribution._pmf_remove] if distribution._symmetric else [distribution._pmf_remove, distribution._pmf_add]
    return max(_pmf_epsilon(pmf, delta) for pmf in pmfs)


def _pmf_epsilon(pmf: Any, delta: float) -> float:
    """Smallest ``epsilon >= 0`` with ``inf_mass + sum_(l > epsilon) p_l (1 - e^(epsilon - l)) <= delta`` (0 if none needed).

    The same walk as dp-accounting's ``get_epsilon_for_delta`` (from the largest loss down,
    stopping at the first loss below the epsilon its suffix implies), with the suffix sums as
    cumulative sums in the same order; only positive losses can exceed an ``epsilon >= 0``.
    """
    from dp_accounting.pld import pld_pmf

    if not isinstance(pmf, pld_pmf.DensePLDPmf):
        return max(0.0, pmf.get_epsilon_for_delta(delta))
    infinity_mass = float(pmf._infinity_mass)
    if infinity_mass > delta:
        return math.inf
    probs = np.asarray(pmf._probs, dtype=float)
    losses = (pmf._lower_loss + np.arange(probs.size)) * pmf._discretization
    positive = np.flatnonzero(losses > 0.0)[::-1]  # descending losses
    if positive.size == 0:
        return 0.0
    descending, masses = losses[positive], probs[positive]
    if descending[0] > 700.0:  # e^-loss underflows: dp-accounting's walk handles it
        return max(0.0, pmf.get_epsilon_for_delta(delta))
    upper = np.concatenate([[infinity_mass], infinity_mass + np.cumsum(masses)])  # before item k, then all
    lower = np.concatenate([[0.0], np.cumsum(masses * np.exp(-descending))])
    with np.errstate(divide="ignore", invalid="ignore"):
        implied = np.where((upper > delta) & (lower > 0.0), np.log((upper - delta) / lower), -math.inf)
    stops = np.flatnonzero(implied[:-1] >= descending)
    final = implied[stops[0]] if stops.size else implied[-1]
    return max(0.0, float(final))


def _trim_extreme_losses(rounded: np.ndarray, masses: np.ndarray, tail_mass: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Pessimistically drop the extreme losses of a rounded PLD that carry at most ``tail_mass`` together.

    The longest prefix of ``masses`` (ascending losses) with sum at most ``tail_mass / 2`` is added
    to the first loss kept (its losses only rise), the longest such suffix is returned as mass
    moved to infinite loss. ``delta(epsilon) = inf_mass + E[(1 - e^(epsilon - L))_+]`` only grows
    when a loss rises, for one PLD and for a composition (the sum of losses rises too). Profiles
    of noise mechanisms have losses far out in their tails with masses below ``1e-100``; without
    them the PLD and its composition are a fraction of the size.
    """
    below = np.cumsum(masses)
    above = np.cumsum(masses[::-1])[::-1]
    first = int(np.searchsorted(below, tail_mass / 2, side="right"))  # masses[:first] sum to <= tail_mass/2
    last = masses.size - 1 - int(np.searchsorted(above[::-1], tail_mass / 2, side="right"))
    if first > last:  # everything is in the tails (tiny total mass): keep it all
        return rounded, masses, 0.0
    kept = masses[first : last + 1].copy()
    kept[0] += below[first - 1] if first > 0 else 0.0
    moved = float(above[last + 1]) if last + 1 < masses.size else 0.0
    return rounded[first : last + 1], kept, moved


def _self_compose_distribution(distribution: pld_lib.PrivacyLossDistribution, count: int) -> pld_lib.PrivacyLossDistribution:
    if count <= DIRECT_SELF_COMPOSE_MAX:
        return distribution.self_compose(count)
    remove = _self_compose_large(distribution._pmf_remove, count)
    if distribution._symmetric:
        return pld_library().PrivacyLossDistribution(remove)
    return pld_library().PrivacyLossDistribution(remove, _self_compose_large(distribution._pmf_add, count))


def _self_compose_large(pmf: Any, count: int) -> Any:
    """dp-accounting's dense ``self_compose`` with a Chernoff window from a fine grid of orders."""
    from dp_accounting.pld import pld_pmf
    from scipy import fft

    dense = pmf if isinstance(pmf, pld_pmf.DensePLDPmf) else pmf.to_dense_pmf()
    probs = np.asarray(dense._probs, dtype=float)
    low, high = _chernoff_window(probs, count, _TAIL_MASS_TRUNCATION)
    length = high - low + 1
    lower_loss = dense._lower_loss * count + low
    if length > _MAX_COMPOSED_ENTRIES or not abs(lower_loss) + length < 2**62:  # loss indices stay int64 in dp-accounting
        raise invalid(
            "count", "PLDPair.self_compose", f"small enough for a composed PLD of at most {_MAX_COMPOSED_ENTRIES} entries", count
        )
    size = fft.next_fast_len(max(length, probs.size), real=True)
    spectrum = fft.rfft(probs, size) ** count
    composed = np.roll(fft.irfft(spectrum, size), -low)[:length]
    infinity_mass = _TAIL_MASS_TRUNCATION - math.expm1(count * math.log1p(-dense._infinity_mass))
    return pld_pmf.DensePLDPmf(dense._discretization, lower_loss, composed, infinity_mass, dense._pessimistic_estimate)


def _chernoff_window(probs: np.ndarray, count: int, tail_mass: float) -> tuple[int, int]:
    """Indices ``[low, high]`` of the ``count``-fold self-convolution of ``probs`` outside which
    at most ``tail_mass`` lies (Chernoff bound ``P(S >= a) <= E[e^{tS}] e^{-ta}`` on each side,
    minimised over a grid of orders that includes dp-accounting's, so the window is never wider)."""
    from scipy import special

    last = probs.size - 1
    if last == 0:
        return 0, 0
    coarse = np.arange(1, 21) / probs.size
    fine = np.geomspace(1e-3 / (probs.size * math.sqrt(count)), 20.0 / probs.size, 400)
    positive = np.unique(np.concatenate([coarse, fine]))
    indices = np.arange(probs.size, dtype=float)
    log_two_over_tail = math.log(2.0 / tail_mass)
    high, low = last * count, 0
    for order in positive:
        for signed in (order, -order):
            log_mgf = float(special.logsumexp(indices * signed, b=probs))
            bound = (count * log_mgf + log_two_over_tail) / signed
            if not math.isfinite(bound):
                continue
            if signed > 0:
                high = min(high, math.ceil(bound))
            else:
                low = max(low, math.floor(bound))
    return low, max(high, low)
