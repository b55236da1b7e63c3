"""Means (and variances) of reals in a public ``[low, high]``, on top of the shuffled integer sums.

* `ShuffledMean`: values randomly rounded to ``levels`` integer steps and summed by BBGN20
  additive shares with discrete Laplace noise (`~privsum.sums.SparseMultiMessageSum`); the mean is
  the decoded sum over the public number of users.
* `ShuffledMeanVariance`: the mean and the variance from two such sums (of the values and of their
  squares), the budget split between them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from scipy import stats

from privsum._delegation import delegated
from privsum._random import RNGLike, as_generator
from privsum._validation import check_array, check_delta, check_epsilon, check_integer, check_privacy_request, check_real, invalid
from privsum.accounting.events import ComposedEvent, PrivacyEvent
from privsum.accounting.guarantee import PrivacyGuarantee
from privsum.bitsum.base import ConfidenceInterval, symmetric_noise_half_width
from privsum.shuffle.noise import discrete_laplace_pmf
from privsum.sums.sparse_shares import SparseMultiMessageSum

__all__ = ["MAX_LEVELS", "MeanAndVariance", "ShuffledMean", "ShuffledMeanVariance"]

#: Most rounding levels of `ShuffledMean` (the integer sum's sensitivity).
MAX_LEVELS = 1 << 20
# The rounding variance (at most n/4 in integer units) is kept below this share of the noise's.
_ROUNDING_SHARE = 0.01


def _rounded(values: np.ndarray, generator: np.random.Generator) -> np.ndarray:
    """Unbiased randomized rounding of non-negative reals to integers."""
    floor = np.floor(values)
    return (floor + (generator.random(values.shape) < values - floor)).astype(np.int64)


def _hoeffding_half_width(n_users: int, failure: float) -> float:
    """``t`` with ``P(|sum of n centred roundings| >= t) <= failure`` (each in an interval of length 1)."""
    return math.sqrt(0.5 * n_users * math.log(2.0 / failure))


@dataclass(frozen=True, kw_only=True)
class _RoundedSums:
    """What both bounded statistics share: reals in a public ``[low, high]`` scaled to ``[0, levels]`` for ``sum_protocol``."""

    low: float
    high: float
    sum_protocol: SparseMultiMessageSum

    def __post_init__(self) -> None:
        owner = type(self).__name__
        object.__setattr__(self, "low", check_real(self.low, "low", owner))
        object.__setattr__(self, "high", check_real(self.high, "high", owner))
        if not self.high > self.low:
            raise invalid("high", owner, f"greater than low={self.low:g}", self.high)
        if not isinstance(self.sum_protocol, SparseMultiMessageSum):
            raise invalid("sum_protocol", owner, "a SparseMultiMessageSum", self.sum_protocol)

    n_users = delegated("sum_protocol.n_users", "Users the sum protocol is set up for.")
    levels = delegated("sum_protocol.domain", "Integer steps across ``[low, high]`` (the sum protocol's domain).")

    def bits_per_message(self) -> int:
        return self.sum_protocol.bits_per_message()

    def _scaled(self, values: Any) -> np.ndarray:
        """``levels (x - low)/(high - low)`` for each user's value (validated: finite, within ``[low, high]``)."""
        owner = type(self).__name__
        array = check_array(values, "values", owner, ndim=1, low=self.low, high=self.high).astype(float)
        if array.size == 0:
            raise invalid("values", owner, "at least one value", "no values")
        return np.minimum((array - self.low) * (self.levels / (self.high - self.low)), float(self.levels))


@dataclass(frozen=True, kw_only=True)
class ShuffledMean(_RoundedSums):
    """The mean of reals in a public ``[low, high]`` from a shuffled integer sum.

    User ``i`` maps ``x_i`` to ``u_i = levels (x_i - low)/(high - low)`` in ``[0, levels]``, rounds it
    to an integer at random (up with probability its fractional part: unbiased) and runs
    ``sum_protocol``, BBGN20 additive shares with ``DLap(e^{-epsilon/levels})`` noise on the sum. The
    estimate is ``low + (high - low) S / (levels n)`` with ``S`` the decoded sum and ``n = n_users``.

    Args:
        low: public lower end.
        high: public upper end (``> low``).
        sum_protocol: a `SparseMultiMessageSum` whose ``domain`` is ``levels`` (from `from_privacy`).

    Privacy:
        Replace-one (one user's value changes, within ``[low, high]``), trusted shuffler: that of
        ``sum_protocol`` (its rounded input changes by at most ``levels``, the sensitivity its
        noise is calibrated for; the rounding is the user's own randomness). Values outside
        ``[low, high]`` raise: nothing is clipped.

    Utility:
        Unbiased when ``n_users`` users take part (the divisor is the public ``n``). Variance
        ``((high - low)/(levels n))^2 (2a/(1-a)^2 + sum_i f_i(1 - f_i))`` with ``f_i`` the rounding's
        fractional parts (at most ``n/4``): `from_privacy` picks ``levels`` so that the rounding's
        share is at most 1% of the noise's, so the RMSE is within about 0.5% of the central
        discrete Laplace mean's (and within ``sqrt(2a/(1-a)^2) / (levels sqrt 2 / epsilon)`` of the
        continuous Laplace's). Levels need not be a power of two.

    Examples:
        >>> mean = ShuffledMean.from_privacy(epsilon=1.0, delta=1e-6, n_users=5000, low=0.0, high=100.0)
        >>> values = np.random.default_rng(0).uniform(20, 60, 5000)
        >>> bool(abs(mean.run(values, rng=1) - values.mean()) < 0.2)
        True
    """

    @classmethod
    def from_privacy(
        cls, *, epsilon: float, delta: float, n_users: int, low: float, high: float, levels: int | None = None
    ) -> ShuffledMean:
        """Calibrate the sum for (epsilon, delta) with ``levels`` rounding steps.

        Args:
            epsilon: total epsilon.
            delta: total delta (spent on the shares' statistical distance).
            n_users: users taking part (at least 3, as BBGN20's share bound needs).
            low: public lower end.
            high: public upper end.
            levels: integer steps across ``[low, high]``; ``None``: the least power of two whose
                rounding variance ``n/4`` is at most 1% of the noise's ``2 levels^2/epsilon^2``.
        """
        owner = cls.__name__
        epsilon, delta, n_users = check_privacy_request(epsilon, delta, n_users, owner, least_users=3)
        if levels is None:
            least = math.sqrt(n_users * epsilon**2 / (8.0 * _ROUNDING_SHARE))
            levels = min(MAX_LEVELS, 1 << max(0, math.ceil(math.log2(max(1.0, least)))))
        levels = check_integer(levels, "levels", owner, low=1, high=MAX_LEVELS)
        protocol = SparseMultiMessageSum.from_privacy(epsilon=epsilon, delta=delta, n_users=n_users, domain=levels)
        return cls(low=low, high=high, sum_protocol=protocol)

    event = delegated("sum_protocol.event", "The sum protocol's event (the mean is post-processing of the sum).")
    guarantee = delegated("sum_protocol.guarantee", "The sum protocol's guarantee.")
    expected_messages_per_user = delegated("sum_protocol.expected_messages_per_user", "The sum protocol's messages per user.")

    def _unit(self) -> float:
        """The mean's change per unit of the integer sum."""
        return (self.high - self.low) / (self.levels * self.n_users)

    def variance(self) -> float:
        """The worst-case variance of the estimate (every rounding's fractional part 1/2)."""
        return self._unit() ** 2 * (float(self.sum_protocol.variance()) + 0.25 * self.n_users)

    def rmse(self) -> float:
        return math.sqrt(self.variance())

    def encode(self, values: Any, *, rng: RNGLike = None) -> np.ndarray:
        """Each user's rounded integer in ``[0, levels]`` (validated: finite, within ``[low, high]``)."""
        scaled = self._scaled(values)
        return _rounded(scaled, as_generator(rng, type(self).__name__))

    def run(self, values: Any, *, rng: RNGLike = None, path: str = "fast") -> float:
        """The estimated mean of ``values`` (one per user)."""
        generator = as_generator(rng, type(self).__name__)
        total = float(np.asarray(self.sum_protocol.run(self.encode(values, rng=generator), rng=generator, path=path))[0])
        return self.low + self._unit() * total

    def confidence_interval(self, estimate: float, level: float = 0.95) -> ConfidenceInterval:
        """An interval for the true mean with coverage at least ``level`` (``n_users`` users, no wrap-around).

        Half of the miss probability goes to the noise (its exact discrete Laplace quantile) and
        half to the rounding (Hoeffding: ``n`` independent centred terms, each in an interval of
        length 1). Post-processing: no privacy cost.
        """
        owner = f"{type(self).__name__}.confidence_interval"
        level = check_real(level, "level", owner, low=0.0, high=1.0, low_open=True, high_open=True)
        estimate = check_real(estimate, "estimate", owner)
        miss = 1.0 - level
        ratio = self.sum_protocol.noise_ratio
        reach = int(stats.dlaplace(-math.log(ratio)).isf(miss / 8.0)) + 2
        pmf = discrete_laplace_pmf(np.arange(-reach, reach + 1), ratio)
        noise = symmetric_noise_half_width(pmf, 1.0 - miss / 2.0)
        half = self._unit() * (noise + _hoeffding_half_width(self.n_users, miss / 2.0))
        return ConfidenceInterval(estimate - half, estimate + half, level, "exact noise quantile and Hoeffding bound")


class MeanAndVariance(NamedTuple):
    """A released mean and (population) variance."""

    mean: float
    variance: float


@dataclass(frozen=True, kw_only=True)
class ShuffledMeanVariance(_RoundedSums):
    """The mean and the population variance of reals in ``[low, high]``: two shuffled integer sums.

    User ``i`` scales ``x_i`` to ``u_i = L (x_i - low)/(high - low)`` in ``[0, L]`` and rounds, at
    random and independently, ``u_i`` and ``u_i^2 / L`` (both in ``[0, L]``); instance 0 of
    ``sum_protocol`` sums the first, instance 1 the second. With ``S_0, S_1`` the decoded sums
    and ``n = n_users``: ``m = S_0 / n`` estimates the mean of ``u`` and
    ``L S_1 / n - m^2 + Var(S_0)/n^2`` its population variance (the last term removes the bias
    of ``m^2``, ``Var(S_0)`` being the noise's and the rounding's worst case); both are mapped
    back to the values' units.

    Privacy:
        Replace-one: a user's change moves both of its inputs, so the guarantee is the two
        instances' events composed (`ComposedEvent`); `from_privacy` runs each at
        ``(epsilon/2, delta/2)``.

    Utility:
        The mean is unbiased; the variance is unbiased up to the rounding's bias correction, which
        uses the worst-case rounding variance (a bias below ``(high - low)^2 / (4 L^2 n)``).

    Examples:
        >>> both = ShuffledMeanVariance.from_privacy(epsilon=1.0, delta=1e-6, n_users=20000, low=0.0, high=10.0)
        >>> values = np.random.default_rng(0).uniform(0.0, 10.0, 20000)
        >>> released = both.run(values, rng=1)
        >>> bool(abs(released.mean - 5.0) < 0.1 and abs(released.variance - 100 / 12) < 0.5)
        True
    """

    @classmethod
    def from_privacy(
        cls, *, epsilon: float, delta: float, n_users: int, low: float, high: float, levels: int | None = None
    ) -> ShuffledMeanVariance:
        """Both sums at ``(epsilon/2, delta/2)``; ``levels`` as `ShuffledMean.from_privacy` picks them at ``epsilon/2``."""
        owner = cls.__name__
        epsilon = check_epsilon(epsilon, owner)
        delta = check_delta(delta, owner, allow_zero=False)
        half = ShuffledMean.from_privacy(epsilon=epsilon / 2, delta=delta / 2, n_users=n_users, low=low, high=high, levels=levels)
        return cls(low=low, high=high, sum_protocol=half.sum_protocol)

    @property
    def event(self) -> PrivacyEvent:
        """The two instances' events composed (a user changes both)."""
        return ComposedEvent(self.sum_protocol.event, 2)

    @property
    def guarantee(self) -> PrivacyGuarantee:
        return self.event.guarantee

    @property
    def expected_messages_per_user(self) -> float:
        return 2 * self.sum_protocol.expected_messages_per_user

    def run(self, values: Any, *, rng: RNGLike = None, path: str = "fast") -> MeanAndVariance:
        """The estimated mean and population variance of ``values`` (one per user)."""
        generator = as_generator(rng, type(self).__name__)
        scaled = self._scaled(values)
        levels, n = self.levels, self.n_users
        inputs = np.stack([_rounded(scaled, generator), _rounded(scaled**2 / levels, generator)], axis=1)
        first, second = np.asarray(self.sum_protocol.run(inputs, rng=generator, path=path), dtype=float)
        mean = first / n
        first_variance = float(self.sum_protocol.variance()) + 0.25 * n
        variance = levels * second / n - mean**2 + first_variance / n**2
        unit = (self.high - self.low) / levels
        return MeanAndVariance(self.low + unit * mean, unit**2 * variance)
