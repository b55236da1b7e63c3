"""Central baselines for vector sums: the Gaussian mechanism with L2 sensitivity, and the exact sum.

These are not shuffle protocols: users hand their vectors to a trusted curator. They share the
interface of the shuffled vector sums (``from_privacy(epsilon=, delta=, n_users=, dimension=,
norm_bound=, neighbouring=)``, ``run``, ``variance``, ``event``, ``guarantee``,
``event_for_participants``, ``expected_messages_per_user``, ``bits_per_message``), so that
`privsum.kde.VectorSumKDE` and the classifier can swap them in as the reference a shuffled
protocol is measured against.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from privsum._delegation import delegated
from privsum._random import RNGLike, as_generator
from privsum._validation import check_array, check_delta, check_epsilon, check_integer, check_real, invalid
from privsum.accounting.events import GuaranteeEvent, PrivacyEvent
from privsum.accounting.gaussian import GaussianEvent, gaussian_epsilon, gaussian_sigma
from privsum.accounting.guarantee import Neighbouring, PrivacyGuarantee
from privsum.shuffle.robustness import check_malicious
from privsum.sums.labelled_rows import check_label_parameters, check_labelled_rows

__all__ = ["NORM_RTOL", "CentralGaussianVectorSum", "ExactVectorSum", "check_vectors", "l2_sensitivity", "sum_vectors"]

#: Bits of one coordinate sent to the curator (a float64).
_VALUE_BITS = 64
#: Relative tolerance on a computed L2 norm (float rounding of the norm itself). Vectors up to
#: ``norm_bound * (1 + NORM_RTOL)`` are accepted, and the sensitivity is computed for that bound.
NORM_RTOL = 1e-12


def l2_sensitivity(norm_bound: float, neighbouring: Neighbouring | str) -> float:
    """The L2 sensitivity of ``sum_i x_i`` over vectors of norm at most ``norm_bound``.

    ``2 B`` under replace-one (``x_i - x_i'``), ``B`` under add-remove and zero-out (``x_i`` alone).

    Examples:
        >>> l2_sensitivity(1.0, "replace-one"), l2_sensitivity(1.0, "zero-out")
        (2.0, 1.0)
    """
    relation = Neighbouring.parse(neighbouring, "l2_sensitivity")
    bound = check_real(norm_bound, "norm_bound", "l2_sensitivity", low=0.0, low_open=True)
    return 2.0 * bound if relation == Neighbouring.REPLACE_ONE else bound


def sum_vectors(
    x: Any, owner: str, *, dimension: int, norm_bound: float, labelled: tuple[int, float] | None = None
) -> np.ndarray:
    """The exact sum of the checked vectors in ``x``: one ``(n, d)`` array or an iterator of such chunks.

    ``labelled=(C, w)``: every vector must also be a labelled row (`privsum.sums.labelled_rows`).
    """
    if not isinstance(x, Iterator):
        return check_vectors(x, owner, dimension=dimension, norm_bound=norm_bound, labelled=labelled).sum(axis=0)
    total = np.zeros(dimension)
    seen = 0
    for chunk in x:
        vectors = check_vectors(chunk, owner, dimension=dimension, norm_bound=norm_bound, labelled=labelled)
        total += vectors.sum(axis=0)
        seen += vectors.shape[0]
    if seen == 0:
        raise invalid("x", owner, "at least one user", "an empty stream")
    return total


def check_vectors(
    x: Any, owner: str, *, dimension: int, norm_bound: float, labelled: tuple[int, float] | None = None
) -> np.ndarray:
    """Users' vectors as a finite float ``(n, dimension)`` array with every L2 norm at most ``norm_bound``.

    Nothing is clipped: a longer vector raises, naming ``x``.
    """
    array = check_array(x, "x", owner, ndim=2).astype(float, copy=False)
    if array.shape[0] == 0 or array.shape[1] != dimension:
        raise invalid("x", owner, f"an array of shape (n_users >= 1, {dimension})", f"shape {array.shape}")
    largest = float(np.sqrt(np.max(np.einsum("ij,ij->i", array, array))))
    if not largest <= norm_bound * (1.0 + NORM_RTOL):
        raise invalid("x", owner, f"vectors of L2 norm at most norm_bound={norm_bound:g}", f"a vector of norm {largest!r}")
    if labelled is not None:
        check_labelled_rows(array, labelled[0], labelled[1], owner)
    return array


class CuratedVectorSum:
    """What the curated vector references share: every user sends its ``d`` coordinates to a curator."""

    n_users: int
    dimension: int
    norm_bound: float
    event: PrivacyEvent

    def _check_shape(self, owner: str) -> None:
        """Validate (and store as checked) ``n_users``, ``dimension`` and ``norm_bound``, as the private protocols do."""
        object.__setattr__(self, "n_users", check_integer(self.n_users, "n_users", owner, low=1))
        object.__setattr__(self, "dimension", check_integer(self.dimension, "dimension", owner, low=1))
        object.__setattr__(self, "norm_bound", check_real(self.norm_bound, "norm_bound", owner, low=0.0, low_open=True))

    def event_for_participants(self, n_participants: int) -> PrivacyEvent:
        """The same `event`: the curator's noise does not depend on how many users take part."""
        check_integer(n_participants, "n_participants", type(self).__name__, low=1)
        return self.event

    @property
    def expected_messages_per_user(self) -> float:
        """``d``: one message per coordinate to the curator."""
        return float(self.dimension)

    def bits_per_message(self) -> int:
        """Coordinate tag plus a float64 value."""
        return math.ceil(math.log2(self.dimension)) + _VALUE_BITS if self.dimension > 1 else _VALUE_BITS

    def manipulation_bound(self, n_malicious: int, *, cap: int | None = None) -> float:
        """``k B (1 + NORM_RTOL)``: a malicious user submits any vector the curator's norm check accepts.

        The shift of every coordinate (and its L2 norm) is at most that; ``cap`` is accepted for
        symmetry with the shuffle protocols (one vector per user).
        """
        owner = f"{type(self).__name__}.manipulation_bound"
        n_malicious = check_malicious(n_malicious, owner)
        if cap is not None:
            check_integer(cap, "cap", owner, low=1)
        return n_malicious * self.norm_bound * (1 + NORM_RTOL)


@dataclass(frozen=True, kw_only=True)
class CentralGaussianVectorSum(CuratedVectorSum):
    """The Gaussian mechanism on a vector sum: a trusted curator releases ``sum_i x_i + N(0, sigma^2 I_d)``.

    Args:
        n_users: users the protocol is set up for (the guarantee does not depend on it).
        dimension: ``d``.
        norm_bound: ``B``: every user's vector must have L2 norm at most ``B`` (checked, up to a
            relative ``NORM_RTOL = 1e-12`` for the rounding of the computed norm, which the
            sensitivity includes; nothing is clipped).
        sigma: noise standard deviation per coordinate.
        delta: the delta the headline `guarantee` is stated at, in ``(0, 1)``.
        neighbouring: ``"replace-one"`` (sensitivity ``2B``), ``"add-remove"`` or ``"zero-out"`` (``B``).
        label_rows: ``C >= 2`` for labelled-row vectors (`privsum.sums.labelled_rows`; others
            raise): replace-one then changes a user's point and label, with the exact sensitivity
            ``max(2 sqrt(B^2 - w^2), sqrt(2) B)``; ``0`` (default) for plain vectors.
        count_weight: ``w``, the count coordinate of labelled rows.

    Privacy:
        Central model, trusted curator (the users' vectors are not protected from it). The
        release is the Gaussian mechanism with L2 sensitivity `sensitivity`; `guarantee` is
        Balle & Wang's exact ``(epsilon, delta)`` profile of it at ``delta`` (epsilon rounded up).
        The noise comes from numpy's floating-point normal sampler, which only approximates a
        Gaussian: the exact guarantee holds for the ideal mechanism (see the limitations page).
        The guarantee does not depend on the number of users.

    Utility:
        Unbiased; every coordinate has variance ``sigma^2`` (`variance`).

    References:
        Balle & Wang, *Improving the Gaussian Mechanism for Differential Privacy: Analytical
        Calibration and Optimal Denoising*, ICML 2018.

    Examples:
        >>> protocol = CentralGaussianVectorSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=3, dimension=2, norm_bound=1.0)
        >>> round(protocol.sigma, 4), protocol.guarantee.epsilon <= 1.0
        (8.4494, True)
        >>> protocol.run(np.array([[0.6, 0.8], [1.0, 0.0], [0.0, -1.0]]), rng=0).shape
        (2,)
    """

    n_users: int
    dimension: int
    norm_bound: float
    sigma: float
    delta: float
    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE
    label_rows: int = 0
    count_weight: float = 0.0

    def __post_init__(self) -> None:
        owner = type(self).__name__
        self._check_shape(owner)
        object.__setattr__(self, "sigma", check_real(self.sigma, "sigma", owner, low=0.0, low_open=True))
        object.__setattr__(self, "delta", check_delta(self.delta, owner, allow_zero=False))
        object.__setattr__(self, "neighbouring", Neighbouring.parse(self.neighbouring, owner))
        rows = check_label_parameters(self.label_rows, self.count_weight, self.dimension, self.norm_bound, owner)
        object.__setattr__(self, "label_rows", rows[0])
        object.__setattr__(self, "count_weight", rows[1])

    @classmethod
    def from_privacy(
        cls,
        *,
        epsilon: float,
        delta: float,
        n_users: int,
        dimension: int,
        norm_bound: float,
        neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
        label_rows: int = 0,
        count_weight: float = 0.0,
    ) -> CentralGaussianVectorSum:
        """The least noise (Balle & Wang's exact calibration) meeting ``(epsilon, delta)``.

        Raises:
            InvalidParameterError: a parameter is out of range (``delta`` must be positive).
        """
        owner = f"{cls.__name__}.from_privacy"
        epsilon = check_epsilon(epsilon, owner)
        delta = check_delta(delta, owner, allow_zero=False)
        relation = Neighbouring.parse(neighbouring, owner)
        bound = check_real(norm_bound, "norm_bound", owner, low=0.0, low_open=True)
        common = {"n_users": n_users, "dimension": dimension, "norm_bound": bound, "delta": delta, "neighbouring": relation}
        common |= {"label_rows": label_rows, "count_weight": count_weight}
        sigma = gaussian_sigma(epsilon, delta, sensitivity=cls(sigma=1.0, **common).sensitivity)
        return cls(sigma=sigma, **common)

    @property
    def sensitivity(self) -> float:
        """L2 sensitivity of the sum under `neighbouring`, for the accepted norms ``norm_bound * (1 + NORM_RTOL)``.

        Labelled rows under replace-one: ``max(2 sqrt(B^2 - w^2), sqrt(2) B)`` (same row: the
        features move; two rows: one row loses ``(f, w)``, another gains ``(f', w)``).
        """
        bound = self.norm_bound * (1.0 + NORM_RTOL)
        if self.label_rows and self.neighbouring == Neighbouring.REPLACE_ONE:
            features = math.sqrt(max(0.0, bound * bound - self.count_weight**2))
            return math.nextafter(max(2.0 * features, math.sqrt(2.0) * bound), math.inf)
        return l2_sensitivity(bound, self.neighbouring)

    @cached_property
    def guarantee(self) -> PrivacyGuarantee:
        """``(epsilon, delta)`` with the exact epsilon at `delta` (rounded up), under `neighbouring`."""
        epsilon = gaussian_epsilon(self.delta, sigma=self.sigma, sensitivity=self.sensitivity)
        return PrivacyGuarantee(max(epsilon, 1e-300), self.delta, self.neighbouring)

    @property
    def event(self) -> PrivacyEvent:
        """A `GaussianEvent` (exact headline; Gaussian PLD for composition)."""
        return GaussianEvent(self.sigma, self.sensitivity, self.guarantee)

    def variance(self) -> float:
        """Per-coordinate variance of the released sum: ``sigma^2``."""
        return self.sigma**2

    def run(self, x: Any, *, rng: RNGLike = None) -> np.ndarray:
        """``sum_i x_i + N(0, sigma^2 I_d)`` for the ``(n, d)`` vectors ``x`` (norms checked).

        ``x`` may also be an iterator of ``(m, d)`` chunks of users; the noise is added once.
        """
        owner = type(self).__name__
        labelled = (self.label_rows, self.count_weight) if self.label_rows else None
        total = sum_vectors(x, owner, dimension=self.dimension, norm_bound=self.norm_bound, labelled=labelled)
        generator = as_generator(rng, owner)
        return total + generator.normal(0.0, self.sigma, size=self.dimension)


@dataclass(frozen=True, kw_only=True)
class ExactVectorSum(CuratedVectorSum):
    """The non-private reference: the exact ``sum_i x_i`` (no privacy, ``epsilon = inf``).

    Args:
        n_users: users taking part.
        dimension: ``d``.
        norm_bound: ``B``, checked as in the private protocols (so the same inputs are accepted).

    Examples:
        >>> ExactVectorSum(n_users=2, dimension=2, norm_bound=1.0).run(np.array([[0.6, 0.8], [1.0, 0.0]])).tolist()
        [1.6, 0.8]
    """

    n_users: int
    dimension: int
    norm_bound: float = 1.0

    def __post_init__(self) -> None:
        owner = type(self).__name__
        self._check_shape(owner)

    @classmethod
    def from_privacy(
        cls,
        *,
        epsilon: float = math.inf,
        delta: float = 0.0,
        n_users: int,
        dimension: int,
        norm_bound: float,
        neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
    ) -> ExactVectorSum:
        """The exact sum; ``epsilon`` must be ``inf`` (this protocol gives no privacy)."""
        owner = f"{cls.__name__}.from_privacy"
        if not (isinstance(epsilon, float) and epsilon == math.inf):
            raise invalid("epsilon", owner, "inf (the exact sum gives no privacy)", epsilon)
        Neighbouring.parse(neighbouring, owner)
        return cls(n_users=n_users, dimension=dimension, norm_bound=norm_bound)

    @property
    def event(self) -> PrivacyEvent:
        """No privacy: ``epsilon = inf``."""
        return GuaranteeEvent(PrivacyGuarantee(math.inf))

    guarantee = delegated("event.guarantee", "No privacy: ``epsilon = inf``.")

    def variance(self) -> float:
        """No noise: ``0``."""
        return 0.0

    def run(self, x: Any, *, rng: RNGLike = None) -> np.ndarray:
        """The exact ``sum_i x_i`` (``x`` an array or an iterator of chunks; ``rng`` is unused)."""
        return sum_vectors(x, type(self).__name__, dimension=self.dimension, norm_bound=self.norm_bound)
