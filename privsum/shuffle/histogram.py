"""The canonical analyzer input: a histogram of (instance, message value) counts."""

from __future__ import annotations

import itertools
import numbers
from dataclasses import dataclass

import numpy as np

from privsum._validation import as_array, check_integer, check_integer_array, invalid
from privsum.shuffle.messages import MessageBatch

__all__ = ["MessageHistogram"]


@dataclass(frozen=True, eq=False)
class MessageHistogram:
    """Counts of each message value in each instance: all that a shuffled multiset reveals.

    Attributes:
        counts: integer array of shape ``(n_instances, len(alphabet))``.
        alphabet: the sorted message values the columns stand for.

    Histograms of disjoint groups of users merge by addition, which is what a chunked or
    distributed run reduces to.

    Examples:
        >>> batch = MessageBatch(np.array([0, 0, 1]), np.array([1, -1, 1]), n_instances=2)
        >>> view = MessageHistogram.from_messages(batch, alphabet=(-1, 1))
        >>> view.count(1).tolist(), view.count(-1).tolist()
        ([1, 1], [1, 0])
    """

    counts: np.ndarray
    alphabet: tuple[int, ...]

    def __post_init__(self) -> None:
        owner = "MessageHistogram"
        alphabet = _check_alphabet(self.alphabet, owner)
        counts = as_array(self.counts, "counts", owner)
        if counts.ndim != 2 or counts.shape[1] != len(alphabet):
            raise invalid("counts", owner, f"a 2-D array with {len(alphabet)} columns", f"shape {counts.shape}")
        counts = check_integer_array(counts, "counts", owner, ndim=2, low=0)
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "alphabet", alphabet)

    @classmethod
    def from_messages(cls, batch: MessageBatch, *, alphabet: tuple[int, ...]) -> MessageHistogram:
        """Count a batch of messages; a value outside ``alphabet`` raises."""
        owner = "MessageHistogram.from_messages"
        if not isinstance(batch, MessageBatch):
            raise invalid("batch", owner, "a MessageBatch", type(batch).__name__)
        alphabet = _check_alphabet(alphabet, owner)
        alphabet_array = np.asarray(alphabet, dtype=np.int64)
        columns = np.searchsorted(alphabet_array, batch.values)
        outside = (columns >= alphabet_array.size) | (
            alphabet_array[np.minimum(columns, alphabet_array.size - 1)] != batch.values
        )
        if np.any(outside):
            raise invalid(
                "batch",
                "MessageHistogram.from_messages",
                f"messages with values in {tuple(alphabet)}",
                int(batch.values[outside][0]),
            )
        flat = batch.instances * alphabet_array.size + columns
        counts = np.bincount(flat, minlength=batch.n_instances * alphabet_array.size)
        return cls(counts.reshape(batch.n_instances, alphabet_array.size), alphabet)

    @classmethod
    def zeros(cls, n_instances: int, alphabet: tuple[int, ...]) -> MessageHistogram:
        """The empty histogram (no messages)."""
        n_instances = check_integer(n_instances, "n_instances", "MessageHistogram.zeros", low=0)
        alphabet = _check_alphabet(alphabet, "MessageHistogram.zeros")
        return cls(np.zeros((n_instances, len(alphabet)), dtype=np.int64), alphabet)

    @property
    def n_instances(self) -> int:
        """Number of instances (rows)."""
        return int(self.counts.shape[0])

    @property
    def total_messages(self) -> int:
        """Number of messages counted."""
        return int(self.counts.sum())

    def count(self, value: int) -> np.ndarray:
        """Per-instance count of messages equal to ``value``."""
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value not in self.alphabet:
            raise invalid("value", "MessageHistogram.count", f"one of {self.alphabet}", value)
        return self.counts[:, self.alphabet.index(value)]

    def __add__(self, other: MessageHistogram) -> MessageHistogram:
        if not isinstance(other, MessageHistogram):
            return NotImplemented
        if other.alphabet != self.alphabet or other.counts.shape != self.counts.shape:
            raise invalid(
                "other",
                "MessageHistogram.__add__",
                f"a histogram of shape {self.counts.shape} over {self.alphabet}",
                f"shape {other.counts.shape} over {other.alphabet}",
            )
        return MessageHistogram(self.counts + other.counts, self.alphabet)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MessageHistogram):
            return NotImplemented
        return self.alphabet == other.alphabet and np.array_equal(self.counts, other.counts)

    __hash__ = None  # type: ignore[assignment]


def _check_alphabet(alphabet: object, owner: str) -> tuple[int, ...]:
    """The alphabet as a tuple of Python ints: non-empty, integer, sorted, without repeats."""
    constraint = "a non-empty sorted sequence of distinct 64-bit integers"
    try:
        values = tuple(alphabet)  # type: ignore[call-overload]
    except TypeError:
        raise invalid("alphabet", owner, constraint, alphabet) from None
    if not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in values):
        raise invalid("alphabet", owner, constraint, alphabet)
    result = tuple(int(v) for v in values)  # type: ignore[call-overload]
    increasing = all(a < b for a, b in itertools.pairwise(result))
    if not (result and increasing and result[0] >= -(2**63) and result[-1] < 2**63):
        raise invalid("alphabet", owner, constraint, alphabet)
    return result
