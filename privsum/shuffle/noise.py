"""Noise distributions shared by shuffle protocols, in the papers' parameterisation.

**Negative binomial** ``NB(r, a)``: pmf ``C(k+r-1, k) (1-a)^r a^k`` on ``k = 0, 1, ...``, mean
``r a/(1-a)``, variance ``r a/(1-a)^2``; ``a`` is the *ratio*. numpy and scipy take the success
probability ``1 - a`` instead; passing ``a`` to them directly is a known bug in public
shuffle-DP code, so every sampler and pmf here takes the ratio.

**Discrete Laplace** ``DLap(a)``: pmf ``(1-a)/(1+a) a^|k|`` on the integers; it is the difference
of two independent ``NB(1, a)`` variables, and the sum over ``n`` users of
``NB(1/n, a) - NB(1/n, a)`` is exactly ``DLap(a)`` (infinite divisibility).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from privsum._validation import check_probability, check_real

__all__ = [
    "discrete_laplace_pmf",
    "discrete_laplace_variance",
    "negative_binomial_pmf",
    "negative_binomial_truncated",
    "negative_binomial_variance",
    "sample_discrete_laplace",
    "sample_negative_binomial",
]


def _check(shape: float, ratio: float, owner: str) -> tuple[float, float]:
    shape = check_real(shape, "shape", owner, low=0.0, low_open=True)
    ratio = check_probability(ratio, "ratio", owner)
    return shape, ratio


def sample_negative_binomial(rng: np.random.Generator, shape: float, ratio: float, size: int | tuple[int, ...]) -> np.ndarray:
    """Samples of ``NB(shape, ratio)`` (ratio parameterisation, see the module docstring).

    Examples:
        >>> draws = sample_negative_binomial(np.random.default_rng(0), 2.0, 0.5, 100_000)
        >>> bool(abs(draws.mean() - 2.0) < 0.05)
        True
    """
    shape, ratio = _check(shape, ratio, "sample_negative_binomial")
    if ratio == 0.0:
        return np.zeros(size, dtype=np.int64)
    return rng.negative_binomial(shape, 1.0 - ratio, size=size).astype(np.int64)


def negative_binomial_pmf(support: np.ndarray, shape: float, ratio: float) -> np.ndarray:
    """The pmf of ``NB(shape, ratio)`` at the integers ``support``."""
    shape, ratio = _check(shape, ratio, "negative_binomial_pmf")
    return stats.nbinom.pmf(support, shape, 1.0 - ratio)


def negative_binomial_truncated(shape: float, ratio: float, tail_mass: float) -> tuple[np.ndarray, float]:
    """The pmf of ``NB(shape, ratio)`` on ``0..K`` and the mass beyond ``K`` (at most ``tail_mass``).

    Examples:
        >>> pmf, tail = negative_binomial_truncated(1.0, 0.5, 1e-12)
        >>> bool(tail <= 1e-12 and abs(pmf.sum() + tail - 1.0) < 1e-12)
        True
    """
    shape, ratio = _check(shape, ratio, "negative_binomial_truncated")
    tail_mass = check_real(tail_mass, "tail_mass", "negative_binomial_truncated", low=0.0, high=1.0, low_open=True)
    distribution = stats.nbinom(shape, 1.0 - ratio)
    last = int(distribution.isf(tail_mass)) + 1
    pmf = distribution.pmf(np.arange(last + 1))
    return pmf, float(distribution.sf(last))


def negative_binomial_variance(shape: float, ratio: float) -> float:
    """``Var[NB(shape, ratio)] = shape * ratio / (1 - ratio)^2``."""
    shape, ratio = _check(shape, ratio, "negative_binomial_variance")
    return shape * ratio / (1.0 - ratio) ** 2


def sample_discrete_laplace(rng: np.random.Generator, ratio: float, size: int | tuple[int, ...]) -> np.ndarray:
    """Samples of ``DLap(ratio)`` as the difference of two geometric variables."""
    ratio = check_probability(ratio, "ratio", "sample_discrete_laplace")
    return sample_negative_binomial(rng, 1.0, ratio, size) - sample_negative_binomial(rng, 1.0, ratio, size)


def discrete_laplace_pmf(support: np.ndarray, ratio: float) -> np.ndarray:
    """The pmf ``(1-a)/(1+a) a^|k|`` of ``DLap(ratio)`` at the integers ``support``.

    Examples:
        >>> float(discrete_laplace_pmf(np.array([0]), 0.5)[0])
        0.3333333333333333
    """
    ratio = check_probability(ratio, "ratio", "discrete_laplace_pmf")
    support = np.abs(np.asarray(support))
    return (1.0 - ratio) / (1.0 + ratio) * np.power(ratio, support)


def discrete_laplace_variance(ratio: float) -> float:
    """``Var[DLap(a)] = 2a / (1 - a)^2``."""
    ratio = check_probability(ratio, "ratio", "discrete_laplace_variance")
    return 2.0 * ratio / (1.0 - ratio) ** 2
