"""Single-message-per-coordinate shuffled vector summation (Scott, Cormode & Maple, BICOD 2021)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
from scipy import stats

from privsum._random import RNGLike, as_generator
from privsum._validation import (
    check_array,
    check_choice,
    check_integer,
    check_privacy_request,
    invalid,
)
from privsum.accounting import GuaranteeEvent, PrivacyEvent, PrivacyGuarantee, PrivacyProfile, ProfileEvent
from privsum.shuffle import MessageBatch, MessageHistogram
from privsum.shuffle.protocol import EXECUTION_PATHS, SenderCap
from privsum.shuffle.robustness import check_malicious
from privsum.shuffle.streaming import PartialView
from privsum.sums._common import randomized_round, wire_coordinates
from privsum.sums.blanket import (
    CALIBRATIONS,
    _BlanketMechanics,
    analytic_blanket_epsilon,
    blanket_parameters,
    blanket_profile,
    check_analytic_bound,
)

__all__ = ["ESTIMATORS", "ShuffledVectorSum"]

#: How `ShuffledVectorSum.analyze` turns each coordinate's debiased reports into an estimate of its sum.
ESTIMATORS = ("report_count", "sampling_rate")


def _expected_inverse_count(n: int, rate: float) -> float:
    """``E[1/c; c >= 1]`` for ``c ~ Binomial(n, rate)``, summed over the counts holding all but ~1e-300 of the mass."""
    if rate == 1.0:
        return 1.0 / n
    half_width = 40.0 * math.sqrt(n * rate * (1 - rate)) + 40.0
    counts = np.arange(max(1, math.floor(n * rate - half_width)), min(n, math.ceil(n * rate + half_width)) + 1)
    return float(stats.binom.pmf(counts, n, rate) @ (1.0 / counts))


@dataclass(frozen=True, kw_only=True)
class ShuffledVectorSum(_BlanketMechanics):
    """Shuffled sum of vectors in ``[0, 1]^d`` (or ``[-1, 1]^d``): ``t`` sampled coordinates per user.

    Each user samples ``t`` of the ``d`` coordinates uniformly without replacement, randomly
    rounds each sampled value to ``{0, ..., k}``, replaces it by a uniform value with probability
    ``gamma`` (k-ary randomized response, Algorithm 1 of Scott, Cormode & Maple) and sends the ``t`` pairs
    ``(coordinate, value)``. A message's coordinate is its instance tag, so the analyzer's view is
    a ``(d, k+1)`` histogram. The analyzer debiases each coordinate,
    ``DeBias_j = (S_j - gamma c_j / 2) / (1 - gamma)`` with ``c_j`` reports summing to ``S_j``
    (values divided by ``k``; Scott, Cormode & Maple, Algorithm 3). With ``estimator="report_count"``
    (the default, the paper's estimator) it divides by the coordinate's own report count:
    ``DeBias_j / c_j`` estimates the mean of coordinate ``j``, times the ``n`` users in the view for
    the sum. ``estimator="sampling_rate"`` scales by ``d / t`` instead (Horvitz-Thompson: exactly
    unbiased, but it adds the variance of the report counts, up to several times the error).

    Args:
        n_users: users the guarantee is calibrated for (fewer warn, more are accepted: see Privacy).
        dimension: ``d``.
        precision: ``k``.
        samples: ``t``, coordinates each user reports (``1 <= t <= d``).
        blanket_probability: ``gamma``.
        delta: the delta of the headline guarantee.
        accounting: ``"tight"`` (``t = 1`` only: exact dominating-pair profile of `blanket_profile`
            with ``d (k + 1)`` message values) or ``"analytic"`` (Scott, Cormode & Maple, Theorem 4.1 and section 4.5).
        symmetric: inputs are in ``[-1, 1]^d`` and are mapped by ``(1 + x) / 2``; the estimate is
            mapped back.
        clip: clip inputs to the domain instead of raising on values outside it.
        estimator: ``"report_count"`` (divide by each coordinate's report count) or
            ``"sampling_rate"`` (scale by ``d / t``); a post-processing choice, the guarantee is the same.

    Privacy:
        Replace-one (a user's whole vector changes), on the shuffled multiset; trusted shuffler.
        ``t = 1`` is the scalar blanket over ``d (k + 1)`` message values (the coordinate is the
        user's own uniform randomness, so an input is a mixture of point inputs and the argument
        of `blanket_profile` applies verbatim). ``t > 1``: the analytic bound only (Scott, Cormode & Maple use
        advanced composition over the ``t`` messages; the library has no exact profile for it).

        Participation: the randomizer does not depend on ``n``. **More** users than ``n_users``
        never hurt (their messages are independent of the target's and of the rest, so the view
        is a post-processing of the calibrated one; the analyzer infers the number of users from
        the ``n t`` messages it receives). **Fewer** warn with `PrivacyLeakWarning`, and
        `event_for_participants` evaluates the same accounting at the smaller ``n``.

    Utility:
        ``"report_count"``: unbiased given that the coordinate received a report (given ``c_j >= 1``
        the reporting users are a uniform sample of size ``c_j``, so ``DeBias_j / c_j`` is unbiased
        for the coordinate's mean); a coordinate with no report (probability ``(1 - t/d)^n``) is
        estimated at the centre of the domain. ``"sampling_rate"``: unbiased. `variance` gives the
        per-coordinate variance of the chosen estimator (exact for given inputs, averaging over the
        binomial report count, or a worst-case bound); `normalised_mse_bound` is Scott, Cormode &
        Maple's Theorem 4.6 bound on the error of
        the debiased *sampled* sums, normalised by ``(n/d)^2``: ``O(d^{8/3} t n^{-5/3})`` at the
        best ``k``.

    Robustness:
        A shuffler should accept at most one message per coordinate and ``t`` in all from each
        sender (`per_sender_message_cap` is the per-coordinate 1). A message adds ``u = (y/k -
        gamma/2)/(1 - gamma)`` to its coordinate's ``DeBias``, between ``-gamma/2/(1-gamma)`` and
        ``(1 - gamma/2)/(1 - gamma)``. With ``estimator="sampling_rate"`` ``k`` malicious senders
        shift a coordinate by at most ``(d/t) k (1 - gamma/2)/(1 - gamma)`` (tight; symmetric
        inputs: see `manipulation_bound`). With ``"report_count"`` the shift depends on how many
        honest reports the coordinate received (``n/c_j`` amplifies each attacker): in the worst
        case (a coordinate no honest user reported) a few attackers move it across the whole
        range, so `manipulation_bound` is of order ``n`` -- prefer ``"sampling_rate"`` where
        senders may be malicious.

    References:
        Scott, Cormode & Maple, "Applying the shuffle model of differential privacy to vector
        aggregation", BICOD 2021; Balle, Bell, Gascón & Nissim, CRYPTO 2019.

    Examples:
        >>> protocol = ShuffledVectorSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=20_000, dimension=4)
        >>> x = np.full((20_000, 4), 0.5)
        >>> estimate = protocol.run(x, rng=0)
        >>> bool(np.all(np.abs(estimate - 10_000) < 6 * np.sqrt(protocol.variance(x))))
        True
    """

    streams_chunks: ClassVar[bool] = True

    n_users: int
    dimension: int
    precision: int
    blanket_probability: float
    delta: float
    samples: int = 1
    accounting: str = "tight"
    symmetric: bool = False
    clip: bool = False
    estimator: str = "report_count"

    def __post_init__(self) -> None:
        owner = type(self).__name__
        self._check_blanket_fields(owner)
        check_integer(self.dimension, "dimension", owner, low=1)
        check_integer(self.samples, "samples", owner, low=1, high=self.dimension)
        check_choice(self.estimator, "estimator", owner, ESTIMATORS)
        if not isinstance(self.symmetric, bool):
            raise invalid("symmetric", owner, "a bool", self.symmetric)
        if self.accounting == "tight" and self.samples != 1:
            raise invalid("accounting", owner, "'analytic' when samples > 1 (no exact profile for t > 1)", self.accounting)
        check_analytic_bound(self, owner)

    @classmethod
    def from_privacy(
        cls,
        *,
        epsilon: float,
        delta: float,
        n_users: int,
        dimension: int,
        calibration: str = "tight",
        precision: int | None = None,
        samples: int = 1,
        symmetric: bool = False,
        clip: bool = False,
        estimator: str = "report_count",
    ) -> ShuffledVectorSum:
        """The protocol meeting ``(epsilon, delta)`` for ``n_users`` vectors of ``dimension`` coordinates.

        Args:
            epsilon: target epsilon.
            delta: target delta in ``(0, 1)``.
            n_users: number of users.
            dimension: ``d``.
            calibration: ``"tight"`` (``samples = 1`` only) or ``"analytic"``.
            precision: ``k``; ``None`` chooses it (analytic: minimises the paper's MSE bound; tight:
                minimises the worst-case variance with the tight ``gamma``).
            samples: ``t``.
            symmetric: see the class.
            clip: see the class.
            estimator: see the class.
        """
        owner = f"{cls.__name__}.from_privacy"
        epsilon, delta, n_users = check_privacy_request(epsilon, delta, n_users, owner, least_users=2)
        dimension = check_integer(dimension, "dimension", owner, low=1)
        samples = check_integer(samples, "samples", owner, low=1, high=dimension)
        calibration = check_choice(calibration, "calibration", owner, CALIBRATIONS)
        estimator = check_choice(estimator, "estimator", owner, ESTIMATORS)
        common = {
            "n_users": n_users,
            "dimension": dimension,
            "delta": delta,
            "samples": samples,
            "symmetric": symmetric,
            "clip": clip,
            "estimator": estimator,
        }
        if calibration == "tight" and samples != 1:
            raise invalid("calibration", owner, "'analytic' when samples > 1 (no exact profile for t > 1)", calibration)
        precision, gamma = blanket_parameters(
            epsilon,
            delta,
            owner,
            n_users=n_users,
            calibration=calibration,
            precision=precision,
            dimension=dimension,
            samples=samples,
        )
        return cls(precision=precision, blanket_probability=gamma, accounting=calibration, **common)

    # ----------------------------------------------------------------- privacy and costs
    def _analytic_epsilon(self) -> float:
        return analytic_blanket_epsilon(
            self.blanket_probability, self.delta, size=self.dimension * self.precision, n_users=self.n_users, samples=self.samples
        )

    @cached_property
    def profile(self) -> PrivacyProfile:
        """Exact dominating-pair profile (``t = 1``): `blanket_profile` over ``d (k + 1)`` values."""
        if self.samples != 1:
            raise invalid("samples", type(self).__name__, "1 for the exact profile", self.samples)
        return blanket_profile(self.blanket_probability, self.dimension * (self.precision + 1), self.n_users)

    def _event_for_fewer(self, n_participants: int) -> PrivacyEvent:
        """The guarantee for ``n_participants < n_users``: ``"tight"``, the exact profile of `blanket_profile` over ``d (k + 1)``
        values at ``n_participants``; ``"analytic"`` the closed form there (infinite epsilon where it has
        no finite value and no exact profile exists, ``t > 1``).
        """
        if self.accounting == "analytic":
            epsilon = math.inf
            if n_participants >= 2:
                epsilon = analytic_blanket_epsilon(
                    self.blanket_probability,
                    self.delta,
                    size=self.dimension * self.precision,
                    n_users=n_participants,
                    samples=self.samples,
                )
            if math.isfinite(epsilon) or self.samples != 1:
                return GuaranteeEvent(PrivacyGuarantee(epsilon, self.delta))
        profile = blanket_profile(self.blanket_probability, self.dimension * (self.precision + 1), n_participants)
        return ProfileEvent.at_delta(profile, self.delta)

    @property
    def expected_messages_per_user(self) -> float:
        return float(self.samples)

    def bits_per_message(self, n_instances: int = 1) -> int:
        """Bits of one ``(coordinate, value)`` message, for ``n_instances`` parallel vector sums."""
        n_instances = check_integer(n_instances, "n_instances", type(self).__name__, low=1)
        tags = n_instances * self.dimension
        return (math.ceil(math.log2(tags)) if tags > 1 else 0) + max(1, math.ceil(math.log2(self.precision + 1)))

    def _sampling_rate(self) -> float:
        return self.samples / self.dimension

    def variance(self, x: Any = None) -> np.ndarray:
        """Per-coordinate variance of the estimate of ``sum_i x_i``: exact for inputs ``x``, else a worst-case bound.

        For ``"report_count"`` the variance given ``c_j = c >= 1`` reports is
        ``n^2 (mean_i sigma_i^2 / ((1 - gamma)^2 c) + (1/c - 1/n) s^2)`` (noise of the ``c`` reports
        plus sampling ``c`` of the ``n`` values without replacement, ``s^2`` their sample variance);
        it is averaged over ``c ~ Binomial(n, t/d)``, with the centre-of-domain estimate at ``c = 0``.
        """
        if self.estimator == "sampling_rate":
            return self._sampling_rate_variance(x)
        k, gamma = self.precision, self.blanket_probability
        if x is None:
            n = self.n_users
            report_variance = np.full(self.dimension, (1 - gamma) / (4 * k**2) + gamma * (2 * k + 1) / (6 * k) - gamma**2 / 4)
            spread = np.full(self.dimension, n / (4 * (n - 1)))
            offset = np.full(self.dimension, 0.5)
        else:
            values = self._unit_inputs(x)
            n = values.shape[0]
            report_variance = self._report_variances(values).mean(axis=0)
            spread = values.var(axis=0, ddof=1) if n > 1 else np.zeros(self.dimension)
            offset = values.mean(axis=0) - 0.5
        rate = self._sampling_rate()
        empty = float(stats.binom.pmf(0, n, rate))
        inverse = _expected_inverse_count(n, rate)
        given_reports = n**2 * (report_variance * inverse / (1 - gamma) ** 2 + (inverse - (1 - empty) / n) * spread)
        between = empty * (1 - empty) * (n * offset) ** 2  # c = 0 estimates the centre, n/2, not n * mean
        return (given_reports + between) * (4.0 if self.symmetric else 1.0)

    def _report_variances(self, values: np.ndarray) -> np.ndarray:
        """Variance of one report ``y / k`` of each value (randomized rounding, then the blanket)."""
        k, gamma = self.precision, self.blanket_probability
        fraction = values * k - np.floor(values * k)
        second = (1 - gamma) * (values**2 + fraction * (1 - fraction) / k**2) + gamma * (2 * k + 1) / (6 * k)
        return second - ((1 - gamma) * values + gamma / 2) ** 2

    def _sampling_rate_variance(self, x: Any) -> np.ndarray:
        k, gamma, rate = self.precision, self.blanket_probability, self._sampling_rate()
        uniform_second_moment = (2 * k + 1) / (6 * k)
        scale = (1 / rate) ** 2 / (1 - gamma) ** 2 * (4.0 if self.symmetric else 1.0)
        if x is None:
            per_user = rate * (
                (1 - rate) * (1 - gamma) ** 2 + (1 - gamma) / (4 * k**2) + gamma * uniform_second_moment - gamma**2 / 4
            )
            return np.full(self.dimension, self.n_users * per_user * scale)
        values = self._unit_inputs(x)
        fraction = values * k - np.floor(values * k)
        second = (1 - gamma) * (values**2 + fraction * (1 - fraction) / k**2) + gamma * uniform_second_moment
        mean = (1 - gamma) * values + gamma / 2
        centred_second = second - gamma * mean + gamma**2 / 4
        per_user = rate * centred_second - (rate * (1 - gamma) * values) ** 2
        return per_user.sum(axis=0) * scale

    def normalised_mse_bound(self) -> float:
        """Scott, Cormode & Maple, Theorem 4.6: ``t d^2 (1/(4k^2) + gamma/4) / (n (1 - gamma)^2)``.

        A bound on ``E||DeBias - (true sums of the sampled values)||^2 (d/n)^2`` -- the error of the
        debiased sampled sums, normalised by the expected reports per coordinate (``n/d`` for t = 1).
        """
        k, gamma = self.precision, self.blanket_probability
        return self.samples * self.dimension**2 * (1 / (4 * k**2) + gamma / 4) / (self.n_users * (1 - gamma) ** 2)

    # ----------------------------------------------------------------- roles
    def _unit_inputs(self, x: Any) -> np.ndarray:
        owner = type(self).__name__
        low = -1.0 if self.symmetric else 0.0
        if self.clip:
            values = np.clip(check_array(x, "x", owner, ndim=2).astype(float), low, 1.0)
        else:
            values = check_array(x, "x", owner, ndim=2, low=low, high=1.0).astype(float)
        if values.shape[1] != self.dimension:
            raise invalid("x", owner, f"an array with dimension={self.dimension} columns", f"{values.shape[1]} columns")
        return (1.0 + values) / 2.0 if self.symmetric else values

    def local_reports(self, x: Any, *, rng: RNGLike = None) -> tuple[np.ndarray, np.ndarray]:
        """Every user's sampled coordinates and reported values, both of shape ``(n_users, t)``."""
        generator = as_generator(rng, type(self).__name__)
        values = self._unit_inputs(x)
        self.check_participants(values.shape[0])
        return self._reports_of(values, generator)

    def _reports_of(self, values: np.ndarray, generator: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        n = values.shape[0]
        if self.samples == 1:
            coordinates = generator.integers(0, self.dimension, size=(n, 1))
        else:
            keys = generator.random((n, self.dimension))
            coordinates = np.argpartition(keys, self.samples - 1, axis=1)[:, : self.samples]
        sampled = np.take_along_axis(values, coordinates, axis=1)
        rounded = randomized_round(sampled * self.precision, generator)
        blanket = generator.random(rounded.shape) < self.blanket_probability
        uniform = generator.integers(0, self.precision + 1, size=rounded.shape)
        return coordinates, np.where(blanket, uniform, rounded)

    def wire_instances(self, n_instances: int | None = None) -> int:
        """The ``d`` coordinates are the instances."""
        return wire_coordinates(self.dimension, n_instances, type(self).__name__)

    def sender_cap(self, n_instances: int, exceed_probability: float) -> SenderCap:
        """``t`` messages to ``t`` distinct coordinates."""
        return SenderCap(1, self.samples, 0.0)

    def randomize(self, x: Any, *, rng: RNGLike = None) -> MessageBatch:
        """``t`` messages per user, each tagged with its coordinate."""
        coordinates, reports = self.local_reports(x, rng=rng)
        return MessageBatch(coordinates.ravel(), reports.ravel(), n_instances=self.dimension)

    def sample_view(self, x: Any, *, rng: RNGLike = None) -> MessageHistogram:
        """Fast path: the same per-user draws counted directly, without materialising or permuting messages."""
        return self._count(*self.local_reports(x, rng=rng))

    def partial_view(self, chunk: Any, *, rng: RNGLike = None, path: str = "fast") -> PartialView:
        """One chunk of users' histogram (both paths count the same per-user draws)."""
        owner = type(self).__name__
        check_choice(path, "path", owner, EXECUTION_PATHS)
        values = self._unit_inputs(chunk)
        return PartialView(self._count(*self._reports_of(values, as_generator(rng, owner))), values.shape[0])

    def _count(self, coordinates: np.ndarray, reports: np.ndarray) -> MessageHistogram:
        width = self.precision + 1
        counts = np.bincount((coordinates * width + reports).ravel(), minlength=self.dimension * width)
        return MessageHistogram(counts.reshape(self.dimension, width), self.alphabet)

    def _message_cap(self, tail_probability: float) -> int:
        """One message per user and coordinate (and ``t`` in all)."""
        return 1

    def manipulation_bound(self, n_malicious: int, *, cap: int | None = None) -> float:
        """The largest shift of one coordinate's estimate by ``n_malicious`` senders of at most ``t`` messages each.

        With ``c = min(cap, t)`` messages per sender on one coordinate (``cap`` 1 by default):
        ``"sampling_rate"``: ``(d/t) k c u_max`` (each attacker reports ``k`` on the coordinate);
        symmetric inputs, mapped back by ``2 e - n`` with ``n`` read from the messages:
        ``max(2 (d/t) k c u_max - k c/t, 2 (d/t) k c |u_min| + k)``. ``"report_count"``: with ``n_users``
        honest senders the estimate lies in ``[N u_min, N u_max]`` for ``N`` users in the view
        (symmetric: ``[N (2 u_min - 1), N (2 u_max - 1)]``) and attackers add at most ``k``
        users, so the shift is at most the largest distance between those ranges at ``N = n``
        and ``N = n + k`` (a bound of order ``n``, not tight).
        """
        owner = f"{type(self).__name__}.manipulation_bound"
        n_malicious = check_malicious(n_malicious, owner)
        per_coordinate = n_malicious * min(self._enforced_cap(cap, owner), self.samples)
        gamma = self.blanket_probability
        most, least = (1.0 - gamma / 2.0) / (1.0 - gamma), -gamma / 2.0 / (1.0 - gamma)
        if self.estimator == "sampling_rate":
            scale = self.dimension / self.samples
            if not self.symmetric:
                return scale * per_coordinate * most
            upward = 2.0 * scale * per_coordinate * most - per_coordinate / self.samples
            return max(upward, 2.0 * scale * per_coordinate * -least + n_malicious)
        high, low = (2.0 * most - 1.0, 2.0 * least - 1.0) if self.symmetric else (most, least)
        honest, attacked = self.n_users, self.n_users + n_malicious
        return max(attacked * high - honest * low, honest * high - attacked * low) if n_malicious else 0.0

    def debiased_sampled_sums(self, view: MessageHistogram | MessageBatch) -> np.ndarray:
        """Scott, Cormode & Maple's ``DeBias`` per coordinate: unbiased for the sum of the reported values."""
        counts = self.view(view).counts
        reports = counts.sum(axis=1)
        total = counts @ np.arange(self.precision + 1) / self.precision
        return (total - self.blanket_probability * reports / 2) / (1 - self.blanket_probability)

    def analyze(self, view: MessageHistogram | MessageBatch) -> np.ndarray:
        """Estimate of ``sum_i x_i`` (shape ``(d,)``) with the protocol's `estimator`.

        ``"report_count"``: ``n DeBias_j / c_j`` (``n/2`` where ``c_j = 0``); ``"sampling_rate"``:
        ``(d / t) DeBias_j``. The number of users ``n`` is read from the view (messages / ``t``);
        symmetric inputs are mapped back with it.
        """
        histogram = self.view(view)
        users = histogram.total_messages / self.samples  # every user sends exactly t messages
        debiased = self.debiased_sampled_sums(histogram)
        if self.estimator == "sampling_rate":
            estimate = debiased / self._sampling_rate()
        else:
            reports = histogram.counts.sum(axis=1)
            means = np.divide(debiased, reports, out=np.full(self.dimension, 0.5), where=reports > 0)
            estimate = users * means
        if self.symmetric:
            return 2.0 * estimate - users
        return estimate
