"""The KDE over a vector-sum protocol: one private sum of the users' LSQ features, no 1-bit rounding.

The released coefficients of a KDE are ``F_ij = sum_u f_i(x_u)_j`` (Wagner, ICLR 2025,
section 3): a single vector sum of the users' flattened features. `VectorSumKDE` computes it with
any vector-sum protocol (the shuffled Skellam sum, or the central Gaussian and exact references of
`privsum.sums.central_vector`), whose L2 accounting replaces Algorithm 1's per-instance bit sums and
their composition.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from privsum._delegation import delegated
from privsum._random import RNGLike, as_generator
from privsum._validation import check_integer, invalid, refusals_as
from privsum.accounting.events import PrivacyEvent
from privsum.accounting.guarantee import PrivacyGuarantee
from privsum.kde.function import KDEFunction
from privsum.kde.scale import warn_if_degenerate_scale
from privsum.lsq.base import LSQFamily, check_family
from privsum.lsq.inner_product import IdentityFeatures

__all__ = ["FEATURE_NORM_SLACK", "VectorSumKDE", "VectorSumProtocol", "bits_per_message", "feature_norm_bound"]

#: Relative slack on the features' L2 bound: norm-bounded families accept inputs up to
#: ``norm_bound * (1 + 1e-6)`` (vectors normalised in float32), so the vector sum is set up for that bound.
FEATURE_NORM_SLACK = 1e-6


@runtime_checkable
class VectorSumProtocol(Protocol):
    """What `VectorSumKDE` needs from a vector-sum protocol (duck-typed)."""

    dimension: int
    norm_bound: float

    @property
    def guarantee(self) -> PrivacyGuarantee: ...

    @property
    def event(self) -> PrivacyEvent: ...

    def event_for_participants(self, n_participants: int) -> PrivacyEvent: ...

    def run(self, x: Any, *, rng: RNGLike = None) -> np.ndarray: ...


def feature_norm_bound(family: LSQFamily) -> float:
    """An upper bound on ``||(f_1(x), ..., f_I(x))||_2`` over the family's accepted inputs.

    `IdentityFeatures`: ``sqrt(I) B``; any other family: ``sqrt(I S) R`` (at most ``S`` non-zero
    coordinates of size at most ``R`` per repetition), e.g. ``sqrt(2 I)`` for random Fourier
    features and ``sqrt(I d) B`` for random signs. Both times ``1 + FEATURE_NORM_SLACK``.

    Examples:
        >>> from privsum.lsq import RandomFourierFeatures
        >>> round(feature_norm_bound(RandomFourierFeatures(dimension=3, n_repetitions=8)), 5)
        4.0
    """
    check_family(family, "feature_norm_bound")
    if isinstance(family, IdentityFeatures):
        bound = math.sqrt(family.n_repetitions) * family.norm_bound
    else:
        bound = math.sqrt(family.n_repetitions * family.sparsity) * family.bound
    return bound * (1.0 + FEATURE_NORM_SLACK)


def check_vector_sum(vector_sum: Any, owner: str, *, dimension: tuple[int, str], norm_bound: float) -> None:
    """``vector_sum`` is a `VectorSumProtocol` of ``dimension`` (its value, and how it is written) and ``norm_bound`` at least."""
    if not isinstance(vector_sum, VectorSumProtocol):
        raise invalid("vector_sum", owner, "a vector-sum protocol (run, guarantee, event, dimension, norm_bound)", vector_sum)
    width, written = dimension
    if vector_sum.dimension != width:
        raise invalid("vector_sum", owner, f"a protocol of dimension {written} = {width}", f"dimension {vector_sum.dimension}")
    if not vector_sum.norm_bound >= norm_bound:
        raise invalid(
            "vector_sum", owner, f"a protocol with norm_bound >= {norm_bound:.6g}", f"norm_bound {vector_sum.norm_bound}"
        )


def check_family_and_protocol(family: Any, protocol: Any, owner: str) -> None:
    """A ``from_privacy``'s ``family`` is an `LSQFamily` and its ``protocol`` a vector-sum class with ``from_privacy``."""
    check_family(family, owner)
    if not (isinstance(protocol, type) and callable(getattr(protocol, "from_privacy", None))):
        raise invalid("protocol", owner, "a vector-sum protocol class with from_privacy", protocol)
    accepted = inspect.signature(protocol.from_privacy).parameters
    if not {"norm_bound", "neighbouring"} <= accepted.keys():
        raise invalid("protocol", owner, "a vector sum of L2-bounded vectors (from_privacy with norm_bound and "
                      "neighbouring, e.g. SkellamVectorSum)", protocol.__name__)


def bits_per_message(protocol: Any) -> int:
    """A protocol's message width, whether it is a property or a method."""
    value = protocol.bits_per_message
    return int(value() if callable(value) else value)


class VectorSumReleases:
    """What a KDE released from one vector sum reports: the vector sum's own (the KDE is post-processing of the sum)."""

    vector_sum: VectorSumProtocol

    @property
    def n_users(self) -> int:
        """Users the vector sum is set up for."""
        return int(self.vector_sum.n_users)

    guarantee = delegated("vector_sum.guarantee", "The vector sum's guarantee (the KDE is post-processing of the sum).")
    event = delegated("vector_sum.event", "The vector sum's event (for an accountant).")

    def event_for_participants(self, n_participants: int) -> PrivacyEvent:
        """The vector sum's event when ``n_participants`` users take part."""
        n_participants = check_integer(n_participants, "n_participants", type(self).__name__, low=1)
        return self.vector_sum.event_for_participants(n_participants)

    def guarantee_for_participants(self, n_participants: int) -> PrivacyGuarantee:
        """The guarantee achieved when ``n_participants`` users take part."""
        n_participants = check_integer(n_participants, "n_participants", type(self).__name__, low=1)
        if n_participants >= self.n_users:
            return self.guarantee
        event = self.event_for_participants(n_participants)
        return event.guarantee

    @property
    def expected_messages_per_user(self) -> float:
        """The vector sum's messages per user."""
        return float(self.vector_sum.expected_messages_per_user)

    def bits_per_message(self) -> int:
        """The vector sum's message width."""
        return bits_per_message(self.vector_sum)

    def manipulation_bound(self, n_malicious: int, **options: Any) -> float:
        """The largest shift of one coordinate of the sum by ``n_malicious`` senders: the vector sum's `manipulation_bound`.

        A coefficient of the released function, or (`JointClassKDE`) ``count_weight`` times a
        class size.

        Raises:
            NotImplementedError: the vector sum states no manipulation bound.
        """
        bound = getattr(self.vector_sum, "manipulation_bound", None)
        if bound is None:
            raise NotImplementedError(f"{type(self.vector_sum).__name__} states no manipulation bound")
        return float(bound(n_malicious, **options))


@dataclass(frozen=True, kw_only=True)
class VectorSumKDE(VectorSumReleases):
    """Kernel density estimation from one private vector sum of the users' LSQ features.

    A user with point ``x`` contributes its flattened features ``(f_1(x), ..., f_I(x))`` (length
    ``I Q``, L2 norm at most `feature_norm_bound`) to ``vector_sum``; the analyzer publishes the
    estimated sum as the coefficients ``F_ij`` of a `KDEFunction`, queryable any number of times.
    For the inner-product kernel, `IdentityFeatures` (``I = 1``) makes ``F`` the class's vector sum
    and the KDE the exact centroid score ``x^T y`` (no projection error); `RandomSigns` remains
    usable (and pays its Johnson-Lindenstrauss error). For the Gaussian kernel, random Fourier
    features have ``||f(x)||_2 <= sqrt(2 I)``.

    Args:
        family: the LSQ family (public randomness from its seed).
        vector_sum: a vector-sum protocol of dimension ``I * Q`` whose ``norm_bound`` is at least
            ``feature_norm_bound(family)`` (e.g. `privsum.sums.CentralGaussianVectorSum`).

    Privacy:
        That of ``vector_sum`` (its neighbouring relation and threat model): one user's point
        enters only through its feature vector, whose norm the family bounds, and the released
        function is post-processing of the sum. No per-coordinate rounding or composition.
        With fewer users than the protocol is set up for, the released function carries
        `guarantee_for_participants`.

    Utility:
        ``E[F] = sum_u f(x_u)`` for an unbiased vector sum; each coefficient has the protocol's
        per-coordinate variance (for the Gaussian kernel also the random-feature error of
        `privsum.lsq.RandomFourierFeatures`).

    Robustness:
        The coefficients are the vector sum's coordinates: `manipulation_bound` is the vector
        sum's (for `privsum.sums.SkellamVectorSum`, its whole decoding window: no useful bound).

    References:
        Wagner, *Learning from End User Data with Shuffled Differential Privacy over
        Kernel Densities*, ICLR 2025 (the KDE as a sum of features).

    Examples:
        >>> from privsum.sums import CentralGaussianVectorSum
        >>> family = IdentityFeatures(dimension=2)
        >>> kde = VectorSumKDE.from_privacy(
        ...     family=family, protocol=CentralGaussianVectorSum, epsilon=1.0, delta=1e-6, n_users=400
        ... )
        >>> points = np.tile([[0.6, 0.8]], (400, 1))
        >>> density = kde.run(points, rng=0)
        >>> bool(abs(density(np.array([[0.6, 0.8]]))[0] - 1.0) < 0.2)
        True
    """

    family: LSQFamily
    vector_sum: Any

    def __post_init__(self) -> None:
        owner = "VectorSumKDE"
        check_family(self.family, owner)
        width = self.family.n_repetitions * self.family.n_coordinates
        check_vector_sum(self.vector_sum, owner, dimension=(width, "I * Q"), norm_bound=feature_norm_bound(self.family))

    @classmethod
    def from_privacy(
        cls,
        *,
        family: LSQFamily,
        protocol: type,
        epsilon: float,
        delta: float,
        n_users: int,
        neighbouring: str = "replace-one",
    ) -> VectorSumKDE:
        """Calibrate ``protocol`` (a vector-sum class with ``from_privacy``) for the family's features."""
        owner = "VectorSumKDE.from_privacy"
        check_family_and_protocol(family, protocol, owner)
        with refusals_as(owner, {"dimension": "family", "norm_bound": "family"}):  # derived from the family
            vector_sum = protocol.from_privacy(
                epsilon=epsilon,
                delta=delta,
                n_users=n_users,
                dimension=family.n_repetitions * family.n_coordinates,
                norm_bound=feature_norm_bound(family),
                neighbouring=neighbouring,
            )
        return cls(family=family, vector_sum=vector_sum)

    def features(self, x: Any) -> np.ndarray:
        """The users' flattened features ``(n, I * Q)`` (points checked by the family)."""
        points = self.family.check_points(x, "x")
        if points.shape[0] == 0:
            raise invalid("x", "VectorSumKDE", "at least one user", "no users")
        if isinstance(self.family, IdentityFeatures) and self.family.n_repetitions == 1:
            return points
        return self.family.f(points).reshape(points.shape[0], -1)

    def run(self, x: Any, *, rng: RNGLike = None) -> KDEFunction:
        """Run the vector sum on the users' features and release the `KDEFunction`.

        A `KernelScaleWarning` says when the points' scale defeats the Gaussian kernel, as in `ShuffledKDE.run`.
        """
        warn_if_degenerate_scale(self.family, x, "VectorSumKDE")
        features = self.features(x)
        total = np.asarray(self.vector_sum.run(features, rng=as_generator(rng, "VectorSumKDE")), dtype=float)
        n = features.shape[0]
        shape = (self.family.n_repetitions, self.family.n_coordinates)
        return KDEFunction._released(self.family, total.reshape(shape), n, self.guarantee_for_participants(n))
