"""Fast Walsh–Hadamard transform, randomized Hadamard rotations and a fast Johnson–Lindenstrauss map.

The Walsh–Hadamard matrix of order ``m = 2^k`` (Sylvester's construction, natural order) is
``H_1 = [1]``, ``H_{2m} = [[H_m, H_m], [H_m, -H_m]]``; ``H_m H_m = m I``. `fast_walsh_hadamard`
multiplies every row of an array by ``H_m`` in ``O(m log m)`` operations without forming ``H_m``,
zero-padding the last axis to the next power of two.

A **randomized Hadamard rotation** ``x -> (1/sqrt m) H_m D x`` (``D`` a diagonal of public random
signs) is orthogonal: it preserves norms and inner products, and spreads the mass of any fixed
vector evenly over the coordinates. Subsampling ``k`` of its coordinates and rescaling by
``sqrt(m/k)`` gives the fast Johnson–Lindenstrauss transform (Ailon & Chazelle 2009, the
subsampled randomized Hadamard transform), used as optional preprocessing of LSQ families for
large ``d`` (Appendix A.2 of Wagner (ICLR 2025)).

References:
    Wagner, "Learning from End User Data with Shuffled Differential Privacy over Kernel
    Densities", ICLR 2025.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privsum._validation import check_array, check_integer, invalid

#: Largest input dimension of a rotation (its padded dimension is at most twice this): one public
#: sign per padded coordinate is drawn and stored.
MAX_ROTATION_DIMENSION = 2**26

__all__ = ["FastJLT", "RandomizedHadamard", "fast_walsh_hadamard", "next_power_of_two"]


def next_power_of_two(value: int) -> int:
    """The smallest power of two ``>= value`` (``value >= 1``).

    Examples:
        >>> next_power_of_two(5), next_power_of_two(8), next_power_of_two(1)
        (8, 8, 1)
    """
    value = check_integer(value, "value", "next_power_of_two", low=1)
    return 1 << (value - 1).bit_length()


def fast_walsh_hadamard(values: Any, *, normalized: bool = False) -> np.ndarray:
    """Multiply every row (last axis) of ``values`` by the Walsh–Hadamard matrix ``H_m``.

    The last axis (length ``d``) is zero-padded to ``m = next_power_of_two(d)``; the result has
    last axis ``m``. Cost ``O(m log m)`` per row, vectorised over all leading axes.

    Args:
        values: real array of shape ``(..., d)``, ``d >= 1``.
        normalized: divide by ``sqrt(m)`` so the transform is orthogonal (and its own inverse).

    Returns:
        A float array of shape ``(..., m)``.

    Examples:
        >>> fast_walsh_hadamard([1.0, 0.0, 0.0]).tolist()
        [1.0, 1.0, 1.0, 1.0]
        >>> fast_walsh_hadamard([[1.0, 2.0], [3.0, 4.0]]).tolist()
        [[3.0, -1.0], [7.0, -1.0]]
        >>> x = np.array([0.5, -2.0, 1.0, 4.0])
        >>> bool(np.allclose(fast_walsh_hadamard(fast_walsh_hadamard(x, normalized=True), normalized=True), x))
        True
    """
    array = check_array(values, "values", "fast_walsh_hadamard")
    if array.ndim == 0 or array.shape[-1] == 0:
        raise invalid("values", "fast_walsh_hadamard", "an array whose last axis has length >= 1", f"shape {array.shape}")
    if not isinstance(normalized, (bool, np.bool_)):
        raise invalid("normalized", "fast_walsh_hadamard", "True or False", normalized)
    length = array.shape[-1]
    order = next_power_of_two(length)
    leading = array.shape[:-1]
    work = np.zeros((int(np.prod(leading, dtype=np.int64)), order), dtype=float)
    work[:, :length] = array.reshape(-1, length)
    half = 1
    while half < order:
        blocks = work.reshape(work.shape[0], order // (2 * half), 2, half)
        top = blocks[:, :, 0, :].copy()
        bottom = blocks[:, :, 1, :]
        blocks[:, :, 0, :] += bottom
        blocks[:, :, 1, :] = top - bottom
        half *= 2
    if normalized:
        work /= np.sqrt(order)
    return work.reshape(*leading, order)


@dataclass(frozen=True, kw_only=True)
class RandomizedHadamard:
    """The orthogonal rotation ``x -> (1/sqrt m) H_m D x`` of ``R^d`` padded to ``R^m``.

    ``D`` is a diagonal of i.i.d. uniform signs drawn from ``seed`` (public randomness);
    ``m = next_power_of_two(dimension)``. `rotate` and `unrotate` are exact inverses on the
    first ``d`` coordinates, and the rotation preserves inner products.

    Args:
        dimension: input dimension ``d``.
        seed: public seed of the signs.

    Examples:
        >>> rotation = RandomizedHadamard(dimension=3, seed=0)
        >>> x = np.array([[1.0, 2.0, 3.0]])
        >>> rotated = rotation.rotate(x)
        >>> rotated.shape, bool(np.isclose(np.linalg.norm(rotated), np.linalg.norm(x)))
        ((1, 4), True)
        >>> bool(np.allclose(rotation.unrotate(rotated), x))
        True
    """

    dimension: int
    seed: int = 0
    signs: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        owner = "RandomizedHadamard"
        check_integer(self.dimension, "dimension", owner, low=1, high=MAX_ROTATION_DIMENSION)
        check_integer(self.seed, "seed", owner, low=0, high=2**63 - 1)
        rng = np.random.default_rng(self.seed)
        object.__setattr__(self, "signs", rng.choice(np.array([-1.0, 1.0]), size=self.padded_dimension))

    @property
    def padded_dimension(self) -> int:
        """``m``: the dimension rounded up to a power of two."""
        return next_power_of_two(self.dimension)

    def rotate(self, points: Any) -> np.ndarray:
        """Rotate ``(n, d)`` points to ``(n, m)``."""
        array = _check_width(points, self.dimension, "points", "RandomizedHadamard.rotate")
        padded = np.zeros((array.shape[0], self.padded_dimension))
        padded[:, : self.dimension] = array
        return fast_walsh_hadamard(padded * self.signs, normalized=True)

    def unrotate(self, rotated: Any) -> np.ndarray:
        """Invert `rotate`: ``(n, m)`` to the first ``d`` coordinates, ``(n, d)``."""
        array = _check_width(rotated, self.padded_dimension, "rotated", "RandomizedHadamard.unrotate")
        return (fast_walsh_hadamard(array, normalized=True) * self.signs)[:, : self.dimension]


@dataclass(frozen=True, kw_only=True)
class FastJLT:
    """Fast Johnson–Lindenstrauss transform ``x -> sqrt(m/k) P (1/sqrt m) H_m D x``.

    ``P`` keeps ``k = output_dimension`` of the ``m`` rotated coordinates, chosen uniformly
    without replacement from ``seed`` (public randomness). ``E ||T x||^2 = ||x||^2`` exactly
    and, for ``k = O(log(1/failure)/eta^2)``, ``||T x - T y||`` is within a factor ``1 +- eta`` of
    ``||x - y||`` with probability ``1 - failure`` for any fixed pair. Cost ``O(d log d)`` per point.

    Args:
        input_dimension: ``d``.
        output_dimension: ``k``, at most ``m = next_power_of_two(d)``.
        seed: public seed.

    References:
        Ailon & Chazelle, *The fast Johnson–Lindenstrauss transform and approximate nearest
        neighbors*, SIAM J. Comput. 2009; Appendix A.2 of Wagner (ICLR 2025)

    Examples:
        >>> jlt = FastJLT(input_dimension=1000, output_dimension=256, seed=1)
        >>> jlt.transform(np.ones((2, 1000))).shape
        (2, 256)
    """

    input_dimension: int
    output_dimension: int
    seed: int = 0
    rotation: RandomizedHadamard = field(init=False, repr=False, compare=False)
    kept: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        owner = "FastJLT"
        check_integer(self.input_dimension, "input_dimension", owner, low=1, high=MAX_ROTATION_DIMENSION)
        check_integer(self.seed, "seed", owner, low=0, high=2**63 - 1)
        padded = next_power_of_two(self.input_dimension)
        check_integer(self.output_dimension, "output_dimension", owner, low=1, high=padded)
        sign_seed, subsample_seed = np.random.SeedSequence(self.seed).spawn(2)
        rotation = RandomizedHadamard(dimension=self.input_dimension, seed=int(sign_seed.generate_state(1, np.uint64)[0] >> 1))
        kept = np.sort(np.random.default_rng(subsample_seed).choice(padded, size=self.output_dimension, replace=False))
        object.__setattr__(self, "rotation", rotation)
        object.__setattr__(self, "kept", kept)

    def transform(self, points: Any) -> np.ndarray:
        """Map ``(n, d)`` points to ``(n, k)``."""
        rotated = self.rotation.rotate(points)
        return rotated[:, self.kept] * np.sqrt(self.rotation.padded_dimension / self.output_dimension)


def _check_width(points: Any, width: int, name: str, owner: str) -> np.ndarray:
    array = check_array(points, name, owner, ndim=(1, 2))
    array = array.reshape(1, -1) if array.ndim == 1 else array
    if array.shape[1] != width:
        raise invalid(name, owner, f"an array with {width} columns", f"shape {array.shape}")
    return array.astype(float, copy=False)
