"""The classifier's joint class sum (`~privsum.kde.JointClassKDE`) as a protocol the parties carry.

With ``label_privacy="joint"``, `~privsum.apps.ShuffledKDEClassifier` releases every class's KDE
and size from one vector sum of dimension ``C (I Q + 1)``: a user's point and label are one
labelled-row vector, so there is no label round. `JointClassKDEProtocol` is that release between
parties: the client turns one user's point and class index into its labelled row and encodes it
with the vector sum's randomizer; the shuffler, the cap and the wire are the vector sum's
(positional for the Skellam shares); the analyzer post-processes the estimated sum into the
classes' `KDEFunction`\\ s and sizes, as `JointClassKDE.run` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from privsum._random import RNGLike
from privsum._validation import check_array, invalid, refusals_as
from privsum.kde.function import KDEFunction
from privsum.kde.joint import JointClassKDE
from privsum.parties.kde_vector import _OverVectorSum
from privsum.shuffle.histogram import MessageHistogram
from privsum.shuffle.messages import MessageBatch
from privsum.shuffle.protocol import ShuffleProtocol

__all__ = ["JointClassKDEProtocol"]


@dataclass(frozen=True, kw_only=True)
class JointClassKDEProtocol(_OverVectorSum, JointClassKDE, ShuffleProtocol):
    """A `JointClassKDE` over a shuffled vector sum, deployable by `privsum.parties` (wire name ``JointClassKDE``).

    The same fields and calibration as `JointClassKDE` (`from_privacy`, or `of` an existing
    one); `run` is `JointClassKDE.run` (points and labels apart). A user's input to the parties
    is one row: its point's ``d`` coordinates, then its class index in ``[0, C)`` (`inputs`
    builds the rows); the client turns it into the ``C (I Q + 1)`` labelled-row vector on the
    device. The analyzer's estimate is ``(densities, sizes)`` as `JointClassKDE.run` returns them.

    Privacy:
        That of `JointClassKDE`: the vector sum's guarantee for neighbours that change one
        user's point **and label** (the label is inside the sum; no label round). The shuffler
        and the analyzer see only the vector sum's messages.

    Robustness:
        The per-sender cap is the vector sum's (`~privsum.sums.SkellamVectorSum`: ``n_shares``
        shares on each of the ``C (I Q + 1)`` coordinates, positional). ``k`` malicious senders
        move every coefficient, and ``count_weight`` times every class size, by at most the
        vector sum's `manipulation_bound`; for the Skellam shares modulo ``q`` that is the whole
        decoding window ``(q - 1) / gamma`` from one sender (unbounded in effect: a sender's
        shares are not proven to encode a labelled row).

    Examples:
        >>> from privsum.lsq import IdentityFeatures
        >>> from privsum.parties import Client, Deployment
        >>> from privsum.sums import SkellamVectorSum
        >>> joint = JointClassKDEProtocol.from_privacy(family=IdentityFeatures(dimension=2), n_classes=2,
        ...                                            protocol=SkellamVectorSum, epsilon=1.0, delta=1e-6, n_users=100)
        >>> deployment = Deployment(joint)
        >>> deployment.positional, deployment.n_instances  # 2 classes x (2 features + 1 count)
        (True, 6)
        >>> upload = Client(deployment, rng=0).encode([0.6, 0.0, 1])  # the point (0.6, 0), class 1
        >>> deployment.spec.decode_upload(upload).size == 6 * joint.vector_sum.n_shares
        True
    """

    wire_name: ClassVar[str | None] = "JointClassKDE"

    def __post_init__(self) -> None:
        super().__post_init__()
        self._require_shuffled("JointClassKDEProtocol")

    @classmethod
    def of(cls, joint: JointClassKDE) -> JointClassKDEProtocol:
        """The deployable form of a `JointClassKDE` (same family, classes, vector sum and count weight)."""
        if not isinstance(joint, JointClassKDE):
            raise invalid("joint", "JointClassKDEProtocol.of", "a JointClassKDE", type(joint).__name__)
        return cls(family=joint.family, n_classes=joint.n_classes, vector_sum=joint.vector_sum,
                   count_weight=joint.count_weight)

    @staticmethod
    def inputs(points: Any, classes: Any) -> np.ndarray:
        """The parties' input rows: each point, then its class index as a last column (checked by the client)."""
        owner = "JointClassKDEProtocol.inputs"
        points = check_array(points, "points", owner, ndim=2)
        classes = check_array(classes, "classes", owner, ndim=1, low=0, integer=True)
        if classes.shape[0] != points.shape[0]:
            raise invalid("classes", owner, f"one class index per point ({points.shape[0]})", f"shape {classes.shape}")
        return np.column_stack([points, classes])

    def _labelled(self, x: Any) -> np.ndarray:
        """Input rows (point, class index) as the users' labelled rows (`JointClassKDE.labelled_rows`), or refused as ``x``."""
        owner = "JointClassKDEProtocol"
        rows = check_array(x, "x", owner, ndim=2)
        width = self.family.dimension + 1
        if rows.shape[0] == 0 or rows.shape[1] != width:
            raise invalid("x", owner, f"rows of {width} numbers: a point, then its class index (at least one row)",
                          f"shape {rows.shape}")
        with refusals_as(owner, {"points": "x", "classes": "x"}):
            return self.labelled_rows(rows[:, :-1], rows[:, -1])

    # ----------------------------------------------------------------- roles
    def encode_users(self, x: Any, *, rng: RNGLike = None) -> tuple[MessageBatch, np.ndarray]:
        """Each user's (point, class index) to its labelled row, then the vector sum's messages, user by user."""
        return self.vector_sum.encode_users(self._labelled(x), rng=rng)

    def randomize(self, x: Any, *, rng: RNGLike = None) -> MessageBatch:
        """The vector sum's randomizer on the users' labelled rows."""
        return self.vector_sum.randomize(self._labelled(x), rng=rng)

    def analyze(self, view: MessageHistogram | MessageBatch) -> tuple[list[KDEFunction], np.ndarray]:
        """The classes' densities and sizes, for ``n_users`` participants."""
        return self.analyze_participants(view, self.n_users)

    def analyze_participants(self, view: Any, n_participants: int) -> tuple[list[KDEFunction], np.ndarray]:
        """The vector sum's estimate as every class's `KDEFunction` and size (`JointClassKDE.releases`)."""
        return self.releases(self._sum_for(view, n_participants), n_participants)
