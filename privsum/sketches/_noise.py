"""Discrete Laplace noise on integer counters: OpenDP's exact sampler or a seeded numpy sampler."""

from __future__ import annotations

import math

import numpy as np

from privsum._random import RNGLike, as_generator, check_csprng_rng
from privsum._validation import check_choice, invalid
from privsum.shuffle.noise import sample_discrete_laplace

__all__ = ["NOISE_SOURCES", "SAMPLERS", "add_discrete_laplace"]

NOISE_SOURCES = ("opendp", "numpy")
SAMPLERS = NOISE_SOURCES  # the former name
#: Largest discrete Laplace scale: noise beyond 2^62 (int64 counters) then has probability below exp(-2^22).
MAX_NOISE_SCALE = 2.0**40


def add_discrete_laplace(
    counts: np.ndarray, *, sensitivity: float, epsilon: float, noise_source: str, rng: RNGLike, owner: str
) -> np.ndarray:
    """Return ``counts + DLap`` noise of scale ``sensitivity/epsilon`` on every entry (int64).

    The discrete Laplace of scale ``b`` has pmf proportional to ``exp(-|k|/b)`` on the integers
    (ratio ``exp(-1/b)``); for an integer-valued query of L1 sensitivity ``Delta`` the scale
    ``Delta/epsilon`` gives pure epsilon-DP.

    ``noise_source="opendp"`` uses OpenDP's exact sampler (integer arithmetic, OS CSPRNG; a seed
    in ``rng`` is refused, see `~privsum._random.check_csprng_rng`). ``noise_source="numpy"`` draws
    the difference of two geometric variables from ``rng`` (reproducible, but numpy's geometric
    sampler uses floating-point inversion, so the distribution is exact only up to
    floating-point error; use it for experiments and tests).
    """
    noise_source = check_choice(noise_source, "noise_source", owner, NOISE_SOURCES)
    scale = sensitivity / epsilon
    if not scale <= MAX_NOISE_SCALE:  # noisy int64 counters must not saturate (a silent clip)
        raise invalid("epsilon", owner, f"large enough for a noise scale of at most 2^40 (it gives {scale:.3g})", epsilon)
    flat = np.ascontiguousarray(counts, dtype=np.int64).ravel()
    if noise_source == "numpy":
        generator = as_generator(rng, owner)
        noise = sample_discrete_laplace(generator, math.exp(-1.0 / scale), flat.size)
        return (flat + noise).reshape(counts.shape)
    check_csprng_rng(rng, owner)
    return _opendp_discrete_laplace(flat, scale=scale, sensitivity=sensitivity, epsilon=epsilon).reshape(counts.shape)


def _opendp_discrete_laplace(flat: np.ndarray, *, scale: float, sensitivity: float, epsilon: float) -> np.ndarray:
    import opendp.prelude as dp

    dp.enable_features("contrib")  # OpenDP gates its non-vetted constructors behind this flag
    measurement = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=dp.i64)), dp.l1_distance(T=dp.i64), scale=scale)
    # Cross-check our accounting with OpenDP's own privacy map (it rounds conservatively).
    spent = measurement.map(math.ceil(sensitivity))
    if not spent <= epsilon * (1 + 1e-9):
        raise RuntimeError(f"OpenDP reports epsilon {spent} for sensitivity {sensitivity} at scale {scale}; expected {epsilon}")
    return np.asarray(measurement(flat.tolist()), dtype=np.int64)
