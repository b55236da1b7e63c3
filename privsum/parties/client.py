"""The client: one user's input to that user's upload (bytes), on the user's device."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from privsum._random import RNGLike, as_generator
from privsum._validation import as_array, invalid
from privsum.parties.deployment import Deployment
from privsum.shuffle.protocol import SenderCap
from privsum.wire.format import WireSpec
from privsum.wire.packing import pack_fields, pack_rows, packed_size

__all__ = ["Client"]

# Redraws of users whose random message count exceeded the cap before giving up (each happens
# with probability at most the deployment's exceed_probability).
_MAX_REDRAWS = 64


class Client:
    """Encodes users' inputs as uploads of a `Deployment` (the protocol's local randomizer, then the wire format).

    Args:
        deployment: the configuration (protocol, instances, cap, fingerprint).
        rng: ``None`` (default) draws from the operating system's CSPRNG (`privsum._random`'s
            ``"secure"`` ChaCha20 stream, needs ``privsum[secure]``); a seed only for tests.

    Privacy:
        `encode` sees one user's input only. `encode_many` runs the same randomizer on each row
        independently (a simulator of many devices). A user whose random number of messages
        would exceed the per-sender cap is redrawn; the analyzer accounts for it in delta (see
        `~privsum.shuffle.protocol.SenderCap`).

    Examples:
        >>> from privsum.bitsum import RRBitSum
        >>> deployment = Deployment(RRBitSum(n_users=100, flip_probability=0.1, delta=1e-6), n_instances=4)
        >>> upload = Client(deployment, rng=0).encode([1, 0, 0, 1])
        >>> len(upload)  # a 51-byte header, then 4 messages of 2 + 1 bits
        53
    """

    def __init__(self, deployment: Deployment, *, rng: RNGLike = None) -> None:
        if not isinstance(deployment, Deployment):
            raise invalid("deployment", "Client", "a Deployment", type(deployment).__name__)
        self.deployment = deployment
        self._generator = as_generator("secure" if rng is None else rng, "Client")

    def encode(self, user_input: Any) -> bytes:
        """One user's upload: ``user_input`` is that user's row of the protocol's input (e.g. its bits)."""
        return self.encode_many(as_array(user_input, "user_input", "Client.encode")[None, ...])[0]

    def encode_many(self, inputs: Any) -> list[bytes]:
        """One upload per row of ``inputs`` (the first axis is over users), each user randomized independently."""
        inputs = as_array(inputs, "inputs", "Client.encode_many")
        if inputs.ndim == 0 or inputs.shape[0] == 0:
            raise invalid("inputs", "Client.encode_many", "an array with at least one user (first axis)", inputs.shape)
        uploads: list[bytes | None] = [None] * inputs.shape[0]
        pending = np.arange(inputs.shape[0])
        for _ in range(_MAX_REDRAWS):
            drawn = self._draw(inputs[pending])
            within = drawn.within_cap(self.deployment.cap)
            if pending.size == inputs.shape[0] and within.all():  # the usual case: every user's first draw fits
                return drawn.uploads(np.flatnonzero(within))
            for position, upload in zip(pending[within], drawn.uploads(np.flatnonzero(within)), strict=True):
                uploads[position] = upload
            pending = pending[~within]
            if pending.size == 0:
                return uploads  # type: ignore[return-value]
        raise invalid("inputs", "Client.encode_many", "users whose messages fit the per-sender cap", f"{pending.size} users")

    def _draw(self, inputs: np.ndarray) -> _Fields | _SharedInstances:
        """Every user's messages, drawn by the protocol's randomizer, ready to pack."""
        deployment = self.deployment
        batch, counts = deployment.protocol.encode_users(inputs, rng=self._generator)
        if batch.n_instances != deployment.n_instances:
            raise invalid("inputs", "Client", f"inputs for {deployment.n_instances} instances", f"{batch.n_instances} instances")
        spec, indices = deployment.spec, deployment.value_indices(batch.values)
        if spec.positional:
            return _positional_order(spec, batch.instances, indices, counts)
        shared = _shared_instances(batch.instances, counts)
        if shared is not None:
            return _SharedInstances(spec, shared, indices.reshape(counts.size, shared.size))
        # the batch is this client's own: its instance array becomes the fields
        return _Fields(spec, spec.fields(batch.instances, indices, overwrite=True), counts)


def _checks_per_instance(cap: SenderCap) -> bool:
    """Whether a user's draw may exceed the per-instance cap while fitting the total (random counts only)."""
    return cap.exceed_probability != 0.0 and cap.per_instance < cap.total


@dataclass(frozen=True)
class _Fields:
    """Users' messages as logical fields, listed user by user, and each user's count (any layout, any counts)."""

    spec: WireSpec
    fields: np.ndarray
    counts: np.ndarray

    def within_cap(self, cap: SenderCap) -> np.ndarray:
        """Which users' messages respect the cap (per instance and in total)."""
        within = self.counts <= cap.total
        if not _checks_per_instance(cap):
            return within
        n_users, n_instances = self.counts.size, self.spec.n_instances
        users = np.repeat(np.arange(n_users), self.counts)
        per_instance = np.bincount(users * n_instances + self.spec.split(self.fields)[0], minlength=n_users * n_instances)
        return within & (per_instance.reshape(n_users, n_instances).max(axis=1) <= cap.per_instance)

    def uploads(self, kept: np.ndarray) -> list[bytes]:
        """The uploads of users ``kept`` (all users with equally many messages are packed at once)."""
        spec, fields, counts = self.spec, self.fields, self.counts
        if np.all(counts == counts[0]):  # every upload the same size: one array of uploads
            rows = fields.reshape(counts.size, -1)
            return _with_header(spec, rows.shape[1], pack_rows(_kept_rows(rows, kept), spec.field_bits))
        return _unequal_uploads(spec, fields, counts, kept)


@dataclass(frozen=True)
class _SharedInstances:
    """Users who all send messages to the same sequence of instances: that sequence and each user's value indices.

    The usual case of a fixed message count (e.g. RR: one message per instance, in instance
    order) and of the positional layout; the tags are then packed once for all users (`pack_rows`).
    """

    spec: WireSpec
    instances: np.ndarray  # one user's instance of each message, the same for every user
    indices: np.ndarray  # (users, messages): each user's value indices

    def within_cap(self, cap: SenderCap) -> np.ndarray:
        """Every user or none respects the cap (they send equally many messages to each instance)."""
        fits = self.instances.size <= cap.total
        if fits and _checks_per_instance(cap) and self.instances.size:
            fits = int(np.bincount(self.instances).max()) <= cap.per_instance
        return np.full(self.indices.shape[0], fits)

    def uploads(self, kept: np.ndarray) -> list[bytes]:
        """The uploads of users ``kept``: tags (tagged layout) packed once, value indices per user."""
        spec, count, indices = self.spec, self.instances.size, _kept_rows(self.indices, kept)
        if spec.positional:  # the instance is implied by the position: the value indices alone
            return _with_header(spec, count, pack_rows(indices, spec.value_bits))
        return _with_header(spec, count, pack_rows(indices, spec.value_bits, tags=self.instances, tag_bits=spec.tag_bits))


def _shared_instances(instances: np.ndarray, counts: np.ndarray) -> np.ndarray | None:
    """The first user's instance sequence if every user's is the same (and counts are equal), else ``None``."""
    if not np.all(counts == counts[0]):
        return None
    rows = instances.reshape(counts.size, -1)
    return rows[0] if np.array_equal(rows, np.broadcast_to(rows[0], rows.shape)) else None


def _kept_rows(rows: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """``rows[kept]``, without a copy when every row is kept (the usual case)."""
    return rows if kept.size == rows.shape[0] else rows[kept]


def _with_header(spec: WireSpec, count: int, payloads: np.ndarray) -> list[bytes]:
    """Uploads of ``count`` messages each: the header, then a row of packed payloads (one row per user)."""
    header, size = spec.upload_header(count), payloads.shape[1]
    if size == 0:  # users without messages (random counts can be zero): header-only uploads
        return [header] * payloads.shape[0]
    data = payloads.tobytes()
    return [header + data[start : start + size] for start in range(0, len(data), size)]


def _unequal_uploads(spec: WireSpec, fields: np.ndarray, counts: np.ndarray, kept: np.ndarray) -> list[bytes]:
    """The uploads of users ``kept``, of different counts, packed in one call.

    Each user's fields are padded with zero fields to a multiple of 8 (so that every user starts on
    a byte), all are packed at once, and each user's upload is its header and the first
    ``ceil(m w / 8)`` bytes of its segment (the rest are the padding fields' zero bits).
    """
    width = spec.field_bits
    prefix = spec.upload_header(0)[:-4]
    padded = -(-counts // 8) * 8
    starts, padded_starts = np.cumsum(counts) - counts, np.cumsum(padded) - padded
    buffer = np.zeros(int(padded.sum()), dtype=fields.dtype)
    buffer[np.arange(fields.size) + np.repeat(padded_starts - starts, counts)] = fields
    packed = pack_fields(buffer, width)
    byte_starts = padded_starts * width // 8
    sizes = [packed_size(int(count), width) for count in counts]
    return [prefix + int(counts[user]).to_bytes(4, "big") + packed[byte_starts[user] : byte_starts[user] + sizes[user]]
            for user in kept]


def _positional_order(spec: WireSpec, instances: np.ndarray, indices: np.ndarray, counts: np.ndarray) -> _SharedInstances:
    """Each user's messages listed instance by instance (the positional layout), ``c`` per instance, or refused."""
    expected = spec.positional_instances(1)
    if not np.all(counts == expected.size):
        raise invalid("inputs", "Client", f"users of {expected.size} messages each (the positional layout)", counts)
    rows, indices = instances.reshape(counts.size, expected.size), indices.reshape(counts.size, expected.size)
    if not np.array_equal(rows, np.broadcast_to(expected, rows.shape)):
        order = np.argsort(rows, axis=1, kind="stable")
        rows, indices = np.take_along_axis(rows, order, axis=1), np.take_along_axis(indices, order, axis=1)
        if not np.array_equal(rows, np.broadcast_to(expected, rows.shape)):
            raise invalid("inputs", "Client", f"{spec.positional} messages per instance (the positional layout)", "other counts")
    return _SharedInstances(spec, expected, indices)
