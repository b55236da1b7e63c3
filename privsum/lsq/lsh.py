"""Locality-sensitive hashing as one-hot LSQ families.

As in section 2.3 of Wagner (ICLR 2025) and section 2.3 of Coleman & Shrivastava (CCS 2021).

An LSH family maps a point to a hash code per repetition; ``f = g = one-hot(code)`` over ``Q``
buckets gives ``f(x)^T g(y) = 1[codes collide]``, so ``E[f(x)^T g(y)]`` is the collision
probability: an LSQ family with ``R = S = 1`` whose kernel is the collision-probability kernel.

References:
    Wagner, "Learning from End User Data with Shuffled Differential Privacy over Kernel
    Densities", ICLR 2025.
    Coleman & Shrivastava, "A One-Pass Distributed and Private Sketch for Kernel Sums with
    Applications to Machine Learning at Scale", CCS 2021.
"""

from __future__ import annotations

import abc
import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from scipy import stats

from privsum._delegation import delegated
from privsum._validation import check_array, check_integer, check_real, invalid
from privsum.lsq.base import MAX_PUBLIC_DRAWS, LSQFamily, Repetitions, check_common
from privsum.lsq.hadamard import FastJLT
from privsum.lsq.rff import _squared_distances, apply_projection, check_projection

__all__ = [
    "L2LSH",
    "LSHFamily",
    "SignedRandomProjection",
    "family_from_spec",
    "l2_lsh_collision_probability",
    "srp_collision_probability",
]

_MAX_BUCKET_BITS = 30
_MAX_SRP_BITS = 20
#: Adding 1.5 * 2^52 to an integral float ``f`` with ``|f| < 2^51`` is exact and leaves the bits
#: ``_MAGIC_BITS + f``: a float-to-int64 conversion by one add and one integer subtraction.
_MAGIC = 6755399441055744.0
_MAGIC_BITS = np.int64(0x4338000000000000)
_MAGIC_RANGE = 2.0**50


def l2_lsh_collision_probability(distance: Any, bucket_width: float) -> np.ndarray:
    """Collision probability of p-stable L2-LSH ``floor((w^T x + b)/r)`` at Euclidean distance ``c``.

    ``p(c) = 1 - 2 Phi(-r/c) - 2/(sqrt(2 pi) r/c) (1 - exp(-(r/c)^2 / 2))`` for ``c > 0`` and
    ``p(0) = 1`` (Datar, Immorlica, Indyk & Mirrokni 2004), ``r = bucket_width``.

    Args:
        distance: non-negative distances ``c`` (any shape).
        bucket_width: ``r > 0``.

    Examples:
        >>> round(float(l2_lsh_collision_probability(1.0, 1.0)), 6)
        0.368746
        >>> float(l2_lsh_collision_probability(0.0, 2.0))
        1.0
    """
    owner = "l2_lsh_collision_probability"
    width = check_real(bucket_width, "bucket_width", owner, low=0.0, low_open=True)
    c = check_array(distance, "distance", owner, low=0.0).astype(float)
    with np.errstate(divide="ignore"):
        ratio = np.where(c > 0, width / np.where(c > 0, c, 1.0), np.inf)
    finite = np.isfinite(ratio)
    safe = np.where(finite, ratio, 1.0)
    value = 1.0 - 2.0 * stats.norm.cdf(-safe) - 2.0 / (math.sqrt(2.0 * math.pi) * safe) * (-np.expm1(-(safe**2) / 2.0))
    return np.where(finite, value, 1.0)


def srp_collision_probability(angle: Any, n_bits: int) -> np.ndarray:
    """Collision probability ``(1 - theta/pi)^p`` of ``p`` concatenated signed random projections.

    Args:
        angle: angles ``theta`` in ``[0, pi]`` between the two points (any shape).
        n_bits: ``p >= 1``.

    Examples:
        >>> float(srp_collision_probability(np.pi / 2, 2))
        0.25
    """
    owner = "srp_collision_probability"
    bits = check_integer(n_bits, "n_bits", owner, low=1)
    theta = check_array(angle, "angle", owner, low=0.0, high=math.pi).astype(float)
    return (1.0 - theta / math.pi) ** bits


class LSHFamily(LSQFamily):
    """An LSH family as a one-hot LSQ family over ``Q = n_buckets`` buckets (``R = S = 1``).

    Subclasses provide `hash_codes` (codes in ``[0, Q)`` per repetition), `kernel` (the LSH
    collision-probability kernel) and `collision_floor`: the probability that two points with
    *different* LSH codes still share a bucket (``0`` when codes are never folded). Then
    ``E[f(x)^T g(y)] = k + (1 - k) * collision_floor``, exactly, and ``bias = collision_floor``.
    """

    _registry: ClassVar[dict[str, type[LSHFamily]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        LSHFamily._registry[cls.__name__] = cls

    @property
    @abc.abstractmethod
    def n_buckets(self) -> int:
        """``Q``: the number of buckets (sketch columns) per repetition."""

    @property
    @abc.abstractmethod
    def collision_floor(self) -> float:
        """Probability that two points with different LSH codes land in the same bucket."""

    def remove_floor(self, estimates: Any) -> np.ndarray:
        """Unbiased kernel estimates from unbiased estimates of ``E[f(x)^T g(y)] = k + (1 - k) c``.

        Returns ``(estimates - c) / (1 - c)`` with ``c`` the `collision_floor` (unchanged when
        ``c = 0``): an affine map, so an unbiased estimate of the bucket-collision probability
        becomes an unbiased estimate of the kernel ``k``; its standard deviation grows by
        ``1 / (1 - c)``. The result can be negative where ``k`` is near 0 and the noise is large.

        Examples:
            >>> family = L2LSH(dimension=2, n_repetitions=1, n_buckets=4, seed=0)
            >>> family.remove_floor(np.array([0.25, 1.0])).tolist()
            [0.0, 1.0]
        """
        values = np.asarray(estimates, dtype=float)
        floor = self.collision_floor
        return values if floor == 0.0 else (values - floor) / (1.0 - floor)

    @abc.abstractmethod
    def hash_codes(self, points: Any, *, repetitions: Repetitions = None) -> np.ndarray:
        """``(n, d)`` points to ``(n, I)`` bucket indices in ``[0, Q)`` (int64): a new array the caller may modify."""

    def _counter_indices_into(self, points: np.ndarray, out: np.ndarray) -> None:
        """Write ``i Q + hash_codes(points)[:, i]`` into row ``i`` of ``out``, an ``(I, n)`` int64 C-contiguous buffer.

        These are the indices of the counters in a flattened ``(I, Q)`` array (RACE's layout).
        ``points`` is `check_points` output (already validated). RACE hashes its chunks through
        this hook so that a family can reuse one buffer.
        """
        rows = np.arange(self.n_repetitions, dtype=np.int64)[:, np.newaxis] * self.n_buckets
        np.add(self.hash_codes(points).T, rows, out=out)

    @abc.abstractmethod
    def spec(self) -> dict[str, Any]:
        """The constructor arguments as JSON-compatible values (for serialisation)."""

    @abc.abstractmethod
    def _random_state(self) -> tuple[np.ndarray, ...]:
        """The arrays of public randomness (for the fingerprint)."""

    def check_points(self, points: Any, name: str = "points") -> np.ndarray:
        """`~privsum.lsq.LSQFamily.check_points`, with a fast path for a contiguous float64 ``(n, d)`` array.

        A finite sum of squares proves every entry finite (an inf or NaN entry makes the sum inf
        or NaN), and it is one BLAS dot product where the general test builds and scans a boolean
        array. Any other input, or a sum that overflows, takes the general validation.
        """
        if (
            type(points) is np.ndarray
            and points.dtype == np.float64
            and points.ndim == 2
            and points.shape[1] == self.dimension
            and (points.flags.c_contiguous or points.flags.f_contiguous)
        ):
            flat = points.ravel(order="K")
            with np.errstate(over="ignore", invalid="ignore"):
                sum_of_squares = float(np.dot(flat, flat))
            if math.isfinite(sum_of_squares):
                return points
        return super().check_points(points, name)

    n_coordinates = delegated("n_buckets", "``Q``: the buckets are the coordinates.")
    bias = delegated("collision_floor", "beta: the collision floor (see the class docstring).")

    @property
    def bound(self) -> float:
        """R = 1: one-hot coordinates."""
        return 1.0

    @property
    def sparsity(self) -> int:
        """S = 1: one bucket per repetition."""
        return 1

    def f(self, points: Any, *, repetitions: Repetitions = None) -> np.ndarray:
        """``(n, d)`` points to one-hot ``(n, I, Q)`` arrays (a single 1 per repetition)."""
        codes = self.hash_codes(points, repetitions=repetitions)
        one_hot = np.zeros((*codes.shape, self.n_buckets))
        np.put_along_axis(one_hot, codes[:, :, np.newaxis], 1.0, axis=2)
        return one_hot

    def g(self, points: Any, *, repetitions: Repetitions = None) -> np.ndarray:
        """Same map as `f`."""
        return self.f(points, repetitions=repetitions)

    def expected_product(self, x: Any, y: Any) -> np.ndarray:
        """Exact bucket-collision probability ``k + (1 - k) * collision_floor``, ``(n, m)``."""
        kernel = self.kernel(x, y)
        return kernel + (1.0 - kernel) * self.collision_floor

    def fingerprint(self) -> str:
        """A hex digest of the family's spec and its drawn hash functions.

        Two families with equal fingerprints compute the same hash functions, so their sketches
        can be merged; it also detects a numpy version that would redraw different functions
        from the same seed.
        """
        digest = hashlib.blake2b(digest_size=16)
        digest.update(json.dumps(self.spec(), sort_keys=True).encode())
        for array in self._random_state():
            digest.update(np.ascontiguousarray(array).tobytes())
        return digest.hexdigest()

    def _spec_common(self) -> dict[str, Any]:
        projection = getattr(self, "projection", None)
        return {
            "family": type(self).__name__,
            "dimension": self.dimension,
            "n_repetitions": self.n_repetitions,
            "seed": self.seed,
            "projection": None
            if projection is None
            else {"output_dimension": projection.output_dimension, "seed": projection.seed},
        }


def family_from_spec(spec: Any) -> LSHFamily:
    """Rebuild an `LSHFamily` from `LSHFamily.spec` output.

    Examples:
        >>> family = SignedRandomProjection(dimension=3, n_repetitions=5, n_bits=2, seed=4)
        >>> family_from_spec(family.spec()) == family
        True
    """
    owner = "family_from_spec"
    if not isinstance(spec, dict) or spec.get("family") not in LSHFamily._registry:
        raise invalid("spec", owner, f"a dict with 'family' in {sorted(LSHFamily._registry)}", spec)
    arguments = {key: value for key, value in spec.items() if key != "family"}
    projection = arguments.get("projection")
    if projection is not None:
        if not isinstance(projection, dict) or set(projection) != {"output_dimension", "seed"}:
            raise invalid("spec", owner, "a projection entry with 'output_dimension' and 'seed'", projection)
        arguments["projection"] = FastJLT(input_dimension=arguments.get("dimension"), **projection)
    try:
        return LSHFamily._registry[spec["family"]](**arguments)
    except TypeError as error:
        raise invalid("spec", owner, "the constructor arguments of the family", spec) from error


@dataclass(frozen=True, kw_only=True)
class L2LSH(LSHFamily):
    """p-stable L2 locality-sensitive hashing, folded into ``Q`` buckets by strongly universal hashing.

    Repetition ``i`` computes the lattice code ``z_i(x) = floor((w_i^T x + b_i)/r)`` with
    ``w_i ~ N(0, I_d)``, ``b_i ~ U[0, r)``, ``r = bucket_width``, whose collision probability at
    distance ``c = ||x - y||`` is `l2_lsh_collision_probability` ``p(c)`` (the `kernel`, a
    Laplacian-like kernel). The integer code is folded into ``Q = n_buckets = 2^M`` buckets by
    Dietzfelbinger's multiply-add-shift hash ``((a_i z + c_i) mod 2^64) >> (64 - M)`` with
    ``a_i, c_i`` uniform 64-bit words, which is strongly universal on codes ``z`` taken modulo
    ``2^(64-M)``. Two different codes therefore share a bucket with probability exactly
    ``1/Q``, and ``E[f(x)^T g(y)] = p(c) + (1 - p(c))/Q`` exactly (``beta = 1/Q``). All hash
    parameters come from ``seed``.

    Args:
        dimension: input dimension ``d``.
        n_repetitions: ``I`` (rows of a RACE sketch).
        bucket_width: ``r > 0``; larger ``r`` gives a wider kernel.
        n_buckets: ``Q``, a power of two in ``[2, 2^30]`` (columns of a RACE sketch).
        seed: public seed of the hash functions.
        projection: optional `FastJLT` preprocessing (the kernel is then that of the projected points).

    References:
        Datar, Immorlica, Indyk & Mirrokni, *Locality-sensitive hashing scheme based on p-stable
        distributions*, SoCG 2004; Dietzfelbinger, STACS 1996 (multiply-add-shift); Thorup,
        *High speed hashing for integers and strings* (2015), section 3.3.

    Examples:
        >>> family = L2LSH(dimension=2, n_repetitions=3, bucket_width=1.0, n_buckets=16, seed=0)
        >>> codes = family.hash_codes(np.array([[0.0, 0.0], [3.0, 4.0]]))
        >>> codes.shape, bool(codes.min() >= 0 and codes.max() < 16)
        ((2, 3), True)
        >>> round(float(family.kernel(np.array([[0.0, 0.0]]), np.array([[3.0, 4.0]]))[0, 0]), 6)
        0.079524
    """

    dimension: int
    n_repetitions: int
    bucket_width: float = 1.0
    n_buckets: int = 1024
    seed: int = 0
    projection: FastJLT | None = None
    directions: np.ndarray = field(init=False, repr=False, compare=False)
    offsets: np.ndarray = field(init=False, repr=False, compare=False)
    multipliers: np.ndarray = field(init=False, repr=False, compare=False)
    increments: np.ndarray = field(init=False, repr=False, compare=False)
    _largest_direction: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        owner = type(self).__name__
        check_common(self, owner)
        object.__setattr__(self, "bucket_width", check_real(self.bucket_width, "bucket_width", owner, low=0.0, low_open=True))
        buckets = check_integer(self.n_buckets, "n_buckets", owner, low=2, high=2**_MAX_BUCKET_BITS)
        if buckets & (buckets - 1):
            raise invalid("n_buckets", owner, f"a power of two in [2, 2^{_MAX_BUCKET_BITS}]", self.n_buckets)
        working = check_projection(self.projection, self.dimension, owner)
        rng = np.random.default_rng(self.seed)
        object.__setattr__(self, "directions", rng.standard_normal((self.n_repetitions, working)))
        object.__setattr__(self, "offsets", rng.uniform(0.0, self.bucket_width, size=self.n_repetitions))
        words = rng.integers(0, 2**64, size=(2, self.n_repetitions), dtype=np.uint64, endpoint=False)
        object.__setattr__(self, "multipliers", words[0])
        object.__setattr__(self, "increments", words[1])
        object.__setattr__(
            self, "_largest_direction", math.sqrt(float(np.einsum("ij,ij->i", self.directions, self.directions).max()))
        )

    @property
    def bucket_bits(self) -> int:
        """``M = log2(n_buckets)``."""
        return int(self.n_buckets).bit_length() - 1

    @property
    def collision_floor(self) -> float:
        return 1.0 / self.n_buckets

    def lattice_codes(self, points: Any, *, repetitions: Repetitions = None) -> np.ndarray:
        """The unfolded L2-LSH codes ``floor((w_i^T x + b_i)/r)``, ``(n, I)`` int64."""
        selected = self.repetition_indices(repetitions)
        working = apply_projection(self.projection, self.check_points(points))
        codes = np.empty((selected.size, working.shape[0]), dtype=np.int64)
        self._lattice_into(working, selected, codes)
        return codes.T

    def hash_codes(self, points: Any, *, repetitions: Repetitions = None) -> np.ndarray:
        """Bucket indices in ``[0, n_buckets)``, ``(n, I)`` int64."""
        selected = self.repetition_indices(repetitions)
        working = apply_projection(self.projection, self.check_points(points))
        codes = np.empty((selected.size, working.shape[0]), dtype=np.int64)
        self._lattice_into(working, selected, codes)
        self._fold_into(codes, selected)
        return codes.T

    def _counter_indices_into(self, points: np.ndarray, out: np.ndarray) -> None:
        every = self.repetition_indices(None)
        self._lattice_into(apply_projection(self.projection, points), every, out)
        self._fold_into(out, every)
        out += every[:, np.newaxis] * self.n_buckets

    def _lattice_into(self, working: np.ndarray, selected: np.ndarray, out: np.ndarray) -> None:
        """Write the lattice codes into ``out``, an ``(I, n)`` int64 C-contiguous buffer (row ``i``: repetition ``i``).

        ``out`` doubles as the float64 buffer of ``(w_i^T x + b_i)/r``, so hashing makes no
        temporary of size ``n I``, and every pass runs along rows with one scalar per
        repetition. The element-wise operations are those of the formula in the same order
        (``+ b_i``, ``/ r``, floor), so the codes do not depend on the buffering; ``/ r`` is a
        product by ``1/r`` only when ``r`` is a power of two (both round the same real number:
        bit-identical results). The projections come from one float64 BLAS product; BLAS may
        round a dot product differently (last bit) in products of other shapes, so, as between
        any two chunkings of the points, a code can differ only where ``(w_i^T x + b_i)/r`` lies
        within rounding of an integer.
        """
        directions = self.directions[selected]
        values = out.view(np.float64)
        np.matmul(directions, working.T, out=values)
        values += self.offsets[selected, np.newaxis]
        reciprocal = 1.0 / self.bucket_width
        if math.frexp(self.bucket_width)[0] == 0.5 and math.isfinite(reciprocal):
            values *= reciprocal
        else:
            values /= self.bucket_width
        largest = self._largest_code(working, values)
        np.floor(values, out=values)
        if largest < _MAGIC_RANGE:
            values += _MAGIC  # integral floats f -> f + 1.5 * 2^52, exact; the bits are then _MAGIC_BITS + f
            out -= _MAGIC_BITS
        else:
            np.copyto(out, values.copy(), casting="unsafe")  # exact: integral floats below 2^62 in magnitude

    def _fold_into(self, codes: np.ndarray, selected: np.ndarray) -> None:
        """`fold_codes` in place on an ``(I, n)`` int64 array of lattice codes (row ``i``: repetition ``i``)."""
        bits = self.bucket_bits
        mixed = codes.view(np.uint64)  # two's complement wrap
        mixed &= np.uint64((1 << (64 - bits)) - 1)
        with np.errstate(over="ignore"):
            mixed *= self.multipliers[selected, np.newaxis]
            mixed += self.increments[selected, np.newaxis]
        mixed >>= np.uint64(64 - bits)

    def _largest_code(self, working: np.ndarray, values: np.ndarray) -> float:
        """An upper bound on ``|values|``; raises unless every code ``floor(values)`` is within ``+-2^(62 - M)``.

        The cheap bound comes first: ``|w_i^T x + b_i| / r <= (max_i ||w_i|| ||X||_F + r) / r``,
        doubled to cover rounding (relative error at most ``(d + 2) 2^-53``). Only if it does not
        settle the range are the values scanned (an overflow to inf or NaN fails both tests).
        """
        if not values.size:
            return 0.0
        limit = 2.0 ** (62 - self.bucket_bits)
        with np.errstate(over="ignore", invalid="ignore"):
            norm = float(np.linalg.norm(working))
        bound = 2.0 * (self._largest_direction * norm + self.bucket_width) / self.bucket_width
        if bound < min(limit, _MAGIC_RANGE):
            return bound
        lowest, highest = float(values.min()), float(values.max())
        if not (math.isfinite(lowest) and math.isfinite(highest) and -limit < math.floor(lowest) and math.floor(highest) < limit):
            raise invalid(
                "points",
                type(self).__name__,
                f"points whose codes |(w^T x + b)/r| stay below 2^{62 - self.bucket_bits}",
                "larger codes",
            )
        return max(-lowest, highest)

    def kernel(self, x: Any, y: Any) -> np.ndarray:
        """``p(||P x_a - P y_b||)`` as an ``(n, m)`` matrix (``P`` the projection, identity by default)."""
        left = apply_projection(self.projection, self.check_points(x, "x"))
        right = apply_projection(self.projection, self.check_points(y, "y"))
        return l2_lsh_collision_probability(np.sqrt(_squared_distances(left, right)), self.bucket_width)

    def spec(self) -> dict[str, Any]:
        return {**self._spec_common(), "bucket_width": self.bucket_width, "n_buckets": self.n_buckets}

    def _random_state(self) -> tuple[np.ndarray, ...]:
        return (self.directions, self.offsets, self.multipliers, self.increments)


def fold_codes(codes: np.ndarray, multipliers: np.ndarray, increments: np.ndarray, bits: int) -> np.ndarray:
    """Multiply-add-shift ``((a z + c) mod 2^64) >> (64 - bits)`` of ``z mod 2^(64 - bits)``, per column."""
    mask = np.uint64((1 << (64 - bits)) - 1)
    mixed = codes.astype(np.uint64)  # two's complement wrap (a copy: the caller's codes stay intact)
    mixed &= mask  # mod 2^(64-bits)
    with np.errstate(over="ignore"):
        mixed *= multipliers
        mixed += increments
    mixed >>= np.uint64(64 - bits)
    return mixed.view(np.int64)  # below 2^bits: the same values as int64


@dataclass(frozen=True, kw_only=True)
class SignedRandomProjection(LSHFamily):
    """Signed random projections (angular LSH) with ``p`` concatenated bits: ``Q = 2^p`` buckets.

    Repetition ``i`` draws ``p`` Gaussian directions ``w_{i1..ip}`` and maps ``x`` to the integer
    with bits ``1[w_ij^T x >= 0]``. Two points at angle ``theta`` collide with probability
    `srp_collision_probability` ``(1 - theta/pi)^p`` exactly (``beta = 0``, no folding). The
    kernel is defined for non-zero points (a zero point raises). Scale-invariant.

    Args:
        dimension: input dimension ``d``.
        n_repetitions: ``I``.
        n_bits: ``p`` in ``[1, 20]``.
        seed: public seed of the directions.
        projection: optional `FastJLT` preprocessing.

    References:
        Charikar, *Similarity estimation techniques from rounding algorithms*, STOC 2002.

    Examples:
        >>> family = SignedRandomProjection(dimension=2, n_repetitions=3, n_bits=2, seed=0)
        >>> family.n_buckets
        4
        >>> float(family.kernel(np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]]))[0, 0])
        0.25
    """

    dimension: int
    n_repetitions: int
    n_bits: int = 1
    seed: int = 0
    projection: FastJLT | None = None
    directions: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        owner = type(self).__name__
        check_common(self, owner)
        check_integer(self.n_bits, "n_bits", owner, low=1, high=_MAX_SRP_BITS)
        working = check_projection(self.projection, self.dimension, owner)
        if not self.n_repetitions * self.n_bits * working <= MAX_PUBLIC_DRAWS:
            bound = max(1, MAX_PUBLIC_DRAWS // (self.n_repetitions * working))
            raise invalid(
                "n_bits", owner, f"at most {bound} (n_repetitions * n_bits * dimension <= 2^27 public draws)", self.n_bits
            )
        rng = np.random.default_rng(self.seed)
        object.__setattr__(self, "directions", rng.standard_normal((self.n_repetitions, self.n_bits, working)))

    @property
    def n_buckets(self) -> int:
        return 1 << self.n_bits

    @property
    def collision_floor(self) -> float:
        return 0.0

    def check_points(self, points: Any, name: str = "points") -> np.ndarray:
        array = super().check_points(points, name)
        if array.size and not np.all(np.any(array != 0.0, axis=1)):
            raise invalid(name, type(self).__name__, "non-zero points (the angle to 0 is undefined)", "a zero row")
        return array

    def hash_codes(self, points: Any, *, repetitions: Repetitions = None) -> np.ndarray:
        """Bucket indices in ``[0, 2^p)``, ``(n, I)`` int64."""
        selected = self.repetition_indices(repetitions)
        working = apply_projection(self.projection, self.check_points(points))
        projections = np.einsum("nd,ipd->nip", working, self.directions[selected], optimize=True)
        weights = 1 << np.arange(self.n_bits, dtype=np.int64)
        return ((projections >= 0.0).astype(np.int64) * weights).sum(axis=2)

    def kernel(self, x: Any, y: Any) -> np.ndarray:
        """``(1 - angle(P x_a, P y_b)/pi)^p`` as an ``(n, m)`` matrix."""
        left = apply_projection(self.projection, self.check_points(x, "x"))
        right = apply_projection(self.projection, self.check_points(y, "y"))
        cosine = (left @ right.T) / np.outer(np.linalg.norm(left, axis=1), np.linalg.norm(right, axis=1))
        return srp_collision_probability(np.arccos(np.clip(cosine, -1.0, 1.0)), self.n_bits)

    def spec(self) -> dict[str, Any]:
        return {**self._spec_common(), "n_bits": self.n_bits}

    def _random_state(self) -> tuple[np.ndarray, ...]:
        return (self.directions,)
