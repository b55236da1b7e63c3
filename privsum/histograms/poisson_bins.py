"""A bit sum by Poisson noise messages: the cheapest bins of a histogram over many categories."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from privsum._random import RNGLike, as_generator
from privsum._validation import check_integer, check_real
from privsum.accounting.events import PrivacyEvent
from privsum.bitsum.base import EXACT, BitSumProtocol, instance_ids
from privsum.histograms._checks import check_delta_field, check_privacy_target
from privsum.histograms.events import MAX_NOISE_MEAN, PoissonCounterEvent, calibrated_noise_mean, poisson_upper_quantile
from privsum.shuffle.histogram import MessageHistogram
from privsum.shuffle.messages import MessageBatch

__all__ = ["PoissonNoiseBitSum"]


@dataclass(frozen=True, kw_only=True)
class PoissonNoiseBitSum(BitSumProtocol):
    """Each user sends a message ``1`` if its bit is 1, plus ``Pois(noise_mean / n)`` noise messages ``1``.

    Over ``n = n_users`` users each instance's count is ``S + Pois(noise_mean)``; the analyzer
    subtracts ``noise_mean``. With every user sending messages to every bin, a histogram over ``k``
    categories costs each user ``1 + k noise_mean / n`` messages: far fewer than 3NB's flooding
    when ``k`` is large, for a larger variance. This is the fake-message approach of Balcer & Cheu
    ("Separating local & shuffled differential privacy via histograms", ITC 2020) with Poisson in
    place of binomial noise, so that it is divisible among the users and its privacy is exact.

    Args:
        n_users: users the noise is divided among (at least this many must take part).
        noise_mean: ``lambda``, the noise messages per instance over all users.
        delta: the delta of the headline guarantee.

    Privacy:
        Replace-one, for one instance: the count is the others' bits (known to the adversary)
        plus ``b + Pois(lambda)``, so the pair is exactly ``(Pois(lambda), 1 + Pois(lambda))``
        (`~privsum.histograms.events.PoissonCounterEvent`). Fewer participants leave
        ``Pois(lambda m / n)``: `event_for_participants` reports it.

    Utility:
        Unbiased with ``n_users`` participants; variance ``lambda`` whatever the true sum.

    Examples:
        >>> protocol = PoissonNoiseBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1000)
        >>> bool(protocol.guarantee.epsilon <= 1.0), round(protocol.expected_messages_per_user, 3)
        (True, 1.034)
    """

    n_users: int
    noise_mean: float
    delta: float

    def __post_init__(self) -> None:
        owner = type(self).__name__
        object.__setattr__(self, "n_users", check_integer(self.n_users, "n_users", owner, low=1))
        object.__setattr__(
            self, "noise_mean", check_real(self.noise_mean, "noise_mean", owner, low=0.0, high=MAX_NOISE_MEAN, low_open=True)
        )
        check_delta_field(self, owner)

    @classmethod
    def from_privacy(cls, *, epsilon: float, delta: float, n_users: int, changed_bins: int = 1) -> PoissonNoiseBitSum:
        """The least ``noise_mean`` meeting (epsilon, delta) for one instance, or for ``changed_bins`` changed together.

        ``changed_bins=2`` calibrates directly for a histogram's replace-one change (one bin
        losing a 1, one gaining it: `~privsum.histograms.events.BinsEvent`).
        """
        owner = cls.__name__
        epsilon, delta, n_users = check_privacy_target(epsilon, delta, n_users, owner)
        changed_bins = check_integer(changed_bins, "changed_bins", owner, low=1, high=2)
        noise_mean = calibrated_noise_mean(epsilon, delta, changed_bins, owner)
        return cls(n_users=n_users, noise_mean=noise_mean, delta=delta)

    @property
    def alphabet(self) -> tuple[int, ...]:
        return (1,)

    def expected_messages(self, fraction_of_ones: float = 1.0) -> float:
        """Expected messages per user and instance when a ``fraction_of_ones`` of users hold 1."""
        fraction = check_real(fraction_of_ones, "fraction_of_ones", type(self).__name__, low=0.0, high=1.0)
        return fraction + self.noise_mean / self.n_users

    @property
    def expected_messages_per_user(self) -> float:
        return self.expected_messages(1.0)

    def _message_cap(self, tail_probability: float) -> int:
        """A user's bit plus the ``Pois(lambda / n)`` noise count it exceeds with probability at most ``tail_probability``."""
        return 1 + poisson_upper_quantile(self.noise_mean / self.n_users, tail_probability)

    @property
    def largest_message_effect(self) -> float:
        """One message adds 1 to its instance's count, so 1 to the estimate."""
        return 1.0

    @functools.cached_property
    def event(self) -> PrivacyEvent:
        return PoissonCounterEvent(noise_mean=self.noise_mean, delta=self.delta)

    def _event_for_fewer(self, n_participants: int) -> PrivacyEvent:
        return PoissonCounterEvent(noise_mean=self.noise_mean * n_participants / self.n_users, delta=self.delta)

    def randomize(self, x: Any, *, rng: RNGLike = None) -> MessageBatch:
        bits = self.check_bits(x)
        self.warn_if_fewer(bits.shape[0])
        return self._messages_of_bits(bits, as_generator(rng, type(self).__name__))

    def _messages_of_bits(self, bits: np.ndarray, generator: np.random.Generator) -> MessageBatch:
        per_entry = bits.astype(np.int64) + generator.poisson(self.noise_mean / self.n_users, bits.shape)
        instances = np.repeat(instance_ids(*bits.shape), per_entry.ravel())
        return MessageBatch(instances, np.ones(instances.size, dtype=np.int64), bits.shape[1])

    def sample_view(self, x: Any, *, rng: RNGLike = None) -> MessageHistogram:
        """Exact fast path: the ones counted plus ``Pois(lambda m / n)`` per instance for ``m`` users."""
        bits = self.check_bits(x)
        self.warn_if_fewer(bits.shape[0])
        return self._view_of_bits(bits, as_generator(rng, type(self).__name__))

    def _view_of_bits(self, bits: np.ndarray, generator: np.random.Generator) -> MessageHistogram:
        noise = generator.poisson(self.noise_mean * bits.shape[0] / self.n_users, bits.shape[1])
        return MessageHistogram((bits.sum(axis=0) + noise)[:, np.newaxis], self.alphabet)

    def analyze(self, view: MessageHistogram | MessageBatch) -> np.ndarray:
        """``count - noise_mean`` per instance (unbiased with ``n_users`` participants)."""
        return self.view(view).counts[:, 0] - self.noise_mean

    def variance(self, true_sum: Any = None) -> float:
        """``noise_mean``, whatever the true sum."""
        return self.noise_mean

    def _error_half_width(self, level: float) -> tuple[float, str]:
        """Exact: the smallest ``h`` with ``P(|Pois(lambda) - lambda| <= h) >= level``."""
        noise = stats.poisson(self.noise_mean)
        reach = int(noise.isf(1e-12)) + 2
        support = np.arange(0, reach + 1)
        distance = np.abs(support - self.noise_mean)
        order = np.argsort(distance, kind="stable")
        covered = np.cumsum(noise.pmf(support)[order])
        return float(distance[order][np.flatnonzero(covered >= level)[0]]), EXACT

    def _lattice_step(self) -> float:
        return 1.0
