"""Sparse vector aggregation in one shuffle round (section 7 of Dong et al. (CCS 2024)).

`SparseVectorAggregation`: binary vectors (frequency estimation under user-level DP); users are
partitioned by sparsity level, each level has a user-count instance and per-coordinate count
instances; the analyzer keeps the levels up to the last one with enough users.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from privsum import _validation as checks
from privsum._random import RNGLike, as_generator
from privsum._user_inputs import check_has_users
from privsum.accounting import GuaranteeEvent, PrivacyEvent, PrivacyGuarantee
from privsum.accounting.budget import COMPOSITIONS
from privsum.clipping import instances as shared
from privsum.clipping._parties import SparseAggregationPartyHooks
from privsum.clipping.calibration import composition_for, level_event_for_participants, levels_back_headline, split_level_budget
from privsum.clipping.instances import INSTANCE_METHODS, InstanceProtocol, NoisySums
from privsum.clipping.threshold_rule import last_passing, level_thresholds
from privsum.shuffle import MessageBatch, ShuffleProtocol
from privsum.shuffle.robustness import check_malicious
from privsum.shuffle.sparse import SparseMessageHistogram
from privsum.shuffle.streaming import PartialView
from privsum.sums.correlated import CorrelatedNoiseSum
from privsum.sums.sparse_shares import SparseMultiMessageSum

__all__ = ["SparseVectorAggregation"]


# --------------------------------------------------------------------------- sparse vector aggregation
@dataclass(frozen=True, kw_only=True)
class SparseVectorAggregation(SparseAggregationPartyHooks, shared.InstanceParticipation, ShuffleProtocol):
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

    Robustness:
        Malicious senders move level counts and coordinate counts and, through the count
        thresholds, add or drop honest levels: `manipulation_bound` bounds a coordinate's shift
        whenever the honest noise stays within its tails (probability at least ``1 - 2 beta``).

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
    wire_name: ClassVar[str] = "SparseVectorAgg"  # the class name is over the wire format's 20 characters

    n_users: int
    dimension: int
    count: InstanceProtocol
    levels: tuple[InstanceProtocol, ...]
    headline: PrivacyGuarantee
    failure_probability: float = 0.1
    composition: str = "advanced"

    def __post_init__(self) -> None:
        owner = type(self).__name__
        n_users = checks.check_integer(self.n_users, "n_users", owner, low=2)
        dimension = checks.check_integer(self.dimension, "dimension", owner, low=1)
        expected_levels = max(1, dimension - 1).bit_length() + 1
        levels = tuple(self.levels)
        if len(levels) != expected_levels:
            raise checks.invalid("levels", owner, f"{expected_levels} protocols (ceil(log2 d) + 1)", f"{len(levels)} protocols")
        constraint = f"bit-count protocols (domain 1) for n_users={n_users}, clip=False"
        for protocol in (self.count, *levels):
            shared.check_instance(protocol, domain=1, n_users=n_users, name="levels", owner=owner, constraint=constraint)
        object.__setattr__(self, "levels", levels)
        if not isinstance(self.headline, PrivacyGuarantee):
            raise checks.invalid("headline", owner, "a PrivacyGuarantee", self.headline)
        if not levels_back_headline(self.headline, self.count, levels, dimension):
            raise checks.invalid("headline", owner, "backed by the count and level protocols' guarantees", self.headline)
        checks.check_probability(self.failure_probability, "failure_probability", owner, allow_zero=False)
        checks.check_choice(self.composition, "composition", owner, COMPOSITIONS)

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
        epsilon = checks.check_epsilon(epsilon, owner)
        delta = checks.check_delta(delta, owner, allow_zero=False)
        dimension = checks.check_integer(dimension, "dimension", owner, low=1)
        composition = composition_for(calibration, owner)
        count_fraction = checks.check_real(
            count_fraction, "count_fraction", owner, low=0.0, high=1.0, low_open=True, high_open=True
        )
        method = checks.check_choice(method, "method", owner, INSTANCE_METHODS)
        n_users = checks.check_integer(n_users, "n_users", owner, low=2)
        renamed = {name: name for name in ("n_users", "method", "dimension", "failure_probability")}
        with checks.refusals_as(owner, renamed, derived_from=("epsilon", epsilon)):
            count, levels, headline = split_level_budget(epsilon, delta, n_users, dimension, composition, count_fraction, method)
            return cls(
                n_users=n_users,
                dimension=dimension,
                count=count,
                levels=tuple(levels),
                headline=headline,
                failure_probability=failure_probability,
                composition=composition,
            )

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
        level_noise = sum(shared.noise_messages(p) for p in self.levels)
        return self.n_levels * shared.noise_messages(self.count) + self.dimension * level_noise

    @property
    def expected_messages_per_user(self) -> float:
        """Worst case: noise plus one data message for the count and one per non-zero coordinate (``d``)."""
        data = shared.data_messages(self.count) + self.dimension * max(shared.data_messages(p) for p in self.levels)
        return self.noise_messages_per_user + data

    def average_messages_per_user(self, x: Any) -> float:
        """Expected messages per user for these inputs: noise plus data messages proportional to each user's sparsity."""
        values = self._inputs(x)
        level = shared.sub_domain_index(values.sum(axis=1))
        level_messages = np.array([shared.data_messages(p) for p in self.levels])[level]
        per_user = shared.data_messages(self.count) + level_messages * values.sum(axis=1)
        return self.noise_messages_per_user + float(per_user.mean())

    def bits_per_message(self, n_instances: int = 1) -> int:
        n_instances = checks.check_integer(n_instances, "n_instances", type(self).__name__, low=1)
        total = n_instances * self.n_levels * (self.dimension + 1)
        value_bits = max(p.bits_per_message(1) for p in (self.count, *self.levels))
        return (math.ceil(math.log2(total)) if total > 1 else 0) + value_bits

    @cached_property
    def thresholds(self) -> np.ndarray:
        """``T_j`` per level (users): the count's tail and the coordinate-noise bound, the larger."""
        return level_thresholds(self.count, self.levels, self.failure_probability, self.dimension)

    def _inputs(self, x: Any) -> np.ndarray:
        owner = type(self).__name__
        array = checks.check_array(x, "x", owner, ndim=2, low=0, high=1, integer=True).astype(np.int64)
        if array.shape[1] != self.dimension:
            raise checks.invalid("x", owner, f"an array with {self.dimension} columns", f"shape {array.shape}")
        check_has_users(array, owner)
        return array

    def _columns(self, values: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        level = shared.sub_domain_index(values.sum(axis=1))
        counts = (level[:, None] == np.arange(self.n_levels)[None, :]).astype(np.int64)
        return counts, [np.where((level == j)[:, None], values, 0) for j in range(self.n_levels)]

    def _offsets(self) -> list[int]:
        return [self.n_levels + j * self.dimension for j in range(self.n_levels)]

    # ----------------------------------------------------------------- participation
    @property
    def _participating_instances(self) -> tuple[InstanceProtocol, ...]:
        return (self.count, *self.levels)

    def _event_for_fewer(self, n_participants: int) -> PrivacyEvent:
        """Composed as `from_privacy` composed the headline (`~privsum.clipping.calibration.level_event_for_participants`)."""
        return level_event_for_participants(
            self.count,
            self.levels,
            self.headline,
            dimension=self.dimension,
            composition=self.composition,
            n_participants=n_participants,
        )

    # ----------------------------------------------------------------- roles
    def _pairs(self, values: np.ndarray) -> list[tuple[InstanceProtocol, np.ndarray]]:
        counts, columns = self._columns(values)
        return [(self.count, counts), *zip(self.levels, columns, strict=True)]

    @property
    def _n_instances(self) -> int:
        return self.n_levels * (self.dimension + 1)

    def _messages_of(self, values: np.ndarray, rng: np.random.Generator) -> MessageBatch:
        batches = shared.instance_messages(self._pairs(values), rng)
        offsets = [0, *self._offsets()]
        return MessageBatch(
            np.concatenate([b.instances + o for b, o in zip(batches, offsets, strict=True)]),
            np.concatenate([b.values for b in batches]),
            n_instances=self._n_instances,
        )

    def _noisy_sums_of(self, values: np.ndarray, rng: np.random.Generator) -> NoisySums:
        """`NoisySums` of shape ``(L + 1, 1 + d)``: column 0 the level counts, then the coordinate counts per level."""
        pairs = self._pairs(values)
        level_counts = shared.noisy_total(*pairs[0], rng)
        coordinates = np.stack([shared.noisy_total(p, c, rng) for p, c in pairs[1:]])
        return NoisySums(np.concatenate([level_counts[:, None], coordinates], axis=1))

    def randomize(self, x: Any, *, rng: RNGLike = None) -> MessageBatch:
        generator = as_generator(rng, type(self).__name__)
        return self._messages_of(self._all_participants(self._inputs(x)), generator)

    def partial_view(self, chunk: Any, *, rng: RNGLike = None, path: str = "fast") -> PartialView:
        """One chunk of users' share of the view: ``"fast"``, their `NoisySums`; ``"faithful"``, their messages' sparse view."""
        generator, path = shared.chunk_request(rng, path, type(self).__name__)
        values = self._inputs(chunk)
        if path == "faithful":
            offsets = [0, *self._offsets()]
            view = shared.instance_views(
                self._pairs(values), generator, path, self._n_instances, lambda i, local: local + offsets[i]
            )
        else:
            view = self._noisy_sums_of(values, generator)
        return PartialView(view, values.shape[0])

    def view(self, messages: SparseMessageHistogram | MessageBatch) -> SparseMessageHistogram:  # type: ignore[override]
        owner = type(self).__name__
        messages = shared.sparse_view(messages, owner)
        if messages.n_instances != self.n_levels * (self.dimension + 1):
            raise checks.invalid("view", owner, f"{self.n_levels * (self.dimension + 1)} instances", messages.n_instances)
        return messages

    def sample_view(self, x: Any, *, rng: RNGLike = None) -> SparseMessageHistogram:  # type: ignore[override]
        """The faithful messages counted directly (no permutation)."""
        return self.view(self.randomize(x, rng=rng))

    def _part(self, sparse: SparseMessageHistogram, protocol: InstanceProtocol, start: int, size: int) -> np.ndarray:
        mine = (sparse.instances >= start) & (sparse.instances < start + size)
        local, values, counts = sparse.instances[mine] - start, sparse.values[mine], sparse.counts[mine]
        if isinstance(protocol, CorrelatedNoiseSum):
            bad = shared.unsendable_values(protocol, values)
            if np.any(bad):
                raise checks.invalid("view", type(self).__name__, "values its instances can send", int(values[bad][0]))
        return shared.instance_estimates(protocol, local, values, counts, size)

    def _message_cap(self, tail_probability: float) -> int:
        """The largest instance's cap (a shuffler caps every instance tag alike)."""
        return shared.largest_cap(self._participating_instances, tail_probability)

    def manipulation_bound(self, n_malicious: int, *, cap: int | None = None) -> float:
        """``A_0 + sum_{j >= 1} (A_j + C_j + 3 T_j)`` per coordinate, whenever the honest noise is within its tails.

        ``A_j`` and ``C_j`` bound the attack's shift of level ``j``'s coordinate and count
        estimates. When every honest count noise is at least ``-T_j`` and every coordinate noise
        within ``+-T_j`` (probability at least ``1 - 2 beta`` with ``n_users`` honest users, plus
        BBGN20 wrap-around), a level added by the attack held fewer than ``2 T_j`` users and a
        level dropped fewer than ``2 T_j + C_j``, so its coordinate estimate lay within ``3 T_j``
        (``3 T_j + C_j``); level 0 is always kept.
        """
        owner = f"{type(self).__name__}.manipulation_bound"
        n_malicious = check_malicious(n_malicious, owner)
        cap = self._enforced_cap(cap, owner)
        if n_malicious == 0:
            return 0.0
        coordinates = np.array([shared.instance_shift(p, n_malicious, cap) for p in self.levels])
        count = shared.instance_shift(self.count, n_malicious, cap)
        return float(coordinates[0] + np.sum(coordinates[1:] + count + 3.0 * self.thresholds[1:]))

    def combine(self, level_counts: np.ndarray, coordinate_counts: np.ndarray) -> tuple[np.ndarray, int]:
        """The per-coordinate estimate and ``j*`` from the noisy level counts ``(L+1,)`` and coordinate counts ``(L+1, d)``."""
        last = int(last_passing(np.asarray(level_counts)[None, :], self.thresholds)[1][0])
        return np.asarray(coordinate_counts)[: last + 1].sum(axis=0), last

    def analyze(self, view: SparseMessageHistogram | MessageBatch | NoisySums) -> np.ndarray:  # type: ignore[override]
        """Estimated per-coordinate counts, shape ``(d,)``."""
        if isinstance(view, NoisySums):
            if view.totals.shape != (self.n_levels, 1 + self.dimension):
                raise checks.invalid(
                    "view", type(self).__name__, f"NoisySums of shape ({self.n_levels}, {1 + self.dimension})", view.totals.shape
                )
            level_counts = shared.decode_total(self.count, view.totals[:, 0])
            coordinate_counts = np.stack([shared.decode_total(p, view.totals[j, 1:]) for j, p in enumerate(self.levels)])
            return self.combine(level_counts, coordinate_counts)[0]
        sparse = self.view(view)
        level_counts = self._part(sparse, self.count, 0, self.n_levels)
        coordinate_counts = np.stack(
            [self._part(sparse, p, o, self.dimension) for p, o in zip(self.levels, self._offsets(), strict=True)]
        )
        return self.combine(level_counts, coordinate_counts)[0]

    def run(self, x: Any, *, rng: RNGLike = None, path: str = "fast") -> np.ndarray:
        """As `ClippedSum.run`: ``"fast"`` samples every instance's noisy total exactly in law; chunks of users stream."""
        return super().run(x, rng=rng, path=path)

    def _run_fast(self, x: Any, generator: np.random.Generator) -> np.ndarray:
        return self.analyze(self._noisy_sums_of(self._all_participants(self._inputs(x)), generator))
