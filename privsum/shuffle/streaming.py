"""Users in chunks: a protocol's memory bounded by one chunk, its result the same as one big run.

Users randomize independently, so the analyzer's histogram of all users is the sum of the
histograms of disjoint chunks of users (`MessageHistogram` merges by ``+``). A streamed run
therefore computes one `PartialView` per chunk (the chunk's histogram and how many users it
held), adds them up, and only then does what happens **once per run**: it checks the number of
participants against the calibration (and warns when it falls short) and adds noise that is not
divided among the users (a trusted curator's, for the central baselines).

What counts as a stream of chunks (`is_chunk_stream`): an iterator or generator of arrays, a
`UserChunks` wrapper around any iterable (a list of arrays, say) or a Dask array (its blocks along
the first axis, each computed when it is reached). A plain array, list or tuple is one array of
users, as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from privsum._validation import check_integer, invalid

__all__ = ["PartialView", "UserChunks", "is_chunk_stream", "is_dask_array", "iter_user_chunks"]


@dataclass(frozen=True, eq=False)
class PartialView:
    """The analyzer's histogram of a group of users, and how many users the group held.

    Partial views of disjoint groups merge by ``+`` (counts and users add up); what a protocol
    adds once per run is added by `privsum.shuffle.ShuffleProtocol.complete_view` on the total.

    Attributes:
        histogram: the group's `MessageHistogram` (or a sparse view that merges by ``+``).
        n_users: the number of users in the group (at least 0).

    Examples:
        >>> from privsum.shuffle import MessageHistogram
        >>> first = PartialView(MessageHistogram(np.array([[1, 2]]), (0, 1)), 3)
        >>> second = PartialView(MessageHistogram(np.array([[0, 1]]), (0, 1)), 1)
        >>> total = first + second
        >>> total.histogram.counts.tolist(), total.n_users
        ([[1, 3]], 4)
    """

    histogram: Any
    n_users: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_users", check_integer(self.n_users, "n_users", "PartialView", low=0))

    def __add__(self, other: PartialView) -> PartialView:
        if not isinstance(other, PartialView):
            return NotImplemented
        return PartialView(self.histogram + other.histogram, self.n_users + other.n_users)


class UserChunks:
    """Marks an iterable (a list of arrays, say) as chunks of users rather than one array.

    Iterators and generators are recognised as streams without it; a list or tuple is one array
    of users unless wrapped.

    Args:
        chunks: an iterable of arrays, each holding some users (first axis over users).

    Examples:
        >>> chunks = UserChunks([np.zeros((2, 3)), np.ones((1, 3))])
        >>> [chunk.shape for chunk in iter_user_chunks(chunks, "example")]
        [(2, 3), (1, 3)]
    """

    def __init__(self, chunks: Iterable[Any]) -> None:
        if isinstance(chunks, (np.ndarray, str, bytes)) or not isinstance(chunks, Iterable):
            raise invalid("chunks", "UserChunks", "an iterable of arrays", type(chunks).__name__)
        self.chunks = chunks

    def __iter__(self) -> Iterator[Any]:
        return iter(self.chunks)


def is_dask_array(x: Any) -> bool:
    """Whether ``x`` is a Dask array (checked without importing Dask)."""
    return type(x).__module__.split(".")[0] == "dask" and hasattr(x, "chunks") and hasattr(x, "compute")


def is_chunk_stream(x: Any) -> bool:
    """Whether ``x`` is a stream of chunks of users (see the module docstring), not one array.

    Examples:
        >>> is_chunk_stream(np.zeros((4, 2))), is_chunk_stream([[0, 1], [1, 1]])
        (False, False)
        >>> is_chunk_stream(iter([np.zeros((4, 2))])), is_chunk_stream(UserChunks([np.zeros(3)]))
        (True, True)
    """
    if isinstance(x, UserChunks) or is_dask_array(x):
        return True
    return isinstance(x, Iterator)


def iter_user_chunks(x: Any, owner: str) -> Iterator[Any]:
    """The chunks of users in ``x``: each element of a stream, each block of a Dask array, or ``x`` itself.

    Dask blocks are computed one at a time (only one is in memory). Chunks are not validated
    here: the protocol validates each one as it would a whole input.

    Raises:
        InvalidParameterError: the stream holds no chunk at all.
    """
    if is_dask_array(x):
        parts: Iterable[Any] = _dask_blocks(x)
    elif is_chunk_stream(x):
        parts = x
    else:
        parts = [x]
    empty = True
    for part in parts:
        empty = False
        yield part.compute() if is_dask_array(part) else part
    if empty:
        raise invalid("x", owner, "at least one chunk of users", "an empty stream")


def _dask_blocks(x: Any) -> Iterator[Any]:
    """Row blocks of a Dask array (all columns of each), in order."""
    if x.ndim == 0:
        raise invalid("x", "iter_user_chunks", "a Dask array with a first axis over users", f"shape {x.shape}")
    start = 0
    for size in x.chunks[0]:
        yield x[start : start + size]
        start += size
