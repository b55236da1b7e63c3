"""Conditional randomized rounding: unbiased integer rounding of a vector, resampled until its L2 norm is within a bound.

`privsum.sums.SkellamVectorSum` rounds every user's scaled vector this way (it is a
`ConditionalRounding`), and its ``from_privacy`` sizes the noise and the modulus with the same bounds
(`RoundingAt` each candidate scale). A helper of the lowest layer, beside `privsum._user_inputs`'s
unconditional `randomized_round`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from privsum._validation import check_integer, check_real

__all__ = [
    "MAX_DIMENSION",
    "MAX_SCALED_NORM",
    "RETRY_FAILURE_LOG2",
    "ConditionalRounding",
    "RoundingAt",
    "conditional_rounding_l2_bound",
    "conditional_rounding_squared_bound",
    "integer_l1_bound",
    "root_up",
]

MAX_DIMENSION = 2**24
MAX_SCALED_NORM = 2.0**30  # gamma * c: squared norms of the rounded vectors, (gamma c + sqrt(d))^2, fit in int64
RETRY_FAILURE_LOG2 = -80.0  # a user's rounding gives up with probability at most 2^-80 (counted in delta)


def conditional_rounding_squared_bound(radius: float, dimension: int, rejection_probability: float) -> int:
    """``K``: the integer bound conditional randomized rounding enforces on ``||round(y)||^2`` for ``||y|| <= radius``.

    Randomized rounding writes ``round(y) = y + e`` with independent ``e_j`` in ``{-f_j, 1 - f_j}``
    (``f_j`` the fractional part of ``y_j``), ``E e_j = 0``. Then
    ``||y + e||^2 = ||y||^2 + sum_j (2 y_j e_j + e_j^2)``, a sum of independent terms, the ``j``-th
    taking two values ``|2 y_j + 1 - 2 f_j|`` apart, with mean ``||y||^2 + sum_j f_j(1 - f_j)``.
    Hoeffding's inequality and ``sum_j (2 y_j + 1 - 2 f_j)^2 <= (2 ||y|| + sqrt(d))^2`` give, with
    probability at least ``1 - beta`` (``beta = rejection_probability``)::

        ||round(y)||^2 <= r^2 + d/4 + (r + sqrt(d)/2) sqrt(2 log(1/beta))

    (the form of Kairouz, Liu & Steinke, ICML 2021). Deterministically ``||round(y)|| < r + sqrt(d)``.
    The integer vector's squared norm is an integer, so ``K = floor(min(both bounds))`` (computed
    with a ``1e-12`` relative margin upwards, which only lowers the rejection probability). The
    rounding *enforces* ``||round(y)||^2 <= K`` exactly (integer arithmetic), whatever the margin.

    Examples:
        >>> conditional_rounding_squared_bound(10.0, 4, math.exp(-2))
        123
    """
    owner = "conditional_rounding_squared_bound"
    radius = check_real(radius, "radius", owner, low=0.0, high=MAX_SCALED_NORM)
    dimension = check_integer(dimension, "dimension", owner, low=1, high=MAX_DIMENSION)
    beta = check_real(rejection_probability, "rejection_probability", owner, low=0.0, high=0.5, low_open=True)
    root_d = math.sqrt(dimension)
    hoeffding = radius**2 + dimension / 4 + (radius + root_d / 2) * math.sqrt(2 * math.log(1 / beta))
    deterministic = (radius + root_d) ** 2
    return math.floor(min(hoeffding, deterministic) * (1 + 1e-12))


def conditional_rounding_l2_bound(radius: float, dimension: int, rejection_probability: float) -> float:
    """``Delta_2 = sqrt(K)`` (rounded up to the next float) for `conditional_rounding_squared_bound`'s ``K``.

    Examples:
        >>> round(conditional_rounding_l2_bound(1024.0, 384, 1e-6), 2)
        1026.7
    """
    return root_up(conditional_rounding_squared_bound(radius, dimension, rejection_probability))


def root_up(value: float) -> float:
    """``sqrt(value)`` rounded up: at least the exact square root."""
    return math.nextafter(math.sqrt(value), math.inf)


def integer_l1_bound(squared_norm_bound: int, dimension: int) -> float:
    """``min(sqrt(d K), K)``, the square root rounded up: an integer vector's L1 norm (``|a| <= a^2``)."""
    return min(root_up(dimension * squared_norm_bound), float(squared_norm_bound))


class ConditionalRounding:
    """Conditional randomized rounding of vectors in ``R^d`` of L2 norm at most ``_rounding_radius``, and its bounds.

    Every coordinate is rounded down or up at random, up with probability equal to its fractional
    part (unbiased); a vector whose squared norm exceeds `squared_norm_bound` is resampled, each
    attempt failing with probability at most ``beta = rejection_probability``, at most
    `max_attempts` times. A base class: `privsum.sums.SkellamVectorSum` rounds ``gamma x`` (its radius is
    ``gamma c (1 + 1e-9)``); `RoundingAt` holds any radius (the calibration search's candidates).
    """

    _rounding_radius: float
    dimension: int
    rejection_probability: float

    @cached_property
    def squared_norm_bound(self) -> int:
        """``K``: every rounded vector has squared L2 norm at most this (enforced exactly)."""
        return conditional_rounding_squared_bound(self._rounding_radius, self.dimension, self.rejection_probability)

    @property
    def l2_bound(self) -> float:
        """``Delta_2 = sqrt(K)`` (rounded up): every rounded vector has L2 norm at most this."""
        return root_up(self.squared_norm_bound)

    @property
    def l1_bound(self) -> float:
        """``Delta_1 = min(sqrt(d K), K)``: a rounded vector's L1 norm is at most this (``|a| <= a^2`` for integers)."""
        return integer_l1_bound(self.squared_norm_bound, self.dimension)

    @property
    def coordinate_bound(self) -> int:
        """Largest absolute value of a rounded coordinate: ``min(floor(Delta_2), ceil(radius))``."""
        return min(math.floor(self.l2_bound), math.ceil(self._rounding_radius))

    @property
    def max_attempts(self) -> int:
        """Rounding attempts before a user's randomizer raises: the least ``K`` with ``beta^K <= 2^-80``."""
        return math.ceil(-RETRY_FAILURE_LOG2 / -math.log2(self.rejection_probability))

    def _round_rows(self, scaled: np.ndarray, generator: np.random.Generator) -> np.ndarray:
        """Every row of ``scaled`` (norms at most the radius) rounded; rows resampled until within `squared_norm_bound`.

        Raises:
            RuntimeError: a row still exceeds the bound after `max_attempts` attempts (probability at most 2^-80).
        """
        floor = np.floor(scaled)
        fraction = scaled - floor
        rounded = (floor + (generator.random(scaled.shape) < fraction)).astype(np.int64)
        limit = self.squared_norm_bound
        pending = np.flatnonzero(np.einsum("ij,ij->i", rounded, rounded) > limit)
        for _ in range(self.max_attempts - 1):
            if pending.size == 0:
                return rounded
            retry = (floor[pending] + (generator.random((pending.size, self.dimension)) < fraction[pending])).astype(np.int64)
            rounded[pending] = retry
            pending = pending[np.einsum("ij,ij->i", retry, retry) > limit]
        if pending.size:
            raise RuntimeError(
                f"{type(self).__name__}: conditional rounding of row {int(pending[0])} exceeded the L2 bound "
                f"{self.l2_bound:.6g} in {self.max_attempts} attempts (probability below 2^-80)."
            )
        return rounded


@dataclass(frozen=True)
class RoundingAt(ConditionalRounding):
    """`ConditionalRounding` of vectors of norm at most ``_rounding_radius`` (one candidate scale of the search)."""

    _rounding_radius: float
    dimension: int
    rejection_probability: float
