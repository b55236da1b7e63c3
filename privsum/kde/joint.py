"""Class-conditional KDEs and class counts from ONE vector sum over all classes: the label needs no separate round.

A user with point ``x`` and label ``c`` contributes a ``C x (I Q + 1)`` matrix that is zero except
row ``c``, which holds its features ``f(x)`` and the count weight ``w``. The sum's row ``c`` is then
``(sum_{u in c} f(x_u), w n_c)``: every class's KDE coefficients and its size, all protected by
the same noise.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from privsum._random import RNGLike, as_generator
from privsum._validation import check_array, check_integer, check_real, invalid, refusals_as
from privsum.kde.function import KDEFunction
from privsum.kde.scale import warn_if_degenerate_scale
from privsum.kde.vector import VectorSumReleases, check_family_and_protocol, check_vector_sum, feature_norm_bound
from privsum.lsq.base import LSQFamily, check_family
from privsum.lsq.inner_product import IdentityFeatures
from privsum.sums.central_vector import CentralGaussianVectorSum, ExactVectorSum
from privsum.sums.skellam import SkellamVectorSum

__all__ = ["JointClassKDE"]

#: Vector sums calibrated for labelled rows' exact replace-one shift (see the class's Privacy section).
_LABELLED_ROW_SUMS = (SkellamVectorSum, CentralGaussianVectorSum)

# Entries of the users' joint contributions built at once, and the most a non-streaming protocol gets.
_CHUNK_ENTRIES = 1 << 22
_MAX_DENSE_ENTRIES = 1 << 26
_STREAMING_SUMS = (CentralGaussianVectorSum, ExactVectorSum)


@dataclass(frozen=True, kw_only=True)
class JointClassKDE(VectorSumReleases):
    """Every class's KDE and noisy size from one vector sum of dimension ``C (I Q + 1)``.

    Args:
        family: the LSQ family (shared by all classes).
        n_classes: ``C``.
        vector_sum: a vector-sum protocol of dimension ``C (I Q + 1)`` with ``norm_bound`` at least
            ``sqrt(F^2 + w^2)``, ``F = feature_norm_bound(family)``.
        count_weight: ``w > 0``, the value of the count coordinate (`from_privacy` uses ``F / 2``).

    Privacy:
        That of ``vector_sum`` for neighbours that change one user's point **and label**: a
        user's row vector has norm at most ``sqrt(F^2 + w^2)`` (the protocol's ``norm_bound``), so
        the protocol's accounting for that bound covers any change of the pair. The label thus
        needs no separate round: the model and communication threats get the same guarantee.
        Under replace-one of the pair (point, label) the shift is exactly
        ``max(2F, sqrt(2) sqrt(F^2 + w^2))``: the same class moves the features by at most ``2F``;
        a new label takes ``(f(x), w)`` from one row and adds ``(f(x'), w)`` to another. `from_privacy`
        calibrates `~privsum.sums.SkellamVectorSum` (with the rounded analogue of this shift) and
        `~privsum.sums.CentralGaussianVectorSum` for it (their labelled rows,
        `privsum.sums.labelled_rows`, which refuse any other vector); other protocols use the
        generic ``2 sqrt(F^2 + w^2)``. The class sizes published are the noisy counts, rounded
        and floored at 1: post-processing.

    Utility:
        Row ``c``'s features estimate ``sum_{u in c} f(x_u)`` as in `VectorSumKDE`; the size
        estimate has standard deviation (protocol noise) divided by ``w``.

    Robustness:
        Every coefficient and ``w`` times every size move by at most the vector sum's
        `manipulation_bound` (`privsum.sums.SkellamVectorSum`: its whole decoding window).

    Examples:
        >>> from privsum.sums import CentralGaussianVectorSum
        >>> family = IdentityFeatures(dimension=2)
        >>> joint = JointClassKDE.from_privacy(
        ...     family=family, n_classes=2, protocol=CentralGaussianVectorSum, epsilon=1.0, delta=1e-6, n_users=800
        ... )
        >>> points = np.vstack([np.tile([[1.0, 0.0]], (400, 1)), np.tile([[0.0, 1.0]], (400, 1))])
        >>> densities, sizes = joint.run(points, np.repeat([0, 1], 400), rng=0)
        >>> [bool(abs(size - 400) < 100) for size in sizes]
        [True, True]
        >>> bool(densities[0](np.array([[1.0, 0.0]]))[0] > densities[1](np.array([[1.0, 0.0]]))[0])
        True
    """

    family: LSQFamily
    n_classes: int
    vector_sum: Any
    count_weight: float

    def __post_init__(self) -> None:
        owner = "JointClassKDE"
        check_family(self.family, owner)
        object.__setattr__(self, "n_classes", check_integer(self.n_classes, "n_classes", owner, low=2))
        object.__setattr__(self, "count_weight", check_real(self.count_weight, "count_weight", owner, low=0.0, low_open=True))
        dimension = (self.n_classes * self.row_width, "C (I Q + 1)")
        check_vector_sum(
            self.vector_sum, owner, dimension=dimension, norm_bound=self.row_norm_bound(self.family, self.count_weight)
        )

    @staticmethod
    def row_norm_bound(family: LSQFamily, count_weight: float) -> float:
        """``sqrt(F^2 + w^2)``: the largest norm of a user's contribution."""
        return math.hypot(feature_norm_bound(family), count_weight)

    @classmethod
    def from_privacy(
        cls,
        *,
        family: LSQFamily,
        n_classes: int,
        protocol: type,
        epsilon: float,
        delta: float,
        n_users: int,
        count_weight: float | None = None,
        neighbouring: str = "replace-one",
    ) -> JointClassKDE:
        """Calibrate ``protocol`` for the joint vectors (``count_weight`` default ``F / 2``) and their exact shift."""
        owner = "JointClassKDE.from_privacy"
        check_family_and_protocol(family, protocol, owner)
        n_classes = check_integer(n_classes, "n_classes", owner, low=2)
        weight = (
            feature_norm_bound(family) / 2
            if count_weight is None
            else check_real(count_weight, "count_weight", owner, low=0.0, low_open=True)
        )
        width = family.n_repetitions * family.n_coordinates + 1
        rows = {"label_rows": n_classes, "count_weight": weight} if issubclass(protocol, _LABELLED_ROW_SUMS) else {}
        bound_from = "family" if count_weight is None else "count_weight"  # the row norm bound is hypot(F, w)
        with refusals_as(owner, {"dimension": "family", "norm_bound": bound_from}):  # derived from these
            vector_sum = protocol.from_privacy(
                epsilon=epsilon,
                delta=delta,
                n_users=n_users,
                dimension=n_classes * width,
                norm_bound=cls.row_norm_bound(family, weight),
                neighbouring=neighbouring,
                **rows,
            )
        return cls(family=family, n_classes=n_classes, vector_sum=vector_sum, count_weight=weight)

    @property
    def row_width(self) -> int:
        """``I Q + 1``: one class's features and its count."""
        return self.family.n_repetitions * self.family.n_coordinates + 1

    def run(self, x: Any, labels: Any, *, rng: RNGLike = None) -> tuple[list[KDEFunction], np.ndarray]:
        """Each class's `KDEFunction` and its noisy size (an integer, at least 1).

        Args:
            x: ``(n, d)`` points.
            labels: ``n`` class indices in ``[0, C)``.
            rng: the protocol's randomness.
        """
        owner = "JointClassKDE"
        points = self.family.check_points(x, "x")
        warn_if_degenerate_scale(self.family, points, owner)  # a KernelScaleWarning, as in ShuffledKDE.run
        try:
            classes = np.asarray(labels)
        except (TypeError, ValueError) as error:
            raise invalid("labels", owner, "a 1-D array of class indices", f"an unconvertible input ({error})") from None
        if classes.shape != (points.shape[0],) or points.shape[0] == 0:
            raise invalid(
                "labels", owner, f"one class index per point ({points.shape[0]}, at least one)", f"shape {classes.shape}"
            )
        if not (np.issubdtype(classes.dtype, np.integer) and classes.min() >= 0 and classes.max() < self.n_classes):
            raise invalid("labels", owner, f"integer class indices in [0, {self.n_classes})", classes[:5].tolist())
        return self.releases(self._sum(points, classes, as_generator(rng, owner)), points.shape[0])

    def releases(self, total: Any, n_participants: int) -> tuple[list[KDEFunction], np.ndarray]:
        """Each class's `KDEFunction` and noisy size from the estimated joint sum of ``n_participants`` users.

        Post-processing of the sum: row ``c``'s features are class ``c``'s coefficients, its count
        coordinate over ``count_weight``, rounded and floored at 1, its size.
        """
        owner = "JointClassKDE.releases"
        total = check_array(total, "total", owner, ndim=1)
        if total.size != self.n_classes * self.row_width:
            expected = f"the {self.n_classes * self.row_width} coordinates C (I Q + 1)"
            raise invalid("total", owner, expected, f"shape {total.shape}")
        n_participants = check_integer(n_participants, "n_participants", owner, low=1)
        total = total.astype(float).reshape(self.n_classes, self.row_width)
        sizes = np.maximum(1, np.rint(total[:, -1] / self.count_weight)).astype(np.int64)
        guarantee = self.guarantee_for_participants(n_participants)
        shape = (self.family.n_repetitions, self.family.n_coordinates)
        densities = [
            KDEFunction._released(self.family, total[c, :-1].reshape(shape), int(sizes[c]), guarantee)
            for c in range(self.n_classes)
        ]
        return densities, sizes

    def labelled_rows(self, points: np.ndarray, classes: np.ndarray) -> np.ndarray:
        """The users' ``C (I Q + 1)`` contributions, one row per user (``points`` and their class indices in ``[0, C)``)."""
        owner = "JointClassKDE.labelled_rows"
        points = self.family.check_points(points, "points")
        classes = check_array(classes, "classes", owner, ndim=1, low=0, high=self.n_classes - 1, integer=True)
        if classes.shape[0] != points.shape[0] or points.shape[0] == 0:
            raise invalid("classes", owner, f"one class index per point ({points.shape[0]}, at least one)",
                          f"shape {classes.shape}")
        return np.concatenate(list(self._rows(points, classes.astype(np.int64))))

    def _rows(self, points: np.ndarray, classes: np.ndarray) -> Iterator[np.ndarray]:
        """The users' ``C (I Q + 1)`` contributions, a bounded number of entries at a time."""
        step = max(1, _CHUNK_ENTRIES // (self.n_classes * self.row_width))
        identity = isinstance(self.family, IdentityFeatures) and self.family.n_repetitions == 1
        for start in range(0, points.shape[0], step):
            chunk = points[start : start + step]
            features = chunk if identity else self.family.f(chunk).reshape(chunk.shape[0], -1)
            users = np.arange(chunk.shape[0])
            rows = np.zeros((chunk.shape[0], self.n_classes, self.row_width))
            rows[users, classes[start : start + step], :-1] = features
            rows[users, classes[start : start + step], -1] = self.count_weight
            yield rows.reshape(chunk.shape[0], -1)

    def _sum(self, points: np.ndarray, classes: np.ndarray, generator: np.random.Generator) -> np.ndarray:
        """The protocol's estimate of the joint sum, streaming the rows when the protocol can."""
        if isinstance(self.vector_sum, SkellamVectorSum):
            return skellam_fast_sum(self.vector_sum, self._rows(points, classes), generator)
        if callable(getattr(self.vector_sum, "run_streamed", None)):
            return self.vector_sum.run_streamed(self._rows(points, classes), rng=generator)
        if isinstance(self.vector_sum, _STREAMING_SUMS):
            return self.vector_sum.run(self._rows(points, classes), rng=generator)
        if points.shape[0] * self.n_classes * self.row_width > _MAX_DENSE_ENTRIES:
            raise invalid(
                "x",
                "JointClassKDE",
                f"at most {_MAX_DENSE_ENTRIES} entries n C (I Q + 1) for a protocol that cannot stream",
                points.shape,
            )
        return self.vector_sum.run(self.labelled_rows(points, classes), rng=generator)


def skellam_fast_sum(protocol: SkellamVectorSum, chunks: Iterator[np.ndarray], generator: np.random.Generator) -> np.ndarray:
    """`SkellamVectorSum.run`'s fast path over chunks of users: memory bounded by one chunk.

    Each user's conditional rounding is independent of the others', so rounding chunk by chunk and
    summing is the fast path's rounded sum; the noise ``Sk(k mu / n)`` for the ``k`` participants
    is then added once and the total decoded modulo ``q``, exactly as `SkellamVectorSum.run` does
    (with one chunk the two are the same computation, bit for bit: a test checks it). The
    share-level paths are too large here: ``C (I Q + 1) m`` messages per user.
    """
    total = np.zeros(protocol.dimension, dtype=np.int64)
    seen = 0
    for chunk in chunks:
        total += protocol.round_vectors(chunk, rng=generator).sum(axis=0)
        seen += chunk.shape[0]
    protocol.check_participants(seen)
    return protocol.decode(protocol.noisy_residues(total, seen, generator))
