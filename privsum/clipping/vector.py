"""The high-dimensional clipped sum in one shuffle round (section 6 of Dong et al. (CCS 2024)).

`ClippedVectorSum`: public random rotation (randomized Walsh-Hadamard, padded to a power of two),
each rotated coordinate split into its positive and negative parts, the one-round `ClippedSum`
per (coordinate, sign), composed over coordinates (advanced composition, or numerically), and
the sums rotated back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from privsum import _validation as checks
from privsum._random import RNGLike, as_generator
from privsum._user_inputs import check_has_users, randomized_round
from privsum.accounting import GuaranteeEvent, Neighbouring, PrivacyEvent, PrivacyGuarantee
from privsum.accounting.budget import (
    COMPOSITIONS,
    ComposedEventWithHeadline,
    compose_like_budget,
    composition_backs,
    per_mechanism_budget,
)
from privsum.clipping import instances as shared
from privsum.clipping._parties import ClippedVectorPartyHooks
from privsum.clipping.calibration import composition_for
from privsum.clipping.instances import CLIPPED_RELATIONS, NoisySums
from privsum.clipping.scalar import ClippedSum
from privsum.lsq.hadamard import RandomizedHadamard, next_power_of_two
from privsum.shuffle import MessageBatch, ShuffleProtocol
from privsum.shuffle.robustness import check_malicious
from privsum.shuffle.sparse import SparseMessageHistogram
from privsum.shuffle.streaming import PartialView

__all__ = ["ClippedVectorSum"]


# --------------------------------------------------------------------------- high-dimensional clipped sum
@dataclass(frozen=True, kw_only=True)
class ClippedVectorSum(ClippedVectorPartyHooks, shared.InstanceParticipation, ShuffleProtocol):
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

    Robustness:
        Each rotated coordinate is a positive minus a negative `ClippedSum` column:
        `manipulation_bound` is ``2 sqrt(d') (R/U)`` times one column's bound, for every output
        coordinate (and for the L2 norm of the shift).

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
        n_users = checks.check_integer(self.n_users, "n_users", owner, low=2)
        checks.check_integer(self.dimension, "dimension", owner, low=1)
        checks.check_real(self.radius, "radius", owner, low=0.0, low_open=True)
        if not isinstance(self.coordinate, ClippedSum) or self.coordinate.n_users != n_users or self.coordinate.resolution:
            raise checks.invalid("coordinate", owner, f"an integer-input ClippedSum for n_users={n_users}", self.coordinate)
        if not isinstance(self.headline, PrivacyGuarantee) or self.headline.neighbouring != self.coordinate.neighbouring:
            raise checks.invalid(
                "headline", owner, f"a PrivacyGuarantee under {self.coordinate.neighbouring.value!r}", self.headline
            )
        checks.check_integer(self.seed, "seed", owner, low=0, high=2**63 - 1)
        count = next_power_of_two(checks.check_integer(self.dimension, "dimension", owner, low=1))
        coordinate_pld = GuaranteeEvent(self.coordinate.guarantee).pld
        if not composition_backs(self.coordinate.guarantee, count, self.headline, lambda: coordinate_pld().self_compose(count)):
            raise checks.invalid(
                "headline", owner, f"backed by composing the coordinate's guarantee over {count} coordinates", self.headline
            )
        checks.check_choice(self.composition, "composition", owner, COMPOSITIONS)

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
        composition = composition_for(calibration, owner)
        dimension = checks.check_integer(dimension, "dimension", owner, low=1)
        failure_probability = checks.check_probability(failure_probability, "failure_probability", owner, allow_zero=False)
        padded = next_power_of_two(dimension)
        epsilon = checks.check_epsilon(epsilon, owner)
        delta = checks.check_delta(delta, owner, allow_zero=False)
        renamed = {"domain": "levels", "n_users": "n_users", "method": "method", "failure_probability": "failure_probability"}
        with checks.refusals_as(owner, renamed, derived_from=("epsilon", epsilon)):
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
    def event(self) -> ComposedEventWithHeadline:
        """``d'`` coordinates, each one clipped sum's event (its two signs share it), with the composed headline."""
        per_coordinate = GuaranteeEvent(self.coordinate.guarantee)
        return ComposedEventWithHeadline(per_coordinate, self.padded_dimension, self.headline)

    @property
    def alphabet(self) -> range:  # type: ignore[override]
        return self.coordinate.alphabet

    @property
    def expected_messages_per_user(self) -> float:
        """``2 d'`` columns of noise plus, per coordinate, one sign's data overhead (worst case)."""
        noise = sum(shared.noise_messages(p) for p in self.coordinate.instances)
        data = max(shared.data_messages(p) for p in self.coordinate.instances)
        return self.padded_dimension * (2 * noise + data)

    def bits_per_message(self, n_instances: int = 1) -> int:
        n_instances = checks.check_integer(n_instances, "n_instances", type(self).__name__, low=1)
        return self.coordinate.bits_per_message(2 * self.padded_dimension * n_instances)

    @property
    def step(self) -> float:
        """``R / U``: what one integer step of a rotated coordinate is worth."""
        return self.radius / self.coordinate.domain

    def _signed_columns(self, x: Any, rng: np.random.Generator) -> np.ndarray:
        owner = type(self).__name__
        array = checks.check_array(x, "x", owner, ndim=2).astype(float)
        if array.shape[1] != self.dimension:
            raise checks.invalid("x", owner, f"an array with {self.dimension} columns", f"shape {array.shape}")
        check_has_users(array, owner)
        norms = np.linalg.norm(array, axis=1)
        if norms.size and not norms.max() <= self.radius * (1 + 1e-12):
            raise checks.invalid("x", owner, f"rows with l2 norm at most radius={self.radius}", f"a row of norm {norms.max()!r}")
        rotated = self.rotation.rotate(array)
        magnitude = np.minimum(randomized_round(np.abs(rotated) / self.step, rng), self.coordinate.domain)
        return np.concatenate([np.where(rotated > 0, magnitude, 0), np.where(rotated < 0, magnitude, 0)], axis=1)

    def _decode(self, column_estimates: np.ndarray) -> np.ndarray:
        d = self.padded_dimension
        rotated = self.step * (column_estimates[:d] - column_estimates[d:])
        return self.rotation.unrotate(rotated[None, :])[0]

    # ----------------------------------------------------------------- participation
    @property
    def _participating_instances(self) -> tuple[Any, ...]:
        """The coordinate sums' instances decide."""
        return tuple(self.coordinate.instances)

    def _event_for_fewer(self, n_participants: int) -> PrivacyEvent:
        """One coordinate's `ClippedSum.event_for_participants`, composed over ``d'`` coordinates as the headline
        was (`compose_like_budget`: the same composition and slack).
        """
        per_coordinate = self.coordinate.event_for_participants(n_participants).guarantee
        count = self.padded_dimension
        headline = compose_like_budget(per_coordinate, count, self.coordinate.guarantee, self.headline.delta, self.composition)
        return ComposedEventWithHeadline(GuaranteeEvent(per_coordinate), count, headline)

    # ----------------------------------------------------------------- roles
    def randomize(self, x: Any, *, rng: RNGLike = None) -> MessageBatch:
        generator = as_generator(rng, type(self).__name__)
        return self.coordinate.messages_of(self._all_participants(self._signed_columns(x, generator)), generator)

    def sample_view(self, x: Any, *, rng: RNGLike = None) -> SparseMessageHistogram:  # type: ignore[override]
        generator = as_generator(rng, type(self).__name__)
        columns = self._all_participants(self._signed_columns(x, generator))
        return self.coordinate.message_view_of(columns, generator, "fast")

    def partial_view(self, chunk: Any, *, rng: RNGLike = None, path: str = "fast") -> PartialView:
        """One chunk of users' share of the view (as `ClippedSum.partial_view`, on their rotated, rounded columns)."""
        generator, path = shared.chunk_request(rng, path, type(self).__name__)
        return self.coordinate.partial_of(self._signed_columns(chunk, generator), generator, path)

    def view(self, messages: SparseMessageHistogram | MessageBatch) -> SparseMessageHistogram:  # type: ignore[override]
        return self.coordinate.view(messages)

    def _message_cap(self, tail_probability: float) -> int:
        """The coordinate clipped sum's cap."""
        return self.coordinate.per_sender_message_cap(tail_probability)

    def manipulation_bound(self, n_malicious: int, *, cap: int | None = None) -> float:
        """``2 sqrt(d') (R/U) B`` per output coordinate (also the L2 norm of the shift), ``B`` one column's bound.

        Each rotated coordinate is ``R/U`` times a positive minus a negative column (each moved by
        at most ``B``, `ClippedSum.manipulation_bound`, when its honest sub-domain estimates are
        at least ``-T_j``: probability at least ``1 - 2 d' beta``); the inverse rotation has
        entries ``+-1/sqrt(d')``.
        """
        check_malicious(n_malicious, f"{type(self).__name__}.manipulation_bound")
        column = self.coordinate.manipulation_bound(n_malicious, cap=cap)
        return 2.0 * math.sqrt(self.padded_dimension) * self.step * column

    def analyze(self, view: SparseMessageHistogram | MessageBatch | NoisySums) -> np.ndarray:  # type: ignore[override]
        """The estimated sum of the vectors, shape ``(d,)``."""
        return self._decode(self.coordinate.analyze(view))

    def run(self, x: Any, *, rng: RNGLike = None, path: str = "fast") -> np.ndarray:
        """As `ClippedSum.run`: ``"fast"`` samples the instances' noisy totals exactly in law; chunks of users stream."""
        return super().run(x, rng=rng, path=path)

    def _run_fast(self, x: Any, generator: np.random.Generator) -> np.ndarray:
        columns = self._all_participants(self._signed_columns(x, generator))
        return self.analyze(self.coordinate.noisy_sums_of(columns, generator))
