"""Random Fourier features: an exact LSQ family for the Gaussian kernel (section 2 of Wagner (ICLR 2025)).

References:
    Wagner, "Learning from End User Data with Shuffled Differential Privacy over Kernel
    Densities", ICLR 2025.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privsum._validation import check_real, invalid
from privsum.lsq.base import LSQFamily, Repetitions, check_common
from privsum.lsq.hadamard import FastJLT

__all__ = ["FEATURE_ERROR", "RandomFourierFeatures", "apply_projection", "check_projection", "fourier_features_of_turns"]


@dataclass(frozen=True, kw_only=True)
class RandomFourierFeatures(LSQFamily):
    """Random Fourier features for the Gaussian kernel ``k(x, y) = exp(-||x - y||^2 / h^2)``.

    ``h`` is ``bandwidth``; ``h = 1`` is the paper's kernel ``exp(-||x - y||^2)`` (scikit-learn's
    RBF ``gamma`` is ``1/h^2``; a "sigma" convention ``exp(-||x-y||^2/(2 sigma^2))`` has
    ``h = sqrt(2) sigma``). Repetition ``i`` is ``f_i(x) = g_i(x) = sqrt(2) cos(sqrt(2) w_i^T x / h + b_i)``
    with ``w_i ~ N(0, I_d)`` and ``b_i ~ U[0, 2 pi)`` drawn from ``seed``. Since
    ``E[2 cos(u^T x + b) cos(u^T y + b)] = E[cos(u^T (x - y))] = exp(-||x - y||^2 / h^2)`` for
    ``u ~ N(0, (2/h^2) I)``, the family is an exact ``(Q, R, S) = (1, sqrt 2, 1)`` LSQ family (``beta = 0``).

    Args:
        dimension: input dimension ``d``.
        n_repetitions: ``I``, the number of independent draws ``(f_i, g_i)``.
        bandwidth: ``h > 0``.
        seed: public seed of the frequencies and phases.
        projection: optional `FastJLT` applied first (for large ``d``; Appendix A.2 of Wagner (ICLR 2025)). The
            family is then exact for the kernel of the *projected* points, which is what `kernel`
            returns; it approximates the original kernel up to the JL distortion.

    Utility:
        One repetition's product ``f_i(x) g_i(y) = cos(u^T(x-y)) + cos(u^T(x+y) + 2 b_i)`` has mean
        ``k`` and variance ``1 - k^2 + k^4/2 <= 1`` (``k = k(x, y)``); the mean over ``I`` repetitions
        has variance ``(1 - k^2 + k^4/2)/I``.

    References:
        Rahimi & Recht, *Random features for large-scale kernel machines*, NeurIPS 2007;
        Wagner (ICLR 2025), Definition 2.1 and Theorem 3.3.

    Examples:
        >>> family = RandomFourierFeatures(dimension=2, n_repetitions=4000, seed=0)
        >>> x, y = np.array([[0.0, 0.0]]), np.array([[0.5, 0.0]])
        >>> round(float(family.kernel(x, y)[0, 0]), 4)
        0.7788
        >>> approx = (family.f(x) * family.g(y)).sum(axis=2).mean()
        >>> bool(abs(approx - 0.7788) < 0.05)
        True
    """

    dimension: int
    n_repetitions: int
    bandwidth: float = 1.0
    seed: int = 0
    projection: FastJLT | None = None
    frequencies: np.ndarray = field(init=False, repr=False, compare=False)
    phases: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        owner = type(self).__name__
        check_common(self, owner)
        object.__setattr__(self, "bandwidth", check_real(self.bandwidth, "bandwidth", owner, low=0.0, low_open=True))
        working = check_projection(self.projection, self.dimension, owner)
        rng = np.random.default_rng(self.seed)
        gaussians = rng.standard_normal((self.n_repetitions, working))
        object.__setattr__(self, "frequencies", gaussians * (math.sqrt(2.0) / self.bandwidth))
        object.__setattr__(self, "phases", rng.uniform(0.0, 2.0 * math.pi, size=self.n_repetitions))

    @property
    def n_coordinates(self) -> int:
        return 1

    @property
    def bound(self) -> float:
        return _BOUND

    def f(self, points: Any, *, repetitions: Repetitions = None) -> np.ndarray:
        """``(n, d)`` points to ``(n, I, 1)`` features ``sqrt(2) cos(sqrt(2) w_i^T x / h + b_i)``.

        The angle is computed in turns, ``s = (w_i / 2 pi)^T x + b_i / 2 pi`` in float64, and each
        feature is within ``privsum.lsq.rff.FEATURE_ERROR = 2e-15`` of ``sqrt(2) cos(2 pi s)``
        (``privsum.lsq.rff.fourier_features_of_turns``): as accurate as ``np.cos`` of the angle in
        radians (the float64 rounding of the angle, about ``|w_i^T x| 2^-52``, dominates both),
        with the cosine about three times faster.
        """
        selected = self.repetition_indices(repetitions)
        working = apply_projection(self.projection, self.check_points(points))
        turns = working @ self.turn_frequencies(selected).T
        fourier_features_of_turns(turns, self.turn_phases(selected), out=turns)
        return turns[:, :, np.newaxis]

    def turn_frequencies(self, selected: Any = slice(None)) -> np.ndarray:
        """The ``selected`` frequencies in turns per unit, ``w_i / (2 pi)``, shape ``(|selected|, working dimension)``."""
        return self.frequencies[selected] * _TURNS_PER_RADIAN

    def turn_phases(self, selected: Any = slice(None)) -> np.ndarray:
        """The ``selected`` phases in turns, ``b_i / (2 pi)``."""
        return self.phases[selected] * _TURNS_PER_RADIAN

    def g(self, points: Any, *, repetitions: Repetitions = None) -> np.ndarray:
        """Same map as `f` (the family is symmetric)."""
        return self.f(points, repetitions=repetitions)

    def kernel(self, x: Any, y: Any) -> np.ndarray:
        """``exp(-||P x_a - P y_b||^2 / h^2)`` (``P`` the projection, identity by default), ``(n, m)``."""
        left = apply_projection(self.projection, self.check_points(x, "x"))
        right = apply_projection(self.projection, self.check_points(y, "y"))
        return np.exp(-_squared_distances(left, right) / self.bandwidth**2)


_TURNS_PER_RADIAN = 1.0 / (2.0 * math.pi)
_BOUND = math.sqrt(2.0)
#: Largest difference between a feature of `RandomFourierFeatures.f` and ``sqrt(2) cos(2 pi s)`` of
#: its float64 angle in turns ``s`` (the reduction of ``s`` to one turn is exact; the rest is the
#: polynomial's truncation, below 4e-16, and the rounding of its float64 evaluation; tested
#: against an extended-precision cosine, largest difference observed 7e-16).
FEATURE_ERROR = 2e-15
# Entries reduced at once: the elementwise passes stay in a core's L2 cache.
_CACHE_BLOCK_ENTRIES = 1 << 15
# sqrt(2) sin(2 pi u) = u P(u^2) for |u| <= 1/4: Taylor coefficients up to u^19, whose first
# omitted term is below sqrt(2) (pi/2)^21 / 21! < 4e-16.
_SINE_COEFFICIENTS = tuple(
    math.sqrt(2.0) * (-1) ** k * (2.0 * math.pi) ** (2 * k + 1) / math.factorial(2 * k + 1) for k in range(10)
)


def fourier_features_of_turns(turns: np.ndarray, phase_turns: np.ndarray, *, out: np.ndarray) -> np.ndarray:
    """``sqrt(2) cos(2 pi s)``, ``s = t + c``, of float64 ``turns`` ``t`` ``(m, I)`` and ``phase_turns`` ``c`` ``(I,)``.

    ``s`` (rounded to float64) is reduced exactly to ``r = s - rint(s)`` in ``[-1/2, 1/2]``; then
    ``cos(2 pi r) = sin(2 pi u)`` with ``u = 1/4 - |r|`` in ``[-1/4, 1/4]`` is an odd polynomial
    of degree 19. Each value is within ``FEATURE_ERROR`` of ``sqrt(2) cos(2 pi s)`` and is kept
    in ``[-sqrt(2), sqrt(2)]``, the family's bound (a rounding error could pass it by an ulp).
    Written into ``out`` (which may be ``turns``), in blocks of rows that stay in cache.
    """
    step = max(1, _CACHE_BLOCK_ENTRIES // max(1, turns.shape[1]))
    block_shape = (min(step, turns.shape[0]), turns.shape[1])
    reduced, square = np.empty(block_shape), np.empty(block_shape)
    for start in range(0, turns.shape[0], step):
        rows = slice(start, min(start + step, turns.shape[0]))
        size = rows.stop - rows.start
        fourier_features_block(turns[rows], phase_turns, out[rows], reduced[:size], square[:size])
    return out


def fourier_features_block(
    turns: np.ndarray, phase_turns: np.ndarray, out: np.ndarray, reduced: np.ndarray, square: np.ndarray
) -> None:
    """`fourier_features_of_turns` of one block of rows, with scratch arrays ``reduced`` and ``square`` of its shape."""
    np.add(turns, phase_turns, out=reduced)
    reduced -= np.rint(reduced, out=square)  # r in [-1/2, 1/2], exactly
    np.abs(reduced, out=reduced)
    np.subtract(0.25, reduced, out=reduced)  # u = 1/4 - |r|
    np.multiply(reduced, reduced, out=square)
    np.multiply(square, _SINE_COEFFICIENTS[-1], out=out)
    for coefficient in _SINE_COEFFICIENTS[-2:0:-1]:
        out += coefficient
        out *= square
    out += _SINE_COEFFICIENTS[0]
    out *= reduced
    np.clip(out, -_BOUND, _BOUND, out=out)


def check_projection(projection: Any, dimension: int, owner: str) -> int:
    """Validate an optional `FastJLT` for inputs of ``dimension``; return the working dimension."""
    if projection is None:
        return dimension
    if not isinstance(projection, FastJLT) or projection.input_dimension != dimension:
        raise invalid("projection", owner, f"None or a FastJLT with input_dimension {dimension}", projection)
    return projection.output_dimension


def apply_projection(projection: FastJLT | None, points: np.ndarray) -> np.ndarray:
    """``points`` mapped by ``projection`` (unchanged when it is ``None``)."""
    return points if projection is None else projection.transform(points)


def _squared_distances(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    squared = (left**2).sum(axis=1)[:, None] + (right**2).sum(axis=1)[None, :] - 2.0 * left @ right.T
    return np.maximum(squared, 0.0)
