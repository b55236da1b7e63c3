"""Convolution of probability vectors: direct when short, by FFT with a stated error bound when long.

Privacy profiles are computed from pmfs of sums of independent counts. A direct convolution costs
``len(a) * len(b)`` operations (quadratic for the long binomial windows of large crowds); an FFT
convolution costs ``O(N log N)`` but its round-off is an *absolute* error spread over every entry,
including the tiny tail entries that decide a small delta. `convolve_pmfs` therefore returns, with
the values, an upper bound on the L1 norm of their error, which callers add to delta (as mass of
infinite privacy loss), so that a profile computed from FFT-convolved pmfs stays an upper bound.

Error bound (stated, and checked against the direct convolution in the tests). Write ``F`` for the
unnormalised DFT of length ``N`` (``||F x||_2 = sqrt(N) ||x||_2``, ``||F x||_inf <= ||x||_1``). A
floating-point FFT has normwise relative error at most ``rho = c u log2(N)`` (Higham, "Accuracy and
Stability of Numerical Algorithms", 2nd ed., SIAM 2002, Theorem 24.2, with ``u = 2^-53`` and a
small constant; we take ``c = 8``, several times what pocketfft attains). Propagating it through
``z = F^{-1}(F a * F b) / N`` gives
``||z_hat - z||_2 <= rho (||a||_2 ||b||_1 + ||a||_1 ||b||_2) + (rho + 3u) ||a||_1 ||b||_2`` to first
order; we use ``3 rho (||a||_2 ||b||_1 + ||a||_1 ||b||_2) (1 + rho)^2``, which covers it, and
``||.||_1 <= sqrt(N) ||.||_2``; negative outputs are clipped to zero (which only moves them
towards the non-negative truth).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["convolve_pmfs", "fft_error_bound"]

# Direct convolution below this many multiply-adds (it is then as fast as an FFT, and exact up to
# the rounding of sums of non-negative terms).
DIRECT_WORK_LIMIT = 4_000_000
_UNIT_ROUNDOFF = 2.0**-53
_FFT_CONSTANT = 8.0


def fft_error_bound(a: np.ndarray, b: np.ndarray) -> float:
    """Upper bound on ``||fft_convolve(a, b) - a * b||_1`` (see the module docstring)."""
    size = _fft_size(a.size + b.size - 1)
    rho = _FFT_CONSTANT * _UNIT_ROUNDOFF * max(1.0, math.log2(size))
    norm1_a, norm1_b = float(np.abs(a).sum()), float(np.abs(b).sum())
    # einsum, not BLAS: a threaded BLAS norm of a long vector stalls when the cores are busy
    norm2_a, norm2_b = math.sqrt(float(np.einsum("i,i->", a, a))), math.sqrt(float(np.einsum("i,i->", b, b)))
    l2 = 3.0 * rho * (norm2_a * norm1_b + norm1_a * norm2_b) * (1.0 + rho) ** 2
    return math.sqrt(size) * l2


def convolve_pmfs(a: np.ndarray, b: np.ndarray, *, allowed_error: float = 0.0) -> tuple[np.ndarray, float]:
    """``a * b`` (full convolution) and an upper bound on the L1 norm of its numerical error.

    The FFT is used only when the direct convolution would be long and the FFT's error bound is
    at most ``allowed_error``; otherwise the direct convolution is used and the returned error is
    ``0`` (sums of non-negative products: relative error of order ``len * 2^-53`` per entry,
    treated as exact, as everywhere else in the library's profiles).

    Args:
        a: a non-negative 1-D array.
        b: a non-negative 1-D array.
        allowed_error: the largest L1 error bound accepted from the FFT.

    Returns:
        ``(values, error_bound)``; ``values`` is non-negative.
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.size * b.size <= DIRECT_WORK_LIMIT or min(a.size, b.size) <= 64:
        return np.convolve(a, b), 0.0
    bound = fft_error_bound(a, b)
    if not bound <= allowed_error:
        return np.convolve(a, b), 0.0
    length = a.size + b.size - 1
    size = _fft_size(length)
    values = np.fft.irfft(np.fft.rfft(a, size) * np.fft.rfft(b, size), size)[:length]
    np.maximum(values, 0.0, out=values)
    return values, bound


def _fft_size(length: int) -> int:
    """A fast FFT length at least ``length`` (a power of two times 1, 3 or 5)."""
    best = 1 << max(0, (length - 1).bit_length())
    for factor in (3, 5):
        candidate = factor << max(0, math.ceil(math.log2(length / factor)))
        if length <= candidate < best:
            best = candidate
    return best
