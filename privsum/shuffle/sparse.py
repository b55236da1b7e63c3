"""A sparse (coordinate-list) histogram view for protocols whose message alphabet is too large to hold densely.

`MessageHistogram` stores one column per message value; for additive shares modulo ``q = 2^37``
that is not an option. `SparseMessageHistogram` stores only the ``(instance, value)`` pairs that
occur, with their counts: the same information (the shuffled multiset), merged by addition.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privsum._validation import check_integer, check_integer_array, invalid
from privsum.shuffle.messages import MessageBatch, check_instance_ids, checked_record

__all__ = ["SparseMessageHistogram"]


@dataclass(frozen=True, eq=False)
class SparseMessageHistogram:
    """Counts of the ``(instance, value)`` pairs that occur, in coordinate-list form.

    Attributes:
        instances: instance id of each entry (``0 <= id < n_instances``).
        values: message value of each entry.
        counts: how many messages carry that ``(instance, value)`` pair (positive).
        n_instances: number of instances the view covers.

    The entries are kept *coalesced* (each pair once) and sorted by ``(instance, value)``, so two
    views of the same multiset are equal array for array, whatever the order of the messages.
    Views of disjoint groups of users merge by ``+``.

    Examples:
        >>> batch = MessageBatch(np.array([1, 0, 1]), np.array([7, 2**40, 7]), n_instances=2)
        >>> view = SparseMessageHistogram.from_messages(batch)
        >>> view.instances.tolist(), view.values.tolist(), view.counts.tolist()
        ([0, 1], [1099511627776, 7], [1, 2])
        >>> view.count(7).tolist(), view.total_messages
        ([0, 2], 3)
    """

    instances: np.ndarray
    values: np.ndarray
    counts: np.ndarray
    n_instances: int

    def __post_init__(self) -> None:
        owner = "SparseMessageHistogram"
        n_instances, (instances, values, counts) = checked_record(self, owner, ("instances", "values", "counts"))
        if not (instances.size == values.size == counts.size):
            raise invalid(
                "counts", owner, "as long as instances and values", f"lengths {instances.size}, {values.size}, {counts.size}"
            )
        check_instance_ids(instances, n_instances, owner)
        if counts.size and not counts.min() >= 1:
            raise invalid("counts", owner, "positive (absent pairs are not stored)", int(counts.min()))
        if instances.size > 1:
            same = instances[1:] == instances[:-1]
            ordered = (instances[1:] > instances[:-1]) | (same & (values[1:] > values[:-1]))
            if not np.all(ordered):
                raise invalid("values", owner, "coalesced and sorted by (instance, value)", "unsorted or repeated pairs")
        object.__setattr__(self, "instances", instances)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "n_instances", n_instances)

    @classmethod
    def from_pairs(
        cls, instances: np.ndarray, values: np.ndarray, counts: np.ndarray, n_instances: int
    ) -> SparseMessageHistogram:
        """Coalesce unsorted pairs (repeats allowed; zero counts dropped) into a view."""
        owner = "SparseMessageHistogram.from_pairs"
        instances = check_integer_array(instances, "instances", owner, ndim=None).ravel()
        values = check_integer_array(values, "values", owner, ndim=None).ravel()
        counts = check_integer_array(counts, "counts", owner, ndim=None).ravel()
        if not (instances.size == values.size == counts.size):
            raise invalid("counts", "SparseMessageHistogram.from_pairs", "as long as instances and values", counts.size)
        if counts.size and counts.min() < 0:
            raise invalid("counts", "SparseMessageHistogram.from_pairs", "non-negative", int(counts.min()))
        order = np.lexsort((values, instances))
        instances, values, counts = instances[order], values[order], counts[order]
        if instances.size == 0:
            return cls(instances, values, counts, n_instances)
        starts = np.flatnonzero(np.r_[True, (instances[1:] != instances[:-1]) | (values[1:] != values[:-1])])
        totals = np.add.reduceat(counts, starts)
        keep = totals > 0
        return cls(instances[starts][keep], values[starts][keep], totals[keep], n_instances)

    @classmethod
    def from_messages(cls, batch: MessageBatch) -> SparseMessageHistogram:
        """Count a batch of messages (any integer values)."""
        if not isinstance(batch, MessageBatch):
            raise invalid("batch", "SparseMessageHistogram.from_messages", "a MessageBatch", type(batch).__name__)
        return cls.from_pairs(batch.instances, batch.values, np.ones(batch.n_messages, dtype=np.int64), batch.n_instances)

    @classmethod
    def zeros(cls, n_instances: int) -> SparseMessageHistogram:
        """The empty view (no messages)."""
        empty = np.zeros(0, dtype=np.int64)
        return cls(empty, empty, empty, n_instances)

    @property
    def total_messages(self) -> int:
        """Number of messages counted."""
        return int(self.counts.sum())

    def count(self, value: int) -> np.ndarray:
        """Per-instance count of messages equal to ``value`` (zeros where it never occurs)."""
        value = check_integer(value, "value", "SparseMessageHistogram.count", low=-(2**63), high=2**63 - 1)
        result = np.zeros(self.n_instances, dtype=np.int64)
        hit = self.values == value
        np.add.at(result, self.instances[hit], self.counts[hit])
        return result

    def instance(self, index: int) -> SparseMessageHistogram:
        """The one-instance view of instance ``index``."""
        index = check_integer(index, "index", "SparseMessageHistogram.instance", low=0, high=self.n_instances - 1)
        lo, hi = np.searchsorted(self.instances, [index, index + 1])
        return SparseMessageHistogram(np.zeros(hi - lo, dtype=np.int64), self.values[lo:hi], self.counts[lo:hi], 1)

    def __add__(self, other: SparseMessageHistogram) -> SparseMessageHistogram:
        if not isinstance(other, SparseMessageHistogram):
            return NotImplemented
        if other.n_instances != self.n_instances:
            raise invalid("other", "SparseMessageHistogram.__add__", f"a view of {self.n_instances} instances", other.n_instances)
        return SparseMessageHistogram.from_pairs(
            np.concatenate([self.instances, other.instances]),
            np.concatenate([self.values, other.values]),
            np.concatenate([self.counts, other.counts]),
            self.n_instances,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SparseMessageHistogram):
            return NotImplemented
        return (
            self.n_instances == other.n_instances
            and np.array_equal(self.instances, other.instances)
            and np.array_equal(self.values, other.values)
            and np.array_equal(self.counts, other.counts)
        )

    __hash__ = None  # type: ignore[assignment]
