"""The count view of shuffled randomized response for one neighbouring pair, evaluated exactly.

The adversary sees the count ``C`` of ones among ``n`` reports and knows the other users' bits,
``k`` of them ones. The others' count is ``A = U + (k - D)`` with ``U ~ Bin(n-1-k, q)`` and
``D ~ Bin(k, q)``; the target user adds ``Bern(q)`` (bit 0: the pair's ``P``) or ``Bern(1-q)``
(bit 1: ``Q``). `CountPair` holds ``A`` as its two factors and answers, without forming ``A``:

* ``delta_at(epsilon)``: ``max(HS(P||Q), HS(Q||P))`` at one epsilon;
* ``epsilon(delta)``: its exact inverse (the smallest epsilon whose delta is at most ``delta``);

and, from ``A`` itself (one convolution), ``deltas(epsilons)`` on a grid and the `PrivacyProfile`.

Why no convolution is needed for one epsilon. ``A`` is a sum of independent Bernoulli variables,
so its pmf is log-concave (also after the windows below, which cut each factor to an interval):
``A(c-1)/A(c)`` is non-decreasing, hence the privacy loss ``log P(c)/Q(c)`` is non-increasing in
``c`` (``q < 1/2``), the points with loss above ``epsilon`` are a prefix ``c <= c*`` and those below
``-epsilon`` a suffix. Writing ``F`` for the distribution function of ``A``,
``a = 1 - q - q e^epsilon`` and ``b = e^epsilon - 1``, the prefix sum of ``P - e^epsilon Q`` is
``a A(c) - b F(c-1)`` and the suffix sum of ``Q - e^epsilon P`` from ``c`` is ``a A(c-1) - b S(c)``
(``S`` the survival function). So one epsilon costs a search for ``c*`` and a few values of ``A``
and ``F``, each a dot product over the shorter factor: ``O(w log w)`` operations instead of the
``O(w^2)`` of the convolution (``w`` the factors' width).

Windows and the cut mass. Each factor is kept on a window outside which Bernstein's inequality
leaves at most ``tail_mass`` per side. The pair of the truncated factors is a sub-probability
pair dominated pointwise by the true one, and ``HS(P||Q) <= HS(P_t||Q_t) + mass(P - P_t)``, so
the cut mass, counted as infinite loss in both directions, keeps every delta an upper bound.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any

import numpy as np

from privsum._binomial import binomial_pmf
from privsum._convolution import convolve_pmfs, fft_error_bound
from privsum.accounting.guarantee import Neighbouring
from privsum.accounting.profile import PrivacyProfile

__all__ = ["CountPair", "binomial_window", "count_pair", "largest_crowd", "window_points"]

_LARGEST_EXPONENT = 709.0  # math.exp overflows a little above 709.78

_SMALLEST_TAIL = math.ulp(0.0)  # 5e-324, the smallest positive float
# Direct multiply-adds a pair spends on its coins' convolution (about 0.05 s); where more would be
# needed (no FFT within the error allowed) the pair leaves the coins out.
_COIN_DIRECT_WORK = 2 * 10**8
# Points per round of the coarse-to-fine searches over the count.
_SEARCH_POINTS = 65
# Pairs whose full convolution costs at most this many multiply-adds are convolved directly and
# evaluated on the whole support (cheaper than the searches' dot products up to about this size).
_FULL_PAIR_WORK = 2_000_000
# Short factors up to this width are gathered into one matrix per search round; longer ones are
# read in place, one dot product per count (no copies of long windows).
_GATHER_WIDTH = 8192
# Memory held by the caches of windows and pairs (bytes).
_WINDOW_CACHE_BYTES = 64 << 20
_PAIR_CACHE_BYTES = 128 << 20


class _SizedCache:
    """A least-recently-used cache bounded by the total size of its values (in bytes)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._items: OrderedDict[Any, tuple[Any, int]] = OrderedDict()
        self._size = 0

    def get(self, key: Any) -> Any:
        item = self._items.get(key)
        if item is None:
            return None
        self._items.move_to_end(key)
        return item[0]

    def put(self, key: Any, value: Any, size: int) -> None:
        if key in self._items or size > self.capacity:
            return
        self._items[key] = (value, size)
        self._size += size
        while self._size > self.capacity:
            _, (_, dropped) = self._items.popitem(last=False)
            self._size -= dropped

    def clear(self) -> None:
        self._items.clear()
        self._size = 0


_WINDOWS = _SizedCache(_WINDOW_CACHE_BYTES)
_PAIRS = _SizedCache(_PAIR_CACHE_BYTES)


def clear_caches() -> None:
    """Forget every cached window and pair (for benchmarks timing a first calibration)."""
    _WINDOWS.clear()
    _PAIRS.clear()


def binomial_window(trials: int, flip: float, tail_mass: float) -> tuple[np.ndarray, int, float]:
    """pmf of ``Bin(trials, flip)`` on ``low..high`` holding all but a provably tiny mass.

    The window is ``mean -/+ s`` with ``s`` from Bernstein's inequality,
    ``P(|S - mean| >= s) <= exp(-s^2 / (2 (var + s/3)))`` per side (summands in ``[0, 1]``), so each
    cut side holds at most ``tail_mass``. Returns the pmf (read-only, cached), ``low`` and a bound
    on the cut mass.
    """
    key = (trials, flip, tail_mass)
    cached = _WINDOWS.get(key)
    if cached is not None:
        return cached
    if trials == 0:
        pmf, low, cut = np.ones(1), 0, 0.0
    else:
        tail_mass = max(tail_mass, _SMALLEST_TAIL)  # a larger cut is still bounded (and reported): no log(1/0)
        low, high = _window_bounds(trials, flip, tail_mass)
        cut = (tail_mass if low > 0 else 0.0) + (tail_mass if high < trials else 0.0)
        pmf = binomial_pmf(low, high, trials, flip)
    pmf.setflags(write=False)
    _WINDOWS.put(key, (pmf, low, cut), pmf.nbytes)
    return pmf, low, cut


def _coins_affordable(first: np.ndarray, second: np.ndarray, allowed_error: float) -> bool:
    """Whether convolving the two shorter factors is cheap: short enough to be direct, or an FFT within ``allowed_error``."""
    work = first.size * second.size
    return work <= _COIN_DIRECT_WORK or fft_error_bound(first, second) <= allowed_error


def _window_bounds(trials: int, flip: float, tail_mass: float) -> tuple[int, int]:
    """``low, high`` of `binomial_window`: ``mean -/+ s``, ``s`` from Bernstein's inequality at ``tail_mass``."""
    log_term = -math.log(tail_mass)
    mean = trials * flip
    radius = log_term / 3.0 + math.sqrt((log_term / 3.0) ** 2 + 2.0 * mean * (1.0 - flip) * log_term)
    low = max(0, math.ceil(mean - radius - 1e-9))  # values below low are < mean - radius
    high = min(trials, math.floor(mean + radius + 1e-9))  # values above high are > mean + radius
    return low, high


def window_points(trials: int, flip: float, tail_mass: float) -> int:
    """Points of `binomial_window` for these arguments, computed without building it."""
    if trials == 0:
        return 1
    low, high = _window_bounds(trials, flip, max(tail_mass, _SMALLEST_TAIL))
    return high - low + 1


def largest_crowd(flip: float, tail_mass: float, points: int) -> int:
    """The largest ``n`` whose others' window, `binomial_window` of ``n - 1`` trials, has at most ``points`` points.

    Every window a worst-case computation for ``n`` users builds (others holding 0, others
    holding 1, fair coins of the dropped users) is at most that wide, for ``flip < 1/2``.
    """
    low, high = 1, 2**63 - 1
    if window_points(high - 1, flip, tail_mass) <= points:
        return high
    while low < high:  # window_points grows with the trials
        middle = (low + high + 1) // 2
        if window_points(middle - 1, flip, tail_mass) <= points:
            low = middle
        else:
            high = middle - 1
    return low


def count_pair(zeros: int, ones: int, flip: float, tail_mass: float, fft_delta_error: float = 0.0, coins: int = 0) -> CountPair:
    """The (cached) `CountPair` of ``zeros`` zeros, ``ones`` ones and ``coins`` fair coins among the others."""
    key = (zeros, ones, flip, tail_mass, fft_delta_error, coins)
    pair = _PAIRS.get(key)
    if pair is None:
        pair = CountPair(zeros, ones, flip, tail_mass, fft_delta_error, coins)
        _PAIRS.put(key, pair, pair.nbytes)
    return pair


class CountPair:
    """Shuffled RR's count view for ``zeros`` zeros and ``ones`` ones among the others (and fair coins).

    Args:
        zeros: other users holding 0.
        ones: other users holding 1.
        flip: the flip probability ``q`` in ``(0, 1/2)``.
        tail_mass: mass each binomial factor may drop per side (counted as infinite loss).
        fft_delta_error: the largest error, in delta, that a convolution may take from an FFT (its
            proved bound, `privsum._convolution.fft_error_bound`, is added to the cut mass); ``0``
            keeps every convolution direct.
        coins: further others whose reports are fair coins, ``Bern(1/2)`` (the noise a block
            bound keeps from the users it drops; see `privsum.bitsum._rr_worst_case`).

    Privacy:
        Replace-one, one instance: ``P`` is the count with the target's bit 0, ``Q`` with bit 1;
        every delta is an upper bound (the cut mass counts as infinite loss both ways).
    """

    def __init__(
        self, zeros: int, ones: int, flip: float, tail_mass: float, fft_delta_error: float = 0.0, coins: int = 0
    ) -> None:
        self.flip = flip
        self._fft_delta_error = fft_delta_error
        up, up_low, up_cut = binomial_window(zeros, flip, tail_mass)
        down, down_low, down_cut = binomial_window(ones, flip, tail_mass)
        # A = U + E (+ C) with E = ones - D: E's pmf is D's reversed, from ones - (last value of D)
        factors = [(up, up_low), (down[::-1], ones - (down_low + down.size - 1))]
        cut = up_cut + down_cut
        if coins:
            fair, fair_low, fair_cut = binomial_window(coins, 0.5, tail_mass)
            factors.append((fair, fair_low))
            factors.sort(key=lambda factor: factor[0].size)
            (first, first_low), (second, second_low) = factors[0], factors[1]
            if _coins_affordable(first, second, fft_delta_error * flip):
                merged, error = convolve_pmfs(first, second, allowed_error=fft_delta_error * flip)
                factors = [(merged, first_low + second_low), factors[2]]
                cut += fair_cut + error / flip
            else:  # without the coins' noise the pair dominates the one with it (data processing)
                factors = [factor for factor in factors if factor[0] is not fair]
        self.cut = min(1.0, cut)
        (long, long_low), (short, short_low) = sorted(factors, key=lambda factor: -factor[0].size)
        self._long, self._short = long, short
        self.low = long_low + short_low  # first value of A's support
        self.width = long.size + short.size - 1  # A's support: low .. low + width - 1
        self.total = float(long.sum()) * float(short.sum())
        self._full: tuple[np.ndarray, np.ndarray, float] | None = None
        self._profile: PrivacyProfile | None = None
        self._tables: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._losses_monotone: bool | None = None
        work = long.size * short.size
        if work <= _FULL_PAIR_WORK or (fft_delta_error > 0 and fft_error_bound(long, short) <= fft_delta_error * flip):
            self.full()  # A itself: one direct convolution, or an FFT within its error budget
            self.cut = self._full[2]
        else:  # dot products over the short factor with sliding windows of the long one's tables
            pad = short.size + 1  # every count from low - 2 to low + width has a whole window
            long_total = float(long.sum())
            tables = (
                np.concatenate([np.zeros(pad), long, np.zeros(pad)]),
                np.concatenate([np.zeros(pad), np.cumsum(long), np.full(pad, long_total)]),
                np.concatenate([np.full(pad, long_total), np.cumsum(long[::-1])[::-1], np.zeros(pad)]),
            )
            self._tables = tuple(np.lib.stride_tricks.sliding_window_view(table, short.size) for table in tables)
            self._short_reversed = short[::-1].copy()
        # probes per search round: fewer when each costs a long dot product (rounds grow only as a log)
        self._probes = _SEARCH_POINTS if short.size <= 512 else 9
        self.nbytes = 4 * (long.nbytes + short.nbytes)

    # --- the others' pmf A, distribution function F and survival function S -------------------

    def _values(self, counts: np.ndarray, table: int) -> np.ndarray:
        """``sum_j short[j] T[c - j]`` for each count ``c``, ``T`` the long factor's pmf, cdf or sf (0, 1, 2)."""
        windows = self._tables[table]
        starts = np.asarray(counts, dtype=np.int64) - (self.low - 2)  # counts from low - 2 on (the tables' padding)
        if self._short.size <= _GATHER_WIDTH:  # one matrix-vector product over copied windows
            return windows[starts] @ self._short_reversed
        # einsum, not BLAS: a threaded BLAS dot of this length stalls when the cores are busy
        values = [np.einsum("i,i->", windows[start], self._short_reversed) for start in starts.ravel()]
        return np.array(values).reshape(starts.shape)

    def others_pmf(self, counts: np.ndarray) -> np.ndarray:
        """``A(c)`` (of the truncated factors) at integer counts ``c`` (0 outside the support)."""
        counts = np.asarray(counts, dtype=np.int64)
        inside = (counts >= self.low) & (counts < self.low + self.width)
        return np.where(inside, self._values(counts, 0), 0.0)

    def _pmf_and_previous(self, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``A(c)`` and ``A(c - 1)`` in one evaluation."""
        values = self.others_pmf(np.concatenate([counts, counts - 1]))
        return values[: counts.size], values[counts.size :]

    def others_cdf(self, counts: np.ndarray) -> np.ndarray:
        """``F(c) = sum_{c' <= c} A(c')`` at integer counts ``c``."""
        counts = np.asarray(counts, dtype=np.int64)
        values = np.where(counts < self.low, 0.0, self._values(counts, 1))
        return np.where(counts >= self.low + self.width - 1, self.total, values)

    def others_sf(self, counts: np.ndarray) -> np.ndarray:
        """``S(c) = sum_{c' >= c} A(c')`` at integer counts ``c`` (summed from the top: exact in the upper tail)."""
        counts = np.asarray(counts, dtype=np.int64)
        values = np.where(counts <= self.low, self.total, self._values(counts, 2))
        return np.where(counts >= self.low + self.width, 0.0, values)

    # --- one epsilon ---------------------------------------------------------------------------

    def delta_at(self, epsilon: float) -> float:
        """``max(HS_e(P||Q), HS_e(Q||P))`` at ``e = exp(epsilon)``, plus the cut mass."""
        if self._tables is None:
            p, q, cut = self.full()
            scale = math.exp(epsilon)
            forward = float(np.maximum(p - scale * q, 0.0).sum())
            backward = float(np.maximum(q - scale * p, 0.0).sum())
            return max(forward, backward) + cut
        return max(self._forward_delta(epsilon), self._backward_delta(epsilon)) + self.cut

    def _coefficients(self, epsilon: float) -> tuple[float, float]:
        scale = math.exp(epsilon)
        return 1.0 - self.flip - self.flip * scale, scale - 1.0

    def _forward_delta(self, epsilon: float) -> float:
        """``sum_c max(0, P(c) - e Q(c))``: the largest prefix sum ``a A(c) - b F(c-1)``."""
        a, b = self._coefficients(epsilon)
        if a <= 0.0:  # every likelihood ratio P/Q is at most (1-q)/q <= e
            return 0.0
        lo, hi = self.low, self.low + self.width  # P's support
        # the increment P(c) - e Q(c) = a A(c) - (a + b) A(c-1) is positive exactly on a prefix
        last = _last_true(lambda c: _rises(self._pmf_and_previous(c), a, a + b), lo, hi, self._probes)
        if last is None:
            return 0.0
        around = np.arange(max(lo, last - 2), min(hi, last + 2) + 1)  # float rounding at the crossing
        prefix = a * self.others_pmf(around) - b * self.others_cdf(around - 1)
        return max(0.0, float(prefix.max()))

    def _backward_delta(self, epsilon: float) -> float:
        """``sum_c max(0, Q(c) - e P(c))``: the largest suffix sum ``a A(c-1) - b S(c)``."""
        a, b = self._coefficients(epsilon)
        if a <= 0.0:
            return 0.0
        lo, hi = self.low, self.low + self.width
        # the increment Q(c) - e P(c) = a A(c-1) - (a + b) A(c) is positive exactly on a suffix
        first = _first_true(lambda c: _falls(self._pmf_and_previous(c), a, a + b), lo, hi, self._probes)
        if first is None:
            return 0.0
        around = np.arange(max(lo, first - 2), min(hi, first + 2) + 1)
        suffix = a * self.others_pmf(around - 1) - b * self.others_sf(around)
        return max(0.0, float(suffix.max()))

    def epsilon(self, delta: float) -> float:
        """The smallest ``epsilon >= 0`` with ``delta_at(epsilon) <= delta`` (``inf`` if none)."""
        if self._tables is None:
            p, q, cut = self.full()
            target = delta - cut
            if target < 0.0:
                return math.inf
            if not self._monotone():  # an FFT's rounding: the losses sorted (descending) first
                p, q = self._sorted_by_loss()
            epsilon = max(_epsilon_of_sorted(p, q, target), _epsilon_of_sorted(q[::-1], p[::-1], target))
        else:
            target = delta - self.cut
            if target < 0.0:
                return math.inf
            epsilon = max(self._direction_epsilon(target, forward=True), self._direction_epsilon(target, forward=False))
        nudge = 1e-13
        while self.delta_at(epsilon) > delta:  # float rounding of the closed form: never undershoot
            epsilon = math.nextafter(epsilon, math.inf) * (1.0 + nudge)
            nudge *= 2.0
            if not epsilon < _LARGEST_EXPONENT:  # e^epsilon would overflow: no finite epsilon is certified
                return math.inf
        return epsilon

    def _sorted_by_loss(self) -> tuple[np.ndarray, np.ndarray]:
        """``P`` and ``Q`` on the points carrying mass, ordered by decreasing loss ``log P/Q``."""
        p, q, _ = self.full()
        keep = np.flatnonzero((p > 0) | (q > 0))
        with np.errstate(divide="ignore"):
            losses = np.log(p[keep]) - np.log(q[keep])
        order = keep[np.argsort(-losses, kind="stable")]
        return p[order], q[order]

    def _monotone(self) -> bool:
        """Whether the whole support's losses are finite and non-increasing (true but for an FFT's rounding)."""
        if self._losses_monotone is None:
            p, q, _ = self.full()
            with np.errstate(divide="ignore", invalid="ignore"):
                losses = np.log(p) - np.log(q)
            self._losses_monotone = bool(np.all(np.isfinite(losses)) and np.all(np.diff(losses) <= 0.0))
        return self._losses_monotone

    def _masses(self, counts: np.ndarray, forward: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The upper and lower pmfs of a direction at ``counts`` and their masses beyond each count.

        Forward (``P`` over ``Q``; losses fall with the count): ``P(c)``, ``Q(c)`` and their sums
        over ``c' <= c``. Backward (``Q`` over ``P``): ``Q(c)``, ``P(c)`` and their sums over ``c' >= c``.
        """
        q = self.flip
        now, before = self._pmf_and_previous(counts)
        p_point, q_point = (1 - q) * now + q * before, q * now + (1 - q) * before
        if forward:
            cdf_now = self.others_cdf(counts)
            cdf_before = cdf_now - now
            return p_point, q_point, (1 - q) * cdf_now + q * cdf_before, q * cdf_now + (1 - q) * cdf_before
        sf_now = self.others_sf(counts)
        sf_before = sf_now + before
        return q_point, p_point, q * sf_now + (1 - q) * sf_before, (1 - q) * sf_now + q * sf_before

    def _direction_epsilon(self, target: float, *, forward: bool) -> float:
        """Smallest ``epsilon >= 0`` whose hockey-stick sum in one direction is at most ``target``.

        The counts with positive loss are a prefix ``lo..edge`` (forward) or a suffix
        ``edge..hi`` (backward). At ``epsilon`` equal to the loss ``L(c)`` of such a count, the sum
        is ``U(c) - e^L(c) W(c)`` with ``U``, ``W`` the upper and lower masses beyond ``c`` (counts
        with loss at least ``L(c)``), monotone in ``c``; a search finds the last breakpoint within
        the target, and between it and the next one the sum is ``U - e^epsilon W`` in closed form.
        """
        lo, hi = self.low, self.low + self.width

        def gains(counts: np.ndarray) -> np.ndarray:
            upper, lower, _, _ = self._masses(counts, forward)
            return upper > lower

        edge = _last_true(gains, lo, hi, self._probes) if forward else _first_true(gains, lo, hi, self._probes)
        if edge is None:  # no count has a positive loss in this direction
            return 0.0
        upper, lower, upper_beyond, lower_beyond = (float(v[0]) for v in self._masses(np.array([edge]), forward))
        if upper_beyond - lower_beyond <= target:  # within target at epsilon 0
            return 0.0

        def within(counts: np.ndarray) -> np.ndarray:
            upper, lower, upper_beyond, lower_beyond = self._masses(counts, forward)
            ratio = upper / np.where(lower > 0, lower, 1.0)
            return np.where(lower > 0, upper_beyond - ratio * lower_beyond, upper_beyond) <= target

        step = 1 if forward else -1
        last = _last_true(within, lo, edge, self._probes) if forward else _first_true(within, edge, hi, self._probes)
        if last is None:  # float rounding at the extreme count: its sum is (near) zero
            last = lo if forward else hi
        upper, lower, upper_beyond, lower_beyond = (float(v[0]) for v in self._masses(np.array([last]), forward))
        top = math.log(upper / lower) if upper > 0 and lower > 0 else math.inf
        bottom = 0.0
        if last != edge:
            next_upper, next_lower, _, _ = (float(v[0]) for v in self._masses(np.array([last + step]), forward))
            bottom = max(0.0, math.log(next_upper / next_lower)) if next_upper > 0 and next_lower > 0 else 0.0
        if lower_beyond <= 0.0:
            return bottom
        epsilon = math.log(max(upper_beyond - target, 1e-300) / lower_beyond)
        return min(max(epsilon, bottom), top)

    # --- the whole profile (one convolution) -------------------------------------------------

    def full(self) -> tuple[np.ndarray, np.ndarray, float]:
        """``P``, ``Q`` on the support ``low .. low + width`` and the cut mass (FFT error included)."""
        if self._full is None:
            others, error = convolve_pmfs(self._long, self._short, allowed_error=self._fft_delta_error * self.flip)
            p, q = np.zeros(others.size + 1), np.zeros(others.size + 1)
            p[:-1] = (1.0 - self.flip) * others
            p[1:] += self.flip * others
            q[:-1] = self.flip * others
            q[1:] += (1.0 - self.flip) * others
            self._full = (p, q, min(1.0, self.cut + error / self.flip))
        return self._full

    def profile(self) -> PrivacyProfile:
        """The exact profile of the truncated pair, its cut mass counted as infinite loss (built once)."""
        if self._profile is None:
            p, q, cut = self.full()
            self._profile = PrivacyProfile._trusted(p, q, neighbouring=Neighbouring.REPLACE_ONE, p_tail=cut, q_tail=cut)
        return self._profile

    def deltas(self, epsilons: np.ndarray) -> np.ndarray:
        """The profile at each epsilon (both directions, the cut included).

        The losses ``log P(c)/Q(c)`` do not increase with ``c`` (log-concavity), so the points
        above ``epsilon`` are a prefix and those below ``-epsilon`` a suffix: one search per
        epsilon in the losses and prefix sums give every value (the sorted-loss profile where
        float rounding breaks the order).
        """
        p, q, cut = self.full()
        if not self._monotone():
            return np.asarray(self.profile().delta(epsilons), dtype=float)
        losses = np.log(p) - np.log(q)
        scale = np.exp(epsilons)
        descending = -losses  # ascending
        above = np.searchsorted(descending, -epsilons, side="left")  # count of points with loss > epsilon
        prefix_p, prefix_q = np.concatenate([[0.0], np.cumsum(p)]), np.concatenate([[0.0], np.cumsum(q)])
        forward = prefix_p[above] - scale * prefix_q[above]
        below = np.searchsorted(descending, epsilons, side="right")  # points before the first loss < -epsilon
        suffix_p, suffix_q = np.concatenate([np.cumsum(p[::-1])[::-1], [0.0]]), np.concatenate([np.cumsum(q[::-1])[::-1], [0.0]])
        backward = suffix_q[below] - scale * suffix_p[below]
        return np.maximum(np.maximum(forward, backward), 0.0) + cut


def _last_true(predicate: Any, lo: int, hi: int, points: int = _SEARCH_POINTS) -> int | None:
    """The last integer of ``lo..hi`` where a monotone (true, then false) ``predicate`` holds, if any.

    ``predicate`` takes an integer array. Coarse to fine: ``points`` evaluations per round.
    """
    if not bool(predicate(np.array([lo]))[0]):
        return None
    while hi > lo:
        count = min(points, hi - lo + 1)
        probes = lo + (np.arange(count, dtype=np.int64) * (hi - lo)) // (count - 1)  # distinct, from lo to hi
        failing = np.flatnonzero(~predicate(probes))
        if failing.size == 0:
            return int(hi)
        stop = int(failing[0])  # first failing probe (monotone: all before it hold)
        lo, hi = int(probes[stop - 1]), int(probes[stop]) - 1
    return lo


def _first_true(predicate: Any, lo: int, hi: int, points: int = _SEARCH_POINTS) -> int | None:
    """The first integer of ``lo..hi`` where a monotone (false, then true) ``predicate`` holds, if any."""
    last_false = _last_true(lambda counts: ~np.asarray(predicate(counts), dtype=bool), lo, hi, points)
    if last_false is None:
        return lo
    return None if last_false >= hi else last_false + 1


def _epsilon_of_sorted(upper: np.ndarray, lower: np.ndarray, target: float) -> float:
    """Smallest ``epsilon >= 0`` with ``sum max(0, upper - e^epsilon lower) <= target``, losses non-increasing.

    ``log(upper / lower)`` must not increase along the arrays (a monotone likelihood ratio). The
    counts with positive loss are a prefix ``0..g``; at ``epsilon`` equal to the loss of count
    ``c`` the sum is ``U(c) - (upper(c) / lower(c)) W(c)`` with ``U``, ``W`` the prefix sums,
    non-decreasing in ``c``; between the last breakpoint within ``target`` and the next one the
    sum is ``U - e^epsilon W`` in closed form.
    """
    gain = np.flatnonzero(upper > lower)
    if gain.size == 0:
        return 0.0
    last = int(gain[-1])
    upper, lower = upper[: last + 1], lower[: last + 1]
    prefix_upper, prefix_lower = np.cumsum(upper), np.cumsum(lower)
    if prefix_upper[-1] - prefix_lower[-1] <= target:
        return 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = upper / lower
        at_own_loss = np.where(lower > 0, prefix_upper - ratio * prefix_lower, prefix_upper)
    above = np.flatnonzero(at_own_loss > target)
    j = int(above[0]) - 1 if above.size else last
    if j < 0:  # float rounding at the first count: its own sum is zero
        j = 0
    top = math.log(ratio[j]) if lower[j] > 0 and upper[j] > 0 else math.inf
    bottom = max(0.0, math.log(ratio[j + 1])) if j < last and lower[j + 1] > 0 and upper[j + 1] > 0 else 0.0
    if prefix_lower[j] <= 0.0:
        return bottom
    epsilon = math.log(max(prefix_upper[j] - target, 1e-300) / prefix_lower[j])
    return min(max(epsilon, bottom), top)


def _rises(values: tuple[np.ndarray, np.ndarray], now: float, before: float) -> np.ndarray:
    """``now A(c) > before A(c-1)`` for ``values = (A(c), A(c-1))``."""
    return now * values[0] > before * values[1]


def _falls(values: tuple[np.ndarray, np.ndarray], before: float, now: float) -> np.ndarray:
    """``before A(c-1) > now A(c)`` for ``values = (A(c), A(c-1))``."""
    return before * values[1] > now * values[0]
