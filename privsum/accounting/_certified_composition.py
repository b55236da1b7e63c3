"""Composition of discretised privacy-loss pmfs with a proven bound on the floating-point error.

A composed PLD is a convolution power of the single event's pmf. dp-accounting evaluates it by an
FFT (``irfft(rfft(p) ** k)``) whose round-off is an *absolute* error spread over every entry, the
tiny tail entries that decide a small delta included: left unbounded it made the accountant report
an epsilon below the exact one (issues 31 and 32). Here every composition returns, with the pmf,
an upper bound ``E`` on the L1 distance between the computed entries and the exact convolution of
its inputs. Since ``delta(epsilon) = inf_mass + sum_l p_l (1 - e^(epsilon - l))_+`` weighs every
entry by a number in ``[0, 1]``, the exact delta is at most the computed one plus ``E``
(`privsum.accounting.pld.PLDPair` adds it, and declines where it swamps the target).

The bound for ``y = irfft(rfft(x, N) ** k, N)`` on an output window of ``L`` entries, with
``u = 2^-53``, ``rho = c u log2(N)`` (``c = 8``, as in `privsum._convolution`) and
``||x||_1 <= 1``:

1. **Forward transform.** Each stage of a Cooley-Tukey FFT combines, with unit-modulus twiddle
   factors, DFTs of disjoint subsequences of ``x``, each bounded in modulus by its subsequence's
   L1 norm; a stage's rounding therefore moves every output by at most ``c u ||x||_1`` (the
   first-order propagation through the remaining unit-modulus stages), and the whole transform by
   ``beta = rho ||x||_1`` **componentwise** (the stage-wise form of Higham, "Accuracy and Stability
   of Numerical Algorithms", 2nd ed., SIAM 2002, §24.1; ``c = 8`` is several times what pocketfft's
   radix-2/3/4/5 butterflies attain).
2. **Power.** ``|a^k - b^k| <= k |a - b| max(|a|, |b|)^(k-1)`` with ``|X_j| <= ||x||_1``, so the
   propagated error at frequency ``j`` is at most ``k beta M_j^(k-1)``, ``M_j = max(|X^_j|,
   min(||x||_1, |X^_j| + beta))``. The power itself is ``exp(k log X^_j)``: with elementary
   functions accurate to a few ulps its relative error is at most ``(4 k (|log|X^_j|| + pi) + 8) u``.
3. **Inverse transform.** An error ``D`` in the (Hermitian) spectrum moves the outputs by
   ``F^-1 D``: at most ``L ||D||_1 / N`` or ``sqrt(L / N) ||D||_2`` in L1 on the window (the
   full spectrum's norms, twice the half spectrum's). The inverse's own rounding adds, by step 1,
   at most ``rho ||Z^||_1 / N`` per output, ``L rho ||Z^||_1 / N`` in all.
4. **Window.** The window holds all but a Chernoff-bounded mass ``T`` of the exact power; the rest
   is counted as infinite loss (as dp-accounting does) and, folded into the window by the
   circular convolution, moves at most ``T`` more.

Every term is evaluated from the computed spectrum, so the bound is tight where the spectrum
decays fast (few frequencies survive the power) and grows like ``k rho``: about ``1e-11`` for a few
hundred compositions, so that at ``10^9`` compositions the PLD cannot certify ``delta = 1e-6`` and
declines. Negative outputs are clipped to zero (towards the non-negative truth). Direct
convolutions (short or sparse pmfs) have no absolute error: their relative error, at most ``n u``
per entry for sums of ``n`` non-negative products, is returned instead.

The tests compare the bound with the actual error against direct convolutions.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privsum._convolution import _FFT_CONSTANT, _UNIT_ROUNDOFF, convolve_pmfs

__all__ = ["TAIL_MASS_TRUNCATION", "compose_pmfs", "self_compose_pmf"]

#: Tail mass a self-composition may leave outside its window (counted as infinite loss).
TAIL_MASS_TRUNCATION = 1e-15
# Sparse pmfs whose composition stays this small are composed directly (dp-accounting's sparse path).
_MAX_SPARSE_SIZE = 1000
# Slack on the bound's own evaluation (a few float operations on non-negative numbers).
_BOUND_SLACK = 1.0 + 1e-6


def rho(size: int) -> float:
    """The per-transform relative error factor ``c u log2(N)`` (see the module docstring)."""
    return _FFT_CONSTANT * _UNIT_ROUNDOFF * max(1.0, math.log2(size))


def self_compose_pmf(pmf: Any, count: int, max_entries: int) -> tuple[Any, float, float]:
    """``count``-fold composition of a dp-accounting pmf: ``(pmf, L1 error bound, relative error)``.

    Raises:
        OverflowError: the composed window would exceed ``max_entries`` (the caller refuses).
    """
    from dp_accounting.pld import pld_pmf

    if isinstance(pmf, pld_pmf.SparsePLDPmf) and count * math.log(max(pmf.size, 1)) <= math.log(_MAX_SPARSE_SIZE):
        composed = pmf.self_compose(count, TAIL_MASS_TRUNCATION)  # direct products and sums: relative error only
        return composed, 0.0, count * (pmf.size + 2) * _UNIT_ROUNDOFF
    dense = pmf if isinstance(pmf, pld_pmf.DensePLDPmf) else pmf.to_dense_pmf()
    probs = np.maximum(np.asarray(dense._probs, dtype=float), 0.0)
    low, high = chernoff_window(probs, count, TAIL_MASS_TRUNCATION)
    length = high - low + 1
    lower_loss = dense._lower_loss * count + low
    if length > max_entries or not abs(lower_loss) + length < 2**62:  # loss indices stay int64 in dp-accounting
        raise OverflowError(length)
    values, error = _fft_power(probs, count, low, length)
    infinity_mass = TAIL_MASS_TRUNCATION - math.expm1(count * math.log1p(-dense._infinity_mass))
    composed = pld_pmf.DensePLDPmf(dense._discretization, lower_loss, values, infinity_mass, dense._pessimistic_estimate)
    return composed, error + TAIL_MASS_TRUNCATION, 0.0


def compose_pmfs(first: Any, second: Any) -> tuple[Any, float, float]:
    """Composition of two dp-accounting pmfs: ``(pmf, L1 error bound, relative error)`` (no truncation)."""
    from dp_accounting.pld import pld_pmf

    infinity_mass = first._infinity_mass + second._infinity_mass - first._infinity_mass * second._infinity_mass
    infinity_mass = min(1.0, infinity_mass * (1.0 + 4 * _UNIT_ROUNDOFF))
    relative = (min(first.size, second.size) + 2) * _UNIT_ROUNDOFF
    sparse = isinstance(first, pld_pmf.SparsePLDPmf) and isinstance(second, pld_pmf.SparsePLDPmf)
    if sparse and first.size * second.size <= _MAX_SPARSE_SIZE:
        composed = first.compose(second)  # dp-accounting's direct double loop
        return pld_pmf.SparsePLDPmf(composed._loss_probs, first._discretization, infinity_mass, True), 0.0, relative
    a, b = (pmf if isinstance(pmf, pld_pmf.DensePLDPmf) else pmf.to_dense_pmf() for pmf in (first, second))
    values, error = convolve_pmfs(np.maximum(a._probs, 0.0), np.maximum(b._probs, 0.0), allowed_error=math.inf)
    composed = pld_pmf.DensePLDPmf(a._discretization, a._lower_loss + b._lower_loss, values, infinity_mass, True)
    return composed, error, relative if error == 0.0 else 0.0


def _fft_power(probs: np.ndarray, count: int, low: int, length: int) -> tuple[np.ndarray, float]:
    """Entries ``low .. low + length - 1`` of ``probs`` convolved ``count`` times, and the L1 error bound."""
    from scipy import fft

    size = fft.next_fast_len(max(length, probs.size), real=True)
    spectrum = fft.rfft(probs, size)
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
        powered = np.exp(count * np.log(spectrum))
    powered[spectrum == 0] = 0.0
    values = np.roll(fft.irfft(powered, size), -low)[:length]
    np.maximum(values, 0.0, out=values)
    return values, power_error_bound(spectrum, powered, count, size, length, float(probs.sum()))


def power_error_bound(
    spectrum: np.ndarray, powered: np.ndarray, count: int, size: int, length: int, norm1: float
) -> float:
    """The module docstring's L1 bound for ``irfft(powered, size)`` on ``length`` entries (without the window's ``T``)."""
    factor = rho(size)
    beta = factor * norm1
    modulus = np.abs(spectrum)
    largest = np.maximum(modulus, np.minimum(norm1, modulus + beta))
    with np.errstate(divide="ignore", under="ignore", over="ignore", invalid="ignore"):
        propagated = count * beta * np.power(largest, count - 1)
        log_modulus = np.where(modulus > 0, np.abs(np.log(modulus)), 0.0)
        relative = (4.0 * count * (log_modulus + math.pi) + 8.0) * _UNIT_ROUNDOFF
        power_rounding = np.where(relative < 0.5, relative / (1.0 - relative), math.inf) * np.abs(powered)
    spectral = propagated + power_rounding
    # Half spectrum to full: every entry but the first (and the last for even sizes) appears twice.
    weights = np.full(spectral.size, 2.0)
    weights[0] = 1.0
    if size % 2 == 0:
        weights[-1] = 1.0
    l1_full = float(np.dot(weights, spectral))
    l2_full = math.sqrt(float(np.dot(weights, spectral * spectral)))
    from_spectrum = min(length * l1_full / size, math.sqrt(length / size) * l2_full)
    inverse_rounding = length * factor * float(np.dot(weights, np.abs(powered))) / size
    total = (from_spectrum + inverse_rounding) * _BOUND_SLACK
    return total if math.isfinite(total) else math.inf


def chernoff_window(probs: np.ndarray, count: int, tail_mass: float) -> tuple[int, int]:
    """Indices ``[low, high]`` of the ``count``-fold self-convolution of ``probs`` outside which
    at most ``tail_mass`` lies (Chernoff bound ``P(S >= a) <= E[e^{tS}] e^{-ta}`` on each side,
    minimised over a grid of orders that includes dp-accounting's, so the window is never wider)."""
    from scipy import special

    last = probs.size - 1
    if last == 0:
        return 0, 0
    coarse = np.arange(1, 21) / probs.size
    fine = np.geomspace(1e-3 / (probs.size * math.sqrt(count)), 20.0 / probs.size, 400)
    positive = np.unique(np.concatenate([coarse, fine]))
    indices = np.arange(probs.size, dtype=float)
    log_two_over_tail = math.log(2.0 / tail_mass)
    high, low = last * count, 0
    for order in positive:
        for signed in (order, -order):
            log_mgf = float(special.logsumexp(indices * signed, b=probs))
            bound = (count * log_mgf + log_two_over_tail) / signed
            if not math.isfinite(bound):
                continue
            slack = 1.0 + abs(bound) * 1e-12  # the bound's own rounding, covered by a widened window
            if signed > 0:
                high = min(high, math.ceil(bound + slack))
            else:
                low = max(low, math.floor(bound - slack))
    return low, max(high, low)
