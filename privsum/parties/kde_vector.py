"""The shuffled KDE over a vector sum (`~privsum.kde.VectorSumKDE`) as a protocol the parties carry.

`VectorSumKDE` is post-processing of one vector sum of the users' LSQ features; when that sum is
a shuffle protocol (`~privsum.sums.SkellamVectorSum`, `~privsum.sums.ShuffledVectorSum`), its
client encodes a user's features with the sum's randomizer, the shuffler and the wire are the
sum's (positional for the Skellam shares), and the analyzer releases the `KDEFunction` of the
estimated sum. The central references (`CentralGaussianVectorSum`, `ExactVectorSum`) have no
shuffler and are refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from privsum._random import RNGLike
from privsum._validation import invalid
from privsum.kde.function import KDEFunction
from privsum.kde.vector import VectorSumKDE
from privsum.shuffle.histogram import MessageHistogram
from privsum.shuffle.messages import MessageBatch
from privsum.shuffle.protocol import DEFAULT_CAP_TAIL_PROBABILITY, SenderCap, ShuffleProtocol

__all__ = ["VectorSumKDEProtocol"]


class _OverVectorSum:
    """The parties' view of a release computed from one shuffled vector sum: the sum's instances, cap, alphabet and wire.

    A mixin for the deployable KDEs over a vector sum (`VectorSumKDEProtocol`,
    `~privsum.parties.JointClassKDEProtocol`): everything the shuffler and the analyzer check is
    the wrapped ``vector_sum``'s; only the client's encoding of a user's input and the analyzer's
    post-processing differ.
    """

    vector_sum: Any

    def _require_shuffled(self, owner: str) -> None:
        """Refuse a vector sum without a shuffler (a trusted-curator reference)."""
        if not isinstance(self.vector_sum, ShuffleProtocol):
            raise invalid("vector_sum", owner, "a shuffled vector sum (a ShuffleProtocol)", type(self.vector_sum).__name__)

    @property
    def alphabet(self) -> Any:
        """The vector sum's message values."""
        return self.vector_sum.alphabet

    def bits_per_message(self, n_instances: int = 1) -> int:
        """The vector sum's message width (no tag for the Skellam shares)."""
        return int(self.vector_sum.bits_per_message(n_instances))

    def wire_instances(self, n_instances: int | None = None) -> int:
        """The vector sum's coordinates."""
        return self.vector_sum.wire_instances(n_instances)

    def sender_cap(self, n_instances: int, exceed_probability: float) -> SenderCap:
        """The vector sum's cap."""
        return self.vector_sum.sender_cap(n_instances, exceed_probability)

    def per_sender_message_cap(self, tail_probability: float = DEFAULT_CAP_TAIL_PROBABILITY) -> int:
        """The vector sum's cap per coordinate."""
        return self.vector_sum.per_sender_message_cap(tail_probability)

    def check_participants(self, n_participants: int) -> None:
        """The vector sum's check (e.g. the Skellam modulus refuses more than ``n_users``)."""
        self.vector_sum.check_participants(n_participants)

    def view(self, messages: Any) -> Any:
        """The vector sum's view."""
        return self.vector_sum.view(messages)

    def _sum_for(self, view: Any, n_participants: int) -> np.ndarray:
        """The vector sum's estimate from the analyzer's view, for ``n_participants`` users."""
        return np.asarray(self.vector_sum.analyze_participants(view, n_participants), dtype=float)


@dataclass(frozen=True, kw_only=True)
class VectorSumKDEProtocol(_OverVectorSum, VectorSumKDE, ShuffleProtocol):
    """A `VectorSumKDE` over a shuffled vector sum, deployable by `privsum.parties` (wire name ``VectorSumKDE``).

    The same fields and calibration as `VectorSumKDE` (`from_privacy`, or `of` an existing one);
    `run` is `VectorSumKDE.run`. The parties see the vector sum's instances (the ``I Q`` feature
    coordinates), cap, alphabet and layout; a user's input is its point.

    Privacy:
        That of the vector sum on the features (`VectorSumKDE`); the client computes the
        features on the device, so the shuffler and the analyzer see only the sum's messages.

    Robustness:
        The vector sum's: for `~privsum.sums.SkellamVectorSum` shares modulo ``q``, a malicious
        sender moves the released coefficients anywhere in the decoding window (unbounded, see
        `VectorSumKDE.manipulation_bound`).

    Examples:
        >>> from privsum.lsq import IdentityFeatures
        >>> from privsum.parties import Deployment
        >>> from privsum.sums import SkellamVectorSum
        >>> kde = VectorSumKDEProtocol.from_privacy(family=IdentityFeatures(dimension=2), protocol=SkellamVectorSum,
        ...                                         epsilon=1.0, delta=1e-6, n_users=100)
        >>> deployment = Deployment(kde)
        >>> deployment.positional, deployment.n_instances
        (True, 2)
    """

    wire_name: ClassVar[str | None] = "VectorSumKDE"

    def __post_init__(self) -> None:
        super().__post_init__()
        self._require_shuffled("VectorSumKDEProtocol")

    @classmethod
    def of(cls, kde: VectorSumKDE) -> VectorSumKDEProtocol:
        """The deployable form of a `VectorSumKDE` (same family and vector sum)."""
        if not isinstance(kde, VectorSumKDE):
            raise invalid("kde", "VectorSumKDEProtocol.of", "a VectorSumKDE", type(kde).__name__)
        return cls(family=kde.family, vector_sum=kde.vector_sum)

    # ----------------------------------------------------------------- roles
    def encode_users(self, x: Any, *, rng: RNGLike = None) -> tuple[MessageBatch, np.ndarray]:
        """Each user's point to its features, then the vector sum's messages, user by user."""
        return self.vector_sum.encode_users(self.features(x), rng=rng)

    def randomize(self, x: Any, *, rng: RNGLike = None) -> MessageBatch:
        """The vector sum's randomizer on the users' features."""
        return self.vector_sum.randomize(self.features(x), rng=rng)

    def analyze(self, view: MessageHistogram | MessageBatch) -> KDEFunction:
        """The released function, for ``n_users`` participants."""
        return self.analyze_participants(view, self.n_users)

    def analyze_participants(self, view: Any, n_participants: int) -> KDEFunction:
        """The vector sum's estimate as the coefficients of the released `KDEFunction`, for ``n_participants`` users."""
        total = self._sum_for(view, n_participants)
        shape = (self.family.n_repetitions, self.family.n_coordinates)
        return KDEFunction._released(self.family, total.reshape(shape), n_participants,
                                     self.guarantee_for_participants(n_participants))
