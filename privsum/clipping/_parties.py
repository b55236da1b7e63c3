"""What `privsum.parties` needs from the one-round clipped sum: its instances, cap and one user's encoding."""

from __future__ import annotations

from typing import Any

import numpy as np

from privsum._random import RNGLike, as_generator
from privsum._validation import invalid
from privsum.shuffle.messages import MessageBatch
from privsum.shuffle.protocol import SenderCap


class ClippedPartyHooks:
    """Mixed into `~privsum.clipping.ClippedSum`: wire instance ``column (log2 U + 1) + j`` is sub-domain ``j`` of a column."""

    def wire_instances(self, n_instances: int | None = None) -> int:
        """``k (log2 U + 1)`` for ``k`` columns: a multiple of the number of sub-domains (default: one column)."""
        width = self.n_sub_domains  # type: ignore[attr-defined]
        if n_instances is None:
            return width
        if not (isinstance(n_instances, int) and n_instances >= width and n_instances % width == 0):
            raise invalid("n_instances", type(self).__name__, f"columns times {width} (the sub-domains)", n_instances)
        return n_instances

    def sender_cap(self, n_instances: int, exceed_probability: float) -> SenderCap:
        """Every sub-domain instance's cap (the largest per instance), the exceed probability split evenly among them."""
        width = self.n_sub_domains  # type: ignore[attr-defined]
        caps = [protocol.sender_cap(n_instances // width, exceed_probability / width)
                for protocol in self.instances]  # type: ignore[attr-defined]
        return merged_caps(caps)

    def encode_users(self, x: Any, *, rng: RNGLike = None) -> tuple[MessageBatch, np.ndarray]:
        """Each sub-domain instance's messages of each user, merged user by user."""
        generator = as_generator(rng, type(self).__name__)
        values = self._inputs(x, generator)  # type: ignore[attr-defined]
        width = self.n_sub_domains  # type: ignore[attr-defined]
        parts = [(protocol, column, lambda local, j=j: local * width + j)
                 for j, (protocol, column) in enumerate(self._pairs(values))]  # type: ignore[attr-defined]
        return merged_users(parts, values.shape[0], values.shape[1] * width, generator)


class ClippedVectorPartyHooks:
    """Mixed into `~privsum.clipping.ClippedVectorSum`: its ``2 d'`` signed columns are one `ClippedSum`'s columns."""

    def wire_instances(self, n_instances: int | None = None) -> int:
        """``2 d' (log2 U + 1)`` (a different ``n_instances`` is refused)."""
        wire = 2 * self.padded_dimension * self.coordinate.n_sub_domains  # type: ignore[attr-defined]
        if n_instances is not None and n_instances != wire:
            raise invalid("n_instances", type(self).__name__, f"None or {wire}", n_instances)
        return wire

    def sender_cap(self, n_instances: int, exceed_probability: float) -> SenderCap:
        """The coordinate clipped sum's cap over every column."""
        return self.coordinate.sender_cap(n_instances, exceed_probability)  # type: ignore[attr-defined]

    def encode_users(self, x: Any, *, rng: RNGLike = None) -> tuple[MessageBatch, np.ndarray]:
        """Each user's vector rotated and rounded to ``2 d'`` columns, then the coordinate clipped sum's messages."""
        generator = as_generator(rng, type(self).__name__)
        columns = self._signed_columns(x, generator)  # type: ignore[attr-defined]
        return self.coordinate.encode_users(columns, rng=generator)  # type: ignore[attr-defined]


class SparseAggregationPartyHooks:
    """Mixed into `~privsum.clipping.SparseVectorAggregation`: the level counts, then each level's ``d`` coordinates."""

    def wire_instances(self, n_instances: int | None = None) -> int:
        """``L + L d`` (a different ``n_instances`` is refused)."""
        wire = self._n_instances  # type: ignore[attr-defined]
        if n_instances is not None and n_instances != wire:
            raise invalid("n_instances", type(self).__name__, f"None or {wire}", n_instances)
        return wire

    def sender_cap(self, n_instances: int, exceed_probability: float) -> SenderCap:
        """The count's and every level's caps (the largest per instance), the exceed probability split evenly."""
        share = exceed_probability / (1 + self.n_levels)  # type: ignore[attr-defined]
        caps = [self.count.sender_cap(self.n_levels, share)]  # type: ignore[attr-defined]
        caps += [level.sender_cap(self.dimension, share) for level in self.levels]  # type: ignore[attr-defined]
        return merged_caps(caps)

    def encode_users(self, x: Any, *, rng: RNGLike = None) -> tuple[MessageBatch, np.ndarray]:
        """Each instance protocol's messages of each user, merged user by user."""
        generator = as_generator(rng, type(self).__name__)
        values = self._inputs(x)  # type: ignore[attr-defined]
        offsets = [0, *self._offsets()]  # type: ignore[attr-defined]
        parts = [(protocol, columns, lambda local, offset=offset: local + offset)
                 for (protocol, columns), offset in zip(self._pairs(values), offsets, strict=True)]  # type: ignore[attr-defined]
        return merged_users(parts, values.shape[0], self._n_instances, generator)  # type: ignore[attr-defined]


def merged_caps(caps: list[SenderCap]) -> SenderCap:
    """The cap of several instance protocols run side by side: the largest per instance, the totals and chances added."""
    return SenderCap(max(cap.per_instance for cap in caps), sum(cap.total for cap in caps),
                     min(1.0, sum(cap.exceed_probability for cap in caps)))


def merged_users(parts: list, n_users: int, n_instances: int, generator: np.random.Generator) -> tuple[MessageBatch, np.ndarray]:
    """Every part's ``(protocol, inputs, to_wire)`` messages, each user's listed together, and each user's count.

    ``to_wire`` maps the part's own instance ids to the composite's wire instances.
    """
    users, instances, message_values = [], [], []
    for protocol, inputs, to_wire in parts:
        batch, counts = protocol.encode_users(inputs, rng=generator)
        users.append(np.repeat(np.arange(n_users), counts))
        instances.append(to_wire(batch.instances))
        message_values.append(batch.values)
    owners = np.concatenate(users)
    order = np.argsort(owners, kind="stable")
    batch = MessageBatch(np.concatenate(instances)[order], np.concatenate(message_values)[order], n_instances=n_instances)
    return batch, np.bincount(owners, minlength=n_users)
