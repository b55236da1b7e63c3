"""Locality-sensitive quantization (LSQ) families (seed 001 Definition 2.1)."""

from __future__ import annotations

import abc
from typing import Any

import numpy as np

from privsum._validation import check_array, check_integer, invalid

__all__ = ["LSQFamily", "Repetitions"]

#: Which repetitions to evaluate: all (``None``), a slice, or an array of indices.
Repetitions = slice | np.ndarray | list | None


class LSQFamily(abc.ABC):
    """``n_repetitions`` independent draws ``(f_i, g_i)`` of an LSQ family for a kernel ``k``.

    Each ``f_i, g_i`` maps ``R^d`` to ``[-R, R]^Q`` with at most ``S`` non-zero coordinates,
    and ``|k(x, y) - E[f(x)^T g(y)]| <= beta``. The draws are public randomness fixed by
    ``seed``; nothing private is stored.

    Attributes expected on subclasses: ``dimension`` (d), ``n_repetitions`` (I), ``seed``.

    ``f`` and ``g`` take an optional ``repetitions`` (a slice or index array) so that callers can
    evaluate the ``I`` repetitions in chunks and bound memory at ``n * chunk * Q`` numbers.
    """

    dimension: int
    n_repetitions: int
    seed: int

    @property
    @abc.abstractmethod
    def n_coordinates(self) -> int:
        """Q: coordinates per repetition."""

    @property
    @abc.abstractmethod
    def bound(self) -> float:
        """R: every coordinate lies in ``[-R, R]``."""

    @property
    @abc.abstractmethod
    def sparsity(self) -> int:
        """S: at most this many non-zero coordinates per repetition."""

    @property
    @abc.abstractmethod
    def bias(self) -> float:
        """beta: a bound on ``|kernel(x, y) - expected_product(x, y)|`` for all ``x, y``."""

    @abc.abstractmethod
    def f(self, points: np.ndarray, *, repetitions: Repetitions = None) -> np.ndarray:
        """Data-side map: ``(n, d)`` points to ``(n, I, Q)`` coordinates in ``[-R, R]``."""

    @abc.abstractmethod
    def g(self, points: np.ndarray, *, repetitions: Repetitions = None) -> np.ndarray:
        """Query-side map: ``(m, d)`` points to ``(m, I, Q)`` coordinates in ``[-R, R]``."""

    @abc.abstractmethod
    def kernel(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The exact kernel ``k(x_a, y_b)`` as an ``(n, m)`` matrix."""

    def expected_product(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """``E[f(x_a)^T g(y_b)]`` over the family's randomness, as an ``(n, m)`` matrix.

        Equal to `kernel` when ``bias == 0``; families with a bias override it with the exact value.
        """
        return self.kernel(x, y)

    # ----- helpers shared by subclasses -------------------------------------------------------

    def check_points(self, points: Any, name: str = "points") -> np.ndarray:
        """Validate ``(n, d)`` (or one ``(d,)`` point) finite inputs; return a float ``(n, d)`` array."""
        owner = type(self).__name__
        array = check_array(points, name, owner, ndim=(1, 2))
        if array.ndim == 1:
            array = array.reshape(1, -1)
        if array.shape[1] != self.dimension:
            raise invalid(name, owner, f"an array with {self.dimension} columns (the dimension)", f"shape {array.shape}")
        return array.astype(float, copy=False)

    def repetition_indices(self, repetitions: Repetitions) -> np.ndarray:
        """The repetition indices selected by ``repetitions`` (all of them for ``None``)."""
        owner = type(self).__name__
        every = np.arange(self.n_repetitions)
        if repetitions is None:
            return every
        if isinstance(repetitions, slice):
            return every[repetitions]
        indices = check_array(repetitions, "repetitions", owner, ndim=1, low=0, high=self.n_repetitions - 1, integer=True)
        return indices.astype(np.int64)


#: Most numbers a family may draw for its public randomness (``dimension * n_repetitions``, 1 GiB of
#: float64): larger requests raise a clear error instead of failing inside numpy's allocator.
MAX_PUBLIC_DRAWS = 2**27


def check_common(family: LSQFamily, owner: str) -> None:
    """Validate the attributes every family has: ``dimension``, ``n_repetitions``, ``seed``."""
    dimension = check_integer(family.dimension, "dimension", owner, low=1, high=MAX_PUBLIC_DRAWS)
    check_integer(family.n_repetitions, "n_repetitions", owner, low=1, high=MAX_PUBLIC_DRAWS // dimension)
    check_integer(family.seed, "seed", owner, low=0, high=2**63 - 1)
