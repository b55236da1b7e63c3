"""RACE: repeated arrays of count estimators over an LSH family, and its private release (Coleman & Shrivastava, CCS 2021).

References:
    Coleman & Shrivastava, "A One-Pass Distributed and Private Sketch for Kernel Sums with
    Applications to Machine Learning at Scale", CCS 2021.
"""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privsum._delegation import delegated
from privsum._deprecation import NOT_GIVEN, renamed
from privsum._random import RNGLike
from privsum._serialisation import Envelope, check_key, header_field, pack, unpack
from privsum._validation import check_choice, check_epsilon, check_integer, check_integer_array, check_real, invalid
from privsum.accounting import GuaranteeEvent, Neighbouring, PrivacyGuarantee
from privsum.exceptions import IncompatibleSketchError, InvalidParameterError
from privsum.lsq.base import LOADER_PUBLIC_DRAWS, check_loader_draws
from privsum.lsq.lsh import LSHFamily, family_from_spec
from privsum.shuffle.streaming import is_chunk_stream, iter_user_chunks
from privsum.sketches._noise import add_discrete_laplace

__all__ = ["RACE", "ReleasedRACE", "SketchShape"]

ESTIMATE_METHODS = ("mean", "median_of_means")
#: Sketch releases are calibrated for these relations (a sketch has no null point for zero-out).
SKETCH_RELATIONS = (Neighbouring.ADD_REMOVE, Neighbouring.REPLACE_ONE)
#: Version 2 added the SHA-256 checksum (see privsum/_serialisation.py for the layout).
_ENVELOPE = Envelope(magic=b"PSRACE", version=2, name="privsum RACE sketch")
_KIND_RAW, _KIND_RELEASED = 0, 1
_KIND_NAMES = {_KIND_RAW: "a raw RACE sketch", _KIND_RELEASED: "a released RACE sketch"}
_CODES_PER_CHUNK = 1 << 20
#: Passed only by `RACE.release`, `ReleasedRACE.merge` and `ReleasedRACE.from_bytes`: a released sketch
#: cannot be built by hand around counters that no release produced.
_RELEASE_TOKEN = object()


class _CodeBuffer:
    """One int64 array reused for the ``(R, chunk)`` hash codes of every chunk of an update (no per-chunk allocation)."""

    def __init__(self, chunk_size: int, n_rows: int) -> None:
        self._chunk_size, self._n_rows = chunk_size, n_rows
        self._flat = np.empty(0, dtype=np.int64)

    def take(self, n_points: int) -> np.ndarray:
        """A C-contiguous ``(R, n_points)`` array, ``n_points <= chunk_size`` (the storage grows to the largest chunk seen)."""
        size = self._n_rows * n_points
        if self._flat.size < size:
            self._flat = np.empty(self._n_rows * min(max(n_points, 1), self._chunk_size), dtype=np.int64)
        return self._flat[:size].reshape(self._n_rows, n_points)


class _CounterArray(abc.ABC):
    """Query logic shared by raw and released sketches: ``counts`` is ``(R, W)``, rows = repetitions."""

    family: LSHFamily
    counts: np.ndarray

    n_rows = delegated("family.n_repetitions", "``R``: rows (independent hash functions).")
    width = delegated("family.n_buckets", "``W``: counters per row.")

    def row_estimates(self, queries: Any) -> np.ndarray:
        """Per-row unbiased estimates of ``sum_i k(x_i, y)``, ``(m, R)``.

        Row ``r`` reads ``A[r, h_r(y)]``, whose expectation is ``sum_i [k_i + (1 - k_i) c]`` with
        ``c`` the family's `collision_floor`; subtracting ``c`` times the row total and dividing by
        ``1 - c`` removes the folding term (nothing to remove when ``c = 0``).
        """
        codes = self.family.hash_codes(queries)
        values = self.counts[np.arange(self.n_rows)[np.newaxis, :], codes].astype(float)
        floor = self.family.collision_floor
        if floor > 0.0:
            totals = self.counts.sum(axis=1, dtype=np.int64).astype(float)
            values = (values - floor * totals[np.newaxis, :]) / (1.0 - floor)
        return values

    def estimate(self, queries: Any, *, method: str = "mean", n_groups: int = 9) -> np.ndarray:
        """Estimate the kernel sums ``sum_i k(x_i, y)`` at each query ``y``.

        Args:
            queries: ``(m, d)`` points (or one ``(d,)`` point).
            method: ``"mean"`` over rows (unbiased) or ``"median_of_means"``: rows split into
                ``n_groups`` near-equal groups, the median of the group means (robust to heavy
                tails, not unbiased).
            n_groups: groups for the median of means (at most ``R``).

        Returns:
            ``(m,)`` estimates of ``sum_i k(x_i, y)`` with ``k`` the family's `kernel`.
        """
        owner = f"{type(self).__name__}.estimate"
        method = check_choice(method, "method", owner, ESTIMATE_METHODS)
        if method == "median_of_means":
            check_integer(n_groups, "n_groups", owner, low=1, high=self.n_rows)
        points = self.family.check_points(queries, "queries")
        chunk = max(1, _CODES_PER_CHUNK // self.n_rows)
        parts = [
            self._reduce_rows(self.row_estimates(points[start : start + chunk]), method, n_groups)
            for start in range(0, len(points), chunk)
        ]
        return np.concatenate(parts) if parts else np.zeros(0)

    @staticmethod
    def _reduce_rows(rows: np.ndarray, method: str, n_groups: int) -> np.ndarray:
        if method == "mean":
            return rows.mean(axis=1)
        means = np.stack([part.mean(axis=1) for part in np.array_split(rows, n_groups, axis=1)], axis=1)
        return np.median(means, axis=1)

    @abc.abstractmethod
    def _point_count(self) -> float:
        """The number of points the counters hold (exact, or estimated after a release)."""

    def density(self, queries: Any, *, method: str = "mean", n_groups: int = 9) -> np.ndarray:
        """Kernel density estimate ``(1/n) sum_i k(x_i, y)``: `estimate` over the point count."""
        return self.estimate(queries, method=method, n_groups=n_groups) / max(self._point_count(), 1.0)

    def _header(self) -> dict[str, Any]:
        return {"family": self.family.spec(), "fingerprint": self.family.fingerprint(), "shape": [self.n_rows, self.width]}

    def _serialise(self, kind: int, extra: dict[str, Any], key: bytes | None = None) -> bytes:
        return pack(_ENVELOPE, kind, {**self._header(), **extra}, self.counts, "<i8", key=key)


class RACE(_CounterArray):
    """A RACE sketch: ``R`` rows by ``W`` counters indexed by an LSH family (not private).

    ``update(x)`` adds 1 to ``A[r, h_r(x)]`` in every row ``r``; a query ``y`` reads
    ``A[r, h_r(y)]``, an unbiased estimate of ``sum_i P[h(x_i) = h(y)] = sum_i k(x_i, y)`` for the
    LSH collision kernel ``k`` (after removing the folding term of families with a
    `~privsum.lsq.LSHFamily.collision_floor`). Rows are ``family.n_repetitions``, counters per row
    ``family.n_buckets``. Sketches over the same family (same seed and shape) merge by adding
    counters, so a sketch can be built in a stream or in parallel.

    The counters hold raw counts of private data: publish only `release`'s output.

    Args:
        family: the `~privsum.lsq.LSHFamily` (public randomness: hash functions from its seed).

    Privacy:
        None by itself. `release` adds discrete Laplace noise and returns a `ReleasedRACE`.

    Utility:
        Each row is unbiased; for the `mean` over ``R`` rows the variance is at most
        ``(sum_i sqrt(k(x_i, y)))^2 / R`` (Theorem 2 of Coleman & Shrivastava (CCS 2021)) plus the folding term.

    References:
        Coleman & Shrivastava, *A one-pass distributed and private sketch for kernel sums with
        applications to machine learning at scale*, CCS 2021 (Coleman & Shrivastava (CCS 2021)); Coleman & Shrivastava,
        *Sub-linear RACE sketches for approximate kernel density estimation on streaming data*,
        WWW 2020.

    Examples:
        >>> from privsum.lsq import SignedRandomProjection
        >>> family = SignedRandomProjection(dimension=2, n_repetitions=200, n_bits=2, seed=0)
        >>> sketch = RACE(family).update(np.random.default_rng(1).normal(size=(500, 2)))
        >>> sketch.n_updates, sketch.counts.shape
        (500, (200, 4))
        >>> query = np.array([[1.0, 0.0]])
        >>> exact = float(family.kernel(np.random.default_rng(1).normal(size=(500, 2)), query).sum())
        >>> bool(abs(float(sketch.estimate(query)[0]) - exact) < 0.1 * exact)
        True
    """

    def __init__(self, family: LSHFamily) -> None:
        if not isinstance(family, LSHFamily):
            raise invalid("family", "RACE", "an LSHFamily (L2LSH or SignedRandomProjection)", family)
        self.family = family
        self._counts = np.zeros((family.n_repetitions, family.n_buckets), dtype=np.int64)
        self._n_updates = 0

    @property
    def counts(self) -> np.ndarray:
        """The ``(R, W)`` counters (a read-only view)."""
        view = self._counts.view()
        view.flags.writeable = False
        return view

    @property
    def n_updates(self) -> int:
        """How many points the sketch has absorbed."""
        return self._n_updates

    def _point_count(self) -> float:
        return float(self._n_updates)

    def update(self, points: Any, *, chunk_size: int | None = None) -> RACE:
        """Add one point ``(d,)``, a batch ``(n, d)`` or a stream of batches; returns ``self`` (for chaining).

        Args:
            points: the points; validated (finite, right dimension) before any counter changes.
                A stream of chunks (an iterator of arrays, a `~privsum.shuffle.streaming.UserChunks`
                or a Dask array, the same inputs as a protocol's `run`) is hashed one chunk at a
                time and committed only once every chunk is valid.
            chunk_size: points hashed at a time; memory is ``O(chunk_size * R)``. The default
                keeps about ``2^20`` hash codes per chunk.
        """
        if chunk_size is None:
            chunk_size = max(256, _CODES_PER_CHUNK // self.n_rows)
        chunk_size = check_integer(chunk_size, "chunk_size", "RACE.update", low=1)
        parts = iter_user_chunks(points, "RACE.update") if is_chunk_stream(points) else [points]
        increments = np.zeros(self._counts.size, dtype=np.int64)
        buffer = _CodeBuffer(chunk_size, self.n_rows)
        added = 0
        for part in parts:
            added += self._add_increments(part, chunk_size, buffer, increments)
        self._counts += increments.reshape(self._counts.shape)
        self._n_updates += added
        return self

    def _add_increments(self, part: Any, chunk_size: int, buffer: _CodeBuffer, increments: np.ndarray) -> int:
        """Validate and count ``part``; returns its number of points.

        The bucket counts go to the flat ``increments`` (row ``r``'s counters at ``r W .. r W + W - 1``).
        A 2-D numpy array is validated chunk by chunk, each chunk while it is in cache for hashing.
        """
        per_chunk = type(part) is np.ndarray and part.ndim == 2 and part.shape[0] > 0
        array = part if per_chunk else self.family.check_points(part)
        for start in range(0, array.shape[0], chunk_size):
            chunk = array[start : start + chunk_size]
            if per_chunk:
                chunk = self.family.check_points(chunk)
            indices = buffer.take(chunk.shape[0])  # (R, n): each row's counters stay together in cache
            self.family._counter_indices_into(chunk, indices)
            np.add.at(increments, indices.ravel(), 1)
        return array.shape[0]

    def merge(self, other: RACE) -> RACE:
        """A new sketch of the union of both inputs (counters added); the inputs are unchanged.

        Raises:
            IncompatibleSketchError: ``other`` is not a `RACE` over the same family (seed, shape,
                hash functions).
        """
        _check_compatible(self, other, RACE)
        merged = RACE(self.family)
        merged._counts = self._counts + other._counts
        merged._n_updates = self._n_updates + other._n_updates
        return merged

    def copy(self) -> RACE:
        """An independent copy."""
        duplicate = RACE(self.family)
        duplicate._counts = self._counts.copy()
        duplicate._n_updates = self._n_updates
        return duplicate

    @property
    def is_empty(self) -> bool:
        """Whether the sketch has absorbed no point."""
        return self._n_updates == 0

    def __eq__(self, other: object) -> bool:
        """Equal when both are raw sketches over the same family with the same counters and number of points."""
        if not isinstance(other, RACE):
            return NotImplemented
        return (
            self._n_updates == other._n_updates
            and _same_family(self.family, other.family)
            and bool(np.array_equal(self._counts, other._counts))
        )

    __hash__ = None  # type: ignore[assignment]

    def release(
        self,
        epsilon: float,
        *,
        neighbouring: Neighbouring | str = Neighbouring.ADD_REMOVE,
        noise_source: str = "opendp",
        rng: RNGLike = None,
        sampler: str = NOT_GIVEN,
    ) -> ReleasedRACE:
        """Release the sketch under pure epsilon-DP by adding discrete Laplace noise to every counter.

        One user's point changes one counter per row by 1 under add/remove (L1 sensitivity
        ``R``) and at most two counters per row under replace-one (L1 sensitivity ``2R``), so the
        noise scale is ``R/epsilon`` or ``2R/epsilon`` on the **raw counts**. (Coleman & Shrivastava (CCS 2021)'s public
        code uses ``R/(N epsilon)`` on raw counts, ``N`` times too little noise; this does not.)

        Args:
            epsilon: the privacy parameter, ``> 0``.
            neighbouring: ``"add-remove"`` (Coleman & Shrivastava (CCS 2021)'s relation) or ``"replace-one"``.
            noise_source: ``"opendp"`` (exact sampler, OS randomness; ``rng`` must be ``None`` or ``"secure"``) or
                ``"numpy"`` (seeded from ``rng``; floating-point geometric sampling, for experiments).
            rng: private randomness for ``noise_source="numpy"``; never stored.
            sampler: deprecated name of ``noise_source``.

        Returns:
            A `ReleasedRACE` carrying the noisy counters and its accounting event. The exact
            number of points is not carried over (it is private under add/remove).

        Privacy:
            ``(epsilon, 0)``-DP under the chosen relation, assuming each point is a different
            user (a user with ``k`` points has ``k`` times the sensitivity). The discrete Laplace
            mechanism is exactly epsilon-DP for integer queries; with ``noise_source="numpy"`` this holds
            up to floating-point error of the sampler.
        """
        owner = "RACE.release"
        noise_source = renamed("sampler", sampler, "noise_source", noise_source, "opendp", owner)
        epsilon = check_epsilon(epsilon, owner)
        relation = Neighbouring.parse(neighbouring, owner, SKETCH_RELATIONS)
        scale = noise_scale(self.n_rows, epsilon, relation)
        noisy = add_discrete_laplace(
            self._counts, sensitivity=scale * epsilon, epsilon=epsilon, noise_source=noise_source, rng=rng, owner=owner
        )
        return ReleasedRACE(
            family=self.family, counts=noisy, epsilon=epsilon, neighbouring=relation, noise_scales=(scale,), _token=_RELEASE_TOKEN
        )

    def to_bytes(self, *, key: bytes | None = None) -> bytes:
        """Versioned binary form (no pickle): header (JSON family spec, fingerprint) + int64 counters.

        ``key`` (at least 16 bytes) signs the bytes with HMAC-SHA256; the plain checksum only
        detects corruption.
        """
        return self._serialise(_KIND_RAW, {"n_updates": self._n_updates}, check_key(key, "RACE.to_bytes"))

    @classmethod
    def from_bytes(cls, data: bytes, *, key: bytes | None = None, max_public_draws: int = LOADER_PUBLIC_DRAWS) -> RACE:
        """Rebuild a sketch from `to_bytes` output; raises on a corrupt or foreign payload.

        With ``key``, unsigned or mis-signed bytes are refused. The family's size is checked
        against the counters and ``max_public_draws`` (default 2^20) before it is drawn.
        """
        owner = "RACE.from_bytes"
        header, counts = _parse(data, _KIND_RAW, owner, check_key(key, owner))
        n_updates = header_field(header, "n_updates", int, owner)
        family = _family_from_header(header, owner, max_public_draws, counts.shape[0])
        if not (n_updates >= 0 and np.all(counts >= 0) and np.all(counts.sum(axis=1) == n_updates)):
            raise invalid(
                "data", "RACE.from_bytes", "counters consistent with the stored number of updates", "inconsistent counters"
            )
        sketch = cls(family)
        sketch._counts = counts
        sketch._n_updates = n_updates
        return sketch

    @staticmethod
    def suggest_shape(
        n_points: int,
        *,
        epsilon: float | None = None,
        neighbouring: Neighbouring | str = Neighbouring.ADD_REMOVE,
        relative_error: float = 0.1,
        typical_density: float = 0.05,
    ) -> SketchShape:
        """Suggest rows ``R`` and width ``W`` for a target relative error at a typical query.

        The model: at a query whose kernel sum is ``K = n * kappa`` (``kappa = typical_density``),
        one row has variance at most ``n K`` (Cauchy–Schwarz on Theorem 2 of Coleman & Shrivastava (CCS 2021)) and the noise
        adds ``2 (c R/epsilon)^2`` per row (``c = 1`` add/remove, ``2`` replace-one), so the mean
        over ``R`` rows has variance ``n K / R + 2 c^2 R / epsilon^2``. The smallest ``R`` meeting
        ``relative_error * K`` is returned; if none does under the privacy noise, the ``R`` that
        minimises the error is returned with the error it achieves. ``W`` is the power of two
        ``>= 10/kappa`` (at least 16) so folded collisions stay small next to the kernel.

        Args:
            n_points: expected number of points ``n``.
            epsilon: the release's epsilon (``None``: no privacy noise).
            neighbouring: the release's neighbouring relation.
            relative_error: target standard error divided by ``K``.
            typical_density: ``kappa`` in ``(0, 1]``, the normalised kernel density at a typical query.

        Returns:
            A `SketchShape` with the rows, width and the relative error the model predicts.

        Examples:
            >>> RACE.suggest_shape(10**6, relative_error=0.1, typical_density=0.05)
            SketchShape(n_rows=2000, width=256, relative_error=0.1)
            >>> shape = RACE.suggest_shape(10**4, epsilon=1.0, relative_error=0.01, typical_density=0.05)
            >>> shape.relative_error > 0.01  # unreachable: the error-minimising R instead
            True
        """
        owner = "RACE.suggest_shape"
        n = check_integer(n_points, "n_points", owner, low=1)
        eta = check_real(relative_error, "relative_error", owner, low=0.0, low_open=True)
        kappa = check_real(typical_density, "typical_density", owner, low=0.0, high=1.0, low_open=True)
        width = max(16, 1 << max(0, math.ceil(math.log2(10.0 / kappa))))
        kernel_sum, row_variance = n * kappa, n * n * kappa
        if epsilon is None:
            rows = max(1, math.ceil(row_variance / (eta * kernel_sum) ** 2 - 1e-9))
            return SketchShape(rows, width, math.sqrt(row_variance / rows) / kernel_sum)
        epsilon = check_epsilon(epsilon, owner)
        per_row = 2.0 if Neighbouring.parse(neighbouring, owner, SKETCH_RELATIONS) == Neighbouring.REPLACE_ONE else 1.0
        factor = 2.0 * per_row**2 / epsilon**2
        target = (eta * kernel_sum) ** 2
        discriminant = target**2 - 4.0 * factor * row_variance
        if discriminant >= 0:
            rows = max(1, math.ceil((target - math.sqrt(discriminant)) / (2.0 * factor) - 1e-9))
        else:
            rows = max(1, round(math.sqrt(row_variance / factor)))
        error = math.sqrt(row_variance / rows + factor * rows) / kernel_sum
        return SketchShape(rows, width, error)

    def __repr__(self) -> str:
        return f"RACE(rows={self.n_rows}, width={self.width}, n_updates={self._n_updates}, family={type(self.family).__name__})"


@dataclass(frozen=True)
class SketchShape:
    """A suggested RACE shape and the relative error the `RACE.suggest_shape` model predicts."""

    n_rows: int
    width: int
    relative_error: float

    def __repr__(self) -> str:
        return f"SketchShape(n_rows={self.n_rows}, width={self.width}, relative_error={self.relative_error:.3g})"


def noise_scale(n_rows: int, epsilon: float, neighbouring: Neighbouring) -> float:
    """Discrete Laplace scale for a RACE release: ``R/epsilon`` (add/remove), ``2R/epsilon`` (replace-one).

    Examples:
        >>> noise_scale(100, 2.0, Neighbouring.ADD_REMOVE), noise_scale(100, 2.0, Neighbouring.REPLACE_ONE)
        (50.0, 100.0)
    """
    owner = "noise_scale"
    n_rows = check_integer(n_rows, "n_rows", owner, low=1)
    epsilon = check_epsilon(epsilon, owner)
    relation = Neighbouring.parse(neighbouring, owner, SKETCH_RELATIONS)
    per_row = 2 if relation == Neighbouring.REPLACE_ONE else 1
    return per_row * n_rows / epsilon


@dataclass(frozen=True, kw_only=True, eq=False)
class ReleasedRACE(_CounterArray):
    """A RACE sketch released under differential privacy (noise added exactly once).

    Produced only by `RACE.release`, by merging releases (`merge`) or by loading one
    (`from_bytes`): it cannot be built by hand, so its guarantee is always backed by the noise
    that was added. It supports every query of a `RACE` (post-processing), but it cannot be
    updated, merged into a raw sketch or released again. It does not carry the exact number of
    points: `point_count` is the unbiased estimate from the noisy row totals.

    Attributes:
        family: the LSH family (public).
        counts: the noisy ``(R, W)`` integer counters.
        epsilon: the release's epsilon.
        neighbouring: the relation the guarantee holds for.
        noise_scales: the discrete Laplace scale of each merged release (one entry for a single
            release): ``R/epsilon_i`` or ``2R/epsilon_i``.

    Privacy:
        `event` is ``GuaranteeEvent((epsilon, 0), neighbouring)``; every query is post-processing.

    Examples:
        >>> from privsum.lsq import L2LSH
        >>> family = L2LSH(dimension=1, n_repetitions=50, bucket_width=2.0, n_buckets=32, seed=3)
        >>> sketch = RACE(family).update(np.linspace(-1, 1, 1000)[:, None])
        >>> released = sketch.release(1.0, noise_source="numpy", rng=0)
        >>> released.noise_scale, released.event.guarantee
        (50.0, PrivacyGuarantee(epsilon=1.0, delta=0.0, neighbouring='add-remove'))
    """

    family: LSHFamily
    counts: np.ndarray
    epsilon: float
    neighbouring: Neighbouring
    noise_scales: tuple[float, ...]
    _token: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        owner = "ReleasedRACE"
        if self._token is not _RELEASE_TOKEN:
            raise InvalidParameterError(
                "A ReleasedRACE comes only from RACE.release, ReleasedRACE.merge or ReleasedRACE.from_bytes: "
                "its guarantee must be backed by noise that was actually added."
            )
        if not isinstance(self.family, LSHFamily):
            raise invalid("family", owner, "an LSHFamily", self.family)
        counts = check_integer_array(self.counts, "counts", owner, ndim=2).copy()
        if counts.shape != (self.family.n_repetitions, self.family.n_buckets):
            raise invalid(
                "counts", owner, f"an array of shape {(self.family.n_repetitions, self.family.n_buckets)}", counts.shape
            )
        counts.flags.writeable = False
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, owner))
        object.__setattr__(self, "neighbouring", Neighbouring.parse(self.neighbouring, owner, SKETCH_RELATIONS))
        if not (isinstance(self.noise_scales, tuple) and self.noise_scales):
            raise invalid("noise_scales", owner, "a non-empty tuple of scales", self.noise_scales)
        scales = tuple(check_real(scale, "noise_scales", owner, low=0.0, low_open=True) for scale in self.noise_scales)
        object.__setattr__(self, "noise_scales", scales)
        # Parallel composition: the guarantee is the weakest part's, the one with the smallest scale.
        expected = noise_scale(self.family.n_repetitions, self.epsilon, self.neighbouring)
        if not math.isclose(min(scales), expected, rel_tol=1e-12):
            raise invalid(
                "noise_scales", owner, f"a smallest scale of {expected:g}, what epsilon and neighbouring require", scales
            )

    @property
    def noise_scale(self) -> float:
        """The discrete Laplace scale of the release (of a merge: the smallest, which sets the guarantee)."""
        return min(self.noise_scales)

    @property
    def guarantee(self) -> PrivacyGuarantee:
        """``(epsilon, 0)`` under `neighbouring`."""
        return PrivacyGuarantee(self.epsilon, 0.0, self.neighbouring)

    @property
    def event(self) -> GuaranteeEvent:
        """The accounting event of the release (compose it into a `privsum.accounting.PrivacyAccountant`)."""
        return GuaranteeEvent(self.guarantee)

    @property
    def point_count(self) -> float:
        """Unbiased estimate of the number of points: the mean of the noisy row totals."""
        return float(self.counts.sum(axis=1, dtype=np.int64).mean())

    def _point_count(self) -> float:
        return self.point_count

    def noise_variance(self) -> float:
        """Exact variance of the noise on one counter: ``2a/(1-a)^2``, ``a = e^(-1/scale)``, summed over merged releases.

        It equals ``2 scale^2 - 1/6 + O(1/scale^2)``, the continuous Laplace's ``2 scale^2`` to within 1/6.
        """
        ratios = [math.exp(-1.0 / scale) for scale in self.noise_scales]
        return float(sum(2.0 * ratio / (1.0 - ratio) ** 2 for ratio in ratios))

    def merge(self, other: ReleasedRACE, *, disjoint_users: bool) -> ReleasedRACE:
        """The release of the union of two **disjoint** sets of users: noisy counters added (post-processing).

        Args:
            other: a `ReleasedRACE` over the same family (seed, shape, hash functions) and the same
                neighbouring relation.
            disjoint_users: must be ``True``: the caller states that no user contributed to both
                releases. Releases that share users compose sequentially (sum of the epsilons):
                compose their `event` in a `~privsum.accounting.PrivacyAccountant` instead.

        Returns:
            A `ReleasedRACE` whose counters are the sums (each with its own noise, `noise_scales`
            lists both) and whose epsilon is the larger of the two.

        Privacy:
            Parallel composition. Under add/remove, neighbouring datasets differ by one user, whose
            point is in at most one of the two disjoint parts, so only that part's release changes:
            the pair of releases, and the merge computed from them, is ``max(epsilon_1,
            epsilon_2)``-DP. Under replace-one the same holds when which part a user belongs to does
            not depend on their point (a fixed split of the users, as when two servers each
            release their own users' sketch). Merging is post-processing of the two releases.

        Raises:
            IncompatibleSketchError: ``other`` is not a `ReleasedRACE` over the same family, or its
                guarantee holds for another neighbouring relation.
            InvalidParameterError: ``disjoint_users`` is not ``True``.
        """
        owner = "ReleasedRACE.merge"
        if disjoint_users is not True:
            raise invalid(
                "disjoint_users",
                owner,
                "True (releases that share users compose sequentially: use an accountant)",
                disjoint_users,
            )
        _check_compatible(self, other, ReleasedRACE)
        if self.neighbouring != other.neighbouring:
            relations = f"{self.neighbouring.value} vs {other.neighbouring.value}"
            raise IncompatibleSketchError(f"Cannot merge releases for different neighbouring relations: {relations}.")
        return ReleasedRACE(
            family=self.family,
            counts=self.counts + other.counts,
            epsilon=max(self.epsilon, other.epsilon),
            neighbouring=self.neighbouring,
            noise_scales=self.noise_scales + other.noise_scales,
            _token=_RELEASE_TOKEN,
        )

    def update(self, *_: Any, **__: Any) -> None:
        """Not allowed: a released sketch is final (raises `TypeError`)."""
        raise TypeError("A ReleasedRACE cannot be updated: update the raw RACE and release it again (a new privacy cost).")

    def release(self, *_: Any, **__: Any) -> None:
        """Not allowed: noise is added exactly once (raises `TypeError`)."""
        raise TypeError("A ReleasedRACE is already private; it cannot be released again.")

    def to_bytes(self, *, key: bytes | None = None) -> bytes:
        """Versioned binary form (no pickle): header (family, epsilon, relation, scales) + int64 counters.

        ``key`` (at least 16 bytes) signs the bytes with HMAC-SHA256: the plain checksum only
        detects corruption, anyone can edit the header (epsilon, noise scale) and recompute it.
        """
        extra = {"epsilon": self.epsilon, "neighbouring": self.neighbouring.value, "noise_scale": self.noise_scale}
        if len(self.noise_scales) > 1:  # a merge: every part's scale (a single release keeps the original header)
            extra["noise_scales"] = list(self.noise_scales)
        return self._serialise(_KIND_RELEASED, extra, check_key(key, "ReleasedRACE.to_bytes"))

    @classmethod
    def from_bytes(cls, data: bytes, *, key: bytes | None = None, max_public_draws: int = LOADER_PUBLIC_DRAWS) -> ReleasedRACE:
        """Rebuild a released sketch from `to_bytes` output (with ``key``: only bytes signed with it)."""
        owner = "ReleasedRACE.from_bytes"
        header, counts = _parse(data, _KIND_RELEASED, owner, check_key(key, owner))
        family = _family_from_header(header, owner, max_public_draws, counts.shape[0])
        scale = header_field(header, "noise_scale", (int, float), owner)
        scales = header.get("noise_scales", [scale])  # several only for a merge
        if not (
            isinstance(scales, list)
            and scales
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in scales)
            and min(scales) == scale
        ):
            raise invalid("data", owner, "noise scales whose smallest is the stored noise_scale", header.get("noise_scales"))
        scales = tuple(scales)
        try:
            return cls(
                family=family,
                counts=counts,
                epsilon=header_field(header, "epsilon", (int, float), owner),
                neighbouring=header_field(header, "neighbouring", str, owner),
                noise_scales=scales,
                _token=_RELEASE_TOKEN,
            )
        except InvalidParameterError as error:
            raise invalid("data", owner, "a consistent released sketch header", str(error)) from None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ReleasedRACE):
            return NotImplemented
        same_meta = (self.epsilon, self.neighbouring, self.noise_scales) == (
            other.epsilon,
            other.neighbouring,
            other.noise_scales,
        )
        return same_meta and _same_family(self.family, other.family) and bool(np.array_equal(self.counts, other.counts))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        relation = self.neighbouring.value
        return f"ReleasedRACE(rows={self.n_rows}, width={self.width}, epsilon={self.epsilon!r}, neighbouring={relation!r})"


def _same_family(first: LSHFamily, second: LSHFamily) -> bool:
    """Same class, parameters and hash functions (the fingerprint of the drawn randomness)."""
    return first.spec() == second.spec() and first.fingerprint() == second.fingerprint()


def _check_compatible(first: _CounterArray, second: Any, kind: type) -> None:
    if not isinstance(second, kind):
        raise IncompatibleSketchError(f"Cannot merge a {type(first).__name__} with {type(second).__name__}.")
    if not _same_family(first.family, second.family):
        raise IncompatibleSketchError(
            f"Cannot merge sketches over different hash families: {first.family.spec()} vs {second.family.spec()}."
        )


def _parse(data: Any, kind: int, owner: str, key: bytes | None = None) -> tuple[dict[str, Any], np.ndarray]:
    header, counts = unpack(data, _ENVELOPE, kind, _KIND_NAMES[kind], "<i8", owner, key=key)
    if counts.ndim != 2:
        raise invalid("data", owner, "a 2-D counter array", f"shape {counts.shape}")
    return header, counts.astype(np.int64)


def _family_from_header(header: dict[str, Any], owner: str, max_public_draws: int, n_rows: int) -> LSHFamily:
    """The family the header names, its size checked against the counters and ``max_public_draws`` before it is drawn."""
    spec = header.get("family")
    if not isinstance(spec, dict):
        raise invalid("data", owner, "a hash family header (a JSON object)", type(spec).__name__)
    check_loader_draws(spec, max_public_draws, owner, n_repetitions=n_rows)
    try:
        family = family_from_spec(header.get("family"))
    except InvalidParameterError as error:
        raise invalid("data", owner, "a valid hash family header", str(error)) from None
    if family.fingerprint() != header.get("fingerprint"):
        raise IncompatibleSketchError(
            "The stored hash functions differ from those this numpy version draws from the same seed; "
            "the sketch cannot be queried or merged here."
        )
    if [family.n_repetitions, family.n_buckets] != header.get("shape"):
        raise invalid("data", owner, "a shape matching the family", header.get("shape"))
    return family
