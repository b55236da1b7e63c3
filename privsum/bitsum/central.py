"""Central-DP and non-private bit-sum baselines (section 4.1 of Wagner (ICLR 2025)).

These are not shuffle protocols: users hand their bits to a trusted curator, which releases each
instance's count plus noise. They implement the same interface so that experiments can swap
them in. `randomize` returns the curator's *internal* state as messages: every user's bit (value
``0`` or ``1``) and the curator's noise ``Z`` as ``|Z|`` messages of value ``sign(Z)``;
`analyze` outputs ``#(1) - #(-1) = S + Z``. Only that output is private: the messages themselves
are what the trusted curator sees.

The noise is OpenDP's exact discrete Laplace or discrete Gaussian sampler by default
(``noise_source="opendp"``, cryptographically secure, not reproducible: an int seed,
``SeedSequence`` or ``BitGenerator`` in ``rng`` is refused with a clear error rather than silently
ignored, the same rule as `privsum.sketches.RACE.release`); with ``noise_source="numpy"`` the
same distributions are sampled from ``rng`` (reproducible simulations; numpy's generator is not
cryptographically secure).

References:
    Wagner, "Learning from End User Data with Shuffled Differential Privacy over Kernel
    Densities", ICLR 2025.
"""

from __future__ import annotations

import abc
import functools
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from privsum._random import RNGLike, as_generator, check_csprng_rng
from privsum._validation import check_choice, check_delta, check_epsilon, check_integer, check_real, invalid
from privsum.accounting.calibration import calibrate
from privsum.accounting.events import (
    MAX_DISCRETE_GAUSSIAN_SIGMA,
    MIN_DISCRETE_GAUSSIAN_SIGMA,
    DiscreteGaussianEvent,
    GuaranteeEvent,
    PrivacyEvent,
)
from privsum.accounting.guarantee import Neighbouring, PrivacyGuarantee
from privsum.bitsum.base import EXACT, BitSumProtocol, check_calibration, instance_ids, symmetric_noise_half_width
from privsum.shuffle.histogram import MessageHistogram
from privsum.shuffle.messages import MessageBatch
from privsum.shuffle.noise import discrete_laplace_variance, sample_discrete_laplace
from privsum.shuffle.protocol import EXECUTION_PATHS
from privsum.shuffle.streaming import PartialView

__all__ = ["CURATED_BITSUMS", "NOISE_SOURCES", "CentralGaussianBitSum", "CentralLaplaceBitSum", "ExactBitSum"]

NOISE_SOURCES = ("opendp", "numpy")


def _opendp():
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


def _opendp_noise(sums: np.ndarray, mechanism: str, distance: str, scale: float) -> np.ndarray:
    """The noise OpenDP's ``make_<mechanism>`` adds to the integer counts ``sums`` (``<distance>`` sensitivity metric)."""
    dp = _opendp()
    make = getattr(dp.m, f"make_{mechanism}")
    vector = make(dp.vector_domain(dp.atom_domain(T=int)), getattr(dp, f"{distance}_distance")(T=int), scale=scale)
    return np.asarray(vector(sums.astype(int).tolist()), dtype=np.int64) - sums


class _Curated(BitSumProtocol):
    """Shared mechanics of the central baselines: bits to a curator, noise on each instance's count."""

    curated: ClassVar[bool] = True
    n_users: int
    noise_source: str

    @property
    def alphabet(self) -> tuple[int, ...]:
        return (-1, 0, 1)

    @property
    def expected_messages_per_user(self) -> float:
        """One message: the user's bit, sent to the curator."""
        return 1.0

    def bits_per_message(self, n_instances: int = 1) -> int:
        """Instance tag plus the one bit a user sends (the curator's noise is internal)."""
        n_instances = check_integer(n_instances, "n_instances", type(self).__name__, low=1)
        return (math.ceil(math.log2(n_instances)) if n_instances > 1 else 0) + 1

    @property
    def depends_on_participants(self) -> bool:
        return False

    def run(self, x: Any, *, rng: RNGLike = None, path: str = "fast") -> Any:
        """`~privsum.shuffle.ShuffleProtocol.run`; with ``noise_source="opendp"`` a seed in ``rng`` is refused."""
        self._check_rng(rng)
        return super().run(x, rng=rng, path=path)

    def run_streamed(self, chunks: Any, *, rng: RNGLike = None, path: str = "fast", progress: bool = False) -> Any:
        """`~privsum.shuffle.ShuffleProtocol.run_streamed`; with ``noise_source="opendp"`` a seed is refused."""
        self._check_rng(rng)
        return super().run_streamed(chunks, rng=rng, path=path, progress=progress)

    def _check_rng(self, rng: RNGLike) -> None:
        """With ``noise_source="opendp"`` a seed cannot make the noise reproducible: refused, never ignored."""
        if self.noise_source == "opendp":
            check_csprng_rng(rng, type(self).__name__)

    def _check_source(self) -> None:
        object.__setattr__(
            self, "noise_source", check_choice(self.noise_source, "noise_source", type(self).__name__, NOISE_SOURCES)
        )

    @abc.abstractmethod
    def noise(self, sums: np.ndarray, generator: np.random.Generator) -> np.ndarray:
        """The curator's noise for each instance."""

    def randomize(self, x: Any, *, rng: RNGLike = None) -> MessageBatch:
        bits = self.check_bits(x)
        self._check_rng(rng)
        generator = as_generator(rng, type(self).__name__)
        n_instances = bits.shape[1]
        noise = self.noise(bits.sum(axis=0), generator)
        noise_instances = np.repeat(np.arange(n_instances, dtype=np.int64), np.abs(noise))
        noise_values = np.repeat(np.sign(noise).astype(np.int64), np.abs(noise))
        instances = np.concatenate([instance_ids(*bits.shape), noise_instances])
        values = np.concatenate([bits.ravel(), noise_values])
        return MessageBatch(instances, values, n_instances)

    def sample_view(self, x: Any, *, rng: RNGLike = None) -> MessageHistogram:
        """The same histogram as the faithful path, from the counts directly."""
        bits = self.check_bits(x)
        self._check_rng(rng)
        generator = as_generator(rng, type(self).__name__)
        ones = bits.sum(axis=0)
        noise = self.noise(ones, generator)
        counts = np.stack([np.maximum(-noise, 0), bits.shape[0] - ones, ones + np.maximum(noise, 0)], axis=1)
        return MessageHistogram(counts, self.alphabet)

    def partial_view(self, chunk: Any, *, rng: RNGLike = None, path: str = "fast") -> PartialView:
        """One chunk of users' bits as the curator counts them, **without** noise (added once, in `complete_view`)."""
        check_choice(path, "path", type(self).__name__, EXECUTION_PATHS)
        bits = self.check_bits(chunk)
        ones = bits.sum(axis=0, dtype=np.int64)
        counts = np.stack([np.zeros_like(ones), bits.shape[0] - ones, ones], axis=1)
        return PartialView(MessageHistogram(counts, self.alphabet), bits.shape[0])

    def complete_view(self, partial: PartialView, *, rng: RNGLike = None) -> MessageHistogram:
        """The curator's noise, drawn once for the total count of ones, added to the summed chunks."""
        self._check_rng(rng)
        histogram = super().complete_view(partial, rng=rng)
        ones = histogram.count(1)
        if np.any(histogram.count(-1)):
            raise invalid("partial", type(self).__name__, "the noise-free counts of partial_view", "a histogram with noise")
        noise = np.asarray(self.noise(ones, as_generator(rng, type(self).__name__)), dtype=np.int64)
        counts = np.stack([np.maximum(-noise, 0), histogram.count(0), ones + np.maximum(noise, 0)], axis=1)
        return MessageHistogram(counts, self.alphabet)

    def _message_cap(self, tail_probability: float) -> int:
        """One bit per user and instance, sent to the curator."""
        return 1

    @property
    def largest_message_effect(self) -> float:
        """The curator accepts a bit 0 or 1 from a user (the ``+-1`` noise is its own): one count."""
        return 1.0

    def largest_decrease(self, n_malicious: int, *, cap: int | None = None) -> float:
        """None: a bit adds 0 or 1 to the count."""
        self.manipulation_bound(n_malicious, cap=cap)  # validated
        return 0.0

    def analyze(self, view: MessageHistogram | MessageBatch) -> np.ndarray:
        """The released count ``S + Z`` (unbiased)."""
        histogram = self.view(view)
        return (histogram.count(1) - histogram.count(-1)).astype(float)


class _OpenDPNoise(_Curated):
    """A curated baseline whose noise is OpenDP's ``make_<mechanism>``, or a seeded numpy sampler of the same law."""

    opendp_mechanism: ClassVar[tuple[str, str]]
    """OpenDP's mechanism name and its sensitivity metric (``"laplace", "l1"``)."""
    scale_range: ClassVar[dict[str, Any]]
    """The `check_real` bounds on ``scale``."""
    scale: float

    def __post_init__(self) -> None:
        owner = type(self).__name__
        object.__setattr__(self, "n_users", check_integer(self.n_users, "n_users", owner, low=1))
        object.__setattr__(self, "scale", check_real(self.scale, "scale", owner, **self.scale_range))
        self._check_own_fields(owner)
        self._check_source()

    def _check_own_fields(self, owner: str) -> None:
        """Check (and store) the fields a subclass adds; none by default."""

    def noise(self, sums: np.ndarray, generator: np.random.Generator) -> np.ndarray:
        if self.noise_source == "numpy":
            return self._numpy_noise(generator, sums.shape)
        mechanism, distance = self.opendp_mechanism
        return _opendp_noise(sums, mechanism, distance, self.scale)

    @abc.abstractmethod
    def _numpy_noise(self, generator: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """The same noise law, drawn from ``generator`` (reproducible, not for deployment)."""


@dataclass(frozen=True, kw_only=True)
class CentralLaplaceBitSum(_OpenDPNoise):
    """Central discrete Laplace mechanism on each instance's count (OpenDP ``make_laplace``).

    Args:
        n_users: users (the guarantee does not depend on it).
        scale: noise scale ``b > 0``: pmf ``proportional to exp(-|z|/b)``, i.e. ``DLap(e^{-1/b})``.
        noise_source: ``"opendp"`` (exact, secure) or ``"numpy"`` (reproducible from ``rng``).

    Privacy:
        Pure ``1/b``-DP per instance as certified by OpenDP's privacy map (sensitivity 1 of a bit
        count under replace-one). Trusted curator: the users' bits are not protected from it.

    Utility:
        Unbiased; variance ``2a/(1-a)^2`` with ``a = e^{-1/b}``.

    Examples:
        >>> protocol = CentralLaplaceBitSum.from_privacy(epsilon=1.0, n_users=100, noise_source="numpy")
        >>> protocol.guarantee.epsilon
        1.0
    """

    opendp_mechanism: ClassVar[tuple[str, str]] = ("laplace", "l1")
    scale_range: ClassVar[dict[str, Any]] = {"low": 0.0, "low_open": True}

    n_users: int
    scale: float
    noise_source: str = "opendp"

    @classmethod
    def from_privacy(
        cls, *, epsilon: float, n_users: int, delta: float = 0.0, calibration: str = "tight", noise_source: str = "opendp"
    ) -> CentralLaplaceBitSum:
        """``scale = 1/epsilon`` (both calibrations: the map is exact).

        Args:
            epsilon: target pure epsilon per instance.
            n_users: users.
            delta: accepted for a uniform interface (the guarantee is pure).
            calibration: ``"tight"`` or ``"analytic"`` (identical here).
            noise_source: ``"opendp"`` or ``"numpy"``.
        """
        owner = cls.__name__
        epsilon = check_epsilon(epsilon, owner)
        check_delta(delta, owner)
        check_calibration(calibration, owner)
        return cls(n_users=n_users, scale=1.0 / epsilon, noise_source=noise_source)

    @functools.cached_property
    def measurement(self) -> Any:
        """The OpenDP measurement on one instance's integer count."""
        dp = _opendp()
        return dp.m.make_laplace(dp.atom_domain(T=int), dp.absolute_distance(T=int), scale=self.scale)

    @functools.cached_property
    def event(self) -> PrivacyEvent:
        """Pure epsilon from OpenDP's privacy map at sensitivity 1, replace-one."""
        return GuaranteeEvent(PrivacyGuarantee(float(self.measurement.map(1)), 0.0, Neighbouring.REPLACE_ONE))

    @property
    def noise_ratio(self) -> float:
        """``a = e^{-1/scale}``."""
        return math.exp(-1.0 / self.scale)

    def variance(self, true_sum: Any = None) -> float:
        return discrete_laplace_variance(self.noise_ratio)

    def _error_half_width(self, level: float) -> tuple[float, str]:
        """Exact: ``P(|DLap(a)| > h) = 2 a^(h+1) / (1 + a)``, the smallest ``h`` with that at most ``1 - level``."""
        ratio = self.noise_ratio
        if ratio == 0.0:
            return 0.0, EXACT

        def outside(half_width: int) -> float:
            return 2.0 * ratio ** (half_width + 1) / (1.0 + ratio)

        half_width = max(0, math.ceil(math.log((1.0 - level) * (1.0 + ratio) / 2.0) / math.log(ratio) - 1.0))
        while half_width > 0 and outside(half_width - 1) <= 1.0 - level:  # float rounding of the closed form
            half_width -= 1
        while outside(half_width) > 1.0 - level:
            half_width += 1
        return float(half_width), EXACT

    def _numpy_noise(self, generator: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        return sample_discrete_laplace(generator, self.noise_ratio, shape)


@dataclass(frozen=True, kw_only=True)
class CentralGaussianBitSum(_OpenDPNoise):
    """Central discrete Gaussian mechanism on each instance's count (OpenDP ``make_gaussian``).

    Args:
        n_users: users (the guarantee does not depend on it).
        scale: ``sigma`` in ``[0.01, 10^4]`` of the discrete Gaussian (pmf ``proportional to
            exp(-z^2/(2 sigma^2))``; the bounds keep its exact privacy accounting bounded).
        delta: the delta at which the headline epsilon is reported, in ``(0, 1)``.
        noise_source: ``"opendp"`` (exact, secure) or ``"numpy"`` (reproducible from ``rng``).

    Privacy:
        ``rho = 1/(2 sigma^2)``-zCDP per instance (OpenDP's map, sensitivity 1 under replace-one),
        converted to ``(epsilon, delta)`` by OpenDP's zCDP-to-approximate-DP curve. Trusted curator.
        With ``I`` instances per user uses ``sigma = sqrt(2 log(1.25/delta) I)/epsilon``
        on the count (the classical mechanism on the ``I``-vector); build that with
        ``scale=...`` directly.

    Utility:
        Unbiased; variance is the discrete Gaussian's (slightly below ``sigma^2``), computed exactly.

    Examples:
        >>> protocol = CentralGaussianBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=100, noise_source="numpy")
        >>> bool(protocol.guarantee.epsilon <= 1.0 and protocol.scale < 5.0)
        True
    """

    opendp_mechanism: ClassVar[tuple[str, str]] = ("gaussian", "l2")
    scale_range: ClassVar[dict[str, Any]] = {"low": MIN_DISCRETE_GAUSSIAN_SIGMA, "high": MAX_DISCRETE_GAUSSIAN_SIGMA}

    n_users: int
    scale: float
    delta: float
    noise_source: str = "opendp"

    def _check_own_fields(self, owner: str) -> None:
        object.__setattr__(self, "delta", check_delta(self.delta, owner, allow_zero=False))

    @classmethod
    def from_privacy(
        cls, *, epsilon: float, delta: float, n_users: int, calibration: str = "tight", noise_source: str = "opendp"
    ) -> CentralGaussianBitSum:
        """The least ``sigma`` meeting (epsilon, delta) per instance.

        Args:
            epsilon: target epsilon.
            delta: target delta in ``(0, 1)``.
            n_users: users.
            calibration: ``"analytic"``: the classical ``sigma = sqrt(2 log(1.25/delta))/epsilon``
                (valid for ``epsilon < 1`` only); ``"tight"``: bisection on ``sigma`` against
                OpenDP's zCDP-to-(epsilon, delta) curve.
            noise_source: ``"opendp"`` or ``"numpy"``.

        Raises:
            InvalidParameterError: out-of-range parameters, or ``"analytic"`` with ``epsilon >= 1``.
        """
        owner = cls.__name__
        epsilon = check_epsilon(epsilon, owner)
        delta = check_delta(delta, owner, allow_zero=False)
        calibration = check_calibration(calibration, owner)
        if calibration == "analytic":
            if not epsilon < 1.0:
                raise invalid("epsilon", owner, "below 1 for the classical Gaussian mechanism (use calibration='tight')", epsilon)
            sigma = math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon
        else:
            upper = 2.0 * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon + 1.0
            sigma = calibrate(
                lambda s: _gaussian_delta(s, epsilon),
                target_delta=delta,
                lower=upper / 100.0,
                upper=upper,
                more_private="increasing",
                tolerance=1e-7,
                caller=(owner, "delta", delta),
            )
        protocol = cls(n_users=n_users, scale=sigma, delta=delta, noise_source=noise_source)
        if not protocol.guarantee.epsilon <= epsilon * (1 + 1e-9):
            raise invalid(
                "epsilon", owner, f"met by the {calibration} sigma (OpenDP certifies {protocol.guarantee.epsilon:.6g})", epsilon
            )
        return protocol

    @functools.cached_property
    def event(self) -> PrivacyEvent:
        """Discrete Gaussian event: headline from OpenDP's zCDP curve, exact PLD for composition; replace-one."""
        headline = PrivacyGuarantee(float(_gaussian_curve(self.scale).epsilon(self.delta)), self.delta)
        return DiscreteGaussianEvent(self.scale, headline)

    def variance(self, true_sum: Any = None) -> float:
        """Exact variance of the discrete Gaussian with parameter ``sigma``."""
        support, pmf = self._noise_pmf()
        return float((pmf * support**2).sum())

    def _noise_pmf(self) -> tuple[np.ndarray, np.ndarray]:
        """The discrete Gaussian's pmf on ``-K..K``, ``K = 40 sigma + 2`` (the rest is below 1e-300)."""
        reach = math.ceil(40.0 * self.scale) + 2
        support = np.arange(-reach, reach + 1, dtype=float)
        weights = np.exp(-(support**2) / (2.0 * self.scale**2))
        return support, weights / weights.sum()

    def _error_half_width(self, level: float) -> tuple[float, str]:
        """Exact, from the discrete Gaussian's pmf."""
        return float(symmetric_noise_half_width(self._noise_pmf()[1], level)), EXACT

    def _numpy_noise(self, generator: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        return _sample_discrete_gaussian(generator, self.scale, shape)


@dataclass(frozen=True, kw_only=True)
class ExactBitSum(_Curated):
    """The exact, non-private sum (a utility upper bound for experiments).

    Args:
        n_users: users.

    Privacy:
        None: the event has infinite epsilon.

    Examples:
        >>> ExactBitSum(n_users=3).run(np.array([[1], [0], [1]]), rng=0).tolist()
        [2.0]
    """

    n_users: int
    noise_source: str = "numpy"

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_users", check_integer(self.n_users, "n_users", type(self).__name__, low=1))
        self._check_source()

    @classmethod
    def from_privacy(
        cls, *, n_users: int, epsilon: float = math.inf, delta: float = 0.0, calibration: str = "tight"
    ) -> ExactBitSum:
        """Only ``epsilon = inf`` (no privacy) is accepted.

        Args:
            n_users: users.
            epsilon: must be ``math.inf``.
            delta: ignored beyond validation.
            calibration: ignored beyond validation.
        """
        owner = cls.__name__
        if not (isinstance(epsilon, (int, float)) and epsilon == math.inf):
            raise invalid("epsilon", owner, "inf (the exact sum gives no privacy)", epsilon)
        check_delta(delta, owner)
        check_calibration(calibration, owner)
        return cls(n_users=n_users)

    @property
    def event(self) -> PrivacyEvent:
        """No privacy: infinite epsilon."""
        return GuaranteeEvent(PrivacyGuarantee(math.inf, 0.0))

    def variance(self, true_sum: Any = None) -> float:
        return 0.0

    def _error_half_width(self, level: float) -> tuple[float, str]:
        """No noise: the estimate is the sum."""
        return 0.0, EXACT

    def noise(self, sums: np.ndarray, generator: np.random.Generator) -> np.ndarray:
        return np.zeros_like(sums)


def _gaussian_delta(sigma: float, epsilon: float) -> float:
    """OpenDP's delta at ``epsilon``; 1 where its arithmetic overflows (far too little noise)."""
    try:
        return float(_gaussian_curve(sigma).delta(epsilon))
    except Exception:  # OpenDPException on overflow: treat as no guarantee
        return 1.0


@functools.lru_cache(maxsize=256)
def _gaussian_curve(sigma: float) -> Any:
    dp = _opendp()
    measurement = dp.c.make_zCDP_to_approxDP(dp.m.make_gaussian(dp.atom_domain(T=int), dp.absolute_distance(T=int), scale=sigma))
    return measurement.map(1)


def _sample_discrete_gaussian(generator: np.random.Generator, sigma: float, size: tuple[int, ...]) -> np.ndarray:
    """Canonne, Kamath & Steinke (2020) rejection sampler from discrete Laplace proposals, vectorised."""
    sigma = check_real(sigma, "sigma", "_sample_discrete_gaussian", low=0.0, low_open=True)
    t = math.floor(sigma) + 1
    out = np.empty(size, dtype=np.int64).ravel()
    pending = np.arange(out.size)
    while pending.size:
        proposal = sample_discrete_laplace(generator, math.exp(-1.0 / t), pending.size)
        accept_probability = np.exp(-((np.abs(proposal) - sigma**2 / t) ** 2) / (2.0 * sigma**2))
        accepted = generator.random(pending.size) < accept_probability
        out[pending[accepted]] = proposal[accepted]
        pending = pending[~accepted]
    return out.reshape(size)


#: Bit-sum baselines whose curator adds noise once to the total (not divisible over users): `BitSumProtocol.curated`.
CURATED_BITSUMS = (CentralGaussianBitSum, CentralLaplaceBitSum, ExactBitSum)
