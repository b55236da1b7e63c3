"""Composition of discretised privacy-loss pmfs with a stated bound on the floating-point error.

A composed PLD is a convolution power of the single event's pmf. dp-accounting evaluates it by an
FFT (``irfft(rfft(p) ** k)``) whose round-off is an *absolute* error spread over every entry, the
tiny tail entries that decide a small delta included: left unbounded it made the accountant report
an epsilon below the exact one (issues 31 and 32). Here every composition returns, with the pmf,
a stated upper bound ``E`` (a first-order round-off analysis, below) on the L1 distance between
the computed entries and the exact convolution of its inputs. Since
``delta(epsilon) = inf_mass + sum_l p_l (1 - e^(epsilon - l))_+`` weighs every entry by a number
in ``[0, 1]``, the exact delta is at most the computed one plus ``E``
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
   Composing two different pmfs multiplies two transforms instead: ``|X^ Y^ - X Y| <= |X^ - X| |Y^| +
   |X| |Y^ - Y|`` plus the product's rounding, then the same inverse step (`product_error_bound`).
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

from privsum._convolution import _FFT_CONSTANT, _UNIT_ROUNDOFF, fft_error_bound
from privsum._convolution import DIRECT_WORK_LIMIT as _DIRECT_CONVOLUTION_WORK

__all__ = ["TAIL_MASS_TRUNCATION", "compose_pmfs", "self_compose_pmf"]

#: Tail mass a self-composition may leave outside its window (counted as infinite loss).
TAIL_MASS_TRUNCATION = 1e-15
# Sparse pmfs whose composition stays this small are composed directly (dp-accounting's sparse path).
_MAX_SPARSE_SIZE = 1000
# Pmfs whose compositions keep at most this many atoms are composed directly (`_direct_power`).
_MAX_DIRECT_ATOMS = 2000
#: Entries lighter than this fraction of a pmf's mass do not decide its lattice (`_on_lattice`).
MINOR_MASS = 1e-9
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
        infinity_rounding = 8 * (count + 1) * _UNIT_ROUNDOFF * composed._infinity_mass
        return composed, infinity_rounding, count * (pmf.size + 2) * _UNIT_ROUNDOFF
    dense = pmf if isinstance(pmf, pld_pmf.DensePLDPmf) else pmf.to_dense_pmf()
    probs = np.maximum(np.asarray(dense._probs, dtype=float), 0.0)
    probs, offset, step = _on_lattice(probs)
    direct = _direct_power(probs, count)
    if direct is not None:  # few atoms: exact sums of non-negative products, relative error only
        indices, masses = direct
        lower_loss = (dense._lower_loss + offset) * count + int(indices[0]) * step
        values = np.zeros(int(indices[-1] - indices[0]) * step + 1)
        values[(indices - indices[0]) * step] = masses
        infinity_mass = min(1.0, -math.expm1(count * math.log1p(-dense._infinity_mass)) * (1.0 + 16 * _UNIT_ROUNDOFF))
        composed = pld_pmf.DensePLDPmf(dense._discretization, lower_loss, values, infinity_mass, dense._pessimistic_estimate)
        return composed, 0.0, 2.0 * count * (_MAX_DIRECT_ATOMS + 2) * _UNIT_ROUNDOFF
    low, high = chernoff_window(probs, count, TAIL_MASS_TRUNCATION)
    length = high - low + 1
    lower_loss = (dense._lower_loss + offset) * count + low * step
    if length * step > max_entries or not abs(lower_loss) + length * step < 2**62:  # int64 loss indices in dp-accounting
        raise OverflowError(length)
    values, error = _fft_power(probs, count, low, length)
    if step > 1:  # back onto the discretisation grid: every step-th loss
        spread = np.zeros((length - 1) * step + 1)
        spread[::step] = values
        values = spread
    infinity_mass = TAIL_MASS_TRUNCATION - math.expm1(count * math.log1p(-dense._infinity_mass))
    infinity_mass = min(1.0, infinity_mass * (1.0 + 16 * _UNIT_ROUNDOFF))  # rounded up: more infinite loss is pessimistic
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
    values, error, relative = convolve_certified(np.maximum(a._probs, 0.0), np.maximum(b._probs, 0.0))
    composed = pld_pmf.DensePLDPmf(a._discretization, a._lower_loss + b._lower_loss, values, infinity_mass, True)
    return composed, error, relative


def _direct_power(probs: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The ``count``-fold convolution of a pmf with few atoms by repeated squaring of its atoms, or ``None``.

    Gives up (``None``) as soon as an intermediate result has more than `_MAX_DIRECT_ATOMS` atoms.
    Each product sums at most that many non-negative terms per atom, so every entry's relative
    error stays below ``2 count (_MAX_DIRECT_ATOMS + 2) u``.
    """
    support = np.flatnonzero(probs)
    if support.size == 0:
        return None
    if (probs.size - 1) * count + 1 <= _MAX_DIRECT_ATOMS:  # short: dense repeated squaring by direct convolution
        dense = _dense_power(probs, count)
        return np.arange(dense.size, dtype=np.int64), dense
    if support.size > _MAX_DIRECT_ATOMS:
        return None
    base = (support.astype(np.int64), probs[support])
    result: tuple[np.ndarray, np.ndarray] | None = None
    remaining = count
    while remaining:
        if remaining & 1:
            result = base if result is None else _atom_product(result, base)
            if result is None:
                return None
        remaining >>= 1
        if remaining:
            base = _atom_product(base, base)
            if base is None:
                return None
    return result


def _dense_power(probs: np.ndarray, count: int) -> np.ndarray:
    """``count``-fold direct convolution of a short pmf by repeated squaring."""
    result, base, remaining = np.array([1.0]), probs, count
    while remaining:
        if remaining & 1:
            result = np.convolve(result, base)
        remaining >>= 1
        if remaining:
            base = np.convolve(base, base)
    return result


def _atom_product(
    first: tuple[np.ndarray, np.ndarray], second: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray] | None:
    """Convolution of two atom lists (indices, masses), or ``None`` past `_MAX_DIRECT_ATOMS` atoms."""
    sums = np.add.outer(first[0], second[0]).ravel()
    atoms, inverse = np.unique(sums, return_inverse=True)
    if atoms.size > _MAX_DIRECT_ATOMS:
        return None
    return atoms, np.bincount(inverse.ravel(), weights=np.outer(first[1], second[1]).ravel(), minlength=atoms.size)


def _on_lattice(probs: np.ndarray) -> tuple[np.ndarray, int, int]:
    """``probs`` on the lattice its mass lives on: ``(compressed, first index, step)``.

    The step is the greatest common divisor of the gaps between the entries carrying more than
    `MINOR_MASS` of the total; lighter entries off that lattice (a loss split a hair past a grid
    point by the rounding of its logarithm) are moved **up** to the next lattice point, which only
    raises delta at every epsilon, also after composition (the argument of
    `privsum.accounting.pld._trim_extreme_losses`). A pmf on every ``d``-th loss (randomized
    response, a guarantee's worst pair) then composes on that lattice: exactly, and with a spectrum
    that is not periodic, so far fewer frequencies survive the power (a smaller error bound).
    """
    support = np.flatnonzero(probs)
    if support.size < 2:
        return (probs[support[0] : support[0] + 1], int(support[0]), 1) if support.size else (probs, 0, 1)
    major = support[probs[support] > MINOR_MASS * float(probs.sum())]
    step = int(np.gcd.reduce(np.diff(major))) if major.size >= 2 else 0
    if step <= 1:
        step = int(np.gcd.reduce(np.diff(support)))
        return probs[support[0] :: step].copy(), int(support[0]), step
    first = int(major[0])
    positions = -((first - support) // step)  # ceil((i - first) / step): the lattice point at or above i
    lowest = int(positions.min())
    compressed = np.bincount(positions - lowest, weights=probs[support])
    return compressed, first + lowest * step, step


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
    beta = rho(size) * norm1
    modulus = np.abs(spectrum)
    largest = np.maximum(modulus, np.minimum(norm1, modulus + beta))
    with np.errstate(divide="ignore", under="ignore", over="ignore", invalid="ignore"):
        propagated = count * beta * np.power(largest, count - 1)
        log_modulus = np.where(modulus > 0, np.abs(np.log(modulus)), 0.0)
        relative = (4.0 * count * (log_modulus + math.pi) + 8.0) * _UNIT_ROUNDOFF
        power_rounding = np.where(relative < 0.5, relative / (1.0 - relative), math.inf) * np.abs(powered)
    return _output_error(propagated + power_rounding, np.abs(powered), size, length)


def product_error_bound(first: np.ndarray, second: np.ndarray, size: int, norms: tuple[float, float]) -> float:
    """L1 bound for ``irfft(first * second, size)`` (all ``size`` entries), ``first`` and ``second`` the computed
    ``rfft`` of pmfs with L1 norms ``norms``: steps 1 and 3 of the module docstring, with
    ``|X^Y^ - XY| <= |X^ - X| |Y^| + |X| |Y^ - Y|`` and the product's own rounding (``3 u |X^ Y^|``)."""
    beta_first, beta_second = rho(size) * norms[0], rho(size) * norms[1]
    modulus_first, modulus_second = np.abs(first), np.abs(second)
    exact_first = np.minimum(norms[0], modulus_first + beta_first)
    product = modulus_first * modulus_second
    spectral = beta_first * modulus_second + exact_first * beta_second + 3.0 * _UNIT_ROUNDOFF * product
    return _output_error(spectral, product, size, size)


def _output_error(spectral: np.ndarray, computed: np.ndarray, size: int, length: int) -> float:
    """Step 3: an error ``spectral`` in a half spectrum, and the inverse's rounding of ``computed``, on ``length`` outputs."""
    weights = np.full(spectral.size, 2.0)  # half spectrum to full: all but the first (and an even size's last) twice
    weights[0] = 1.0
    if size % 2 == 0:
        weights[-1] = 1.0
    l1_full = float(np.dot(weights, spectral))
    l2_full = math.sqrt(float(np.dot(weights, spectral * spectral)))
    from_spectrum = min(length * l1_full / size, math.sqrt(length / size) * l2_full)
    inverse_rounding = length * rho(size) * float(np.dot(weights, computed)) / size
    total = (from_spectrum + inverse_rounding) * _BOUND_SLACK
    return total if math.isfinite(total) else math.inf


def convolve_certified(first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Full convolution of two non-negative arrays: ``(values, L1 error bound, relative error)``.

    Direct (relative error ``n u`` per entry for sums of ``n`` products) when short, otherwise by FFT
    with the smaller of `product_error_bound` and `privsum._convolution.fft_error_bound` (normwise;
    it assumes a transform length at least scipy's next fast length used here, and grows with the
    length, so it covers this one); negative outputs are clipped to zero.
    """
    from scipy import fft

    length = first.size + second.size - 1
    if first.size * second.size <= _DIRECT_CONVOLUTION_WORK or min(first.size, second.size) <= 64:
        return np.convolve(first, second), 0.0, (min(first.size, second.size) + 2) * _UNIT_ROUNDOFF
    size = fft.next_fast_len(length, real=True)
    first_spectrum, second_spectrum = fft.rfft(first, size), fft.rfft(second, size)
    values = fft.irfft(first_spectrum * second_spectrum, size)[:length]
    np.maximum(values, 0.0, out=values)
    bound = product_error_bound(first_spectrum, second_spectrum, size, (float(first.sum()), float(second.sum())))
    return values, min(bound, fft_error_bound(first, second)), 0.0  # two valid bounds: the normwise one of _convolution


def chernoff_window(probs: np.ndarray, count: int, tail_mass: float) -> tuple[int, int]:
    """Indices ``[low, high]`` of the ``count``-fold self-convolution of ``probs`` outside which
    at most ``tail_mass`` lies (Chernoff bound ``P(S >= a) <= E[e^{tS}] e^{-ta}`` on each side,
    minimised over a grid of orders that includes dp-accounting's, so the window is never wider)."""
    last = probs.size - 1
    if last == 0:
        return 0, 0
    coarse = np.arange(1, 21) / probs.size
    fine = np.geomspace(1e-3 / (probs.size * math.sqrt(count)), 20.0 / probs.size, 100)
    positive = np.unique(np.concatenate([coarse, fine]))
    orders = np.concatenate([positive, -positive])
    bounds = (count * _log_mgf(probs, orders) + math.log(2.0 / tail_mass)) / orders
    finite = np.isfinite(bounds)
    slack = 1.0 + np.abs(bounds) * 1e-12  # the bounds' own rounding, covered by a widened window
    above, below = finite & (orders > 0), finite & (orders < 0)
    high = min(last * count, math.ceil(float(np.min(bounds[above] + slack[above], initial=math.inf))))
    low = max(0, math.floor(float(np.max(bounds[below] - slack[below], initial=-math.inf))))
    return low, max(high, low)


def _log_mgf(probs: np.ndarray, orders: np.ndarray) -> np.ndarray:
    """``log sum_i probs_i e^(t i)`` for every order ``t`` (a log-sum-exp per order, in row blocks)."""
    support = np.flatnonzero(probs > 0)
    log_probs = np.log(probs[support])
    indices = support.astype(float)
    result = np.empty(orders.size)
    rows = max(1, 4_000_000 // max(support.size, 1))
    for start in range(0, orders.size, rows):
        exponents = np.outer(orders[start : start + rows], indices) + log_probs
        peak = exponents.max(axis=1)
        result[start : start + rows] = peak + np.log(np.exp(exponents - peak[:, None]).sum(axis=1))
    return result
