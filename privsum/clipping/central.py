"""Central-DP references for the clipped sums: what a trusted curator would release.

* `CentralClippedSum` (a given ``tau``, or the non-private oracle ``tau = max``) and
  `PrivateCentralClippedSum` (``tau`` chosen privately, then clipping: the fair central-DP comparison).
* `CentralClippedVectorSum` and `CentralSparseAggregation` (Gaussian noise via OpenDP).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from privsum import _validation as checks
from privsum._deprecation import renamed
from privsum._random import RNGLike, as_generator
from privsum.accounting import GuaranteeEvent, PrivacyGuarantee
from privsum.clipping.instances import check_noise_ratio
from privsum.shuffle.noise import sample_discrete_laplace

__all__ = [
    "CENTRAL_SAMPLERS",
    "CentralClippedSum",
    "CentralClippedVectorSum",
    "CentralSparseAggregation",
    "PrivateCentralClippedSum",
]

# --------------------------------------------------------------------------- central-DP reference
CENTRAL_SAMPLERS = ("opendp", "numpy")


@dataclass(frozen=True, kw_only=True)
class CentralClippedSum:
    """Central-DP reference: clip each value to ``[0, tau]``, sum, add discrete Laplace noise of ratio ``e^{-epsilon/tau}``.

    Args:
        epsilon: the pure epsilon for the given ``tau``.
        clipping_bound: ``tau`` (a positive integer), or ``None`` for the **oracle** ``tau = max_i x_i``.
        noise_source: ``"opendp"`` (OpenDP's exact discrete Laplace sampler; not seedable) or ``"numpy"``
            (`privsum.shuffle.noise.sample_discrete_laplace` with ``rng``, reproducible).
        sampler: deprecated name of ``noise_source``.

    Privacy:
        Replace-one, central (a trusted curator sees every value). With a given ``tau``: pure
        ``epsilon``-DP (sensitivity ``tau``; the OpenDP path checks its privacy map). With the
        oracle ``tau`` the threshold is read from the data: **not differentially private**; it is the
        reference "clipping at the true maximum" and its `guarantee` is ``epsilon = inf``. The
        guarantee holds under zero-out too, with the same noise (``guarantee.under("zero-out")``).

    Utility:
        Bias ``-sum_i max(x_i - tau, 0)``; noise variance ``2a/(1-a)^2`` with ``a = e^{-epsilon/tau}``.

    Examples:
        >>> central = CentralClippedSum(epsilon=1.0, clipping_bound=100, noise_source="numpy")
        >>> bool(abs(central.release(np.full(1_000, 50), rng=0) - 50_000) < 2_000)
        True
        >>> CentralClippedSum(epsilon=1.0).guarantee.epsilon
        inf
    """

    epsilon: float
    clipping_bound: int | None = None
    noise_source: str = "opendp"
    sampler: str | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        owner = type(self).__name__
        if self.sampler is not None:
            object.__setattr__(
                self, "noise_source", renamed("sampler", self.sampler, "noise_source", self.noise_source, "opendp", owner)
            )
            object.__setattr__(self, "sampler", None)
        epsilon = checks.check_epsilon(self.epsilon, owner)
        if self.clipping_bound is not None:
            bound = checks.check_integer(self.clipping_bound, "clipping_bound", owner, low=1)
            check_noise_ratio(epsilon, bound, "clipping_bound", owner)
        checks.check_choice(self.noise_source, "noise_source", owner, CENTRAL_SAMPLERS)

    @property
    def guarantee(self) -> PrivacyGuarantee:
        """``(epsilon, 0)`` replace-one for a given ``tau``; no guarantee (``inf``) for the oracle."""
        return PrivacyGuarantee(self.epsilon if self.clipping_bound is not None else math.inf, 0.0)

    @property
    def event(self) -> GuaranteeEvent:
        return GuaranteeEvent(self.guarantee)

    def release(self, x: Any, *, rng: RNGLike = None) -> float:
        """The noisy clipped sum of the integers ``x`` (``(n,)``, non-negative)."""
        owner = type(self).__name__
        values = checks.check_array(x, "x", owner, ndim=1, low=0, integer=True).astype(np.int64)
        bound = int(values.max()) if self.clipping_bound is None else self.clipping_bound
        bound = max(bound, 1)
        total = int(np.minimum(values, bound).sum())
        if self.noise_source == "numpy":
            return float(total + sample_discrete_laplace(as_generator(rng, owner), math.exp(-self.epsilon / bound), 1)[0])
        return float(_opendp_discrete_laplace(total, bound, self.epsilon))


def _opendp_discrete_laplace(total: int, sensitivity: int, epsilon: float) -> int:
    import opendp.prelude as dp

    dp.enable_features("contrib")
    measurement = dp.m.make_laplace(dp.atom_domain(T="i64"), dp.absolute_distance(T="i64"), scale=sensitivity / epsilon)
    if not measurement.map(sensitivity) <= epsilon * (1 + 1e-12):
        raise checks.invalid("epsilon", "CentralClippedSum", "met by OpenDP's privacy map", measurement.map(sensitivity))
    return int(measurement(total))


@dataclass(frozen=True, kw_only=True)
class PrivateCentralClippedSum:
    """Central-DP clipping with a privately chosen threshold: the fair central reference for `ClippedSum`.

    A central analogue of Dong et al. (CCS 2024)'s gold standard (Dong & Yi 2023 find ``tau`` privately, then
    clip; their exact selection rule is not restated in Dong et al. (CCS 2024), so this is *a* mechanism of that
    type, not theirs). The candidates are the same ``tau_j = 2^j``, ``j = 0..log2 U``, as
    `ClippedSum`'s. With ``c_j = #{i : x_i > 2^j}`` (values that ``tau_j`` clips), ``c_{-1} = n``
    and the target rank ``k = ceil(2 log((log2 U + 1)/beta) / epsilon_1)``, the exponential
    mechanism picks ``j`` with probability proportional to ``exp(epsilon_1 u_j / 2)``, ``u_j =
    -max(c_j - k, 0) - max(k - c_{j-1}, 0)``: the score is ``0`` exactly when ``tau_j`` clips at
    most ``k`` values and ``tau_{j-1}`` at least ``k``; the release is ``sum_i min(x_i, 2^j) +
    DLap(e^{-epsilon_2 / 2^j})``, ``epsilon_1 = selection_fraction * epsilon``, ``epsilon_2 =
    epsilon - epsilon_1``. A candidate above the data (``c_{j-1} = 0``) scores ``-k``, so ``tau``
    exceeds ``2 max_i x_i`` with probability at most ``beta`` when ``n >= k``.

    Args:
        epsilon: the total (pure) epsilon.
        domain: ``U``, a power of two; inputs are integers in ``{0..U}``.
        failure_probability: ``beta`` in the target rank ``k``.
        selection_fraction: share of ``epsilon`` spent on choosing ``tau``, in ``(0, 1)``.

    Privacy:
        Replace-one, central (a trusted curator), pure ``epsilon``-DP, ``delta = 0``. When one
        value changes, ``c_j`` and ``c_{j-1}`` each move by at most 1, and when both move they
        move the same way (a value crossing ``2^j`` also crosses ``2^{j-1}``), so the two terms of
        ``u_j`` offset and ``u_j`` has sensitivity 1: the exponential mechanism is
        ``epsilon_1``-DP; given ``tau``, the clipped sum changes by at most ``tau`` and the
        discrete Laplace release is ``epsilon_2``-DP; basic (adaptive) composition gives
        ``epsilon_1 + epsilon_2``. Zero-out pairs are replace-one pairs, and replacing a value by
        ``0`` moves every ``c_j`` by at most 1 and the clipped sum by at most ``tau`` as well, so
        the same mechanism is the zero-out reference (``guarantee.under("zero-out")``): no central
        mechanism of this type gains from the narrower relation, unlike `ClippedSum`, whose two
        touched sub-domains become one. The pure ``epsilon`` claim is for the exact mechanism:
        both steps sample with numpy floating-point arithmetic (float64 selection probabilities,
        a numpy discrete Laplace), so the realised distributions are correct only up to rounding
        (a reference, not a hardened release; see the limitations page); the exact output law is
        checked in the tests.

    Utility:
        Bias ``-sum_i max(x_i - tau, 0)`` (clipping, not dropping); noise variance ``2a/(1-a)^2``
        with ``a = e^{-epsilon_2/tau}``.

    References:
        Dong & Yi, "Universal private estimators", PODS 2023 (Dong et al. (CCS 2024)'s [DY23]); McSherry &
        Talwar, "Mechanism design via differential privacy", FOCS 2007 (exponential mechanism).

    Examples:
        >>> central = PrivateCentralClippedSum(epsilon=1.0, domain=2**10)
        >>> x = np.arange(1_000) % 50
        >>> probabilities = central.selection_probabilities(x)
        >>> int(np.argmax(probabilities)), round(float(probabilities.sum()), 12)  # tau = 64 > 49 = max
        (6, 1.0)
        >>> bool(abs(central.release(x, rng=0) - x.sum()) < 1_000)
        True
        >>> central.guarantee.epsilon, central.guarantee.delta
        (1.0, 0.0)
    """

    epsilon: float
    domain: int
    failure_probability: float = 0.1
    selection_fraction: float = 0.5

    def __post_init__(self) -> None:
        owner = type(self).__name__
        checks.check_epsilon(self.epsilon, owner)
        domain = checks.check_integer(self.domain, "domain", owner, low=1)
        if domain & (domain - 1):
            raise checks.invalid("domain", owner, "a power of two", domain)
        checks.check_probability(self.failure_probability, "failure_probability", owner, allow_zero=False)
        checks.check_real(self.selection_fraction, "selection_fraction", owner, low=0.0, high=1.0, low_open=True, high_open=True)
        check_noise_ratio(self.release_epsilon, domain, "domain", owner)  # the largest threshold is the domain

    @property
    def selection_epsilon(self) -> float:
        """``epsilon_1``, spent on choosing ``tau``."""
        return self.selection_fraction * self.epsilon

    @property
    def release_epsilon(self) -> float:
        """``epsilon_2 = epsilon - epsilon_1``, spent on the clipped sum."""
        return self.epsilon - self.selection_epsilon

    @property
    def target_rank(self) -> int:
        """``k = ceil(2 log((log2 U + 1)/beta) / epsilon_1)``: how many values the chosen ``tau`` aims to clip."""
        candidates = self.domain.bit_length()
        return math.ceil(2 * math.log(candidates / self.failure_probability) / self.selection_epsilon)

    @property
    def guarantee(self) -> PrivacyGuarantee:
        """``(epsilon, 0)``, replace-one (basic composition of the selection and the release)."""
        return PrivacyGuarantee(self.epsilon, 0.0)

    @property
    def event(self) -> GuaranteeEvent:
        return GuaranteeEvent(self.guarantee)

    def _values(self, x: Any) -> np.ndarray:
        return checks.check_array(x, "x", type(self).__name__, ndim=1, low=0, high=self.domain, integer=True).astype(np.int64)

    def selection_probabilities(self, x: Any) -> np.ndarray:
        """Probability of choosing ``tau = 2^j`` for ``j = 0..log2 U`` (the exponential mechanism's law)."""
        values = np.sort(self._values(x))
        thresholds = 2 ** np.arange(self.domain.bit_length(), dtype=np.int64)
        clipped = values.size - np.searchsorted(values, thresholds, side="right")  # c_j
        previous = np.concatenate([[values.size], clipped[:-1]])  # c_{j-1}, with c_{-1} = n
        k = self.target_rank
        log_weights = self.selection_epsilon * (-np.maximum(clipped - k, 0) - np.maximum(k - previous, 0)) / 2
        weights = np.exp(log_weights - log_weights.max())
        return weights / weights.sum()

    def release(self, x: Any, *, rng: RNGLike = None) -> float:
        """``sum_i min(x_i, tau) + DLap(e^{-epsilon_2/tau})`` with ``tau`` drawn by the exponential mechanism."""
        generator = as_generator(rng, type(self).__name__)
        values = self._values(x)
        probabilities = self.selection_probabilities(values)
        tau = 2 ** int(generator.choice(probabilities.size, p=probabilities))
        total = int(np.minimum(values, tau).sum())
        return float(total + sample_discrete_laplace(generator, math.exp(-self.release_epsilon / tau), 1)[0])


# --------------------------------------------------------------------------- central references
def _opendp_gaussian(values: np.ndarray, sensitivity: float, epsilon: float, delta: float) -> np.ndarray:
    """``values`` plus OpenDP's (discretised, exactly sampled) Gaussian noise for ``(epsilon, delta)`` at l2 ``sensitivity``."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T="f64", nan=False)), dp.l2_distance(T="f64")

    def chain(scale: float) -> Any:
        return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(dp.m.make_gaussian(*space, scale=scale)), delta)

    scale = dp.binary_search_param(chain, d_in=float(sensitivity), d_out=(epsilon, delta), T=float)
    measurement = chain(scale)
    achieved = measurement.map(float(sensitivity))
    if not (achieved[0] <= epsilon * (1 + 1e-9) and achieved[1] <= delta * (1 + 1e-9)):
        raise checks.invalid("epsilon", "central Gaussian", "met by OpenDP's privacy map", achieved)
    return np.asarray(measurement([float(v) for v in np.ravel(values)]), dtype=float)


@dataclass(frozen=True, kw_only=True)
class _GaussianReference:
    """What the Gaussian central references share: ``(epsilon, delta)`` and a bound ``tau`` whose ``None`` is the oracle.

    The oracle reads ``tau`` off the data, so it carries no guarantee (``epsilon = inf``).
    """

    bound_name: ClassVar[str]

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        owner = type(self).__name__
        checks.check_epsilon(self.epsilon, owner)
        checks.check_delta(self.delta, owner, allow_zero=False)
        if self._bound is not None:
            self._check_bound(self._bound, owner)

    @property
    def _bound(self) -> float | int | None:
        return getattr(self, self.bound_name)

    def _check_bound(self, bound: Any, owner: str) -> None:
        """Refuse an invalid public bound (each reference overrides it; the base class is never built)."""
        raise NotImplementedError(f"{type(self).__name__} must define _check_bound")

    @property
    def guarantee(self) -> PrivacyGuarantee:
        return PrivacyGuarantee(self.epsilon if self._bound is not None else math.inf, self.delta)


@dataclass(frozen=True, kw_only=True)
class CentralClippedVectorSum(_GaussianReference):
    """Central-DP reference: clip every vector to ``l2`` norm ``tau``, sum, add Gaussian noise (OpenDP) for ``(epsilon, delta)``.

    Args:
        epsilon: target epsilon.
        delta: target delta.
        clipping_bound: ``tau``, or ``None`` for the **oracle** ``tau = max_i ||x_i||`` (not private).

    Privacy:
        Replace-one, central: ``l2`` sensitivity ``2 tau``; OpenDP's Gaussian (zCDP, converted to
        ``(epsilon, delta)`` and checked by its privacy map). The oracle ``tau`` reads the data: no
        guarantee (`guarantee` has ``epsilon = inf``).

    Examples:
        >>> central = CentralClippedVectorSum(epsilon=1.0, delta=1e-6, clipping_bound=1.0)
        >>> central.release(np.ones((10, 3)) * 0.1).shape
        (3,)
    """

    bound_name: ClassVar[str] = "clipping_bound"

    clipping_bound: float | None = None

    def _check_bound(self, bound: Any, owner: str) -> None:
        checks.check_real(bound, "clipping_bound", owner, low=0.0, low_open=True)

    def release(self, x: Any) -> np.ndarray:
        """The noisy clipped sum of the rows of ``x``."""
        array = checks.check_array(x, "x", type(self).__name__, ndim=2).astype(float)
        norms = np.linalg.norm(array, axis=1)
        bound = float(norms.max()) if self.clipping_bound is None else self.clipping_bound
        bound = max(bound, 1e-12)
        clipped = array * np.minimum(1.0, bound / np.maximum(norms, 1e-300))[:, None]
        return _opendp_gaussian(clipped.sum(axis=0), 2 * bound, self.epsilon, self.delta)


@dataclass(frozen=True, kw_only=True)
class CentralSparseAggregation(_GaussianReference):
    """Central-DP reference for frequency estimation: keep each user's first ``tau`` items, count, add Gaussian noise (OpenDP).

    Args:
        epsilon: target epsilon.
        delta: target delta.
        sparsity_bound: ``tau``, or ``None`` for the **oracle** ``tau = max_i ||x_i||_0`` (not private).

    Privacy:
        Replace-one, central: two users' clipped vectors differ in at most ``2 tau`` coordinates by
        one, so the ``l2`` sensitivity is ``sqrt(2 tau)``. The oracle reads the data: no guarantee.

    Examples:
        >>> central = CentralSparseAggregation(epsilon=1.0, delta=1e-6, sparsity_bound=2)
        >>> central.release(np.eye(4, dtype=int)).shape
        (4,)
    """

    bound_name: ClassVar[str] = "sparsity_bound"

    sparsity_bound: int | None = None

    def _check_bound(self, bound: Any, owner: str) -> None:
        checks.check_integer(bound, "sparsity_bound", owner, low=1)

    def release(self, x: Any) -> np.ndarray:
        """Noisy per-coordinate counts of the binary rows of ``x``."""
        values = checks.check_array(x, "x", type(self).__name__, ndim=2, low=0, high=1, integer=True).astype(np.int64)
        bound = int(values.sum(axis=1).max()) if self.sparsity_bound is None else self.sparsity_bound
        bound = max(bound, 1)
        kept = values * (np.cumsum(values, axis=1) <= bound)
        return _opendp_gaussian(kept.sum(axis=0), math.sqrt(2 * bound), self.epsilon, self.delta)
