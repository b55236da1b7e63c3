"""Locality-sensitive quantization (LSQ) families (seed 001 Definition 2.1)."""

from __future__ import annotations

import abc

import numpy as np

__all__ = ["LSQFamily"]


class LSQFamily(abc.ABC):
    """``n_repetitions`` independent draws ``(f_i, g_i)`` of an LSQ family for a kernel ``k``.

    Each ``f_i, g_i`` maps ``R^d`` to ``[-R, R]^Q`` with at most ``S`` non-zero coordinates,
    and ``|k(x, y) - E[f(x)^T g(y)]| <= beta``. The draws are public randomness fixed by
    ``seed``; nothing private is stored.

    Attributes expected on subclasses: ``dimension`` (d), ``n_repetitions`` (I), ``seed``.
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
        """beta: the kernel approximation error of one draw's expectation."""

    @abc.abstractmethod
    def f(self, points: np.ndarray) -> np.ndarray:
        """Data-side map: ``(n, d)`` points to ``(n, I, Q)`` coordinates in ``[-R, R]``."""

    @abc.abstractmethod
    def g(self, points: np.ndarray) -> np.ndarray:
        """Query-side map: ``(m, d)`` points to ``(m, I, Q)`` coordinates in ``[-R, R]``."""

    @abc.abstractmethod
    def kernel(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The exact kernel ``k(x_a, y_b)`` as an ``(n, m)`` matrix."""
