"""High-dimensional clipped sums and sparse vector aggregation in one shuffle round (section s of Dong et al. (CCS 2024) 6-7).

* `ClippedVectorSum`: public random rotation (randomized Walsh-Hadamard, padded to a power of two),
  each rotated coordinate split into its positive and negative parts, the one-round `ClippedSum`
  per (coordinate, sign), composed over coordinates (advanced composition, or numerically), and
  the sums rotated back.
* `SparseVectorAggregation`: binary vectors (frequency estimation under user-level DP); users are
  partitioned by sparsity level, each level has a user-count instance and per-coordinate count
  instances; the analyzer keeps the levels up to the last one with enough users.
* Central-DP references `CentralClippedVectorSum` and `CentralSparseAggregation` (Gaussian noise
  via OpenDP).

References:
    Dong, Luo, Fanti, Shi & Yi, "(Almost) Instance-optimal Clipping for Summation Problems in
    the Shuffle Model of Differential Privacy", CCS 2024.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from privsum._random import RNGLike, as_generator
from privsum._validation import (
    check_array,
    check_choice,
    check_delta,
    check_epsilon,
    check_integer,
    check_probability,
    check_real,
    invalid,
    refusals_as,
)
from privsum.accounting import (
    DEFAULT_DISCRETIZATION,
    GuaranteeEvent,
    Neighbouring,
    ParallelEvent,
    PLDPair,
    PrivacyEvent,
    PrivacyGuarantee,
    advanced_composition_epsilon,
    basic_composition,
    calibrate,
)
from privsum.lsq.hadamard import RandomizedHadamard, next_power_of_two
from privsum.shuffle import EXECUTION_PATHS, MessageBatch, MessageHistogram, ShuffleProtocol
from privsum.shuffle.sparse import SparseMessageHistogram
from privsum.shuffle.streaming import PartialView, is_chunk_stream
from privsum.sums._common import check_has_users, randomized_round
from privsum.sums.clipped import (
    CLIPPED_RELATIONS,
    INSTANCE_METHODS,
    ClippedSum,
    InstanceProtocol,
    NoisySums,
    _data_messages,
    _noise_messages,
    _noise_ratio,
    _scale,
    _wrap_probability,
    check_instance_participants,
    check_participant_count,
    choose_instance,
    decode_total,
    instance_messages,
    instance_views,
    noisy_total,
    parallel_event_or_none,
    sub_domain_index,
    upper_tail_threshold,
)
from privsum.sums.clipped_shares import SparseMultiMessageSum
from privsum.sums.correlated import CorrelatedNoiseSum

__all__ = [
    "COMPOSITIONS",
    "CentralClippedVectorSum",
    "CentralSparseAggregation",
    "ClippedVectorSum",
    "CompositionEvent",
    "SparseVectorAggregation",
    "compose_like_budget",
    "per_mechanism_budget",
]

COMPOSITIONS = ("advanced", "tight")


# --------------------------------------------------------------------------- composition
@dataclass(frozen=True)
class CompositionEvent(PrivacyEvent):
    """``count`` mechanisms, each ``event``, touched by one user, with the headline a composition theorem gives.

    ``headline`` comes from advanced composition or from the numerical composition of the PLDs
    (`per_mechanism_budget`); `pld` composes ``event``'s PLD ``count`` times (for the accountant).

    Examples:
        >>> single = GuaranteeEvent(PrivacyGuarantee(0.1, 1e-9))
        >>> headline = PrivacyGuarantee(advanced_composition_epsilon(0.1, 400, 1e-7), 400e-9 + 1e-7)
        >>> CompositionEvent(single, 400, headline).guarantee.epsilon < 400 * 0.1
        True
    """

    event: PrivacyEvent
    count: int
    headline: PrivacyGuarantee

    def __post_init__(self) -> None:
        owner = "CompositionEvent"
        if not isinstance(self.event, PrivacyEvent):
            raise invalid("event", owner, "a PrivacyEvent", self.event)
        check_integer(self.count, "count", owner, low=1)
        if not isinstance(self.headline, PrivacyGuarantee) or self.headline.neighbouring != self.event.neighbouring:
            raise invalid("headline", owner, "a PrivacyGuarantee under the event's relation", self.headline)
        if not composition_backs(self.event.guarantee, self.count, self.headline, self.pld):
            raise invalid("headline", owner, f"backed by composing the event {self.count} times", self.headline)

    @property
    def guarantee(self) -> PrivacyGuarantee:
        return self.headline

    def pld(self, discretization: float = DEFAULT_DISCRETIZATION) -> PLDPair:
        return self.event.pld(discretization).self_compose(self.count)


# Relative float rounding allowed between a headline and the composition bound it was computed from.
_BACKING_RTOL = 1e-12


def composition_backs(
    single: PrivacyGuarantee, count: int, headline: PrivacyGuarantee, pld: Callable[[], PLDPair] | None = None
) -> bool:
    """Whether ``count`` mechanisms, each ``single``-DP, are ``headline``-DP: basic, advanced or numerical composition.

    Basic composition (``count * epsilon``, ``count * delta``) and advanced composition (at the
    slack ``headline.delta - count * delta``) are checked in closed form; otherwise ``pld()`` (the
    composed privacy-loss distributions) must meet the headline. An infinite headline is always
    backed.
    """
    if not headline.is_finite:
        return True
    if not single.is_finite:
        return False
    scale = 1.0 + _BACKING_RTOL
    if headline.epsilon * scale >= count * single.epsilon and headline.delta * scale >= count * single.delta:
        return True
    slack = headline.delta - count * single.delta
    if slack > 0.0 and headline.epsilon * scale >= advanced_composition_epsilon(single.epsilon, count, slack):
        return True
    return pld is not None and pld().delta(headline.epsilon) <= headline.delta * (1.0 + 1e-9)


def _advanced_budget(epsilon: float, delta: float, count: int) -> tuple[float, float, PrivacyGuarantee]:
    """Largest per-mechanism epsilon0 (delta split in half: slack, and ``count`` equal shares) by the better of basic/advanced."""
    slack, delta0 = delta / 2, delta / 2 / count
    basic = epsilon / count
    if advanced_composition_epsilon(basic, count, slack) <= epsilon:  # advanced is never worse here: search upwards
        lower, upper = basic, epsilon
        for _ in range(100):
            middle = (lower + upper) / 2
            lower, upper = (middle, upper) if advanced_composition_epsilon(middle, count, slack) <= epsilon else (lower, middle)
        return lower, delta0, PrivacyGuarantee(advanced_composition_epsilon(lower, count, slack), count * delta0 + slack)
    return basic, delta / count, PrivacyGuarantee(basic * count, delta)


def _tight_budget(epsilon: float, delta: float, count: int) -> tuple[float, float, PrivacyGuarantee]:
    """Largest per-mechanism epsilon0 (``delta0 = delta/(2 count)``) whose ``count``-fold PLD composition meets the target."""
    delta0 = delta / 2 / count

    def delta_at(epsilon0: float) -> float:
        return PLDPair.from_guarantee(PrivacyGuarantee(epsilon0, delta0)).self_compose(count).delta(epsilon)

    epsilon0 = calibrate(
        delta_at,
        target_delta=delta,
        lower=epsilon / count,
        upper=epsilon,
        more_private="decreasing",
        tolerance=1e-4,
        caller=("ClippedVectorSum", "delta", delta),
    )
    achieved = PLDPair.from_guarantee(PrivacyGuarantee(epsilon0, delta0)).self_compose(count).epsilon(delta)
    return epsilon0, delta0, PrivacyGuarantee(min(achieved, epsilon), delta)


def per_mechanism_budget(
    epsilon: float, delta: float, count: int, composition: str = "advanced"
) -> tuple[float, float, PrivacyGuarantee]:
    """``(epsilon0, delta0, headline)``: ``count`` mechanisms each ``(epsilon0, delta0)``-DP compose to ``headline``.

    The headline is at most ``(epsilon, delta)``.

    ``"advanced"``: the better of basic composition and advanced composition (half of delta as
    the slack ``delta'``). ``"tight"``: the numerical composition of the worst ``(epsilon0,
    delta0)``-DP pair's PLD (optimal for generic mechanisms), ``delta0 = delta/(2 count)``, bisection
    that never overshoots.

    Examples:
        >>> e0, d0, headline = per_mechanism_budget(1.0, 1e-6, 64, "advanced")
        >>> e1, _, tight = per_mechanism_budget(1.0, 1e-6, 64, "tight")
        >>> headline.epsilon <= 1.0 and tight.epsilon <= 1.0 and e1 > e0
        True
    """
    owner = "per_mechanism_budget"
    epsilon = check_epsilon(epsilon, owner)
    delta = check_delta(delta, owner, allow_zero=False)
    count = check_integer(count, "count", owner, low=1)
    composition = check_choice(composition, "composition", owner, COMPOSITIONS)
    if count == 1:
        return epsilon, delta, PrivacyGuarantee(epsilon, delta)
    return _advanced_budget(epsilon, delta, count) if composition == "advanced" else _tight_budget(epsilon, delta, count)


def compose_like_budget(
    per_mechanism: PrivacyGuarantee, count: int, calibrated: PrivacyGuarantee, budget_delta: float, composition: str
) -> PrivacyGuarantee:
    """``count`` mechanisms, each ``per_mechanism``-DP, composed as `per_mechanism_budget` composed the calibrated ones.

    ``calibrated`` is one mechanism's guarantee as calibrated and ``budget_delta`` the composed
    delta the budget spent; the slack ``budget_delta - count * calibrated.delta`` (advanced
    composition's ``delta'``, or the share of delta the numerical composition keeps) is kept, and
    the composed delta is ``count * per_mechanism.delta + slack``. ``"advanced"``: the better of
    basic and advanced composition at that slack; ``"tight"``: the numerical composition of the
    worst ``per_mechanism``-DP pair's PLD (and basic composition, the better). One mechanism
    (``count = 1``) is ``per_mechanism`` itself. No guarantee (``epsilon = inf``) where the delta
    would reach 1.

    Examples:
        >>> e0, d0, headline = per_mechanism_budget(1.0, 1e-6, 64, "advanced")
        >>> same = compose_like_budget(PrivacyGuarantee(e0, d0), 64, PrivacyGuarantee(e0, d0), headline.delta, "advanced")
        >>> bool(abs(same.epsilon - headline.epsilon) < 1e-12), bool(abs(same.delta - headline.delta) < 1e-18)
        (True, True)
        >>> worse = compose_like_budget(PrivacyGuarantee(2 * e0, d0), 64, PrivacyGuarantee(e0, d0), headline.delta, "advanced")
        >>> worse.epsilon > headline.epsilon
        True
    """
    owner = "compose_like_budget"
    count = check_integer(count, "count", owner, low=1)
    composition = check_choice(composition, "composition", owner, COMPOSITIONS)
    if count == 1:
        return per_mechanism
    slack = max(0.0, budget_delta - count * calibrated.delta)
    delta = count * per_mechanism.delta + slack
    if not (math.isfinite(per_mechanism.epsilon) and delta < 1.0):
        return PrivacyGuarantee(math.inf, min(delta, 1 - 1e-16), per_mechanism.neighbouring)
    epsilon = count * per_mechanism.epsilon
    if composition == "advanced" and slack > 0:
        epsilon = min(epsilon, advanced_composition_epsilon(per_mechanism.epsilon, count, slack))
    elif composition == "tight":
        epsilon = min(epsilon, PLDPair.from_guarantee(per_mechanism).self_compose(count).epsilon(delta))
    return PrivacyGuarantee(epsilon, delta, per_mechanism.neighbouring)


# --------------------------------------------------------------------------- high-dimensional clipped sum
@dataclass(frozen=True, kw_only=True)
class ClippedVectorSum(ShuffleProtocol):
    """One-round shuffled sum of vectors in the ``l2`` ball of radius ``R`` with per-coordinate clipping.

    Section 6 of Dong et al. (CCS 2024).

    Each user rotates its vector by the public ``H = (1/sqrt d') Hadamard diag(signs)`` (``d'`` the
    dimension padded to a power of two), randomly rounds ``|Hx| U / R`` to integers in ``{0..U}``
    (``|(Hx)_k| <= ||x|| <= R``), and feeds the positive parts and the negative parts of its
    ``d'`` coordinates to ``2 d'`` columns of the one-round clipped sum ``coordinate``. The
    analyzer takes positive minus negative estimates, times ``R/U``, and rotates back.

    Users may come in chunks (`run` on a stream, `run_streamed`, `privsum.distributed.run`):
    each chunk's `partial_view` is `ClippedSum.partial_view` of its rotated columns, so memory is
    bounded by one chunk and the law is that of one run.

    Args:
        n_users: number of users (fewer warn; more as in `ClippedSum`).
        dimension: ``d``.
        radius: ``R``: inputs must have ``||x_i||_2 <= R`` (larger raises).
        coordinate: the `ClippedSum` run on every (coordinate, sign), domain ``U``.
        seed: public seed of the rotation's signs.
        headline: the composed guarantee over ``d'`` coordinates (from `from_privacy`).
        composition: how ``headline`` was obtained (``"advanced"`` or ``"tight"``).

    Privacy:
        Trusted shuffler; replace-one, or zero-out (a user's vector replaced by the zero vector,
        whose rotation is zero) as ``coordinate.neighbouring`` states. For one coordinate, the
        positive and negative columns are ``2 (log2 U + 1)`` instances on disjoint parts of the
        data (a coordinate's value lies in one sub-domain of one sign); a replace-one change
        touches at most two of them and a zero-out change one, so a coordinate costs what one
        `ClippedSum` under that relation costs; a user's change touches every coordinate, composed
        over ``d'`` by advanced composition or numerically (`per_mechanism_budget`). The rotation
        is public.
        Fewer participants than ``n_users``: a warning, and `event_for_participants` composes the
        coordinate's achieved guarantee over ``d'`` as the headline was (`compose_like_budget`).

    Utility:
        Per rotated coordinate the 1-D clipped sum error ``O(tau_k log(log U / beta) / epsilon0)``
        with ``tau_k ~ max_i |(Hx_i)_k| = O(max_i ||x_i|| sqrt(log(n d)/d))`` w.h.p.; the rotation
        back preserves the ``l2`` error. Rounding adds ``(R/U) sqrt(n)/2`` per coordinate at most.

    References:
        Dong, Luo, Fanti, Shi & Yi, CCS 2024 (Dong et al. (CCS 2024)), section 6; Ailon & Chazelle 2009 (rotation).

    Examples:
        >>> protocol = ClippedVectorSum.from_privacy(epsilon=4.0, delta=1e-6, n_users=500, dimension=6, radius=1.0, levels=2**8)
        >>> x = np.random.default_rng(0).normal(size=(500, 6)) * 0.1
        >>> x /= np.maximum(1.0, np.linalg.norm(x, axis=1, keepdims=True))
        >>> estimate = protocol.run(x, rng=1)
        >>> estimate.shape, bool(np.linalg.norm(estimate - x.sum(axis=0)) < 40)
        ((6,), True)
    """

    streams_chunks: ClassVar[bool] = True

    n_users: int
    dimension: int
    radius: float
    coordinate: ClippedSum
    headline: PrivacyGuarantee
    seed: int = 0
    composition: str = "advanced"

    def __post_init__(self) -> None:
        owner = type(self).__name__
        n_users = check_integer(self.n_users, "n_users", owner, low=2)
        check_integer(self.dimension, "dimension", owner, low=1)
        check_real(self.radius, "radius", owner, low=0.0, low_open=True)
        if not isinstance(self.coordinate, ClippedSum) or self.coordinate.n_users != n_users or self.coordinate.resolution:
            raise invalid("coordinate", owner, f"an integer-input ClippedSum for n_users={n_users}", self.coordinate)
        if not isinstance(self.headline, PrivacyGuarantee) or self.headline.neighbouring != self.coordinate.neighbouring:
            raise invalid("headline", owner, f"a PrivacyGuarantee under {self.coordinate.neighbouring.value!r}", self.headline)
        check_integer(self.seed, "seed", owner, low=0, high=2**63 - 1)
        count = next_power_of_two(check_integer(self.dimension, "dimension", owner, low=1))
        coordinate_pld = GuaranteeEvent(self.coordinate.guarantee).pld
        if not composition_backs(self.coordinate.guarantee, count, self.headline, lambda: coordinate_pld().self_compose(count)):
            raise invalid(
                "headline", owner, f"backed by composing the coordinate's guarantee over {count} coordinates", self.headline
            )
        check_choice(self.composition, "composition", owner, COMPOSITIONS)

    @classmethod
    def from_privacy(
        cls,
        *,
        epsilon: float,
        delta: float,
        n_users: int,
        dimension: int,
        radius: float,
        calibration: str = "analytic",
        levels: int = 2**16,
        seed: int = 0,
        failure_probability: float = 0.1,
        method: str = "auto",
        neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
    ) -> ClippedVectorSum:
        """Per-coordinate budget from composing over ``d'`` coordinates; ``beta`` split over the ``2 d'`` thresholds.

        Args:
            epsilon: target epsilon under ``neighbouring``.
            delta: target delta in ``(0, 1)``.
            n_users: number of users.
            dimension: ``d``.
            radius: ``R``.
            calibration: ``"analytic"`` (advanced composition) or ``"tight"`` (numerical PLD composition).
            levels: ``U``, the integer grid of one coordinate's magnitude (a power of two).
            seed: public rotation seed.
            failure_probability: ``beta`` for all thresholds together.
            method: instance choice, see `ClippedSum.from_privacy`.
            neighbouring: ``"replace-one"`` or ``"zero-out"`` (see the class).
        """
        owner = f"{cls.__name__}.from_privacy"
        neighbouring = Neighbouring.parse(neighbouring, owner, CLIPPED_RELATIONS)
        calibration = check_choice(calibration, "calibration", owner, ("analytic", "tight"))
        dimension = check_integer(dimension, "dimension", owner, low=1)
        failure_probability = check_probability(failure_probability, "failure_probability", owner, allow_zero=False)
        padded = next_power_of_two(dimension)
        composition = "advanced" if calibration == "analytic" else "tight"
        epsilon = check_epsilon(epsilon, owner)
        delta = check_delta(delta, owner, allow_zero=False)
        renamed = {"domain": "levels", "n_users": "n_users", "method": "method", "failure_probability": "failure_probability"}
        with refusals_as(owner, renamed, derived_from=("epsilon", epsilon)):
            epsilon0, delta0, headline = per_mechanism_budget(epsilon, delta, padded, composition)
            coordinate = ClippedSum.from_privacy(
                epsilon=epsilon0,
                delta=delta0,
                n_users=n_users,
                domain=levels,
                failure_probability=failure_probability / (2 * padded),
                method=method,
                neighbouring=neighbouring,
            )
        return cls(
            n_users=n_users,
            dimension=dimension,
            radius=radius,
            coordinate=coordinate,
            headline=headline.under(neighbouring),
            seed=seed,
            composition=composition,
        )

    @cached_property
    def rotation(self) -> RandomizedHadamard:
        """The public rotation."""
        return RandomizedHadamard(dimension=self.dimension, seed=self.seed)

    @property
    def padded_dimension(self) -> int:
        """``d'``."""
        return self.rotation.padded_dimension

    @property
    def event(self) -> CompositionEvent:
        """``d'`` coordinates, each one clipped sum's event (its two signs share it), with the composed headline."""
        per_coordinate = GuaranteeEvent(self.coordinate.guarantee)
        return CompositionEvent(per_coordinate, self.padded_dimension, self.headline)

    @property
    def alphabet(self) -> range:  # type: ignore[override]
        return self.coordinate.alphabet

    @property
    def expected_messages_per_user(self) -> float:
        """``2 d'`` columns of noise plus, per coordinate, one sign's data overhead (worst case)."""
        noise = sum(_noise_messages(p) for p in self.coordinate.instances)
        data = max(_data_messages(p) for p in self.coordinate.instances)
        return self.padded_dimension * (2 * noise + data)

    def bits_per_message(self, n_instances: int = 1) -> int:
        n_instances = check_integer(n_instances, "n_instances", type(self).__name__, low=1)
        return self.coordinate.bits_per_message(2 * self.padded_dimension * n_instances)

    @property
    def step(self) -> float:
        """``R / U``: what one integer step of a rotated coordinate is worth."""
        return self.radius / self.coordinate.domain

    def _signed_columns(self, x: Any, rng: np.random.Generator) -> np.ndarray:
        owner = type(self).__name__
        array = check_array(x, "x", owner, ndim=2).astype(float)
        if array.shape[1] != self.dimension:
            raise invalid("x", owner, f"an array with {self.dimension} columns", f"shape {array.shape}")
        check_has_users(array, owner)
        norms = np.linalg.norm(array, axis=1)
        if norms.size and not norms.max() <= self.radius * (1 + 1e-12):
            raise invalid("x", owner, f"rows with l2 norm at most radius={self.radius}", f"a row of norm {norms.max()!r}")
        rotated = self.rotation.rotate(array)
        magnitude = np.minimum(randomized_round(np.abs(rotated) / self.step, rng), self.coordinate.domain)
        return np.concatenate([np.where(rotated > 0, magnitude, 0), np.where(rotated < 0, magnitude, 0)], axis=1)

    def _decode(self, column_estimates: np.ndarray) -> np.ndarray:
        d = self.padded_dimension
        rotated = self.step * (column_estimates[:d] - column_estimates[d:])
        return self.rotation.unrotate(rotated[None, :])[0]

    # ----------------------------------------------------------------- participation
    def check_participants(self, n_participants: int) -> None:
        """As `ClippedSum.check_participants` (the coordinate sums' instances decide)."""
        check_instance_participants(n_participants, self.n_users, self.coordinate.instances, type(self).__name__)

    def event_for_participants(self, n_participants: int) -> PrivacyEvent:
        """The guarantee achieved when ``n_participants`` users take part (`event` for ``n_users``, or more without BBGN20).

        Fewer: one coordinate's `ClippedSum.event_for_participants`, composed over ``d'``
        coordinates as the headline was (`compose_like_budget`: the same composition and slack).

        Raises:
            InvalidParameterError: more than ``n_users`` participants with a BBGN20 instance.
        """
        owner = type(self).__name__
        n_participants = check_participant_count(n_participants, self.n_users, self.coordinate.instances, owner)
        if n_participants >= self.n_users:
            return self.event
        per_coordinate = self.coordinate.event_for_participants(n_participants).guarantee
        count = self.padded_dimension
        headline = compose_like_budget(per_coordinate, count, self.coordinate.guarantee, self.headline.delta, self.composition)
        return CompositionEvent(GuaranteeEvent(per_coordinate), count, headline)

    # ----------------------------------------------------------------- roles
    def randomize(self, x: Any, *, rng: RNGLike = None) -> MessageBatch:
        generator = as_generator(rng, type(self).__name__)
        columns = self._signed_columns(x, generator)
        self.check_participants(columns.shape[0])
        return self.coordinate.messages_of(columns, generator)

    def sample_view(self, x: Any, *, rng: RNGLike = None) -> SparseMessageHistogram:  # type: ignore[override]
        generator = as_generator(rng, type(self).__name__)
        columns = self._signed_columns(x, generator)
        self.check_participants(columns.shape[0])
        return self.coordinate.message_view_of(columns, generator, "fast")

    def partial_view(self, chunk: Any, *, rng: RNGLike = None, path: str = "fast") -> PartialView:
        """One chunk of users' share of the view (as `ClippedSum.partial_view`, on their rotated, rounded columns)."""
        owner = type(self).__name__
        path = check_choice(path, "path", owner, EXECUTION_PATHS)
        generator = as_generator(rng, owner)
        return self.coordinate.partial_of(self._signed_columns(chunk, generator), generator, path)

    def view(self, messages: SparseMessageHistogram | MessageBatch) -> SparseMessageHistogram:  # type: ignore[override]
        return self.coordinate.view(messages)

    def analyze(self, view: SparseMessageHistogram | MessageBatch | NoisySums) -> np.ndarray:  # type: ignore[override]
        """The estimated sum of the vectors, shape ``(d,)``."""
        return self._decode(self.coordinate.analyze(view))

    def run(self, x: Any, *, rng: RNGLike = None, path: str = "fast") -> np.ndarray:
        """As `ClippedSum.run`: ``"fast"`` samples the instances' noisy totals exactly in law; chunks of users stream."""
        owner = type(self).__name__
        path = check_choice(path, "path", owner, EXECUTION_PATHS)
        generator = as_generator(rng, owner)
        if is_chunk_stream(x):
            return self.run_streamed(x, rng=generator, path=path)
        if path == "faithful":
            return super().run(x, rng=generator, path="faithful")
        columns = self._signed_columns(x, generator)
        self.check_participants(columns.shape[0])
        return self.analyze(self.coordinate.noisy_sums_of(columns, generator))


# --------------------------------------------------------------------------- sparse vector aggregation
@dataclass(frozen=True, kw_only=True)
class SparseVectorAggregation(ShuffleProtocol):
    """One-round frequency estimation under user-level DP for binary vectors (section 7 of Dong et al. (CCS 2024)).

    Users are partitioned by sparsity ``s_i = ||x_i||_0`` into levels ``0: s <= 1`` and
    ``j: 2^{j-1} < s <= 2^j`` (``j <= ceil(log2 d)``). Every user takes part in a count instance
    per level (input 1 at its own level) and in ``d`` coordinate instances per level (its vector at
    its own level, zeros elsewhere); all instances count bits. The analyzer lets ``j*`` be the last
    level whose noisy user count reaches ``T_j`` and returns the per-coordinate sums over levels
    ``<= j*``. ``T_j`` is the larger of (a) the count noise's one-sided tail at ``beta/(L+1)`` (an
    empty level passes with at most that probability) and (b) the level's ``l_inf`` coordinate-noise
    bound at ``beta/(L+1)`` (a level is kept only if it holds at least as many users as the noise
    it adds to a coordinate; the paper's exact rule was lost in extraction).

    Users may come in chunks (`run` on a stream, `run_streamed`, `privsum.distributed.run`),
    memory bounded by one chunk, as in `ClippedSum`.

    Args:
        n_users: number of users (fewer warn; more as in `ClippedSum`).
        dimension: ``d``.
        count: the count protocol, ``L + 1`` instances of domain 1.
        levels: per level ``j``, the coordinate-count protocol (domain 1, ``d`` instances).
        headline: the guarantee (from `from_privacy`).
        failure_probability: ``beta``.
        composition: how the per-level coordinate budget was split (``"advanced"`` or ``"tight"``).

    Privacy:
        Replace-one, trusted shuffler. A user at level ``j`` touches the count instance of level
        ``j`` and at most ``2^j`` coordinate instances of level ``j``; level ``j``'s coordinate
        instances are calibrated so that ``2^j`` of them compose to the level budget. A change
        moves a user between at most two levels (or, within one level, touches at most
        ``2^{j+1}`` coordinates: two blocks of ``2^j``), so the headline is twice a level's
        (count + coordinate block) guarantee: `from_privacy` gives each level ``(epsilon/2,
        delta/2)``. Instance guarantees as in `ClippedSum`. Fewer participants than ``n_users``:
        a warning, and `event_for_participants` recomposes the instances' achieved guarantees.
        Replace-one only: the empty set belongs to level 0 and is counted there, so even zero-out
        touches two levels and would gain nothing.

    Utility:
        ``l_inf`` error ``O(tau log(d log d / beta) / epsilon)``-type with ``tau`` the sparsity
        level kept, plus the bias of the dropped levels (Theorem 7.1 of Dong et al. (CCS 2024)).

    Examples:
        >>> protocol = SparseVectorAggregation.from_privacy(epsilon=4.0, delta=1e-6, n_users=2_000, dimension=16)
        >>> x = np.zeros((2_000, 16), dtype=int)
        >>> x[:, 0] = 1
        >>> x[::2, 3] = 1
        >>> estimate = protocol.run(x, rng=0)
        >>> bool(np.abs(estimate - x.sum(axis=0)).max() < 200)
        True
    """

    streams_chunks: ClassVar[bool] = True

    n_users: int
    dimension: int
    count: InstanceProtocol
    levels: tuple[InstanceProtocol, ...]
    headline: PrivacyGuarantee
    failure_probability: float = 0.1
    composition: str = "advanced"

    def __post_init__(self) -> None:
        owner = type(self).__name__
        n_users = check_integer(self.n_users, "n_users", owner, low=2)
        dimension = check_integer(self.dimension, "dimension", owner, low=1)
        expected_levels = max(1, dimension - 1).bit_length() + 1
        levels = tuple(self.levels)
        if len(levels) != expected_levels:
            raise invalid("levels", owner, f"{expected_levels} protocols (ceil(log2 d) + 1)", f"{len(levels)} protocols")
        for protocol in (self.count, *levels):
            if not isinstance(protocol, (SparseMultiMessageSum, CorrelatedNoiseSum)):
                raise invalid("levels", owner, "CorrelatedNoiseSum or SparseMultiMessageSum protocols", type(protocol).__name__)
            if protocol.domain != 1 or protocol.n_users != n_users or protocol.clip:
                raise invalid("levels", owner, f"bit-count protocols (domain 1) for n_users={n_users}, clip=False", protocol)
        object.__setattr__(self, "levels", levels)
        if not isinstance(self.headline, PrivacyGuarantee):
            raise invalid("headline", owner, "a PrivacyGuarantee", self.headline)
        if not self._headline_is_backed(dimension):
            raise invalid("headline", owner, "backed by the count and level protocols' guarantees", self.headline)
        check_probability(self.failure_probability, "failure_probability", owner, allow_zero=False)
        check_choice(self.composition, "composition", owner, COMPOSITIONS)

    @classmethod
    def from_privacy(
        cls,
        *,
        epsilon: float,
        delta: float,
        n_users: int,
        dimension: int,
        calibration: str = "analytic",
        failure_probability: float = 0.1,
        count_fraction: float = 0.2,
        method: str = "auto",
    ) -> SparseVectorAggregation:
        """Each level gets ``(epsilon/2, delta/2)``: ``count_fraction`` for the count, the rest over ``2^j`` coordinates.

        Args:
            epsilon: target epsilon (replace-one).
            delta: target delta in ``(0, 1)``.
            n_users: number of users.
            dimension: ``d``.
            calibration: ``"analytic"`` (advanced composition per level) or ``"tight"`` (numerical).
            failure_probability: ``beta``.
            count_fraction: share of a level's budget spent on its user count.
            method: instance choice, see `ClippedSum.from_privacy`.
        """
        owner = f"{cls.__name__}.from_privacy"
        epsilon = check_epsilon(epsilon, owner)
        delta = check_delta(delta, owner, allow_zero=False)
        dimension = check_integer(dimension, "dimension", owner, low=1)
        calibration = check_choice(calibration, "calibration", owner, ("analytic", "tight"))
        count_fraction = check_real(count_fraction, "count_fraction", owner, low=0.0, high=1.0, low_open=True, high_open=True)
        method = check_choice(method, "method", owner, INSTANCE_METHODS)
        n_users = check_integer(n_users, "n_users", owner, low=2)
        composition = "advanced" if calibration == "analytic" else "tight"
        renamed = {name: name for name in ("n_users", "method", "dimension", "failure_probability")}
        with refusals_as(owner, renamed, derived_from=("epsilon", epsilon)):
            return cls._calibrated(epsilon, delta, n_users, dimension, composition, count_fraction, method, failure_probability)

    @classmethod
    def _calibrated(
        cls,
        epsilon: float,
        delta: float,
        n_users: int,
        dimension: int,
        composition: str,
        count_fraction: float,
        method: str,
        failure_probability: float,
    ) -> SparseVectorAggregation:
        level_epsilon, level_delta = epsilon / 2, delta / 2 * (1 - 1e-9)
        count_epsilon, count_delta = count_fraction * level_epsilon, count_fraction * level_delta
        block_epsilon, block_delta = level_epsilon - count_epsilon, level_delta - count_delta
        margin = 1 - 1e-9  # BBGN20 recomputes its epsilon and delta in floating point (relative error ~1e-12)
        count = choose_instance(
            epsilon=count_epsilon * margin, delta=count_delta * margin, n_users=n_users, domain=1, method=method
        )
        levels, level_guarantees = [], []
        for j in range(max(1, dimension - 1).bit_length() + 1):
            touched = min(2**j, dimension)
            epsilon0, delta0, block = per_mechanism_budget(block_epsilon, block_delta, touched, composition)
            levels.append(
                choose_instance(epsilon=epsilon0 * margin, delta=delta0 * margin, n_users=n_users, domain=1, method=method)
            )
            level_guarantees.append(basic_composition([count.guarantee, block]))
        headline = ParallelEvent(tuple(GuaranteeEvent(g) for g in level_guarantees), parts_per_user=2).guarantee
        return cls(
            n_users=n_users,
            dimension=dimension,
            count=count,
            levels=tuple(levels),
            headline=headline,
            failure_probability=failure_probability,
            composition=composition,
        )

    def _headline_is_backed(self, dimension: int) -> bool:
        """Whether every level (its count and its ``min(2^j, d)`` touched coordinates) fits half the headline.

        A user's change touches two levels (parallel composition, ``parts_per_user=2``); in each,
        the count protocol and the level protocol over the touched coordinates compose basically.
        """
        headline, count = self.headline, self.count.guarantee
        if not headline.is_finite:
            return True
        if not (headline.neighbouring == Neighbouring.REPLACE_ONE and count.is_finite):
            return False
        half = (headline.epsilon / 2.0 - count.epsilon, headline.delta / 2.0 - count.delta)
        if not (half[0] > 0.0 and half[1] >= 0.0):
            return False
        target = PrivacyGuarantee(half[0] * (1.0 + _BACKING_RTOL), min(half[1] * (1.0 + _BACKING_RTOL), 1.0 - 1e-12))
        for j, level in enumerate(self.levels):
            touched = min(2**j, dimension)
            single = level.guarantee
            pld = GuaranteeEvent(single).pld if single.is_finite else None
            if not composition_backs(
                single, touched, target, None if pld is None else lambda p=pld, t=touched: p().self_compose(t)
            ):
                return False
        return True

    @property
    def n_levels(self) -> int:
        """``ceil(log2 d) + 1``."""
        return len(self.levels)

    @property
    def event(self) -> GuaranteeEvent:
        return GuaranteeEvent(self.headline)

    @property
    def alphabet(self) -> range:  # type: ignore[override]
        protocols = (self.count, *self.levels)
        high = max(p.modulus - 1 if isinstance(p, SparseMultiMessageSum) else 1 for p in protocols)
        low = min(0 if isinstance(p, SparseMultiMessageSum) else -1 for p in protocols)
        return range(low, high + 1)

    @property
    def noise_messages_per_user(self) -> float:
        """Expected messages a user sends that carry no data (every instance's noise)."""
        return self.n_levels * _noise_messages(self.count) + self.dimension * sum(_noise_messages(p) for p in self.levels)

    @property
    def expected_messages_per_user(self) -> float:
        """Worst case: noise plus one data message for the count and one per non-zero coordinate (``d``)."""
        data = _data_messages(self.count) + self.dimension * max(_data_messages(p) for p in self.levels)
        return self.noise_messages_per_user + data

    def average_messages_per_user(self, x: Any) -> float:
        """Expected messages per user for these inputs: noise plus data messages proportional to each user's sparsity."""
        values = self._inputs(x)
        level = sub_domain_index(values.sum(axis=1))
        per_user = _data_messages(self.count) + np.array([_data_messages(p) for p in self.levels])[level] * values.sum(axis=1)
        return self.noise_messages_per_user + float(per_user.mean())

    def bits_per_message(self, n_instances: int = 1) -> int:
        n_instances = check_integer(n_instances, "n_instances", type(self).__name__, low=1)
        total = n_instances * self.n_levels * (self.dimension + 1)
        value_bits = max(p.bits_per_message(1) for p in (self.count, *self.levels))
        return (math.ceil(math.log2(total)) if total > 1 else 0) + value_bits

    @cached_property
    def thresholds(self) -> np.ndarray:
        """``T_j`` per level (users): the count's tail and the coordinate-noise bound, the larger."""
        share = self.failure_probability / self.n_levels
        count_tail = _scale(self.count) * upper_tail_threshold(_noise_ratio(self.count), share - _wrap_probability(self.count))
        result = []
        for protocol in self.levels:
            ratio = _noise_ratio(protocol)  # two-sided tail 2 a^t / (1 + a) over d coordinates
            coordinate_bound = _scale(protocol) * upper_tail_threshold(ratio, share / (2 * self.dimension))
            result.append(max(count_tail, coordinate_bound))
        return np.array(result, dtype=float)

    def _inputs(self, x: Any) -> np.ndarray:
        owner = type(self).__name__
        array = check_array(x, "x", owner, ndim=2, low=0, high=1, integer=True).astype(np.int64)
        if array.shape[1] != self.dimension:
            raise invalid("x", owner, f"an array with {self.dimension} columns", f"shape {array.shape}")
        check_has_users(array, owner)
        return array

    def _columns(self, values: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        level = sub_domain_index(values.sum(axis=1))
        counts = (level[:, None] == np.arange(self.n_levels)[None, :]).astype(np.int64)
        return counts, [np.where((level == j)[:, None], values, 0) for j in range(self.n_levels)]

    def _offsets(self) -> list[int]:
        return [self.n_levels + j * self.dimension for j in range(self.n_levels)]

    # ----------------------------------------------------------------- participation
    @property
    def _instances(self) -> tuple[InstanceProtocol, ...]:
        return (self.count, *self.levels)

    def check_participants(self, n_participants: int) -> None:
        """As `ClippedSum.check_participants`: warn when fewer; raise when more and an instance is BBGN20."""
        check_instance_participants(n_participants, self.n_users, self._instances, type(self).__name__)

    def event_for_participants(self, n_participants: int) -> PrivacyEvent:
        """The guarantee achieved when ``n_participants`` users take part (`event` for ``n_users``, or more without BBGN20).

        Fewer: composed as `from_privacy` composed the headline, from the instances' own
        `event_for_participants`: per level, the count's guarantee plus (basic composition) the
        level's coordinate guarantee composed over ``min(2^j, d)`` coordinates with the headline's
        slack (`compose_like_budget`); the levels in parallel, two per change. No guarantee
        (``epsilon = inf``) where a delta would reach 1.

        Raises:
            InvalidParameterError: more than ``n_users`` participants with a BBGN20 instance.
        """
        owner = type(self).__name__
        n_participants = check_participant_count(n_participants, self.n_users, self._instances, owner)
        if n_participants >= self.n_users:
            return self.event
        count = self.count.event_for_participants(n_participants).guarantee
        block_delta = self.headline.delta / 2 - self.count.guarantee.delta  # each level's coordinate budget
        level_events = []
        for j, protocol in enumerate(self.levels):
            achieved = protocol.event_for_participants(n_participants).guarantee
            touched = min(2**j, self.dimension)
            block = compose_like_budget(achieved, touched, protocol.guarantee, block_delta, self.composition)
            level_events.append(GuaranteeEvent(_basic_or_none(count, block)))
        return GuaranteeEvent(parallel_event_or_none(tuple(level_events), parts_per_user=2).guarantee)

    # ----------------------------------------------------------------- roles
    def _pairs(self, values: np.ndarray) -> list[tuple[InstanceProtocol, np.ndarray]]:
        counts, columns = self._columns(values)
        return [(self.count, counts), *zip(self.levels, columns, strict=True)]

    @property
    def _n_instances(self) -> int:
        return self.n_levels * (self.dimension + 1)

    def _messages_of(self, values: np.ndarray, rng: np.random.Generator) -> MessageBatch:
        batches = instance_messages(self._pairs(values), rng)
        offsets = [0, *self._offsets()]
        return MessageBatch(
            np.concatenate([b.instances + o for b, o in zip(batches, offsets, strict=True)]),
            np.concatenate([b.values for b in batches]),
            n_instances=self._n_instances,
        )

    def _noisy_sums_of(self, values: np.ndarray, rng: np.random.Generator) -> NoisySums:
        """`NoisySums` of shape ``(L + 1, 1 + d)``: column 0 the level counts, then the coordinate counts per level."""
        pairs = self._pairs(values)
        level_counts = noisy_total(*pairs[0], rng)
        coordinates = np.stack([noisy_total(p, c, rng) for p, c in pairs[1:]])
        return NoisySums(np.concatenate([level_counts[:, None], coordinates], axis=1))

    def randomize(self, x: Any, *, rng: RNGLike = None) -> MessageBatch:
        generator = as_generator(rng, type(self).__name__)
        values = self._inputs(x)
        self.check_participants(values.shape[0])
        return self._messages_of(values, generator)

    def partial_view(self, chunk: Any, *, rng: RNGLike = None, path: str = "fast") -> PartialView:
        """One chunk of users' share of the view: ``"fast"``, their `NoisySums`; ``"faithful"``, their messages' sparse view."""
        owner = type(self).__name__
        path = check_choice(path, "path", owner, EXECUTION_PATHS)
        generator = as_generator(rng, owner)
        values = self._inputs(chunk)
        if path == "faithful":
            offsets = [0, *self._offsets()]
            view = instance_views(self._pairs(values), generator, path, self._n_instances, lambda i, local: local + offsets[i])
        else:
            view = self._noisy_sums_of(values, generator)
        return PartialView(view, values.shape[0])

    def view(self, messages: SparseMessageHistogram | MessageBatch) -> SparseMessageHistogram:  # type: ignore[override]
        owner = type(self).__name__
        if isinstance(messages, MessageBatch):
            messages = SparseMessageHistogram.from_messages(messages)
        if not isinstance(messages, SparseMessageHistogram):
            raise invalid("view", owner, "a SparseMessageHistogram or MessageBatch", type(messages).__name__)
        if messages.n_instances != self.n_levels * (self.dimension + 1):
            raise invalid("view", owner, f"{self.n_levels * (self.dimension + 1)} instances", messages.n_instances)
        return messages

    def sample_view(self, x: Any, *, rng: RNGLike = None) -> SparseMessageHistogram:  # type: ignore[override]
        """The faithful messages counted directly (no permutation)."""
        return self.view(self.randomize(x, rng=rng))

    def _part(self, sparse: SparseMessageHistogram, protocol: InstanceProtocol, start: int, size: int) -> np.ndarray:
        mine = (sparse.instances >= start) & (sparse.instances < start + size)
        local, values, counts = sparse.instances[mine] - start, sparse.values[mine], sparse.counts[mine]
        if isinstance(protocol, SparseMultiMessageSum):
            return protocol.analyze(SparseMessageHistogram(local, values, counts, size))
        bad = (values == 0) | (np.abs(values) > protocol.levels)
        if np.any(bad):
            raise invalid("view", type(self).__name__, "values its instances can send", int(values[bad][0]))
        width = 2 * protocol.levels + 1
        dense = np.bincount(local * width + values + protocol.levels, weights=counts, minlength=size * width)
        dense = np.delete(dense.reshape(size, width).astype(np.int64), protocol.levels, axis=1)
        return protocol.analyze(MessageHistogram(dense, protocol.alphabet))

    def combine(self, level_counts: np.ndarray, coordinate_counts: np.ndarray) -> tuple[np.ndarray, int]:
        """The per-coordinate estimate and ``j*`` from the noisy level counts ``(L+1,)`` and coordinate counts ``(L+1, d)``."""
        passed = np.asarray(level_counts) >= self.thresholds
        last = int(np.flatnonzero(passed)[-1]) if passed.any() else 0
        return np.asarray(coordinate_counts)[: last + 1].sum(axis=0), last

    def analyze(self, view: SparseMessageHistogram | MessageBatch | NoisySums) -> np.ndarray:  # type: ignore[override]
        """Estimated per-coordinate counts, shape ``(d,)``."""
        if isinstance(view, NoisySums):
            if view.totals.shape != (self.n_levels, 1 + self.dimension):
                raise invalid(
                    "view", type(self).__name__, f"NoisySums of shape ({self.n_levels}, {1 + self.dimension})", view.totals.shape
                )
            level_counts = decode_total(self.count, view.totals[:, 0])
            coordinate_counts = np.stack([decode_total(p, view.totals[j, 1:]) for j, p in enumerate(self.levels)])
            return self.combine(level_counts, coordinate_counts)[0]
        sparse = self.view(view)
        level_counts = self._part(sparse, self.count, 0, self.n_levels)
        coordinate_counts = np.stack(
            [self._part(sparse, p, o, self.dimension) for p, o in zip(self.levels, self._offsets(), strict=True)]
        )
        return self.combine(level_counts, coordinate_counts)[0]

    def run(self, x: Any, *, rng: RNGLike = None, path: str = "fast") -> np.ndarray:
        """As `ClippedSum.run`: ``"fast"`` samples every instance's noisy total exactly in law; chunks of users stream."""
        owner = type(self).__name__
        path = check_choice(path, "path", owner, EXECUTION_PATHS)
        generator = as_generator(rng, owner)
        if is_chunk_stream(x):
            return self.run_streamed(x, rng=generator, path=path)
        if path == "faithful":
            return super().run(x, rng=generator, path="faithful")
        values = self._inputs(x)
        self.check_participants(values.shape[0])
        return self.analyze(self._noisy_sums_of(values, generator))


def _basic_or_none(first: PrivacyGuarantee, second: PrivacyGuarantee) -> PrivacyGuarantee:
    """`basic_composition` of two guarantees, or no guarantee (``epsilon = inf``) where the delta would reach 1."""
    if not first.delta + second.delta < 1.0:
        return PrivacyGuarantee(math.inf, 1 - 1e-16, first.neighbouring)
    return basic_composition([first, second])


# --------------------------------------------------------------------------- central references
def _opendp_gaussian(values: np.ndarray, sensitivity: float, epsilon: float, delta: float) -> np.ndarray:
    """``values`` plus OpenDP's (discretised, exactly sampled) Gaussian noise for ``(epsilon, delta)`` at l2 ``sensitivity``."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T="f64", nan=False)), dp.l2_distance(T="f64")

    def chain(scale: float) -> Any:
        return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(dp.m.make_gaussian(*space, scale=scale)), delta)

    scale = dp.binary_search_param(chain, d_in=float(sensitivity), d_out=(epsilon, delta), T=float)
    measurement = chain(scale)
    achieved = measurement.map(float(sensitivity))
    if not (achieved[0] <= epsilon * (1 + 1e-9) and achieved[1] <= delta * (1 + 1e-9)):
        raise invalid("epsilon", "central Gaussian", "met by OpenDP's privacy map", achieved)
    return np.asarray(measurement([float(v) for v in np.ravel(values)]), dtype=float)


@dataclass(frozen=True, kw_only=True)
class CentralClippedVectorSum:
    """Central-DP reference: clip every vector to ``l2`` norm ``tau``, sum, add Gaussian noise (OpenDP) for ``(epsilon, delta)``.

    Args:
        epsilon: target epsilon.
        delta: target delta.
        clipping_bound: ``tau``, or ``None`` for the **oracle** ``tau = max_i ||x_i||`` (not private).

    Privacy:
        Replace-one, central: ``l2`` sensitivity ``2 tau``; OpenDP's Gaussian (zCDP, converted to
        ``(epsilon, delta)`` and checked by its privacy map). The oracle ``tau`` reads the data: no
        guarantee (`guarantee` has ``epsilon = inf``).

    Examples:
        >>> central = CentralClippedVectorSum(epsilon=1.0, delta=1e-6, clipping_bound=1.0)
        >>> central.release(np.ones((10, 3)) * 0.1).shape
        (3,)
    """

    epsilon: float
    delta: float
    clipping_bound: float | None = None

    def __post_init__(self) -> None:
        owner = type(self).__name__
        check_epsilon(self.epsilon, owner)
        check_delta(self.delta, owner, allow_zero=False)
        if self.clipping_bound is not None:
            check_real(self.clipping_bound, "clipping_bound", owner, low=0.0, low_open=True)

    @property
    def guarantee(self) -> PrivacyGuarantee:
        return PrivacyGuarantee(self.epsilon if self.clipping_bound is not None else math.inf, self.delta)

    def release(self, x: Any) -> np.ndarray:
        """The noisy clipped sum of the rows of ``x``."""
        array = check_array(x, "x", type(self).__name__, ndim=2).astype(float)
        norms = np.linalg.norm(array, axis=1)
        bound = float(norms.max()) if self.clipping_bound is None else self.clipping_bound
        bound = max(bound, 1e-12)
        clipped = array * np.minimum(1.0, bound / np.maximum(norms, 1e-300))[:, None]
        return _opendp_gaussian(clipped.sum(axis=0), 2 * bound, self.epsilon, self.delta)


@dataclass(frozen=True, kw_only=True)
class CentralSparseAggregation:
    """Central-DP reference for frequency estimation: keep each user's first ``tau`` items, count, add Gaussian noise (OpenDP).

    Args:
        epsilon: target epsilon.
        delta: target delta.
        sparsity_bound: ``tau``, or ``None`` for the **oracle** ``tau = max_i ||x_i||_0`` (not private).

    Privacy:
        Replace-one, central: two users' clipped vectors differ in at most ``2 tau`` coordinates by
        one, so the ``l2`` sensitivity is ``sqrt(2 tau)``. The oracle reads the data: no guarantee.

    Examples:
        >>> central = CentralSparseAggregation(epsilon=1.0, delta=1e-6, sparsity_bound=2)
        >>> central.release(np.eye(4, dtype=int)).shape
        (4,)
    """

    epsilon: float
    delta: float
    sparsity_bound: int | None = None

    def __post_init__(self) -> None:
        owner = type(self).__name__
        check_epsilon(self.epsilon, owner)
        check_delta(self.delta, owner, allow_zero=False)
        if self.sparsity_bound is not None:
            check_integer(self.sparsity_bound, "sparsity_bound", owner, low=1)

    @property
    def guarantee(self) -> PrivacyGuarantee:
        return PrivacyGuarantee(self.epsilon if self.sparsity_bound is not None else math.inf, self.delta)

    def release(self, x: Any) -> np.ndarray:
        """Noisy per-coordinate counts of the binary rows of ``x``."""
        values = check_array(x, "x", type(self).__name__, ndim=2, low=0, high=1, integer=True).astype(np.int64)
        bound = int(values.sum(axis=1).max()) if self.sparsity_bound is None else self.sparsity_bound
        bound = max(bound, 1)
        kept = values * (np.cumsum(values, axis=1) <= bound)
        return _opendp_gaussian(kept.sum(axis=0), math.sqrt(2 * bound), self.epsilon, self.delta)
