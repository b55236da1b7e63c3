"""The privacy of one counter that receives Poisson noise messages: ``N`` versus ``N + 1``, ``N ~ Pois(lambda)``."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from scipy import stats

from privsum._validation import check_delta, check_real
from privsum.accounting.events import PrivacyEvent
from privsum.accounting.guarantee import Neighbouring, PrivacyGuarantee
from privsum.accounting.pld import DEFAULT_DISCRETIZATION, PLDPair

__all__ = ["MAX_NOISE_MEAN", "PoissonCounterEvent"]

#: Largest Poisson mean per counter accepted (its pmf is tabulated over about ``20 sqrt(mean)`` points).
MAX_NOISE_MEAN = 1e8
# Mass left outside the tabulated support of each distribution (counted as infinite loss).
_TAIL = 1e-15


@dataclass(frozen=True)
class PoissonCounterEvent(PrivacyEvent):
    """One counter of the shuffled view holding ``c + N`` versus ``c + 1 + N``, with ``N ~ Pois(noise_mean)``.

    Privacy:
        Replace-one, for one counter, against an adversary who knows every other user's message
        (so ``c``). The pair ``(Pois(lambda), 1 + Pois(lambda))`` is the exact pair of the view
        in either direction; its privacy-loss distributions are computed from the pmfs on a
        support holding all but ``1e-15`` of each distribution's mass, the rest counted as
        infinite loss (an upper bound). ``N + 1`` at 0 has probability 0: its loss is infinite,
        which the PLD carries.

    Examples:
        >>> event = PoissonCounterEvent(noise_mean=60.0, delta=1e-6)
        >>> bool(0.5 < event.guarantee.epsilon < 1.0)
        True
    """

    noise_mean: float
    delta: float

    def __post_init__(self) -> None:
        owner = "PoissonCounterEvent"
        object.__setattr__(
            self, "noise_mean", check_real(self.noise_mean, "noise_mean", owner, low=0.0, high=MAX_NOISE_MEAN, low_open=True)
        )
        object.__setattr__(self, "delta", check_delta(self.delta, owner, allow_zero=False))

    @functools.lru_cache(maxsize=8)  # noqa: B019 - frozen, hashable and small: the cache is bounded
    def pld(self, discretization: float = DEFAULT_DISCRETIZATION) -> PLDPair:
        noise = stats.poisson(self.noise_mean)
        low, high = int(noise.ppf(_TAIL)), int(noise.isf(_TAIL)) + 1
        support = np.arange(low, high + 2)
        without = noise.pmf(support)
        with_one = noise.pmf(support - 1)
        return PLDPair.from_distributions(
            without,
            with_one,
            p_tail=float(noise.cdf(low - 1) + noise.sf(high + 1)),
            q_tail=float(noise.cdf(low - 2) + noise.sf(high)),
            discretization=discretization,
        )

    @functools.cached_property
    def guarantee(self) -> PrivacyGuarantee:
        return PrivacyGuarantee(self.pld().epsilon(self.delta), self.delta, Neighbouring.REPLACE_ONE)
