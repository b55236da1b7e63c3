"""The KDE's rounding step: each user's features rounded to bits ``b ~ Bern((1 + f/R) / 2)``, in reused buffers.

`~privsum.kde.protocol.ShuffledKDE` rounds by `round_to_bits`; random Fourier features get fast
paths (``precision="float64"``: the phase reduced exactly, the probability in float32; ``"exact"``:
the family's own values bit for bit; ``"float32"``: everything in single precision).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from privsum.lsq.base import LSQFamily
from privsum.lsq.rff import RandomFourierFeatures, apply_projection, fourier_features_block, fourier_features_of_turns

__all__ = ["CACHE_BLOCK_ENTRIES", "FLOAT64_PROBABILITY_ERROR", "Workspace", "features", "fourier_probabilities", "round_to_bits"]

#: Largest difference between the probability that a bit of ``precision="float64"`` is 1 and the
#: exact ``(1 + f/R)/2`` of `RandomFourierFeatures`: the float32 probability ``p`` (within
#: ``FLOAT64_PROBABILITY_ERROR - 2^-24`` of it, tested over phases of up to ``10**4`` turns) compared
#: with a float32 uniform, which gives ``ceil(p 2^24) / 2^24``.
FLOAT64_PROBABILITY_ERROR = 5e-7

# Entries that the elementwise passes of the Fourier rounding process at once: their working set
# (about 25 bytes an entry) stays in a core's L2 cache, so only the matmul's output goes through memory.
CACHE_BLOCK_ENTRIES = 1 << 15


class Workspace:
    """Flat buffers grown on demand and reused across blocks, so that rounding allocates (and
    page-faults in) its working memory once per run rather than once per block; and arrays
    derived from a family's public draws, computed once per run."""

    def __init__(self) -> None:
        self._buffers: dict[str, np.ndarray] = {}
        self._derived: dict[tuple[Any, ...], tuple[object, np.ndarray]] = {}

    def take(self, name: str, shape: tuple[int, int], dtype: type) -> np.ndarray:
        size = shape[0] * shape[1]
        buffer = self._buffers.get(name)
        if buffer is None or buffer.size < size or buffer.dtype != dtype:
            buffer = self._buffers[name] = np.empty(size, dtype=dtype)
        return buffer[:size].reshape(shape)

    def derived(self, name: str, source: object, selected: slice, compute: Callable[[], np.ndarray]) -> np.ndarray:
        """``compute()`` for ``source`` (a family) and its ``selected`` repetitions, kept while ``source`` is the same object."""
        key = (name, id(source), selected.start, selected.stop, selected.step)
        cached = self._derived.get(key)
        if cached is None or cached[0] is not source:
            cached = self._derived[key] = (source, compute())
        return cached[1]


def round_to_bits(
    family: LSQFamily,
    points: np.ndarray,
    rng: np.random.Generator,
    repetitions: slice | None,
    workspace: Workspace,
    precision: str = "float64",
) -> np.ndarray:
    """`ShuffledKDE.round_to_bits` writing into ``workspace`` (the result is a view of its buffer)."""
    if type(family) is RandomFourierFeatures and precision == "float64":
        return _round_fourier(family, points, rng, repetitions, workspace)
    if type(family) is RandomFourierFeatures and precision == "exact":
        return _round_fourier_exactly(family, points, rng, repetitions, workspace)
    values = features(family, points, repetitions, workspace, precision)
    threshold = rng.random(out=workspace.take("uniforms", values.shape, np.float64))
    threshold *= 2.0 * family.bound
    threshold -= family.bound
    return np.less(threshold, values, out=workspace.take("bits", values.shape, np.bool_)).view(np.int8)


def _row_blocks(n_rows: int, width: int) -> Iterator[slice]:
    """Consecutive blocks of rows of a ``(n_rows, width)`` array, about ``CACHE_BLOCK_ENTRIES`` entries each."""
    step = max(1, CACHE_BLOCK_ENTRIES // max(1, width))
    for start in range(0, n_rows, step):
        yield slice(start, min(start + step, n_rows))


def features(
    family: LSQFamily, points: np.ndarray, repetitions: slice | None, workspace: Workspace, precision: str = "float64"
) -> np.ndarray:
    """``family.f(points)`` flattened to ``(m, |repetitions| * Q)``.

    Random Fourier features are computed into a reused buffer: in ``"float64"`` (and ``"exact"``)
    by the same operations as `RandomFourierFeatures.f` (a test checks the values are bit-for-bit
    equal); in ``"float32"`` as ``sqrt(2) cos(w^T x + b)`` in single precision. Other families use
    their own ``f``.
    """
    if type(family) is not RandomFourierFeatures:
        values = family.f(points, repetitions=repetitions)
        return values.reshape(values.shape[0], -1)
    if precision != "float32":
        turns, phase_turns = _fourier_turns(family, points, repetitions, workspace)
        return fourier_features_of_turns(turns, phase_turns, out=turns)
    selected = slice(None) if repetitions is None else repetitions
    frequencies = family.frequencies[selected].astype(np.float32)
    phases = family.phases[selected].astype(np.float32)
    working = apply_projection(family.projection, points.astype(np.float32, copy=False))
    values = workspace.take("features-float32", (working.shape[0], frequencies.shape[0]), np.float32)
    np.matmul(working.astype(np.float32, copy=False), frequencies.T, out=values)
    values += phases
    np.cos(values, out=values)
    values *= np.float32(math.sqrt(2.0))
    return values


def _round_fourier_exactly(
    family: RandomFourierFeatures, points: np.ndarray, rng: np.random.Generator, repetitions: slice | None, workspace: Workspace
) -> np.ndarray:
    """Bits for exactly the values `RandomFourierFeatures.f` returns, in cache-sized blocks of rows.

    After the family's matmul, the features (`fourier_features_block`, elementwise: the values of
    `features`), the uniforms (drawn in the order of the whole array) and the comparison run on
    blocks of rows that stay in cache.
    """
    turns, phase_turns = _fourier_turns(family, points, repetitions, workspace)
    bits = workspace.take("bits", turns.shape, np.bool_)
    for rows in _row_blocks(*turns.shape):
        shape = turns[rows].shape
        values = workspace.take("block-values", shape, np.float64)
        scratch = workspace.take("block-turns", shape, np.float64), workspace.take("block-whole-turns", shape, np.float64)
        fourier_features_block(turns[rows], phase_turns, values, *scratch)
        threshold = rng.random(out=workspace.take("block-uniforms", shape, np.float64))
        threshold *= 2.0 * family.bound
        threshold -= family.bound
        np.less(threshold, values, out=bits[rows])
    return bits.view(np.int8)


def _round_fourier(
    family: RandomFourierFeatures, points: np.ndarray, rng: np.random.Generator, repetitions: slice | None, workspace: Workspace
) -> np.ndarray:
    """``precision="float64"`` bits: ``U < p`` for `fourier_probabilities`' ``p`` and float32 uniforms ``U``.

    In cache-sized blocks of rows: the same probabilities and the same uniforms (drawn in the
    order of the whole array) as comparing the whole arrays at once; only the working set is smaller.
    """
    turns, phase_turns = _fourier_turns(family, points, repetitions, workspace)
    bits = workspace.take("bits", turns.shape, np.bool_)
    scratch = _BlockScratch(turns.shape, workspace)
    for rows, (reduced, whole, probabilities, uniforms) in scratch.blocks():
        _probabilities_of_turns(turns[rows], phase_turns, probabilities, reduced, whole)
        rng.random(out=uniforms, dtype=np.float32)
        np.less(uniforms, probabilities, bits[rows])
    return bits.view(np.int8)


def fourier_probabilities(
    family: RandomFourierFeatures, points: np.ndarray, repetitions: slice | None, workspace: Workspace
) -> np.ndarray:
    """Rounding probabilities ``(1 + f/R)/2 = cos^2(theta/2)`` of random Fourier features, float32, ``(m, I)``.

    ``theta = w^T x + b`` is computed in turns, ``t = (w/2pi)^T x + b/2pi``, in float64 (matmul and
    phase: the float64 angle of `RandomFourierFeatures.f`); ``t - rint(t)`` is the exact reduction
    to ``[-1/2, 1/2]`` turns (a float64 subtraction of an integer, exact); only then is the angle
    rounded to float32 and ``cos^2(pi (t - rint t))`` evaluated in float32. Errors: the float32
    angle (the reduced turn, pi and their product rounded: below ``1.6e-7``), the float32 cosine
    and square (a few units in ``2^-24``): together below ``FLOAT64_PROBABILITY_ERROR - 2^-24``.
    """
    turns, phase_turns = _fourier_turns(family, points, repetitions, workspace)
    probabilities = workspace.take("probabilities", turns.shape, np.float32)
    for rows, (reduced, whole, _, _) in _BlockScratch(turns.shape, workspace).blocks():
        _probabilities_of_turns(turns[rows], phase_turns, probabilities[rows], reduced, whole)
    return probabilities


class _BlockScratch:
    """Scratch arrays for the blocks of rows of an ``(m, I)`` rounding, taken from the workspace once."""

    def __init__(self, shape: tuple[int, int], workspace: Workspace) -> None:
        self.n_rows, width = shape
        self.step = max(1, CACHE_BLOCK_ENTRIES // max(1, width))
        block = (min(self.step, self.n_rows), width)
        self.arrays = (
            workspace.take("block-turns", block, np.float64),
            workspace.take("block-whole-turns", block, np.float64),
            workspace.take("block-probabilities", block, np.float32),
            workspace.take("block-uniforms32", block, np.float32),
        )

    def blocks(self) -> Iterator[tuple[slice, tuple[np.ndarray, ...]]]:
        """Each block's rows and its scratch arrays (reduced turns, whole turns, probabilities, uniforms)."""
        for start in range(0, self.n_rows, self.step):
            stop = min(start + self.step, self.n_rows)
            arrays = self.arrays if stop - start == self.arrays[0].shape[0] else tuple(a[: stop - start] for a in self.arrays)
            yield slice(start, stop), arrays


def _fourier_turns(
    family: RandomFourierFeatures, points: np.ndarray, repetitions: slice | None, workspace: Workspace
) -> tuple[np.ndarray, np.ndarray]:
    """``(w_i/2pi)^T x`` for every point and repetition, ``(m, I)`` float64 (as `RandomFourierFeatures.f`); phases in turns."""
    selected = slice(None) if repetitions is None else repetitions
    turn_frequencies = workspace.derived("turn-frequencies", family, selected, lambda: family.turn_frequencies(selected))
    working = apply_projection(family.projection, points.astype(np.float64, copy=False))
    turns = workspace.take("turns", (working.shape[0], turn_frequencies.shape[0]), np.float64)
    np.matmul(working, turn_frequencies.T, out=turns)
    return turns, family.turn_phases(selected)


def _probabilities_of_turns(
    turns: np.ndarray, phase_turns: np.ndarray, out: np.ndarray, reduced: np.ndarray, whole: np.ndarray
) -> None:
    """``cos^2(pi (t - rint t))`` of ``t = turns + phase_turns`` into the float32 ``out`` (a block that fits in cache)."""
    np.add(turns, phase_turns, reduced)
    np.rint(reduced, whole)
    np.subtract(reduced, whole, reduced)  # in [-1/2, 1/2], exactly
    np.multiply(reduced, _PI32, out, dtype=np.float32)  # half the angle, float32
    np.cos(out, out)
    np.square(out, out)


_PI32 = np.float32(math.pi)
