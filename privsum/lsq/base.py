"""Locality-sensitive quantization (LSQ) families (Definition 2.1 of Wagner (ICLR 2025)).

References:
    Wagner, "Learning from End User Data with Shuffled Differential Privacy over Kernel
    Densities", ICLR 2025.
"""

from __future__ import annotations

import abc
from typing import Any

import numpy as np

from privsum._validation import check_array, check_integer, invalid

__all__ = ["LSQFamily", "Repetitions", "check_family"]

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
    def sparsity(self) -> int:
        """S: at most this many non-zero coordinates per repetition (by default all ``Q``; sparse families say less)."""
        return self.n_coordinates

    @property
    def bias(self) -> float:
        """beta: a bound on ``|kernel(x, y) - expected_product(x, y)|`` for all ``x, y`` (by default 0: an exact family)."""
        return 0.0

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


#: Most public draws a loader (``from_bytes``) rebuilds a family from by default: 2^20 numbers, 8 MiB
#: of float64, so a crafted file is refused before it costs more; pass ``max_public_draws`` to load
#: a larger family from a source you trust.
LOADER_PUBLIC_DRAWS = 2**20


def declared_public_draws(parameters: Any, owner: str) -> tuple[int, int]:
    """``(n_repetitions, draws)`` that a family built from serialised ``parameters`` would make, without drawing.

    ``draws`` bounds the numbers drawn for the public randomness: ``n_repetitions * (n_bits * w + 3)``
    with ``w`` the working dimension (a projection's output dimension, else ``dimension``), plus
    twice the padded input dimension for a projection. Malformed sizes are refused naming ``data``.
    """
    if not isinstance(parameters, dict):
        raise invalid("data", owner, "a family header with its parameters", type(parameters).__name__)

    def size(value: Any, name: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not (1 <= value <= 2**62):
            raise invalid("data", owner, f"a family header whose {name!r} is an integer in [1, 2^62]", value)
        return value

    dimension = size(parameters.get("dimension"), "dimension")
    n_repetitions = size(parameters.get("n_repetitions", 1), "n_repetitions")
    n_bits = size(parameters.get("n_bits", 1), "n_bits")
    projection = parameters.get("projection")
    working, rotation = dimension, 0
    if projection is not None:
        if not isinstance(projection, dict):
            raise invalid("data", owner, "a family header whose 'projection' is None or a dict", type(projection).__name__)
        working = size(projection.get("output_dimension"), "output_dimension")
        rotation = 2 * (1 << (dimension - 1).bit_length())
    return n_repetitions, n_repetitions * (n_bits * working + 3) + rotation


def check_loader_draws(parameters: Any, max_public_draws: Any, owner: str, *, n_repetitions: int | None = None) -> None:
    """Refuse (before any drawing) a serialised family above ``max_public_draws`` or with the wrong ``n_repetitions``."""
    limit = check_integer(max_public_draws, "max_public_draws", owner, low=1, high=MAX_PUBLIC_DRAWS)
    repetitions, draws = declared_public_draws(parameters, owner)
    if n_repetitions is not None and repetitions != n_repetitions:
        raise invalid("data", owner, f"a family of {n_repetitions} repetitions (the payload's rows)", repetitions)
    if not draws <= limit:
        raise invalid(
            "data", owner, f"a family of at most max_public_draws={limit} public draws (raise it for a trusted file)", draws
        )


def check_common(family: LSQFamily, owner: str) -> None:
    """Validate the attributes every family has: ``dimension``, ``n_repetitions``, ``seed``."""
    dimension = check_integer(family.dimension, "dimension", owner, low=1, high=MAX_PUBLIC_DRAWS)
    check_integer(family.n_repetitions, "n_repetitions", owner, low=1, high=MAX_PUBLIC_DRAWS // dimension)
    check_integer(family.seed, "seed", owner, low=0, high=2**63 - 1)


def check_family(family: Any, owner: str) -> LSQFamily:
    """Return ``family`` if it is an `LSQFamily`, else raise `InvalidParameterError` naming ``owner``."""
    if not isinstance(family, LSQFamily):
        raise invalid("family", owner, "an LSQFamily", type(family).__name__)
    return family
