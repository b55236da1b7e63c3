"""A shuffled count sketch for huge domains: point queries and heavy hitters with Poisson noise messages.

User ``i`` holding item ``x`` sends, for each of ``R`` rows, one message naming the cell
``(r, h_r(x), s_r(x))`` (bucket and sign of a count sketch, Charikar, Chen & Farach-Colton, ICALP
2002), plus ``Pois(lambda C / n)`` noise messages naming cells drawn uniformly among all ``C = 2 R W``
cells. Over ``n`` users every cell receives ``Pois(lambda)`` noise messages, independently
(Poisson splitting). The analyzer counts the messages per cell; row ``r`` of the released table is
``count(r, b, +) - count(r, b, -)`` (the noise means cancel), and an item's frequency is estimated by
the median over rows of ``s_r(x) table[r, h_r(x)]``.

This is the fake-message approach of Balcer & Cheu ("Separating local & shuffled differential
privacy via histograms", ITC 2020), whose error does not grow with the domain, applied to hashed
cells as in the count-sketch frequency oracles of Ghazi, Golowich, Kumar, Pagh & Velingker ("On the
power of multiple anonymous messages: frequency estimation and selection", EUROCRYPT 2021), with
Poisson rather than Bernoulli noise so that the noise per cell is divisible among the users and its
privacy is computed exactly (`PoissonCounterEvent`).
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from scipy import stats

from privsum._random import RNGLike, as_generator
from privsum._serialisation import Envelope, check_key, header_field, pack, unpack
from privsum._validation import check_array, check_choice, check_integer, check_real, invalid
from privsum.accounting.events import PrivacyEvent
from privsum.accounting.guarantee import Neighbouring, PrivacyGuarantee
from privsum.exceptions import IncompatibleSketchError, PrivacyLeakWarning
from privsum.histograms._checks import MAX_SKETCH_ROWS, check_delta_field, check_sketch_request
from privsum.histograms._hashing import item_ids, row_hashes
from privsum.histograms.events import (
    MAX_NOISE_MEAN,
    BinsEvent,
    PoissonCounterEvent,
    calibrated_noise_mean,
    poisson_upper_quantile,
)
from privsum.shuffle.histogram import MessageHistogram
from privsum.shuffle.messages import MessageBatch
from privsum.shuffle.protocol import EXECUTION_PATHS, ShuffleProtocol
from privsum.shuffle.streaming import PartialView

__all__ = ["MAX_SKETCH_CELLS", "ReleasedCountSketch", "ShuffledCountSketch", "count_sketch_table"]

#: Most cells (``2 * rows * width``) a sketch may have.
MAX_SKETCH_CELLS = 1 << 26
_ENVELOPE = Envelope(magic=b"PSCSKT", version=1, name="privsum released count sketch")
_KIND_RELEASED = 1
# Users hashed at a time (bounded memory).
_CHUNK_USERS = 1 << 18


def count_sketch_table(items: Any, *, seed: int, rows: int, width: int, owner: str = "count_sketch_table") -> np.ndarray:
    """The exact (noiseless) count-sketch table of ``items``, shape ``(rows, width)``: a central reference.

    Examples:
        >>> count_sketch_table([3, 3, 5], seed=0, rows=2, width=4).sum(axis=1).shape
        (2,)
    """
    ids = item_ids(items, owner)
    seed = check_integer(seed, "seed", owner, low=0)
    rows = check_integer(rows, "rows", owner, low=1, high=MAX_SKETCH_ROWS)
    width = check_integer(width, "width", owner, low=1, high=MAX_SKETCH_CELLS // (2 * rows))
    table = np.zeros(rows * width, dtype=np.int64)
    for start in range(0, ids.size, _CHUNK_USERS):
        buckets, signs = row_hashes(ids[start : start + _CHUNK_USERS], seed, rows, width)
        offsets = buckets + (np.arange(rows) * width)[:, np.newaxis]
        table += np.bincount(offsets.ravel(), weights=signs.ravel(), minlength=rows * width).astype(np.int64)
    return table.reshape(rows, width)


@dataclass(frozen=True, kw_only=True)
class ShuffledCountSketch(ShuffleProtocol):
    """Shuffled count sketch with Poisson noise messages (see the module docstring).

    Args:
        n_users: users the noise messages are divided among (at least this many must take part).
        rows: ``R``, independent hash rows (the median over rows is the estimate).
        width: ``W``, buckets per row.
        noise_mean: ``lambda``, the expected noise messages per cell over all users.
        delta: the delta of the headline guarantee.
        seed: the public seed of the hash functions (any non-negative integer).

    Privacy:
        Replace-one, on the shuffled messages (trusted shuffler; an adversary knowing every other
        user's item). Changing a user's item ``x -> x'`` moves its message in each row from one
        cell to another: at most ``2 R`` cells change by one message, the others not at all.
        Each cell's count is the others' messages plus independent ``Pois(lambda)`` noise, so
        the guarantee is the exact pair ``(Pois(lambda), 1 + Pois(lambda))``
        (`PoissonCounterEvent`) composed ``2 R`` times numerically (`BinsEvent`). The noise
        messages' number and cells do not depend on the item. Fewer than ``n_users``
        participants leave less noise: `run` warns and `event_for_participants` reports it.

    Utility:
        Each row's estimate ``s_r(x) table[r, h_r(x)]`` is unbiased over the public hash (random
        signs) and the noise: its error is the colliding items' signed counts (variance at most
        ``F2 / W`` with ``F2`` the sum of the other items' squared frequencies) plus noise of
        variance ``2 lambda``. `ReleasedCountSketch.error_bound` turns that into a bound.
        Messages per user: ``R + 2 R W lambda / n``, of ``ceil(log2(2 R W))`` bits each.

    Examples:
        >>> sketch = ShuffledCountSketch.from_privacy(epsilon=1.0, delta=1e-6, n_users=20000, rows=3, width=256)
        >>> items = np.concatenate([np.full(3000, 7), np.arange(17000)])
        >>> released = sketch.run(items, rng=0)
        >>> bool(abs(released.estimate([7])[0] - 3001) < 200)
        True
    """

    n_users: int
    rows: int
    width: int
    noise_mean: float
    delta: float
    seed: int = 0

    streams_chunks: ClassVar[bool] = True

    def __post_init__(self) -> None:
        owner = type(self).__name__
        object.__setattr__(self, "n_users", check_integer(self.n_users, "n_users", owner, low=1))
        object.__setattr__(self, "rows", check_integer(self.rows, "rows", owner, low=1, high=MAX_SKETCH_ROWS))
        object.__setattr__(self, "width", check_integer(self.width, "width", owner, low=1, high=MAX_SKETCH_CELLS // 2))
        if 2 * self.rows * self.width > MAX_SKETCH_CELLS:
            raise invalid("width", owner, f"at most {MAX_SKETCH_CELLS // (2 * self.rows)} with {self.rows} rows", self.width)
        object.__setattr__(
            self, "noise_mean", check_real(self.noise_mean, "noise_mean", owner, low=0.0, high=MAX_NOISE_MEAN, low_open=True)
        )
        check_delta_field(self, owner)
        object.__setattr__(self, "seed", check_integer(self.seed, "seed", owner, low=0))

    @classmethod
    def from_privacy(
        cls,
        *,
        epsilon: float,
        delta: float,
        n_users: int,
        rows: int = 5,
        width: int | None = None,
        max_messages_per_user: float = 100.0,
        seed: int = 0,
    ) -> ShuffledCountSketch:
        """The least noise per cell meeting (epsilon, delta) for ``2 * rows`` changed cells.

        Args:
            epsilon: total epsilon.
            delta: total delta, in ``(0, 1)``.
            n_users: users taking part.
            rows: hash rows.
            width: buckets per row; ``None`` picks the largest power of two whose messages per
                user fit ``max_messages_per_user`` (more buckets, fewer collisions, more noise messages).
            max_messages_per_user: the budget used when ``width`` is ``None`` (and checked otherwise).
            seed: public hash seed.

        Raises:
            InvalidParameterError: out-of-range parameters, or the budget cannot hold even one
                bucket per row.
        """
        owner = cls.__name__
        epsilon, delta, n_users, rows, budget = check_sketch_request(epsilon, delta, n_users, rows, max_messages_per_user, owner)
        if not budget > rows:
            raise invalid("max_messages_per_user", owner, f"more than rows={rows} (one item message per row)", budget)
        noise_mean = calibrated_noise_mean(epsilon, delta, 2 * rows, owner)
        per_bucket = 2 * rows * noise_mean / n_users
        if width is None:
            fits = math.floor((budget - rows) / per_bucket)
            if fits < 1:
                raise invalid("max_messages_per_user", owner, f"at least {rows + per_bucket:.4g} with {rows} rows", budget)
            width = min(1 << int(math.log2(fits)), MAX_SKETCH_CELLS // (2 * rows))
        sketch = cls(n_users=n_users, rows=rows, width=width, noise_mean=noise_mean, delta=delta, seed=seed)
        if sketch.expected_messages_per_user > budget:
            raise invalid("width", owner, f"a width whose messages fit max_messages_per_user={budget:g}", width)
        return sketch

    # ----------------------------------------------------------------- description
    @property
    def n_cells(self) -> int:
        return 2 * self.rows * self.width

    @property
    def alphabet(self) -> tuple[int, ...]:
        return (1,)

    @functools.cached_property
    def event(self) -> PrivacyEvent:
        """`BinsEvent`: the Poisson counter pair composed over the ``2 R`` cells a change touches."""
        return self.event_for_participants(self.n_users)

    def event_for_participants(self, n_participants: int) -> PrivacyEvent:
        n_participants = check_integer(n_participants, "n_participants", type(self).__name__, low=1)
        noise = self.noise_mean * min(1.0, n_participants / self.n_users)
        counter = PoissonCounterEvent(noise_mean=noise, delta=self.delta)
        return BinsEvent(counter, 2 * self.rows, Neighbouring.REPLACE_ONE, self.delta)

    @property
    def expected_messages_per_user(self) -> float:
        """``R`` item messages plus ``lambda C / n`` noise messages."""
        return self.rows + self.noise_mean * self.n_cells / self.n_users

    def _message_cap(self, tail_probability: float) -> int:
        """Per cell: at most one item message (each row is its own cells) plus the user's noise messages there.

        A user's ``Pois(lambda C / n)`` noise messages land on uniform cells, so one cell receives
        ``Pois(lambda / n)`` of them (Poisson splitting).
        """
        return 1 + poisson_upper_quantile(self.noise_mean / self.n_users, tail_probability)

    @property
    def largest_message_effect(self) -> float:
        """One message changes one cell's count, hence one table entry and any point query, by 1."""
        return 1.0

    def bits_per_message(self, n_instances: int | None = None) -> int:
        """A message names one of the ``C`` cells: ``ceil(log2 C)`` bits."""
        return max(1, math.ceil(math.log2(self.n_cells)))

    def row_variance(self, second_moment: float = 0.0) -> float:
        """Variance of one row's estimate: ``2 lambda`` of noise plus ``second_moment / W`` of collisions."""
        return 2.0 * self.noise_mean + check_real(second_moment, "second_moment", type(self).__name__, low=0.0) / self.width

    # ----------------------------------------------------------------- roles
    def _cells(self, ids: np.ndarray) -> np.ndarray:
        """Each user's ``R`` cells from its ``uint64`` identifier (`item_ids`), shape ``(n_users, R)``."""
        buckets, signs = row_hashes(ids, self.seed, self.rows, self.width)
        rows = np.arange(self.rows)[:, np.newaxis]
        return ((rows * self.width + buckets) * 2 + (signs < 0)).T

    def randomize(self, x: Any, *, rng: RNGLike = None) -> MessageBatch:
        """Every user's messages (cell ids), user by user: its ``R`` item cells, then its noise cells."""
        generator = as_generator(rng, type(self).__name__)
        ids = item_ids(x, type(self).__name__)
        self.check_participants(ids.size)
        return self._messages_of_ids(ids, generator)

    def _messages_of_ids(self, ids: np.ndarray, generator: np.random.Generator) -> MessageBatch:
        """`randomize` on validated identifiers, without the participant check."""
        cells = self._cells(ids)
        noise_counts = generator.poisson(self.noise_mean * self.n_cells / self.n_users, cells.shape[0])
        noise_cells = generator.integers(0, self.n_cells, int(noise_counts.sum()))
        owners = np.concatenate(
            [np.repeat(np.arange(cells.shape[0]), self.rows), np.repeat(np.arange(cells.shape[0]), noise_counts)]
        )
        messages = np.concatenate([cells.ravel(), noise_cells])[np.argsort(owners, kind="stable")]
        return MessageBatch(messages, np.ones(messages.size, dtype=np.int64), self.n_cells)

    def sample_view(self, x: Any, *, rng: RNGLike = None) -> MessageHistogram:
        """Exact fast path: item cells counted, plus independent ``Pois(lambda m / n)`` per cell for ``m`` users."""
        generator = as_generator(rng, type(self).__name__)
        ids = item_ids(x, type(self).__name__)
        self.check_participants(ids.size)
        return self.view_of_ids(ids, ids.size, generator)

    def view_of_ids(self, ids: np.ndarray, noise_senders: int, generator: np.random.Generator) -> MessageHistogram:
        """The view when the users holding ``ids`` send item messages and ``noise_senders`` users send noise.

        For protocols built on this one (`PrefixHeavyHitters`: every user sends every level's
        noise, only some send items to a level). Noise: ``Pois(lambda * noise_senders / n)`` per cell.
        """
        counts = np.zeros(self.n_cells, dtype=np.int64)
        for start in range(0, ids.size, _CHUNK_USERS):
            counts += np.bincount(self._cells(ids[start : start + _CHUNK_USERS]).ravel(), minlength=self.n_cells)
        counts += generator.poisson(self.noise_mean * noise_senders / self.n_users, self.n_cells)
        return MessageHistogram(counts[:, np.newaxis], self.alphabet)

    def partial_view(self, chunk: Any, *, rng: RNGLike = None, path: str = "fast") -> PartialView:
        """One chunk of users' counts: their item cells and their share ``Pois(lambda m / n)`` of each cell's noise.

        ``path="faithful"`` lists and counts the chunk's messages (`randomize`); the chunks' views
        add up to one run's.
        """
        owner = type(self).__name__
        path = check_choice(path, "path", owner, EXECUTION_PATHS)
        generator = as_generator(rng, owner)
        ids = item_ids(chunk, owner)
        if path == "faithful":  # the participants are checked once, on the total (`complete_view`)
            return PartialView(self.view(self._messages_of_ids(ids, generator)), ids.size)
        return PartialView(self.view_of_ids(ids, ids.size, generator), ids.size)

    def check_participants(self, n_participants: int) -> None:
        if n_participants < self.n_users:
            warnings.warn(
                f"{type(self).__name__} was calibrated for n_users={self.n_users} but {n_participants} users took part; "
                f"the noise is smaller: see event_for_participants({n_participants}).",
                PrivacyLeakWarning,
                stacklevel=3,
            )

    def analyze(self, view: MessageHistogram | MessageBatch) -> ReleasedCountSketch:
        """The released table ``count(+) - count(-)`` per bucket."""
        counts = self.view(view).counts[:, 0]
        if counts.size != self.n_cells:
            raise invalid("view", type(self).__name__, f"a view of {self.n_cells} cells", f"{counts.size} cells")
        signed = counts.reshape(self.rows, self.width, 2)
        table = signed[:, :, 0] - signed[:, :, 1]
        return ReleasedCountSketch(
            table=table,
            seed=self.seed,
            noise_variance=2.0 * self.noise_mean,
            n_users=self.n_users,
            guarantee=self.guarantee,
        )


@dataclass(frozen=True, eq=False)
class ReleasedCountSketch:
    """A released count-sketch table: point queries, heavy hitters, merging and bytes (all post-processing).

    Attributes:
        table: the released signed counts, shape ``(rows, width)``.
        seed: the public hash seed.
        noise_variance: variance of the noise in every table entry.
        n_users: users it summarises (calibrated counts, added on merge).
        guarantee: the guarantee of the release (the worst of the parts after a merge of disjoint users).
    """

    table: np.ndarray
    seed: int
    noise_variance: float
    n_users: int
    guarantee: PrivacyGuarantee

    def __post_init__(self) -> None:
        owner = type(self).__name__
        table = check_array(self.table, "table", owner, ndim=2)
        if table.size == 0:
            raise invalid("table", owner, "a non-empty finite 2-D array", f"shape {table.shape}")
        object.__setattr__(self, "table", table)
        object.__setattr__(self, "seed", check_integer(self.seed, "seed", owner, low=0))
        object.__setattr__(self, "noise_variance", check_real(self.noise_variance, "noise_variance", owner, low=0.0))
        object.__setattr__(self, "n_users", check_integer(self.n_users, "n_users", owner, low=1))
        if not isinstance(self.guarantee, PrivacyGuarantee):
            raise invalid("guarantee", owner, "a PrivacyGuarantee", self.guarantee)

    @property
    def rows(self) -> int:
        return self.table.shape[0]

    @property
    def width(self) -> int:
        return self.table.shape[1]

    def row_estimates(self, items: Any) -> np.ndarray:
        """Each row's unbiased estimate of each item's count, shape ``(rows, n_items)``."""
        return self._row_estimates_of(item_ids(items, f"{type(self).__name__}.estimate"))

    def _row_estimates_of(self, ids: np.ndarray) -> np.ndarray:
        buckets, signs = row_hashes(ids, self.seed, self.rows, self.width)
        return signs * self.table[np.arange(self.rows)[:, np.newaxis], buckets]

    def estimate(self, items: Any) -> np.ndarray:
        """The count of each item: the median of its row estimates (a float array, one per item)."""
        return np.median(self.row_estimates(items), axis=0).astype(float)

    def second_moment(self) -> float:
        """An estimate of ``F2``, the sum of squared item counts: the median over rows of ``sum_b table^2`` less the noise."""
        per_row = np.sum(self.table.astype(float) ** 2, axis=1) - self.width * self.noise_variance
        return float(max(0.0, np.median(per_row)))

    def error_bound(self, failure_probability: float = 0.05, second_moment: float | None = None) -> float:
        """A half-width ``t`` with ``P(|estimate(x) - count(x)| > t) <= failure_probability`` for one item.

        Over the public hash (an item not chosen by looking at the hash) and the noise: each row's
        error has variance at most ``v = F2 / W + noise_variance``, so by Chebyshev it exceeds ``t``
        with probability at most ``p = v / t^2``; the median is off by more than ``t`` only if at
        least half the rows are, which has probability at most ``P(Bin(R, p) >= R/2)``. ``t`` is
        the smallest half-width for which that is at most ``failure_probability``. ``F2`` is
        ``second_moment`` when given (e.g. a public bound ``n^2``), else the sketch's own estimate
        (`second_moment`): then the bound is an estimate, not a guarantee.
        """
        owner = f"{type(self).__name__}.error_bound"
        beta = check_real(failure_probability, "failure_probability", owner, low=0.0, high=1.0, low_open=True, high_open=True)
        moment = self.second_moment() if second_moment is None else check_real(second_moment, "second_moment", owner, low=0.0)
        variance = moment / self.width + self.noise_variance
        needed = math.ceil(self.rows / 2)

        def failure(p: float) -> float:
            return float(stats.binom.sf(needed - 1, self.rows, p))

        low, high = 0.0, 1.0
        for _ in range(60):
            middle = 0.5 * (low + high)
            low, high = (middle, high) if failure(middle) <= beta else (low, middle)
        return math.sqrt(variance / low) if low > 0 else math.inf

    def heavy_hitters(self, candidates: Any, min_count: float) -> list[tuple[Any, float]]:
        """The candidates whose estimated count is at least ``min_count``, largest first, with their estimates.

        Items whose true count is within the estimate's error of ``min_count`` may fall on either
        side (one at exactly ``min_count`` about half the time). For a stated probability of
        finding every item of count at least ``T``, use `~privsum.histograms.TwoRoundHeavyHitters`
        (a second, collision-free counting round over the candidates).
        """
        owner = f"{type(self).__name__}.heavy_hitters"
        min_count = check_real(min_count, "min_count", owner)
        estimates = np.median(self._row_estimates_of(item_ids(candidates, owner, "candidates")), axis=0)
        listed = candidates.tolist() if isinstance(candidates, np.ndarray) else list(candidates)
        chosen = np.flatnonzero(estimates >= min_count)
        order = chosen[np.argsort(-estimates[chosen], kind="stable")]
        return [(listed[i], float(estimates[i])) for i in order]

    def merge(self, other: ReleasedCountSketch, *, disjoint_users: bool) -> ReleasedCountSketch:
        """The release of two disjoint sets of users: tables and noise variances added (post-processing).

        Raises:
            IncompatibleSketchError: different seeds or shapes.
            InvalidParameterError: ``disjoint_users`` is not ``True`` (the same user in both
                releases would be accounted twice, which a merge cannot express).
        """
        owner = f"{type(self).__name__}.merge"
        if not isinstance(other, ReleasedCountSketch):
            raise invalid("other", owner, "a ReleasedCountSketch", type(other).__name__)
        if disjoint_users is not True:
            raise invalid("disjoint_users", owner, "True (each user in one of the two releases)", disjoint_users)
        if other.seed != self.seed or other.table.shape != self.table.shape:
            raise IncompatibleSketchError(
                f"cannot merge sketches with seeds {self.seed} and {other.seed}, "
                f"shapes {self.table.shape} and {other.table.shape}"
            )
        if other.guarantee.neighbouring != self.guarantee.neighbouring:
            raise IncompatibleSketchError("cannot merge releases under different neighbouring relations")
        worst = PrivacyGuarantee(
            max(self.guarantee.epsilon, other.guarantee.epsilon),
            max(self.guarantee.delta, other.guarantee.delta),
            self.guarantee.neighbouring,
        )
        return ReleasedCountSketch(
            table=self.table + other.table,
            seed=self.seed,
            noise_variance=self.noise_variance + other.noise_variance,
            n_users=self.n_users + other.n_users,
            guarantee=worst,
        )

    def to_bytes(self, *, key: bytes | None = None) -> bytes:
        """Versioned binary form (no pickle): JSON header (seed, noise, guarantee) + float64 table; ``key`` signs it."""
        header = {
            "seed": self.seed,
            "noise_variance": self.noise_variance,
            "n_users": self.n_users,
            "epsilon": self.guarantee.epsilon,
            "delta": self.guarantee.delta,
            "neighbouring": self.guarantee.neighbouring.value,
        }
        return pack(_ENVELOPE, _KIND_RELEASED, header, self.table, "<f8", key=check_key(key, "ReleasedCountSketch.to_bytes"))

    @classmethod
    def from_bytes(cls, data: bytes, *, key: bytes | None = None) -> ReleasedCountSketch:
        """Rebuild from `to_bytes` output; corrupt, foreign or (with ``key``) unsigned bytes are refused."""
        owner = "ReleasedCountSketch.from_bytes"
        header, table = unpack(
            data, _ENVELOPE, _KIND_RELEASED, "a released count sketch", "<f8", owner, key=check_key(key, owner)
        )
        if table.ndim != 2:
            raise invalid("data", owner, "a 2-D table", f"shape {table.shape}")
        guarantee = PrivacyGuarantee(
            header_field(header, "epsilon", (int, float), owner),
            header_field(header, "delta", (int, float), owner),
            Neighbouring.parse(header_field(header, "neighbouring", str, owner), owner),
        )
        return cls(
            table=table,
            seed=header_field(header, "seed", int, owner),
            noise_variance=header_field(header, "noise_variance", (int, float), owner),
            n_users=header_field(header, "n_users", int, owner),
            guarantee=guarantee,
        )
