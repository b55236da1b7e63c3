"""Heavy hitters without a candidate list: a prefix tree of shuffled count sketches.

Items are integers in ``[0, D)``; ``D`` is rounded up to ``2^bits`` internally (a domain that is
not a power of two is accepted; the extra identifiers simply never occur). Level ``l`` of the
tree holds the items' leading ``l * bits_per_level`` bits. Each user picks one level with its own
randomness (probability ``level_weights``) and sends its prefix at that level to that level's
`~privsum.histograms.ShuffledCountSketch`; every user sends the noise messages of every level.
The analyzer descends the tree: at each level it keeps the prefixes whose estimated count
(scaled by the level's weight) reaches ``expand_count``, and queries their children at the next
level; at the last level it reports the items reaching ``min_count``.

This is the prefix-tree ("TreeHist"-style) reduction of heavy hitters to frequency oracles
(Bassily, Nissim, Stemmer & Thakurta, "Practical locally private heavy hitters", NeurIPS 2017),
with the shuffled frequency oracle of this package in place of a local one.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from privsum._random import RNGLike, as_generator
from privsum._serialisation import Envelope, check_key, header_field, pack, unpack
from privsum._validation import check_array, check_integer, check_integer_array, check_real, invalid
from privsum.accounting.events import PrivacyEvent
from privsum.accounting.guarantee import Neighbouring, PrivacyGuarantee
from privsum.exceptions import IncompatibleSketchError
from privsum.histograms._checks import check_sketch_request
from privsum.histograms.sketch import ReleasedCountSketch, ShuffledCountSketch

__all__ = ["MAX_DOMAIN_BITS", "PrefixHeavyHitters", "ReleasedPrefixTree"]

#: Largest item domain: ``2^62`` identifiers.
MAX_DOMAIN_BITS = 62
_ENVELOPE = Envelope(magic=b"PSPTRE", version=1, name="privsum released prefix tree")
_KIND_TREE = 1
# Most children queried at one level (bounds the analyzer's work with 16-bit levels too).
_MAX_CHILDREN = 1 << 22
# Most prefixes kept at one level while descending (bounds the analyzer's work).
_MAX_KEPT = 1 << 14


@dataclass(frozen=True, kw_only=True)
class PrefixHeavyHitters:
    """Heavy hitters over ``[0, domain_size)`` without a candidate list (see the module docstring).

    Args:
        domain_size: ``D``, items are integers in ``[0, D)`` (rounded up to a power of two inside).
        bits_per_level: prefix bits added per level (each kept prefix has ``2^bits_per_level`` children).
        level_sketch: the `ShuffledCountSketch` every level runs (level ``l`` uses seed ``seed + l``).
        level_weights: the probability of each level; ``None``: half the users at the last level
            (whose counts are the reported ones), the rest evenly over the others.

    Privacy:
        Replace-one, as the level sketch: a user's level is drawn independently of its item, and
        for every draw a change of item moves at most ``2 R`` of that level's cell messages while
        the other levels receive only its noise messages, whose law does not depend on the item.
        The run is a mixture, over the draws, of mechanisms each meeting the level sketch's
        guarantee with the same mixing weights on neighbouring inputs, so it meets it too. No
        composition over levels is paid; the price is that each level sees only its share of users.

    Utility:
        A level-``l`` prefix count is estimated by its sketch estimate divided by the level's
        weight: unbiased, with the sketch's error plus the sampling error of the level draw
        (about ``count / weight`` in variance). Messages per user: ``R`` item messages plus every
        level's noise messages.

    Examples:
        >>> tree = PrefixHeavyHitters.from_privacy(
        ...     epsilon=1.0, delta=1e-6, n_users=40000, domain_size=1000, max_messages_per_user=200)
        >>> items = np.concatenate([np.full(8000, 123), np.full(6000, 777), np.arange(26000) % 1000])
        >>> found = tree.run(items, rng=0).heavy_hitters(min_count=4000)
        >>> sorted(item for item, _ in found)
        [123, 777]
    """

    domain_size: int
    bits_per_level: int
    level_sketch: ShuffledCountSketch
    level_weights: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        owner = type(self).__name__
        object.__setattr__(
            self, "domain_size", check_integer(self.domain_size, "domain_size", owner, low=1, high=2**MAX_DOMAIN_BITS)
        )
        object.__setattr__(self, "bits_per_level", check_integer(self.bits_per_level, "bits_per_level", owner, low=1, high=16))
        if not isinstance(self.level_sketch, ShuffledCountSketch):
            raise invalid("level_sketch", owner, "a ShuffledCountSketch", self.level_sketch)
        if self.level_weights is None:
            levels = self.n_levels
            weights = (1.0,) if levels == 1 else (0.5 / (levels - 1),) * (levels - 1) + (0.5,)
        else:
            weights = tuple(check_array(self.level_weights, "level_weights", owner, ndim=1, low=0.0).astype(float).tolist())
            if len(weights) != self.n_levels or not math.isclose(sum(weights), 1.0) or min(weights) <= 0.0:
                raise invalid("level_weights", owner, f"{self.n_levels} positive weights summing to 1", self.level_weights)
        object.__setattr__(self, "level_weights", weights)

    @classmethod
    def from_privacy(
        cls,
        *,
        epsilon: float,
        delta: float,
        n_users: int,
        domain_size: int,
        bits_per_level: int = 5,
        rows: int = 3,
        max_messages_per_user: float = 100.0,
        seed: int = 0,
    ) -> PrefixHeavyHitters:
        """A tree whose level sketches meet (epsilon, delta) with the widest rows that fit the message budget."""
        owner = cls.__name__
        domain_size = check_integer(domain_size, "domain_size", owner, low=1, high=2**MAX_DOMAIN_BITS)
        bits_per_level = check_integer(bits_per_level, "bits_per_level", owner, low=1, high=16)
        epsilon, delta, n_users, rows, budget = check_sketch_request(epsilon, delta, n_users, rows, max_messages_per_user, owner)
        seed = check_integer(seed, "seed", owner, low=0)
        levels = math.ceil(_domain_bits(domain_size) / bits_per_level)
        probe = ShuffledCountSketch.from_privacy(
            epsilon=epsilon, delta=delta, n_users=n_users, rows=rows, width=1, max_messages_per_user=1e300, seed=seed
        )
        per_bucket = levels * 2 * rows * probe.noise_mean / probe.n_users
        fits = math.floor((budget - rows) / per_bucket) if budget > rows else 0
        if fits < 1:
            raise invalid("max_messages_per_user", owner, f"at least {rows + per_bucket:.4g} for {levels} levels", budget)
        width = 1 << int(math.log2(fits))
        sketch = ShuffledCountSketch(
            n_users=probe.n_users, rows=rows, width=width, noise_mean=probe.noise_mean, delta=probe.delta, seed=seed
        )
        return cls(domain_size=domain_size, bits_per_level=bits_per_level, level_sketch=sketch)

    @property
    def domain_bits(self) -> int:
        """``ceil(log2 D)`` (at least 1): the domain rounded up to a power of two."""
        return _domain_bits(self.domain_size)

    @property
    def n_levels(self) -> int:
        return math.ceil(self.domain_bits / self.bits_per_level)

    def _level_bits(self, level: int) -> int:
        return min(self.domain_bits, (level + 1) * self.bits_per_level)

    def _level(self, level: int) -> ShuffledCountSketch:
        sketch = self.level_sketch
        return ShuffledCountSketch(
            n_users=sketch.n_users,
            rows=sketch.rows,
            width=sketch.width,
            noise_mean=sketch.noise_mean,
            delta=sketch.delta,
            seed=sketch.seed + level,
        )

    @functools.cached_property
    def event(self) -> PrivacyEvent:
        """The level sketch's event (a user's item reaches one level; see Privacy)."""
        return self.level_sketch.event

    @property
    def guarantee(self) -> PrivacyGuarantee:
        return self.event.guarantee

    @property
    def expected_messages_per_user(self) -> float:
        sketch = self.level_sketch
        return sketch.rows + self.n_levels * sketch.noise_mean * sketch.n_cells / sketch.n_users

    def bits_per_message(self) -> int:
        """A message names a level and one of its cells."""
        return self.level_sketch.bits_per_message() + max(0, math.ceil(math.log2(self.n_levels)))

    def run(self, items: Any, *, rng: RNGLike = None) -> ReleasedPrefixTree:
        """Every level's released sketch (the exact fast path of each level's view)."""
        owner = type(self).__name__
        ids = check_integer_array(items, "items", owner, low=0)
        if ids.size == 0:
            raise invalid("items", owner, "at least one item", "no items")
        if ids.max() >= self.domain_size:
            raise invalid("items", owner, f"integers in [0, {self.domain_size})", int(ids.max()))
        generator = as_generator(rng, owner)
        self.level_sketch.check_participants(ids.size)
        levels = generator.choice(self.n_levels, size=ids.size, p=np.asarray(self.level_weights))
        released = []
        for level in range(self.n_levels):
            shift = self.domain_bits - self._level_bits(level)
            prefixes = (ids[levels == level] >> shift).astype(np.uint64)
            sketch = self._level(level)
            released.append(sketch.analyze(sketch.view_of_ids(prefixes, ids.size, generator)))
        return ReleasedPrefixTree(
            levels=tuple(released),
            level_weights=self.level_weights,
            level_bits=tuple(self._level_bits(level) for level in range(self.n_levels)),
        )


@dataclass(frozen=True, eq=False)
class ReleasedPrefixTree:
    """The released level sketches of a `PrefixHeavyHitters` run, and the descent that finds heavy hitters."""

    levels: tuple[ReleasedCountSketch, ...]
    level_weights: tuple[float, ...]
    level_bits: tuple[int, ...]

    def __post_init__(self) -> None:
        owner = type(self).__name__
        levels = tuple(self.levels) if isinstance(self.levels, (list, tuple)) else ()
        if not levels or not all(isinstance(level, ReleasedCountSketch) for level in levels):
            raise invalid("levels", owner, "a non-empty sequence of ReleasedCountSketch", self.levels)
        bits = check_integer_array(self.level_bits, "level_bits", owner, low=1)
        if (
            bits.size != len(levels)
            or bits.max() > MAX_DOMAIN_BITS
            or np.any(np.diff(bits) <= 0)
            or np.diff(bits, prepend=0).max() > 16
        ):
            raise invalid(
                "level_bits",
                owner,
                f"{len(levels)} increasing prefix lengths up to {MAX_DOMAIN_BITS}, steps of at most 16",
                self.level_bits,
            )
        weights = check_array(self.level_weights, "level_weights", owner, ndim=1, low=0.0, high=1.0).astype(float)
        if weights.size != len(levels) or weights.min() <= 0.0 or not math.isclose(weights.sum(), 1.0):
            raise invalid("level_weights", owner, f"{len(levels)} positive weights summing to 1", self.level_weights)
        object.__setattr__(self, "levels", levels)
        object.__setattr__(self, "level_bits", tuple(int(b) for b in bits))
        object.__setattr__(self, "level_weights", tuple(float(w) for w in weights))

    def merge(self, other: ReleasedPrefixTree, *, disjoint_users: bool) -> ReleasedPrefixTree:
        """The release of two disjoint sets of users: every level's sketches merged (post-processing).

        Raises:
            IncompatibleSketchError: different levels, level weights or sketch seeds and shapes.
            InvalidParameterError: ``disjoint_users`` is not ``True``.
        """
        owner = f"{type(self).__name__}.merge"
        if not isinstance(other, ReleasedPrefixTree):
            raise invalid("other", owner, "a ReleasedPrefixTree", type(other).__name__)
        if other.level_bits != self.level_bits or other.level_weights != self.level_weights:
            raise IncompatibleSketchError("cannot merge prefix trees with different levels or level weights")
        levels = tuple(
            mine.merge(theirs, disjoint_users=disjoint_users) for mine, theirs in zip(self.levels, other.levels, strict=True)
        )
        return ReleasedPrefixTree(levels=levels, level_weights=self.level_weights, level_bits=self.level_bits)

    def to_bytes(self, *, key: bytes | None = None) -> bytes:
        """Versioned binary form (no pickle): JSON header (levels, weights, seeds, guarantee) + float64 tables."""
        first = self.levels[0]
        header = {
            "level_bits": list(self.level_bits),
            "level_weights": list(self.level_weights),
            "seeds": [level.seed for level in self.levels],
            "noise_variance": first.noise_variance,
            "n_users": first.n_users,
            "epsilon": first.guarantee.epsilon,
            "delta": first.guarantee.delta,
            "neighbouring": first.guarantee.neighbouring.value,
        }
        tables = np.stack([level.table for level in self.levels])
        return pack(_ENVELOPE, _KIND_TREE, header, tables, "<f8", key=check_key(key, "ReleasedPrefixTree.to_bytes"))

    @classmethod
    def from_bytes(cls, data: bytes, *, key: bytes | None = None) -> ReleasedPrefixTree:
        """Rebuild from `to_bytes` output; corrupt, foreign or (with ``key``) unsigned bytes are refused."""
        owner = "ReleasedPrefixTree.from_bytes"
        header, tables = unpack(data, _ENVELOPE, _KIND_TREE, "a released prefix tree", "<f8", owner, key=check_key(key, owner))
        bits = header_field(header, "level_bits", list, owner)
        weights = header_field(header, "level_weights", list, owner)
        seeds = header_field(header, "seeds", list, owner)
        if tables.ndim != 3 or not len(bits) == len(weights) == len(seeds) == tables.shape[0]:
            raise invalid("data", owner, "one table, weight, seed and prefix length per level", f"shape {tables.shape}")
        numbers = (int, float)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in [*bits, *seeds]) or not all(
            isinstance(w, numbers) and not isinstance(w, bool) for w in weights
        ):
            raise invalid("data", owner, "integer prefix lengths and seeds, real weights", header)
        guarantee = PrivacyGuarantee(
            header_field(header, "epsilon", (int, float), owner),
            header_field(header, "delta", (int, float), owner),
            Neighbouring.parse(header_field(header, "neighbouring", str, owner), owner),
        )
        noise = header_field(header, "noise_variance", (int, float), owner)
        n_users = header_field(header, "n_users", int, owner)
        levels = tuple(
            ReleasedCountSketch(table=table, seed=seed, noise_variance=noise, n_users=n_users, guarantee=guarantee)
            for table, seed in zip(tables, seeds, strict=True)
        )
        return cls(levels=levels, level_weights=tuple(weights), level_bits=tuple(bits))

    def prefix_counts(self, level: int, prefixes: Any) -> np.ndarray:
        """Estimated counts of level-``level`` prefixes among all users (sketch estimate over the level weight)."""
        owner = f"{type(self).__name__}.prefix_counts"
        level = check_integer(level, "level", owner, low=0, high=len(self.levels) - 1)
        ids = check_integer_array(prefixes, "prefixes", owner, low=0).astype(np.uint64)
        return self.levels[level].estimate(ids) / self.level_weights[level]

    def heavy_hitters(self, min_count: float, expand_count: float | None = None) -> list[tuple[int, float]]:
        """Items whose estimated count reaches ``min_count``, largest first, with their estimates.

        Args:
            min_count: the reporting threshold at the last level.
            expand_count: the threshold for descending into a prefix (default ``min_count / 2``,
                so that a heavy item is not lost to an underestimate of its prefix). At most
                16,384 prefixes (the largest estimates) are kept per level, and at most 2^22
                children queried.

        As for `~privsum.histograms.ReleasedCountSketch.heavy_hitters`, items whose count is within
        the estimate's error of ``min_count`` may fall on either side; the last level's estimate
        also carries the sampling error of the level draw (variance about ``count / weight``).
        No probability of finding an item at ``min_count`` is stated: when the domain can be
        listed (up to 2^24 items), `~privsum.histograms.TwoRoundHeavyHitters` states one.
        """
        owner = f"{type(self).__name__}.heavy_hitters"
        min_count = check_real(min_count, "min_count", owner)
        expand = 0.5 * min_count if expand_count is None else check_real(expand_count, "expand_count", owner)
        previous_bits = 0
        kept = np.zeros(1, dtype=np.uint64)
        for level in range(len(self.levels)):
            added = self.level_bits[level] - previous_bits
            kept = kept[: max(1, _MAX_CHILDREN >> added)]  # the largest first: bounded work per level
            children = (kept[:, np.newaxis] << np.uint64(added)) + np.arange(2**added, dtype=np.uint64)[np.newaxis, :]
            children = children.ravel()
            counts = self.prefix_counts(level, children)
            last = level == len(self.levels) - 1
            keep = np.flatnonzero(counts >= (min_count if last else expand))
            keep = keep[np.argsort(-counts[keep], kind="stable")][:_MAX_KEPT]
            kept, kept_counts = children[keep], counts[keep]
            previous_bits = self.level_bits[level]
        return [(int(item), float(count)) for item, count in zip(kept, kept_counts, strict=True)]


def _domain_bits(domain_size: int) -> int:
    return max(1, math.ceil(math.log2(domain_size)))
