"""Message batches: what the users' randomizers send, tagged with the instance they belong to."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from privsum._validation import as_array, check_integer, check_integer_array, invalid

__all__ = ["MessageBatch"]


def checked_record(record: Any, owner: str, arrays: tuple[str, ...]) -> tuple[int, list[np.ndarray]]:
    """A message record's ``n_instances`` (at least 1) and its integer ``arrays``, checked in that order."""
    n_instances = check_integer(record.n_instances, "n_instances", owner, low=1)
    return n_instances, [check_integer_array(getattr(record, name), name, owner) for name in arrays]


def check_instance_ids(instances: np.ndarray, n_instances: int, owner: str) -> None:
    """Raise unless every instance id lies in ``[0, n_instances)``."""
    if instances.size and not (instances.min() >= 0 and instances.max() < n_instances):
        raise invalid("instances", owner, f"ids in [0, {n_instances})", f"range [{instances.min()}, {instances.max()}]")


@dataclass(frozen=True, eq=False)
class MessageBatch:
    """Messages of many users, each an integer ``value`` tagged with an ``instance`` id.

    A message reveals nothing else: no sender, no order (after shuffling). ``n_instances`` is
    the number of independent protocol instances the batch may address.

    Examples:
        >>> batch = MessageBatch(np.array([0, 1, 1]), np.array([1, 0, 1]), n_instances=2)
        >>> batch.n_messages
        3
    """

    instances: np.ndarray
    values: np.ndarray
    n_instances: int

    def __post_init__(self) -> None:
        owner = "MessageBatch"
        n_instances, (instances, values) = checked_record(self, owner, ("instances", "values"))
        if instances.shape != values.shape:
            raise invalid("values", owner, "1-D and of the same length as instances", f"shapes {instances.shape}, {values.shape}")
        check_instance_ids(instances, n_instances, owner)
        object.__setattr__(self, "instances", instances)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "n_instances", n_instances)

    @property
    def n_messages(self) -> int:
        """Number of messages in the batch."""
        return int(self.values.size)

    def take(self, order: np.ndarray) -> MessageBatch:
        """The batch reordered (or subset) by the index array ``order``."""
        owner = "MessageBatch.take"
        order = as_array(order, "order", owner)
        if order.size == 0:
            order = order.astype(np.int64)
        if not (order.dtype == bool or np.issubdtype(order.dtype, np.integer)):
            raise invalid("order", owner, "an integer index array or a boolean mask", f"dtype {order.dtype}")
        try:
            instances, values = self.instances[order], self.values[order]
        except IndexError as error:
            raise invalid("order", owner, f"indices of the {self.n_messages} messages", str(error)) from None
        return MessageBatch(instances, values, self.n_instances)

    @classmethod
    def concatenate(cls, batches: Sequence[MessageBatch]) -> MessageBatch:
        """All messages of several batches addressing the same instances."""
        try:
            batches = tuple(batches)
        except TypeError:
            raise invalid("batches", "MessageBatch.concatenate", "a non-empty sequence of MessageBatch", batches) from None
        if len(batches) == 0 or not all(isinstance(b, MessageBatch) for b in batches):
            raise invalid("batches", "MessageBatch.concatenate", "a non-empty sequence of MessageBatch", batches)
        sizes = {b.n_instances for b in batches}
        if len(sizes) != 1:
            raise invalid("batches", "MessageBatch.concatenate", "batches with equal n_instances", sorted(sizes))
        return cls(
            np.concatenate([b.instances for b in batches]),
            np.concatenate([b.values for b in batches]),
            sizes.pop(),
        )
