"""Central histograms: the trusted-curator references the shuffled histograms are measured against."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from privsum._random import RNGLike, as_generator
from privsum._validation import check_choice, check_delta, check_epsilon, invalid
from privsum.accounting.events import GuaranteeEvent, PrivacyEvent
from privsum.accounting.gaussian import GaussianEvent, gaussian_sigma
from privsum.accounting.guarantee import Neighbouring, PrivacyGuarantee
from privsum.histograms.categories import Categories
from privsum.shuffle.noise import discrete_laplace_variance, sample_discrete_laplace

__all__ = ["CENTRAL_MECHANISMS", "CentralHistogram", "histogram_sensitivities"]

CENTRAL_MECHANISMS = ("discrete-laplace", "gaussian", "auto")


def histogram_sensitivities(neighbouring: Neighbouring) -> tuple[int, float]:
    """``(L1, L2)`` sensitivity of the vector of counts: replace-one ``(2, sqrt 2)``, else ``(1, 1)``.

    Replace-one moves one user from bin ``a`` to bin ``b``: ``-1`` and ``+1`` in two bins. Add/remove
    and zero-out change one bin by one.

    Examples:
        >>> histogram_sensitivities(Neighbouring.REPLACE_ONE)
        (2, 1.4142135623730951)
    """
    return (2, math.sqrt(2.0)) if neighbouring == Neighbouring.REPLACE_ONE else (1, 1.0)


@dataclass(frozen=True, kw_only=True)
class CentralHistogram:
    """A trusted curator's histogram: exact counts plus independent noise in every bin.

    Args:
        epsilon: the guarantee's epsilon.
        delta: its delta (the Gaussian's; the discrete Laplace is pure and reports 0).
        categories: the public categories.
        neighbouring: ``"replace-one"``, ``"add-remove"`` or ``"zero-out"``.
        mechanism: ``"discrete-laplace"`` (ratio ``exp(-epsilon / L1)``), ``"gaussian"`` (the
            analytic Gaussian of Balle & Wang, ICML 2018, with the L2 sensitivity) or ``"auto"``
            (whichever has the smaller variance).

    Privacy:
        The vector of counts has the sensitivities of `histogram_sensitivities`; the discrete
        Laplace mechanism is ``epsilon``-DP in L1, the Gaussian ``(epsilon, delta)``-DP in L2. A
        trusted curator sees every value: this is a reference, not a shuffle protocol. The
        Gaussian is sampled in floating point (its guarantee is for exact Gaussian noise).

    Examples:
        >>> reference = CentralHistogram(epsilon=1.0, delta=1e-6, categories=["a", "b"])
        >>> reference.mechanism, round(reference.variance(), 3)
        ('discrete-laplace', 7.835)
    """

    epsilon: float
    delta: float
    categories: Categories
    neighbouring: Neighbouring = Neighbouring.REPLACE_ONE
    mechanism: str = "auto"

    def __post_init__(self) -> None:
        owner = type(self).__name__
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, owner))
        object.__setattr__(self, "delta", check_delta(self.delta, owner))
        if not isinstance(self.categories, Categories):
            object.__setattr__(self, "categories", Categories(self.categories))
        object.__setattr__(self, "neighbouring", Neighbouring.parse(self.neighbouring, owner))
        mechanism = check_choice(self.mechanism, "mechanism", owner, CENTRAL_MECHANISMS)
        if mechanism == "gaussian" and self.delta == 0.0:
            raise invalid("delta", owner, "in (0, 1) for the Gaussian mechanism", self.delta)
        if mechanism == "auto":
            mechanism = "discrete-laplace"
            if self.delta > 0.0 and self._gaussian_sigma() ** 2 < self._laplace_variance():
                mechanism = "gaussian"
        object.__setattr__(self, "mechanism", mechanism)

    def _laplace_ratio(self) -> float:
        return math.exp(-self.epsilon / histogram_sensitivities(self.neighbouring)[0])

    def _laplace_variance(self) -> float:
        return discrete_laplace_variance(self._laplace_ratio())

    def _gaussian_sigma(self) -> float:
        return gaussian_sigma(self.epsilon, self.delta, sensitivity=histogram_sensitivities(self.neighbouring)[1])

    @functools.cached_property
    def event(self) -> PrivacyEvent:
        if self.mechanism == "discrete-laplace":
            return GuaranteeEvent(PrivacyGuarantee(self.epsilon, 0.0, self.neighbouring))
        sensitivity = histogram_sensitivities(self.neighbouring)[1]
        return GaussianEvent(self._gaussian_sigma(), sensitivity, PrivacyGuarantee(self.epsilon, self.delta, self.neighbouring))

    @property
    def guarantee(self) -> PrivacyGuarantee:
        return self.event.guarantee

    def variance(self) -> float:
        """Variance of each bin's noise."""
        return self._laplace_variance() if self.mechanism == "discrete-laplace" else self._gaussian_sigma() ** 2

    def rmse(self) -> float:
        return math.sqrt(self.variance())

    def run(self, x: Any, *, rng: RNGLike = None) -> np.ndarray:
        """Exact counts of the categories in ``x`` plus the noise, shape ``(n_categories,)``."""
        owner = type(self).__name__
        generator = as_generator(rng, owner)
        counts = np.bincount(self.categories.index(x, owner), minlength=len(self.categories)).astype(float)
        if self.mechanism == "discrete-laplace":
            return counts + sample_discrete_laplace(generator, self._laplace_ratio(), counts.size)
        return counts + generator.normal(0.0, self._gaussian_sigma(), counts.size)
