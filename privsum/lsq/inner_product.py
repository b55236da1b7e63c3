"""LSQ families for the inner-product kernel ``k(x, y) = x^T y`` (Appendix A.3 of Wagner (ICLR 2025)).

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

__all__ = ["IdentityFeatures", "RandomSigns"]


class _NormBounded(LSQFamily):
    """Shared input check: every point has Euclidean norm at most ``norm_bound``."""

    norm_bound: float

    def check_points(self, points: Any, name: str = "points") -> np.ndarray:
        array = super().check_points(points, name)
        norms = np.linalg.norm(array, axis=1)
        # A relative slack of 1e-6 lets vectors normalised in float32 through (their norms are off by
        # ~1e-7); the LSQ values then exceed R by at most that relative amount.
        if array.size and not (norms.max() <= self.norm_bound * (1 + 1e-6)):
            raise invalid(
                name, type(self).__name__, f"points of Euclidean norm at most {self.norm_bound:g}", f"norm {norms.max()!r}"
            )
        return array

    def kernel(self, x: Any, y: Any) -> np.ndarray:
        """``x_a^T y_b`` as an ``(n, m)`` matrix."""
        return self.check_points(x, "x") @ self.check_points(y, "y").T


@dataclass(frozen=True, kw_only=True)
class RandomSigns(_NormBounded):
    """Random-sign projections: an exact ``(1, sqrt(d) B, 1)`` LSQ family for ``x^T y``.

    Repetition ``i`` is ``f_i(x) = g_i(x) = sigma_i^T x`` with ``sigma_i`` uniform in ``{-1, 1}^d``
    (from ``seed``). ``E[(sigma^T x)(sigma^T y)] = x^T y`` since the signs are independent with
    mean 0 and variance 1, and ``|sigma^T x| <= ||x||_1 <= sqrt(d) ||x||_2 <= sqrt(d) B`` for
    points of norm at most ``B = norm_bound`` (points of larger norm raise; nothing is clipped).

    Args:
        dimension: input dimension ``d``.
        n_repetitions: ``I``.
        norm_bound: ``B``, the largest Euclidean norm an input may have (1 for unit embeddings).
        seed: public seed of the signs.

    Utility:
        One repetition's product has variance ``||x||^2 ||y||^2 + (x^T y)^2 - 2 sum_j x_j^2 y_j^2``.

    References:
        Wagner (ICLR 2025), Appendix A.3.

    Examples:
        >>> family = RandomSigns(dimension=3, n_repetitions=2, seed=0)
        >>> family.f(np.array([[0.6, 0.8, 0.0]])).shape
        (1, 2, 1)
        >>> round(family.bound, 6)
        1.732051
    """

    dimension: int
    n_repetitions: int
    norm_bound: float = 1.0
    seed: int = 0
    signs: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        owner = type(self).__name__
        check_common(self, owner)
        object.__setattr__(self, "norm_bound", check_real(self.norm_bound, "norm_bound", owner, low=0.0, low_open=True))
        rng = np.random.default_rng(self.seed)
        signs = rng.integers(0, 2, size=(self.n_repetitions, self.dimension), dtype=np.int8) * 2 - 1
        object.__setattr__(self, "signs", signs.astype(float))

    @property
    def n_coordinates(self) -> int:
        return 1

    @property
    def bound(self) -> float:
        return math.sqrt(self.dimension) * self.norm_bound

    def f(self, points: Any, *, repetitions: Repetitions = None) -> np.ndarray:
        """``(n, d)`` points to ``(n, I, 1)`` projections ``sigma_i^T x``."""
        selected = self.repetition_indices(repetitions)
        return (self.check_points(points) @ self.signs[selected].T)[:, :, np.newaxis]

    def g(self, points: Any, *, repetitions: Repetitions = None) -> np.ndarray:
        """Same map as `f`."""
        return self.f(points, repetitions=repetitions)


@dataclass(frozen=True, kw_only=True)
class IdentityFeatures(_NormBounded):
    """The trivial ``(d, B, d)`` LSQ family for ``x^T y``: ``f = g = identity`` (deterministic).

    Every repetition is the same map, so ``n_repetitions`` is normally 1; ``seed`` is unused
    but kept for the common interface. ``|x_j| <= ||x||_2 <= B = norm_bound``.

    Args:
        dimension: input dimension ``d``.
        n_repetitions: ``I`` (identical copies).
        norm_bound: ``B``, the largest Euclidean norm an input may have.
        seed: unused (the family has no randomness).

    Examples:
        >>> IdentityFeatures(dimension=2).f(np.array([[0.6, 0.8]])).tolist()
        [[[0.6, 0.8]]]
    """

    dimension: int
    n_repetitions: int = 1
    norm_bound: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        owner = type(self).__name__
        check_common(self, owner)
        object.__setattr__(self, "norm_bound", check_real(self.norm_bound, "norm_bound", owner, low=0.0, low_open=True))

    @property
    def n_coordinates(self) -> int:
        return self.dimension

    @property
    def bound(self) -> float:
        return self.norm_bound

    def f(self, points: Any, *, repetitions: Repetitions = None) -> np.ndarray:
        """``(n, d)`` points to ``(n, I, d)`` copies of themselves."""
        selected = self.repetition_indices(repetitions)
        array = self.check_points(points)
        return np.repeat(array[:, np.newaxis, :], selected.size, axis=1)

    def g(self, points: Any, *, repetitions: Repetitions = None) -> np.ndarray:
        """Same map as `f`."""
        return self.f(points, repetitions=repetitions)
