"""The client: one user's input to that user's upload (bytes), on the user's device."""

from __future__ import annotations

from typing import Any

import numpy as np

from privsum._random import RNGLike, as_generator
from privsum._validation import as_array, invalid
from privsum.parties.deployment import Deployment
from privsum.wire.packing import pack_fields, packed_size

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
            fields, counts = self._fields(inputs[pending])
            within = self._within_cap(fields, counts)
            if pending.size == inputs.shape[0] and within.all():  # the usual case: every user's first draw fits
                return self._uploads(fields, counts, within)
            for position, upload in zip(pending[within], self._uploads(fields, counts, within), strict=True):
                uploads[position] = upload
            pending = pending[~within]
            if pending.size == 0:
                return uploads  # type: ignore[return-value]
        raise invalid("inputs", "Client.encode_many", "users whose messages fit the per-sender cap", f"{pending.size} users")

    def _fields(self, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Wire fields of every user's messages (user by user) and each user's count."""
        deployment = self.deployment
        batch, counts = deployment.protocol.encode_users(inputs, rng=self._generator)
        if batch.n_instances != deployment.n_instances:
            raise invalid("inputs", "Client", f"inputs for {deployment.n_instances} instances", f"{batch.n_instances} instances")
        # the batch is this client's own: its instance array becomes the fields
        fields = deployment.spec.fields(batch.instances, deployment.value_indices(batch.values), overwrite=True)
        return (_positional_order(deployment.spec, fields, counts) if deployment.spec.positional else fields), counts

    def _within_cap(self, fields: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Which users' messages respect the cap (per instance and in total)."""
        cap, spec = self.deployment.cap, self.deployment.spec
        within = counts <= cap.total
        if cap.exceed_probability == 0.0 or cap.per_instance >= cap.total:
            return within
        users = np.repeat(np.arange(counts.size), counts)
        per_instance = np.bincount(users * spec.n_instances + spec.split(fields)[0], minlength=counts.size * spec.n_instances)
        return within & (per_instance.reshape(counts.size, spec.n_instances).max(axis=1) <= cap.per_instance)

    def _uploads(self, fields: np.ndarray, counts: np.ndarray, keep: np.ndarray) -> list[bytes]:
        """The uploads of the kept users (all users with equally many messages are packed at once)."""
        return _uploads(self.deployment.spec, fields, counts, np.flatnonzero(keep))


def _uploads(spec: Any, fields: np.ndarray, counts: np.ndarray, kept: np.ndarray) -> list[bytes]:
    """The uploads of users ``kept``, packed in one call.

    Each user's fields are padded with zero fields to a multiple of 8 (so that every user starts on
    a byte), all are packed at once, and each user's upload is its header and the first
    ``ceil(m w / 8)`` bytes of its segment (the rest are the padding fields' zero bits).
    """
    width = spec.field_bits
    prefix = spec.upload_header(0)[:-4]
    if spec.positional:  # every user's fields in instance order (`_positional_order`): the value indices alone
        return _equal_uploads(prefix, (fields & ((1 << spec.value_bits) - 1)).reshape(counts.size, -1)[kept], width)
    if np.all(counts == counts[0]):  # every upload the same size: one array of uploads, one bytes object
        return _equal_uploads(prefix, fields.reshape(counts.size, -1)[kept], width)
    padded = -(-counts // 8) * 8
    starts, padded_starts = np.cumsum(counts) - counts, np.cumsum(padded) - padded
    buffer = np.zeros(int(padded.sum()), dtype=fields.dtype)
    buffer[np.arange(fields.size) + np.repeat(padded_starts - starts, counts)] = fields
    packed = pack_fields(buffer, width)
    byte_starts = padded_starts * width // 8
    sizes = [packed_size(int(count), width) for count in counts]
    return [prefix + int(counts[user]).to_bytes(4, "big") + packed[byte_starts[user] : byte_starts[user] + sizes[user]]
            for user in kept]


def _equal_uploads(prefix: bytes, rows: np.ndarray, width: int) -> list[bytes]:
    """Uploads of users with ``m`` fields each (one row per user), built as one array and cut."""
    n_users, count = rows.shape
    if count == 0:  # users without messages (random counts can be zero): header-only uploads
        return [prefix + bytes(4)] * n_users
    if count % 8:
        padded = np.zeros((n_users, -(-count // 8) * 8), dtype=rows.dtype)
        padded[:, :count] = rows
        rows = padded
    packed = pack_fields(rows.reshape(-1), width)  # each user's segment: whole bytes, padding fields last
    header = prefix + count.to_bytes(4, "big")
    size, segment = packed_size(count, width), len(packed) // n_users
    return [header + packed[start : start + size] for start in range(0, len(packed), segment)]


def _positional_order(spec: Any, fields: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Each user's logical fields listed instance by instance (the positional layout), ``c`` per instance, or refused."""
    expected = spec.positional_instances(1)
    if not np.all(counts == expected.size):
        raise invalid("inputs", "Client", f"users of {expected.size} messages each (the positional layout)", counts)
    rows = fields.reshape(counts.size, expected.size)
    instances = rows >> spec.value_bits
    if not np.array_equal(instances, np.broadcast_to(expected, rows.shape)):
        rows = np.take_along_axis(rows, np.argsort(instances, axis=1, kind="stable"), axis=1)
        if not np.array_equal(rows >> spec.value_bits, np.broadcast_to(expected, rows.shape)):
            raise invalid("inputs", "Client", f"{spec.positional} messages per instance (the positional layout)", "other counts")
    return rows.reshape(-1)
