"""Numerical composition of privacy-loss distributions (PLDs), certified against floating point.

A `PLDPair` holds the PLD of each direction of a neighbouring pair (``P`` vs ``Q`` and ``Q`` vs
``P``); composing two pairs composes each direction, and the reported delta or epsilon is the
maximum of the two. All PLDs are built with pessimistic discretisation (a dominating pair of the
one given, exact at every multiple of the discretisation). Their compositions are computed in
floating point, so each pair also carries what the arithmetic may have moved:

* ``absolute_error``: a stated bound (a first-order round-off analysis) on the L1 distance
  between the computed pmf and the exact composition (the FFT's round-off and the mass folded in
  by its window, `privsum.accounting._certified_composition`), added to every delta;
* ``relative_error``: the entries' relative error from the single events' construction
  (``2^-40`` each) and from direct convolutions, compounded over the compositions.

A reported delta is ``infinite-loss mass + absolute_error + finite part (1 + relative margin)``,
with the margin covering ``relative_error``, the evaluation's own rounding and `ROUNDING_MARGIN`;
a reported epsilon is the least whose reported delta meets the target, rounded up. Where the
infinite-loss mass and the absolute error alone reach the requested delta the pair **declines**:
`epsilon` returns ``inf`` (and the accountant's ``"best"`` answers with another certified method).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from privsum._convolution import _UNIT_ROUNDOFF
from privsum._validation import check_delta, check_integer, check_real, invalid
from privsum.accounting._certified_composition import compose_pmfs, self_compose_pmf
from privsum.accounting.guarantee import PrivacyGuarantee
from privsum.accounting.profile import PrivacyProfile

if TYPE_CHECKING:  # pragma: no cover - imported lazily: dp-accounting pulls in scipy.stats and scipy.signal
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

__all__ = ["DEFAULT_DISCRETIZATION", "PLDPair"]

DEFAULT_DISCRETIZATION = 1e-4
# Largest epsilon of a guarantee turned into a PLD (the worst (epsilon, delta) mechanism needs e^epsilon).
_MAX_PLD_EPSILON = 500.0
#: Largest composed PMF (entries) a self-composition builds.
_MAX_COMPOSED_ENTRIES = 1 << 24
#: Mass of a profile's PLD (each direction) whose extreme losses may be moved pessimistically:
#: at most half of it from the lowest losses up to a higher one, at most half from the highest
#: losses to infinity. Each move raises delta at every epsilon (also after composition, by at most
#: the count times this mass), and it keeps the PLD's support to the losses that carry mass.
LOSS_TAIL_MASS = 1e-18
#: Relative round-up of every reported delta (on top of the tracked errors) and of every reported
#: epsilon (the logarithm that inverts the last piece of the curve).
ROUNDING_MARGIN = 1e-9
#: Relative error of one event's PLD masses as built (logarithms, the split, the sums onto a grid
#: point, dp-accounting's closed forms): a few ulps per operation and sums of up to thousands of
#: terms per grid point stay far below it.
CONSTRUCTION_RELATIVE_ERROR = 2.0**-40
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
    absolute_error: float = 0.0
    relative_error: float = CONSTRUCTION_RELATIVE_ERROR

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
        """Composition with another pair, direction by direction (errors propagated, see the module)."""
        forward, forward_error, relative = _compose_distributions(self.forward, other.forward)
        if self.backward is self.forward and other.backward is other.forward:
            backward, backward_error = forward, forward_error
        else:
            backward, backward_error, _ = _compose_distributions(self.backward, other.backward)
        # (p1 + e1) * (p2 + e2) - p1 * p2 = e1 * (p2 + e2) + p1 * e2, with ||p_i||_1 <= 1 + r_i
        carried = self.absolute_error * (1.0 + other.relative_error + other.absolute_error)
        carried += other.absolute_error * (1.0 + self.relative_error)
        absolute = carried + max(forward_error, backward_error)
        compounded = (1.0 + self.relative_error) * (1.0 + other.relative_error) * (1.0 + relative) - 1.0
        return PLDPair(forward, backward, absolute, compounded)

    def self_compose(self, count: int) -> PLDPair:
        """``count``-fold composition with itself, in time logarithmic in ``count`` (FFT power).

        The FFT power is evaluated on a window chosen by Chernoff bounds over a fine grid of orders
        (dp-accounting's fixed grid gives windows that grow linearly in ``count``, so ``10**9``
        compositions would not fit in memory); the truncated tails (mass at most ``1e-15``) count
        as infinite loss, as in dp-accounting, and the transform's round-off is bounded and
        carried in ``absolute_error`` (`privsum.accounting._certified_composition`), so the
        result stays an upper bound. Short sparse pmfs are composed directly.

        Raises:
            InvalidParameterError: the composed distribution would need more than ``2**24``
                entries at this discretisation (use a coarser one).
        """
        count = check_integer(count, "count", "PLDPair.self_compose", low=1)
        if count == 1:
            return self
        try:
            forward, forward_error, relative = _self_compose_distribution(self.forward, count)
            if self.backward is self.forward:
                backward, backward_error = forward, forward_error
            else:
                backward, backward_error, _ = _self_compose_distribution(self.backward, count)
        except OverflowError:
            expected = f"small enough for a composed PLD of at most {_MAX_COMPOSED_ENTRIES} entries"
            raise invalid("count", "PLDPair.self_compose", expected, count) from None
        # (p + e)^(*k) - p^(*k) has L1 norm at most k ||e||_1 (||p||_1 + ||e||_1)^(k-1), with ||p||_1 <= 1 + r
        base = self.relative_error + self.absolute_error
        carried = _scaled_power(count * self.absolute_error, base, count - 1) if self.absolute_error > 0 else 0.0
        compounded = math.expm1(count * math.log1p(self.relative_error)) + relative
        return PLDPair(forward, backward, carried + max(forward_error, backward_error), compounded)

    @property
    def delta_floor(self) -> float:
        """The reported delta at infinite epsilon: below it `epsilon` is ``inf`` (the pair declines)."""
        return float(min(1.0, max(pmf._infinity_mass for pmf in self._all_pmfs()) + self.absolute_error))

    def delta(self, epsilon: float) -> float:
        """Upper bound on delta at ``epsilon``: the computed value plus the tracked errors (both directions).

        Each pmf's mass at infinite loss is exact up to the rounding its composition charged to
        ``absolute_error``; its finite part is raised by the relative margin.
        """
        epsilon = check_real(epsilon, "epsilon", "PLDPair.delta", low=0.0)
        margin = 1.0 + self._relative_margin()
        certified = 0.0
        for pmf in self._all_pmfs():
            infinite = float(pmf._infinity_mass)
            finite = max(0.0, float(pmf.get_delta_for_epsilon(epsilon)) - infinite)
            certified = max(certified, infinite + self.absolute_error + finite * margin)
        return float(min(1.0, certified))

    def epsilon(self, delta: float) -> float:
        """Upper bound on epsilon at ``delta`` (at least 0, rounded up); ``inf`` where the errors leave no certified answer."""
        delta = check_delta(delta, "PLDPair.epsilon")
        margin = 1.0 + self._relative_margin()
        computed = 0.0
        for pmf in self._all_pmfs():
            infinite = float(pmf._infinity_mass)
            room = delta - infinite - self.absolute_error  # what the finite losses may contribute
            if room < 0.0:
                return math.inf
            computed = max(computed, _pmf_epsilon(pmf, infinite + room / margin))
        if math.isinf(computed):
            return math.inf
        return float(computed * (1.0 + ROUNDING_MARGIN) + _ABSOLUTE_EPSILON_MARGIN) if computed > 0.0 else 0.0

    def _all_pmfs(self) -> list[Any]:
        pmfs = _pmfs(self.forward)
        return pmfs if self.backward is self.forward else pmfs + _pmfs(self.backward)

    def _relative_margin(self) -> float:
        """``relative_error`` as a bound on ``exact / computed - 1``, plus the evaluation's rounding and the margin."""
        relative = self.relative_error / (1.0 - self.relative_error) if self.relative_error < 0.5 else math.inf
        largest = max(int(pmf.size) for pmf in self._all_pmfs())
        return relative + 2.0 * (largest + 4) * _UNIT_ROUNDOFF + ROUNDING_MARGIN


def _scaled_power(factor: float, base: float, exponent: int) -> float:
    """``factor (1 + base)^exponent``, ``inf`` on overflow."""
    log_value = math.log(factor) + exponent * math.log1p(base) if factor > 0 else -math.inf
    return math.exp(log_value) if log_value < 700.0 else math.inf


def _pmfs(distribution: pld_lib.PrivacyLossDistribution) -> list[Any]:
    return [distribution._pmf_remove] if distribution._symmetric else [distribution._pmf_remove, distribution._pmf_add]


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
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
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


def _self_compose_distribution(
    distribution: pld_lib.PrivacyLossDistribution, count: int
) -> tuple[pld_lib.PrivacyLossDistribution, float, float]:
    """Self-composition of each pmf of a direction: the distribution, its L1 error bound and relative error."""
    remove, error, relative = self_compose_pmf(distribution._pmf_remove, count, _MAX_COMPOSED_ENTRIES)
    if distribution._symmetric:
        return pld_library().PrivacyLossDistribution(remove), error, relative
    add, add_error, add_relative = self_compose_pmf(distribution._pmf_add, count, _MAX_COMPOSED_ENTRIES)
    return pld_library().PrivacyLossDistribution(remove, add), max(error, add_error), max(relative, add_relative)


def _compose_distributions(
    first: pld_lib.PrivacyLossDistribution, second: pld_lib.PrivacyLossDistribution
) -> tuple[pld_lib.PrivacyLossDistribution, float, float]:
    """Composition of two directions pmf by pmf: the distribution, its L1 error bound and relative error."""
    remove, error, relative = compose_pmfs(first._pmf_remove, second._pmf_remove)
    if first._symmetric and second._symmetric:
        return pld_library().PrivacyLossDistribution(remove), error, relative
    add, add_error, add_relative = compose_pmfs(first._pmf_add, second._pmf_add)
    return pld_library().PrivacyLossDistribution(remove, add), max(error, add_error), max(relative, add_relative)
