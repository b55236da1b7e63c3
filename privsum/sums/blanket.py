"""Single-message real summation with the privacy blanket (Balle, Bell, Gascón & Nissim 2019).

Each user randomly rounds ``x in [0, 1]`` to ``{0, ..., k}`` and, with probability ``gamma``
(the *blanket probability*), replaces the result by a uniform value; one message per user.

Two ways to certify privacy:

* ``"analytic"``: the closed form of BBGN19 (``epsilon < 1``) and of Scott, Cormode & Maple
  (Scott, Cormode & Maple (BICOD 2021), section 4.5, ``1 <= epsilon < 6``) with ``d = 1``.
* ``"tight"``: the exact privacy profile of a *dominating pair* (`blanket_profile`), derived in
  the docstring of that function. It is an upper bound on the shuffled view's profile for every
  pair of neighbouring datasets, and much smaller than the analytic bound.

References:
    Scott, Cormode & Maple, "Applying the Shuffle Model of Differential Privacy to Vector
    Aggregation", BICOD 2021.
"""

from __future__ import annotations

import abc
import math
import warnings
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
from scipy import stats

from privsum._random import RNGLike, as_generator
from privsum._validation import (
    check_choice,
    check_delta,
    check_integer,
    check_privacy_request,
    check_probability,
    check_real,
    invalid,
)
from privsum.accounting import GuaranteeEvent, PrivacyEvent, PrivacyGuarantee, PrivacyProfile, ProfileEvent, calibrate
from privsum.shuffle import MessageBatch, MessageHistogram, ShuffleProtocol
from privsum.shuffle.protocol import EXECUTION_PATHS
from privsum.shuffle.streaming import PartialView
from privsum.sums._common import as_user_matrix, randomized_round, real_inputs, warn_if_fewer

__all__ = [
    "CALIBRATIONS",
    "BlanketRealSum",
    "analytic_blanket_epsilon",
    "analytic_blanket_probability",
    "blanket_profile",
    "blanket_variance_bound",
]

CALIBRATIONS = ("tight", "analytic")
_MAX_PROFILE_CELLS = 60_000_000


def analytic_blanket_probability(epsilon: float, delta: float, *, size: float, n_users: int, samples: int = 1) -> float:
    """The blanket probability ``gamma`` of the closed-form bounds (may exceed 1: then infeasible).

    ``size`` is ``k`` for the scalar protocol and ``d k`` for the vector protocol; ``samples`` is the
    number ``t`` of coordinates each user reports (Scott, Cormode & Maple (BICOD 2021), Theorem 4.1 and section 4.5):

    * ``t = 1, epsilon < 1``: ``max(14 size log(2/delta) / ((n-1) eps^2), 27 size / ((n-1) eps))`` (BBGN19);
    * ``t = 1, 1 <= epsilon < 6``: ``max(80 size log(2/delta) / ((n-1) eps^2), 36 size / (11 (n-1) eps))``;
    * ``t > 1, epsilon < 1``: ``56 size log(1/delta) log(2t/delta) / ((n-1) eps^2)``;
    * ``t > 1, 1 <= epsilon < 6``: ``2016 size log(1/delta) log(2t/delta) / ((n-1) eps^2)``.

    For ``epsilon >= 1`` the smaller of the second formula and the first at ``epsilon = 1`` is
    returned (a guarantee for every ``epsilon' < 1`` is one for ``epsilon = 1``).

    Raises:
        InvalidParameterError: ``epsilon >= 6`` (no closed form), or ``delta`` not in ``(0, 1)``.

    Examples:
        >>> round(analytic_blanket_probability(0.5, 1e-6, size=10, n_users=100_001), 5)
        0.08125
    """
    owner = "analytic_blanket_probability"
    epsilon = check_real(epsilon, "epsilon", owner, low=0.0, high=6.0, low_open=True, high_open=True)
    delta = check_delta(delta, owner, allow_zero=False)
    size = check_real(size, "size", owner, low=0.0, low_open=True)
    n_users = check_integer(n_users, "n_users", owner, low=2)
    samples = check_integer(samples, "samples", owner, low=1)
    others = n_users - 1
    if samples == 1:

        def small(eps: float) -> float:
            return max(14 * size * math.log(2 / delta) / others / eps / eps, 27 * size / others / eps)  # eps**2 may underflow

        if epsilon < 1:
            return small(epsilon)
        large = max(80 * size * math.log(2 / delta) / (others * epsilon**2), 36 * size / (11 * others * epsilon))
        return min(large, small(1.0))  # the epsilon < 1 bound certifies every epsilon' < 1, hence epsilon' = 1
    logs = math.log(1 / delta) * math.log(2 * samples / delta)
    if epsilon < 1:
        return 56 * size * logs / others / epsilon / epsilon
    return min(2016 * size * logs / (others * epsilon**2), 56 * size * logs / others)


def analytic_blanket_epsilon(blanket_probability: float, delta: float, *, size: float, n_users: int, samples: int = 1) -> float:
    """The smallest epsilon the closed forms of `analytic_blanket_probability` certify (``inf`` if none).

    Examples:
        >>> gamma = analytic_blanket_probability(0.5, 1e-6, size=10, n_users=100_001)
        >>> round(analytic_blanket_epsilon(gamma, 1e-6, size=10, n_users=100_001), 9)
        0.5
    """
    owner = "analytic_blanket_epsilon"
    gamma = check_probability(blanket_probability, "blanket_probability", owner, allow_zero=False, allow_one=True)
    delta = check_delta(delta, owner, allow_zero=False)
    others = check_integer(n_users, "n_users", owner, low=2) - 1
    samples = check_integer(samples, "samples", owner, low=1)
    scale = check_real(size, "size", owner, low=0.0, low_open=True) / (others * gamma)
    if samples == 1:
        small = max(math.sqrt(14 * scale * math.log(2 / delta)), 27 * scale)
        large = max(math.sqrt(80 * scale * math.log(2 / delta)), 36 * scale / 11)
    else:
        logs = math.log(1 / delta) * math.log(2 * samples / delta)
        small, large = math.sqrt(56 * scale * logs), math.sqrt(2016 * scale * logs)
    if small <= 1:
        return small
    if large < 6:
        return max(large, 1.0)
    return math.inf


def blanket_profile(blanket_probability: float, n_values: int, n_users: int, *, tail_mass: float = 1e-15) -> PrivacyProfile:
    """Exact profile of a dominating pair for ``n_users`` shuffled k-ary blanket messages.

    Each user sends its (rounded) value with probability ``1 - gamma`` and a uniform value of the
    ``K = n_values`` message values with probability ``gamma``. Fix the neighbours' differing user
    at message values ``a != b``. Every other user's message distribution puts at least
    ``g = gamma/K`` on each value, so it is the mixture "uniform on ``{a, b}`` with probability
    ``2g``, else a residual that does not depend on the target user". Revealing which users took
    the first branch, and the residual messages, can only help the adversary; the residual part
    is independent of the target and can be dropped. What is left is ``C ~ Bin(n-1, 2g)`` clone
    messages split ``A ~ Bin(C, 1/2)`` between ``a`` and ``b``, plus the target's message, which
    lands on ``a`` with probability ``1 - gamma + g`` (on ``b`` with ``g``, elsewhere otherwise)
    under one dataset and with the roles of ``a`` and ``b`` exchanged under the other. The view
    ``(target landed outside {a, b}, count in {a, b}, count at a)`` is computed here exactly;
    when the target lands outside ``{a, b}`` both datasets give the same law (zero loss).

    Randomized rounding makes a real input a mixture of integer inputs; by joint convexity of the
    hockey-stick divergence the worst case is two distinct integer values, and by symmetry every
    such pair gives this same profile. So the profile bounds the shuffled view for **every**
    replace-one neighbouring pair and every choice of the other users' inputs.

    Args:
        blanket_probability: ``gamma`` in ``(0, 1]``.
        n_values: ``K``, the number of message values (``k + 1``; ``d (k + 1)`` for vectors, t = 1).
        n_users: ``n``, users taking part.
        tail_mass: probability dropped in the tails of ``C`` and ``A``, counted as infinite loss.

    Privacy:
        Replace-one; an upper bound on the exact profile of the message histogram (tight up to
        the revealed branch choices and ``tail_mass``).

    Examples:
        >>> profile = blanket_profile(0.05, 11, 100_001)
        >>> profile.epsilon(1e-6) < analytic_blanket_epsilon(0.05, 1e-6, size=10, n_users=100_001)
        True
    """
    owner = "blanket_profile"
    gamma = check_probability(blanket_probability, "blanket_probability", owner, allow_zero=False, allow_one=True)
    n_values = check_integer(n_values, "n_values", owner, low=2)
    n_users = check_integer(n_users, "n_users", owner, low=1)
    tail_mass = check_real(tail_mass, "tail_mass", owner, low=1e-300, high=1e-3)
    per_value = gamma / n_values
    if not per_value >= 1e-300:  # below, scipy's binomial pmf overflows (and the pair has no privacy to speak of)
        raise invalid("blanket_probability", owner, f"at least {1e-300 * n_values:g} (1e-300 per message value)", gamma)
    to_a, to_b = 1.0 - gamma + per_value, per_value
    elsewhere = max(0.0, 1.0 - to_a - to_b)
    clones = stats.binom(n_users - 1, min(1.0, 2 * per_value))
    c_low, c_high = _binomial_range(clones, n_users - 1, tail_mass / 4)
    counts = np.arange(max(c_low, 0), c_high + 2)  # C' = C + [target lands in {a, b}]
    half_width = math.ceil(math.sqrt(counts[-1] * math.log(8 / tail_mass) / 2)) + 2  # Hoeffding window for A
    if counts.size * (2 * half_width + 1) > _MAX_PROFILE_CELLS:
        raise invalid("n_users", owner, "small enough for the exact profile grid", n_users)
    at_a = (counts // 2 - half_width)[:, None] + np.arange(2 * half_width + 1)[None, :]
    c = np.broadcast_to(counts[:, None], at_a.shape)
    before = np.maximum(c - 1, 0)
    weight_before = np.where(c >= 1, clones.pmf(before), 0.0)
    lands_a = weight_before * stats.binom.pmf(at_a - 1, before, 0.5)
    lands_b = weight_before * stats.binom.pmf(at_a, before, 0.5)
    p = to_a * lands_a + to_b * lands_b
    q = to_b * lands_a + to_a * lands_b
    keep = (at_a >= 0) & (at_a <= c) & ((p > 0) | (q > 0))
    # The target's message outside {a, b} is visible too; it has the same probability under both
    # datasets and (given it) the clone counts have the same law: one cell of zero privacy loss.
    p = np.append(p[keep], elsewhere)
    q = np.append(q[keep], elsewhere)
    return PrivacyProfile(p, q, p_tail=tail_mass, q_tail=tail_mass)


def _binomial_range(distribution: Any, trials: int, tail: float) -> tuple[int, int]:
    """``(low, high)`` with ``P(X < low) <= tail`` and ``P(X > high) <= tail`` (checked, robust to scipy's root finder)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = distribution.ppf(tail), distribution.isf(tail)
    low = int(low) if np.isfinite(low) else 0
    high = int(high) if np.isfinite(high) else trials
    while low > 0 and distribution.cdf(low - 1) > tail:
        low = max(0, low - 1 - low // 2)
    while high < trials and distribution.sf(high) > tail:
        high = min(trials, high + 1 + high)
    return max(low, 0), min(high, trials)


def default_precision(epsilon: float, delta: float, *, n_users: int, dimension: int = 1, samples: int = 1) -> int:
    """The ``k`` minimising the MSE bound ``t (1/(4k^2) + gamma/4) / (1 - gamma)^2`` with analytic ``gamma``.

    The bound is that of Scott, Cormode & Maple (BICOD 2021).

    Falls back to ``round((n min(epsilon, 1) / (54 d))^(1/3))`` (at least 1) where no ``k`` is feasible.
    """
    best, best_bound = None, math.inf
    for k in range(1, 1 + max(2, int(4 * (n_users * max(epsilon, 1.0) / dimension) ** (1 / 3)))):
        try:
            gamma = analytic_blanket_probability(min(epsilon, 5.999), delta, size=dimension * k, n_users=n_users, samples=samples)
        except ValueError:
            break
        if gamma >= 1:
            break
        bound = samples * (1 / (4 * k**2) + gamma / 4) / (1 - gamma) ** 2
        if bound < best_bound:
            best, best_bound = k, bound
    if best is None:
        best = max(1, round((n_users * min(epsilon, 1.0) / (54 * dimension)) ** (1 / 3)))
    return best


def calibrate_blanket_probability(epsilon: float, delta: float, *, n_values: int, n_users: int, start: float | None) -> float:
    """Least ``gamma`` whose `blanket_profile` has ``delta(epsilon) <= delta`` (bisection, never overshoots)."""

    def delta_at(gamma: float) -> float:
        return blanket_profile(gamma, n_values, n_users).delta(epsilon)

    upper = 1.0
    if start is not None and 0 < start < 1 and delta_at(start) <= delta:
        upper = start
    return calibrate(delta_at, target_delta=delta, lower=1e-9, upper=upper, more_private="increasing", tolerance=1e-4)


def tight_blanket_probability(epsilon: float, delta: float, *, precision: int, n_users: int, dimension: int = 1) -> float:
    """Least ``gamma`` meeting ``(epsilon, delta)`` on the exact profile of ``d (k + 1)`` values, from the analytic ``gamma``."""
    start = None
    if epsilon < 6:
        start = analytic_blanket_probability(epsilon, delta, size=dimension * precision, n_users=n_users)
    return calibrate_blanket_probability(epsilon, delta, n_values=dimension * (precision + 1), n_users=n_users, start=start)


def blanket_parameters(
    epsilon: float,
    delta: float,
    owner: str,
    *,
    n_users: int,
    calibration: str,
    precision: int | None,
    dimension: int = 1,
    samples: int = 1,
) -> tuple[int, float]:
    """``(k, gamma)`` of a blanket protocol's ``from_privacy``: ``n_users`` reports over ``d (k + 1)`` values.

    ``"tight"``: the least ``gamma`` on the exact profile (``t = 1``), with ``k`` from
    `tight_precision_and_probability` where ``precision`` is ``None``. ``"analytic"``: the closed
    form (``epsilon`` below 6), with ``k`` from `default_precision` where ``None``.

    Raises:
        InvalidParameterError: (named for ``owner``) a precision below 1; a target that needs
            ``gamma >= 1``; ``"analytic"`` with ``epsilon >= 6``.
    """
    if precision is not None:
        precision = check_integer(precision, "precision", owner, low=1)
    if calibration == "tight":
        if precision is None:
            start = default_precision(epsilon, delta, n_users=n_users, dimension=dimension)
            return tight_precision_and_probability(epsilon, delta, n_users=n_users, dimension=dimension, start=start)
        gamma = tight_blanket_probability(epsilon, delta, precision=precision, n_users=n_users, dimension=dimension)
        if not gamma < 1:
            raise invalid("epsilon", owner, "achievable with a blanket probability below 1", epsilon)
        return precision, gamma
    if not epsilon < 6:
        raise invalid("epsilon", owner, "below 6 for the analytic calibration", epsilon)
    if precision is None:
        precision = default_precision(epsilon, delta, n_users=n_users, dimension=dimension, samples=samples)
    gamma = analytic_blanket_probability(epsilon, delta, size=dimension * precision, n_users=n_users, samples=samples)
    if not gamma < 1:
        raise invalid("precision", owner, f"small enough that the analytic gamma is below 1 (it is {gamma:.4g})", precision)
    return precision, gamma


def blanket_variance_bound(blanket_probability: float, precision: int, n_users: int, samples: float = 1.0) -> float:
    """Worst-case variance over inputs in ``[0, 1]`` of the debiased sum of ``n_users * samples`` blanket reports.

    Per report ``(1-gamma)/(4k^2) + gamma (2k+1)/(6k) - gamma^2/4``, divided by ``(1 - gamma)^2``.
    """
    owner = "blanket_variance_bound"
    gamma = check_probability(blanket_probability, "blanket_probability", owner)
    k = check_integer(precision, "precision", owner, low=1)
    n_users = check_integer(n_users, "n_users", owner, low=1)
    samples = check_real(samples, "samples", owner, low=0.0, low_open=True)
    per_report = (1 - gamma) / (4 * k**2) + gamma * (2 * k + 1) / (6 * k) - gamma**2 / 4
    bound = n_users * samples * per_report / (1 - gamma) ** 2
    if not math.isfinite(bound):
        raise invalid("samples", owner, "small enough that the bound is finite", samples)
    return bound


def tight_precision_and_probability(
    epsilon: float, delta: float, *, n_users: int, dimension: int = 1, start: int
) -> tuple[int, float]:
    """The ``k`` (and its tight ``gamma``) minimising the worst-case variance bound, by a local integer search.

    The bound is unimodal in ``k`` in practice; the search walks up (or down) from ``start`` while it
    improves, doubling the step, then refines. Every candidate is calibrated exactly.
    """
    cache: dict[int, tuple[float, float]] = {}

    def cost(k: int) -> float:
        if k not in cache:
            try:
                gamma = tight_blanket_probability(epsilon, delta, precision=k, n_users=n_users, dimension=dimension)
            except ValueError:
                gamma = 1.0
            value = blanket_variance_bound(gamma, k, n_users) * dimension**2 if gamma < 1 else math.inf
            cache[k] = (value, gamma)
        return cache[k][0]

    best = max(1, start)
    for direction in (1, -1):
        step = 1
        while best + direction * step >= 1 and cost(best + direction * step) < cost(best):
            best += direction * step
            step *= 2
        while step > 1:
            step //= 2
            for candidate in (best + step, best - step):
                if candidate >= 1 and cost(candidate) < cost(best):
                    best = candidate
    if not math.isfinite(cost(best)):
        raise invalid("epsilon", "BlanketRealSum.from_privacy", "achievable with a blanket probability below 1", epsilon)
    return best, cache[best][1]


def check_analytic_bound(protocol: Any, owner: str) -> None:
    """Raise unless a blanket protocol accounted ``"analytic"`` has a finite analytic epsilon (it needs epsilon < 6)."""
    if protocol.accounting == "analytic" and not math.isfinite(protocol._analytic_epsilon()):
        raise invalid(
            "blanket_probability", owner, "large enough for the analytic bound (epsilon < 6)", protocol.blanket_probability
        )


class _BlanketMechanics(ShuffleProtocol):
    """What the blanket protocols share: messages in ``{0, ..., k}`` (``k = precision``), accounting, participants.

    For a frozen dataclass with ``n_users``, ``precision``, ``blanket_probability``, ``delta``, ``accounting``,
    ``clip`` and a ``profile``, that
    computes ``_analytic_epsilon()`` and the guarantee for fewer participants (``_event_for_fewer``).
    """

    n_users: int
    precision: int
    blanket_probability: float
    delta: float
    accounting: str
    clip: bool

    def _check_blanket_fields(self, owner: str) -> None:
        """Check the fields every blanket protocol has (its own, and `check_analytic_bound`, are checked after)."""
        check_integer(self.n_users, "n_users", owner, low=2)
        check_integer(self.precision, "precision", owner, low=1)
        check_probability(self.blanket_probability, "blanket_probability", owner, allow_zero=False)
        check_delta(self.delta, owner, allow_zero=False)
        check_choice(self.accounting, "accounting", owner, CALIBRATIONS)
        if not isinstance(self.clip, bool):
            raise invalid("clip", owner, "a bool", self.clip)

    @cached_property
    def event(self) -> PrivacyEvent:
        if self.accounting == "analytic":
            return GuaranteeEvent(PrivacyGuarantee(self._analytic_epsilon(), self.delta))
        return ProfileEvent.at_delta(self.profile, self.delta)

    def event_for_participants(self, n_participants: int) -> PrivacyEvent:
        """The guarantee achieved when ``n_participants`` users take part (`event` for ``n_users`` or more)."""
        n_participants = check_integer(n_participants, "n_participants", type(self).__name__, low=1)
        if n_participants >= self.n_users:
            return self.event
        return self._event_for_fewer(n_participants)

    def check_participants(self, n_participants: int) -> None:
        """Warn with `PrivacyLeakWarning` when fewer than ``n_users`` take part; more are fine."""
        warn_if_fewer(n_participants, self.n_users, type(self).__name__)

    @property
    def alphabet(self) -> tuple[int, ...]:
        return tuple(range(self.precision + 1))

    @abc.abstractmethod
    def _event_for_fewer(self, n_participants: int) -> PrivacyEvent:
        """The configured accounting evaluated at ``n_participants < n_users``."""


@dataclass(frozen=True, kw_only=True)
class BlanketRealSum(_BlanketMechanics):
    """Single-message shuffled sum of reals in ``[0, 1]`` with a k-ary privacy blanket (BBGN19).

    Each user sends one message in ``{0, ..., k}``: ``floor(x k) + Bern(x k - floor(x k))``,
    replaced by a uniform value with probability ``gamma``. The analyzer returns
    ``(sum(y)/k - gamma n / 2) / (1 - gamma)``. Inputs of shape ``(n_users,)`` or
    ``(n_users, n_instances)`` (independent instances, messages tagged by instance).

    Args:
        n_users: users the guarantee is calibrated for (fewer warn, more are accepted: see Privacy).
        precision: ``k``, the number of rounding levels (message values ``0..k``).
        blanket_probability: ``gamma``, probability of replacing the message by a uniform one.
        delta: the delta of the headline guarantee.
        accounting: ``"tight"`` (exact profile of a dominating pair, `blanket_profile`) or
            ``"analytic"`` (closed form; needs ``epsilon < 6`` to exist).
        clip: clip inputs to ``[0, 1]`` instead of raising on values outside it.

    Privacy:
        Replace-one, per instance, on the shuffled multiset; trusted shuffler. ``"tight"``: the
        headline is ``(profile.epsilon(delta), delta)`` of `blanket_profile` (verifiable by
        calling ``event.profile``). ``"analytic"``: BBGN19 Theorem (``epsilon < 1``) or Scott, Cormode & Maple (BICOD 2021)
        section 4.5 with ``d = 1`` (``1 <= epsilon < 6``).

        Participation: the randomizer does not depend on ``n``, so any number of users may take
        part. **More** than ``n_users`` never hurts: the extra users' messages are independent of
        the target's input and of the other messages, so the larger view is a post-processing of
        the calibrated one (the analyzer counts the messages it receives, so it stays unbiased).
        **Fewer** hide each user in a thinner blanket: `run`, `randomize` and `sample_view` warn
        with `PrivacyLeakWarning` and `event_for_participants` recomputes the guarantee for the
        users who took part (the same accounting, evaluated at the smaller ``n``).

    Utility:
        Unbiased. Variance ``sum_i v(x_i) / (1 - gamma)^2`` (`variance`), at most
        ``n ((1-gamma)/(4k^2) + gamma (2k+1)/(6k) - gamma^2/4) / (1-gamma)^2`` -- MSE
        ``O(n^{1/3})``-type at the calibrated ``k``.

    Robustness:
        One message per sender and instance (`per_sender_message_cap` 1); a message ``y`` adds
        ``(y/k - gamma/2)/(1 - gamma)``, so ``k`` malicious senders shift an estimate by at most
        ``k (1 - gamma/2)/(1 - gamma)`` (all sending ``y = k``; `manipulation_bound`), against an
        honest contribution between 0 and ``k``.

    References:
        Balle, Bell, Gascón & Nissim, "The privacy blanket of the shuffle model", CRYPTO 2019.
        Scott, Cormode & Maple, BICOD 2021 (Scott, Cormode & Maple (BICOD 2021)), section 4.5.

    Examples:
        >>> protocol = BlanketRealSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=10_000)
        >>> x = np.full(10_000, 0.25)
        >>> estimate = protocol.run(x, rng=0)
        >>> bool(abs(estimate[0] - 2500) < 6 * float(np.sqrt(protocol.variance(x)[0])))
        True
    """

    streams_chunks: ClassVar[bool] = True

    n_users: int
    precision: int
    blanket_probability: float
    delta: float
    accounting: str = "tight"
    clip: bool = False

    def __post_init__(self) -> None:
        owner = type(self).__name__
        self._check_blanket_fields(owner)
        check_analytic_bound(self, owner)

    @classmethod
    def from_privacy(
        cls,
        *,
        epsilon: float,
        delta: float,
        n_users: int,
        calibration: str = "tight",
        precision: int | None = None,
        clip: bool = False,
    ) -> BlanketRealSum:
        """The protocol meeting ``(epsilon, delta)`` for ``n_users``, with the least blanket probability.

        Args:
            epsilon: target epsilon.
            delta: target delta, in ``(0, 1)``.
            n_users: number of users.
            calibration: ``"tight"`` (bisection on the exact dominating-pair profile) or ``"analytic"``.
            precision: ``k``; ``None`` picks it: for ``"analytic"`` the ``k`` minimising Scott, Cormode & Maple (BICOD 2021)'s MSE
                bound with ``d = 1``; for ``"tight"`` the ``k`` minimising the worst-case variance with
                the tight ``gamma`` (a local search, each candidate calibrated exactly).
            clip: see the class.
        """
        owner = f"{cls.__name__}.from_privacy"
        epsilon, delta, n_users = check_privacy_request(epsilon, delta, n_users, owner, least_users=2)
        calibration = check_choice(calibration, "calibration", owner, CALIBRATIONS)
        precision, gamma = blanket_parameters(
            epsilon, delta, owner, n_users=n_users, calibration=calibration, precision=precision
        )
        return cls(
            n_users=n_users, precision=precision, blanket_probability=gamma, delta=delta, accounting=calibration, clip=clip
        )

    # ----------------------------------------------------------------- privacy and costs
    def _analytic_epsilon(self) -> float:
        return analytic_blanket_epsilon(self.blanket_probability, self.delta, size=self.precision, n_users=self.n_users)

    @cached_property
    def profile(self) -> PrivacyProfile:
        """The exact profile of the dominating pair (`blanket_profile`) for these parameters."""
        return blanket_profile(self.blanket_probability, self.precision + 1, self.n_users)

    def _event_for_fewer(self, n_participants: int) -> PrivacyEvent:
        """The configured accounting evaluated at ``n_participants < n_users`` -- the exact profile of
        `blanket_profile` (``"tight"``), or the closed form (``"analytic"``; where it has no finite
        value, for example below two users, the exact profile, which is also a valid bound).
        """
        if self.accounting == "analytic" and n_participants >= 2:
            epsilon = analytic_blanket_epsilon(self.blanket_probability, self.delta, size=self.precision, n_users=n_participants)
            if math.isfinite(epsilon):
                return GuaranteeEvent(PrivacyGuarantee(epsilon, self.delta))
        profile = blanket_profile(self.blanket_probability, self.precision + 1, n_participants)
        return ProfileEvent.at_delta(profile, self.delta)

    @property
    def expected_messages_per_user(self) -> float:
        return 1.0

    def variance(self, x: Any = None) -> np.ndarray | float:
        """Variance of each instance's estimate: exact for inputs ``x``, else the worst-case bound."""
        k, gamma = self.precision, self.blanket_probability
        uniform_second_moment = (2 * k + 1) / (6 * k)
        if x is None:
            return blanket_variance_bound(gamma, k, self.n_users)
        values = self._values(x)
        fraction = values * k - np.floor(values * k)
        second = (1 - gamma) * (values**2 + fraction * (1 - fraction) / k**2) + gamma * uniform_second_moment
        mean = (1 - gamma) * values + gamma / 2
        return (second - mean**2).sum(axis=0) / (1 - gamma) ** 2

    # ----------------------------------------------------------------- roles
    def _values(self, x: Any) -> np.ndarray:
        return as_user_matrix(real_inputs(x, type(self).__name__, clip=self.clip))

    def _messages(self, x: Any, rng: np.random.Generator) -> np.ndarray:
        values = self._values(x)
        self.check_participants(values.shape[0])
        return self._messages_of(values, rng)

    def _messages_of(self, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        rounded = randomized_round(values * self.precision, rng)
        blanket = rng.random(values.shape) < self.blanket_probability
        uniform = rng.integers(0, self.precision + 1, size=values.shape)
        return np.where(blanket, uniform, rounded)

    messages_per_instance = 1  # (the per-sender cap of privsum.parties)

    def randomize(self, x: Any, *, rng: RNGLike = None) -> MessageBatch:
        """One message per user and instance (the local randomizers)."""
        messages = self._messages(x, as_generator(rng, type(self).__name__))
        instances = np.broadcast_to(np.arange(messages.shape[1]), messages.shape)
        return MessageBatch(instances.ravel(), messages.ravel(), n_instances=messages.shape[1])

    def sample_view(self, x: Any, *, rng: RNGLike = None) -> MessageHistogram:
        """Fast path: the same per-user draws counted directly, without materialising or permuting messages."""
        return self._count(self._messages(x, as_generator(rng, type(self).__name__)))

    def partial_view(self, chunk: Any, *, rng: RNGLike = None, path: str = "fast") -> PartialView:
        """One chunk of users' histogram (each user's message is its own: both paths count the same draws)."""
        owner = type(self).__name__
        check_choice(path, "path", owner, EXECUTION_PATHS)
        values = self._values(chunk)
        return PartialView(self._count(self._messages_of(values, as_generator(rng, owner))), values.shape[0])

    def _count(self, messages: np.ndarray) -> MessageHistogram:
        width = self.precision + 1
        flat = (np.arange(messages.shape[1]) * width)[None, :] + messages
        counts = np.bincount(flat.ravel(), minlength=messages.shape[1] * width).reshape(messages.shape[1], width)
        return MessageHistogram(counts, self.alphabet)

    def _message_cap(self, tail_probability: float) -> int:
        """One message per user and instance."""
        return 1

    @property
    def largest_message_effect(self) -> float:
        """``(1 - gamma/2)/(1 - gamma)``: the effect of a message ``k`` (a message ``0`` moves it by ``-gamma/2/(1-gamma)``)."""
        gamma = self.blanket_probability
        return (1.0 - gamma / 2.0) / (1.0 - gamma)

    def analyze(self, view: MessageHistogram | MessageBatch) -> np.ndarray:
        """Debiased sum per instance: ``(sum(y)/k - gamma n/2) / (1 - gamma)``."""
        counts = self.view(view).counts
        n_messages = counts.sum(axis=1)
        total = counts @ np.arange(self.precision + 1) / self.precision
        return (total - self.blanket_probability * n_messages / 2) / (1 - self.blanket_probability)
