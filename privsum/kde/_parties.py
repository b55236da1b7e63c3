"""What `privsum.parties` needs from the shuffled KDE: its instances, cap and one user's encoding."""

from __future__ import annotations

from typing import Any

import numpy as np

from privsum._random import RNGLike, as_generator
from privsum._validation import invalid
from privsum.shuffle.messages import MessageBatch
from privsum.shuffle.protocol import SenderCap


class KDEPartyHooks:
    """Mixed into `~privsum.kde.ShuffledKDE`: the ``I * Q`` bit-sum instances are the wire instances."""

    def wire_instances(self, n_instances: int | None = None) -> int:
        """The ``I * Q`` bit-sum instances (a different ``n_instances`` is refused)."""
        if n_instances is not None and n_instances != self.n_instances:  # type: ignore[attr-defined]
            raise invalid("n_instances", "ShuffledKDE", f"None or {self.n_instances}", n_instances)  # type: ignore[attr-defined]
        return self.n_instances  # type: ignore[attr-defined]

    def sender_cap(self, n_instances: int, exceed_probability: float) -> SenderCap:
        """The bit sum's cap over the ``I * Q`` instances."""
        return self.bitsum.sender_cap(n_instances, exceed_probability)  # type: ignore[attr-defined]

    def encode_users(self, x: Any, *, rng: RNGLike = None) -> tuple[MessageBatch, np.ndarray]:
        """Each user's point rounded to its ``I * Q`` bits, then the bit sum's messages, user by user."""
        generator = as_generator(rng, "ShuffledKDE")
        points = self.family.check_points(x, "x")  # type: ignore[attr-defined]
        bits = self.round_to_bits(points, generator)  # type: ignore[attr-defined]
        return self.bitsum.encode_users(bits, rng=generator)  # type: ignore[attr-defined]
