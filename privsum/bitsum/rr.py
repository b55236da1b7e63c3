"""Randomized response bit sums: shuffled (CSUZZ19, exact calibration) and the local baseline.

References:
    Wagner, "Learning from End User Data with Shuffled Differential Privacy over Kernel
    Densities", ICLR 2025.
"""

from __future__ import annotations

import functools
import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from privsum._binomial import binomial_pmf
from privsum._convolution import convolve_pmfs
from privsum._random import RNGLike, as_generator
from privsum._validation import check_choice, check_delta, check_epsilon, check_integer, check_real, invalid
from privsum.accounting.calibration import calibrate
from privsum.accounting.envelope import symmetric_pair_from_samples
from privsum.accounting.events import GuaranteeEvent, PrivacyEvent, ProfileEvent
from privsum.accounting.guarantee import Neighbouring, PrivacyGuarantee
from privsum.accounting.profile import PrivacyProfile, randomized_response_profile
from privsum.bitsum.base import BitSumProtocol, check_calibration, instance_ids
from privsum.exceptions import InvalidParameterError
from privsum.shuffle.histogram import MessageHistogram
from privsum.shuffle.messages import MessageBatch

__all__ = ["LocalRRBitSum", "RRBitSum", "rr_worst_case_delta_bound", "rr_worst_case_epsilon", "rr_worst_case_profile"]

_SMALLEST_FLIP = 1e-12
# Blocks of the counting faithful view: at most 255 users (so that per-block counts fit in uint8)
# and about 2^15 entries (256 KiB of float64 uniforms: the block stays in a core's L2 cache).
_MAX_BLOCK_ROWS = 255
_BLOCK_ENTRIES = 1 << 15
# A verified delta may exceed its target only by float rounding.
_RTOL = 1e-9
# Ways to compose RRBitSum: by the pair dominating its worst-case profile, or as a generic (epsilon, delta).
RR_COMPOSITIONS = ("profile", "guarantee")
# Small increases of q tried when the worst-case profile (1 % slack) misses the calibrated headline.
_HEADLINE_NUDGES = 30


class _FlippedReports(BitSumProtocol):
    """Shared mechanics: each user sends one 1-bit message, its bit XOR ``Bern(flip_probability)``."""

    n_users: int
    flip_probability: float

    @property
    def alphabet(self) -> tuple[int, ...]:
        return (0, 1)

    @property
    def expected_messages_per_user(self) -> float:
        return 1.0

    def randomize(self, x: Any, *, rng: RNGLike = None) -> MessageBatch:
        bits = self.check_bits(x)
        self.warn_if_fewer(bits.shape[0])
        return self._messages_of_bits(bits, as_generator(rng, type(self).__name__))

    def _messages_of_bits(self, bits: np.ndarray, generator: np.random.Generator) -> MessageBatch:
        flips = generator.random(bits.shape) < self.flip_probability
        return MessageBatch(instance_ids(*bits.shape), (bits ^ flips).ravel(), bits.shape[1])

    def _faithful_view_of_bits(self, bits: np.ndarray, generator: np.random.Generator) -> MessageHistogram:
        """Every user's report, its bit XOR ``Bern(q)``, counted per instance without listing the messages.

        Each flip is ``U < q`` for its own float64 uniform ``U``, exactly as in `_messages_of_bits`,
        and the uniforms are drawn in the same order (users in blocks, each block in C order), so
        for the same generator the histogram is the one of the listed messages. Memory: one block
        (at most 255 users, about ``2^15`` entries, so that it stays in cache).
        """
        n_seen, n_instances = bits.shape
        rows = max(1, min(_MAX_BLOCK_ROWS, _BLOCK_ENTRIES // n_instances))
        uniforms = np.empty((rows, n_instances))
        flips = np.empty((rows, n_instances), dtype=bool)
        reports = np.empty((rows, n_instances), dtype=np.uint8)
        one_byte = bits.dtype.itemsize == 1  # validated 0/1 bytes read as uint8 without a copy
        source = bits.view(np.uint8) if one_byte else bits
        reported = np.zeros(n_instances, dtype=np.int64)
        for start in range(0, n_seen, rows):
            size = min(rows, n_seen - start)
            block_flips, block_reports = flips[:size], reports[:size]
            generator.random(out=uniforms[:size])
            np.less(uniforms[:size], self.flip_probability, out=block_flips)
            block_bits = source[start : start + size]
            if not one_byte:  # wider integers: copied to bytes first (0/1, so exactly)
                np.copyto(block_reports, block_bits, casting="unsafe")
                block_bits = block_reports
            np.bitwise_xor(block_bits, block_flips.view(np.uint8), out=block_reports)
            reported += block_reports.sum(axis=0, dtype=np.uint8)  # at most 255 rows: no overflow
        return MessageHistogram(np.stack([n_seen - reported, reported], axis=1), self.alphabet)

    def sample_view(self, x: Any, *, rng: RNGLike = None) -> MessageHistogram:
        """Exact fast path: the count of reported ones is ``Bin(S, 1-q) + Bin(n-S, q)``."""
        bits = self.check_bits(x)
        self.warn_if_fewer(bits.shape[0])
        return self._view_of_bits(bits, as_generator(rng, type(self).__name__))

    def _view_of_bits(self, bits: np.ndarray, generator: np.random.Generator) -> MessageHistogram:
        n_seen = bits.shape[0]
        ones = bits.sum(axis=0)
        reported = generator.binomial(ones, 1.0 - self.flip_probability) + generator.binomial(
            n_seen - ones, self.flip_probability
        )
        return MessageHistogram(np.stack([n_seen - reported, reported], axis=1), self.alphabet)

    def analyze(self, view: MessageHistogram | MessageBatch) -> np.ndarray:
        """Unbiased estimate ``(C - m q) / (1 - 2q)`` with ``m`` the reports received per instance."""
        histogram = self.view(view)
        reports = histogram.counts.sum(axis=1)
        return (histogram.count(1) - reports * self.flip_probability) / (1.0 - 2.0 * self.flip_probability)

    def variance(self, true_sum: Any = None) -> float:
        """``n q (1-q) / (1-2q)^2`` for ``n = n_users`` reports, whatever the true sum."""
        q = self.flip_probability
        return self.n_users * q * (1.0 - q) / (1.0 - 2.0 * q) ** 2

    def _lattice_step(self) -> float:
        """The estimate moves by ``1/(1-2q)`` per reported one."""
        return 1.0 / (1.0 - 2.0 * self.flip_probability)


@dataclass(frozen=True, kw_only=True)
class RRBitSum(_FlippedReports):
    """Shuffled binary randomized response (Cheu, Smith, Ullman, Zeber & Zhilyaev 2019).

    Each user sends one 1-bit message, its bit flipped with probability ``flip_probability``;
    the analyzer counts the ones ``C`` and outputs ``(C - n q)/(1 - 2q)``.

    Args:
        n_users: users the guarantee is computed for (at least this many must take part).
        flip_probability: ``q`` in ``(0, 0.5)``.
        delta: the delta at which the headline epsilon is reported, in ``(0, 1)``.
        composition: ``"profile"`` (compose by the worst-case profile) or ``"guarantee"``.

    Privacy:
        Replace-one, for one instance. The adversary sees the count and knows every other bit;
        with ``k`` ones among the others the pair is
        ``Bin(k,1-q) + Bin(n-1-k,q) + Bern(q)`` versus ``... + Bern(1-q)``. The headline epsilon is
        the smallest one whose delta, **maximised over every k = 0..n-1 and both directions**,
        is at most ``delta`` (`rr_worst_case_epsilon`: branch and bound over blocks of ``k``, each
        block bounded by a pair proved to dominate it, so the result is never below the exact
        maximum and at most ``1e-9`` above it; the reference that visits every ``k`` is
        `privsum.bitsum.exact.rr_worst_case_delta`). The worst ``k`` depends on epsilon (at
        ``n = 10^5``, ``q = 3.4e-4`` it is ``k = 0`` at epsilon 1 but ``k = 263`` at epsilon 0.7),
        so no single neighbour dominates at every epsilon. The maximum of all their profiles is
        still a privacy profile with a dominating pair (Zhu, Dong & Wang, AISTATS 2022):
        with ``composition="profile"`` (default) the event is a `ProfileEvent` holding that pair
        (`rr_worst_case_profile`, sampled upper bounds joined by chords, which lie above the convex
        maximum), so PLD composition composes RR by its worst case over every neighbour; with
        ``composition="guarantee"`` it is a `GuaranteeEvent` composing as a generic
        (epsilon, delta) mechanism (also `generic_event`, for comparison).

    Utility:
        Unbiased; variance ``n q(1-q)/(1-2q)^2`` for every true sum. One 1-bit message per user.

    References:
        Cheu et al., "Distributed Differential Privacy via Shuffling", EUROCRYPT 2019 (analytic
        calibration).

    Examples:
        >>> protocol = RRBitSum(n_users=1000, flip_probability=0.05, delta=1e-6)
        >>> estimate = protocol.run(np.ones((1000, 2), dtype=int), rng=0)
        >>> estimate.shape
        (2,)
    """

    n_users: int
    flip_probability: float
    delta: float
    composition: str = "profile"

    def __post_init__(self) -> None:
        owner = type(self).__name__
        object.__setattr__(self, "n_users", check_integer(self.n_users, "n_users", owner, low=1))
        flip = check_real(self.flip_probability, "flip_probability", owner, low=0.0, high=0.5, low_open=True, high_open=True)
        object.__setattr__(self, "flip_probability", flip)
        object.__setattr__(self, "delta", check_delta(self.delta, owner, allow_zero=False))
        object.__setattr__(self, "composition", check_choice(self.composition, "composition", owner, RR_COMPOSITIONS))

    @classmethod
    def from_privacy(
        cls, *, epsilon: float, delta: float, n_users: int, calibration: str = "tight", composition: str = "profile"
    ) -> RRBitSum:
        """The least flip probability meeting (epsilon, delta) for ``n_users`` users.

        Args:
            epsilon: target epsilon per instance.
            delta: target delta per instance, in ``(0, 1)``.
            n_users: users taking part.
            calibration: ``"tight"``: bisection on ``q`` against a growing set of neighbours, the
                result checked against every neighbour (branch and bound, no slack: a block is
                settled only when its dominating pair meets the target); ``"analytic"``: CSUZZ19 as in the paper's
                reference code, ``lambda = 64 log(4/delta)/epsilon^2`` if
                ``epsilon >= sqrt(192 log(4/delta)/n)``, else
                ``lambda = n - epsilon n^1.5/sqrt(432 log(4/delta))``; ``q = lambda/(2n)``.
            composition: the event's kind, ``"profile"`` or ``"guarantee"`` (see the class).

        Raises:
            InvalidParameterError: a parameter is out of range, or the analytic formula gives
                ``q >= 1/2`` (too few users for the bound).

        Examples:
            >>> tight = RRBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=2000)
            >>> analytic = RRBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=2000, calibration="analytic")
            >>> bool(tight.flip_probability < analytic.flip_probability)
            True
        """
        owner = cls.__name__
        epsilon = check_epsilon(epsilon, owner)
        delta = check_delta(delta, owner, allow_zero=False)
        n_users = check_integer(n_users, "n_users", owner, low=1)
        calibration = check_calibration(calibration, owner)
        composition = check_choice(composition, "composition", owner, RR_COMPOSITIONS)
        if calibration == "analytic":
            flip = _csuzz_flip_probability(epsilon, delta, n_users)
            return cls(n_users=n_users, flip_probability=flip, delta=delta, composition=composition)
        flip, bound = _tight_flip_probability(epsilon, delta, n_users)  # verified over every neighbour at epsilon
        if composition == "guarantee":
            protocol = cls(n_users=n_users, flip_probability=flip, delta=delta, composition=composition)
            protocol.__dict__["event"] = _rr_event(epsilon, delta)  # pre-fill the cached property
            return protocol
        if flip > 1.0 / (1.0 + math.exp(epsilon)):  # delta below the bounds' accuracy: the epsilon-LDP flip
            protocol = cls(n_users=n_users, flip_probability=flip, delta=delta, composition=composition)
            local = randomized_response_profile(math.log((1.0 - flip) / flip))  # dominates the shuffled output
            protocol.__dict__["event"] = ProfileEvent(local, PrivacyGuarantee(epsilon, delta, Neighbouring.REPLACE_ONE))
            return protocol
        for _ in range(_HEADLINE_NUDGES):  # float rounding of the chords may need a slightly larger q
            profile = _worst_case_profile(n_users, flip, delta, epsilon, bound)
            if profile.delta(epsilon) <= delta * (1 + _RTOL):
                protocol = cls(n_users=n_users, flip_probability=flip, delta=delta, composition=composition)
                protocol.__dict__["event"] = ProfileEvent(profile, PrivacyGuarantee(epsilon, delta, Neighbouring.REPLACE_ONE))
                return protocol
            flip = min(flip * (1.0 + 1e-3), 1.0 / (1.0 + math.exp(epsilon)))
            bound = _meets_target(n_users, flip, epsilon, delta)[2]
        raise RuntimeError("RRBitSum: the worst-case profile misses the calibrated target")  # pragma: no cover

    @functools.cached_property
    def event(self) -> PrivacyEvent:
        """One instance, replace-one: the worst-case profile's pair, or a generic (epsilon, delta) (see the class docstring)."""
        return self._event_for(self.n_users)

    def _event_for_fewer(self, n_participants: int) -> PrivacyEvent:
        return self._event_for(n_participants)

    def _event_for(self, n_participants: int) -> PrivacyEvent:
        if self.composition == "guarantee":
            return _rr_event(_verified_epsilon(n_participants, self.flip_probability, self.delta), self.delta)
        epsilon = _verified_epsilon(n_participants, self.flip_probability, self.delta)
        # every neighbour's epsilon at delta is at most this epsilon, so every delta at it is at most delta
        profile = _worst_case_profile(n_participants, self.flip_probability, self.delta, epsilon, self.delta)
        if profile.delta(epsilon) <= self.delta * (1 + _RTOL):  # tight at the verified epsilon
            return ProfileEvent(profile, PrivacyGuarantee(epsilon, self.delta, Neighbouring.REPLACE_ONE))
        return ProfileEvent.at_delta(profile, self.delta)

    @property
    def generic_event(self) -> PrivacyEvent:
        """The verified headline as a generic (epsilon, delta) mechanism (the ``composition="guarantee"`` event)."""
        return _rr_event(_verified_epsilon(self.n_users, self.flip_probability, self.delta), self.delta)


@dataclass(frozen=True, kw_only=True)
class LocalRRBitSum(_FlippedReports):
    """Local randomized response: the baseline without shuffling (App. C of Wagner (ICLR 2025)).

    Args:
        n_users: users (the guarantee does not depend on it).
        flip_probability: ``q`` in ``(0, 0.5)``; the report is ``log((1-q)/q)``-LDP.

    Privacy:
        Pure ``epsilon0 = log((1-q)/q)`` local DP for each report, hence for every view;
        replace-one, for one instance. The event holds the exact RR profile.

    Utility:
        Unbiased; variance ``n q(1-q)/(1-2q)^2``; one 1-bit message per user.

    References:
        Warner (1965), randomized response.

    Examples:
        >>> protocol = LocalRRBitSum.from_privacy(epsilon=1.0, n_users=100)
        >>> round(protocol.guarantee.epsilon, 9)
        1.0
    """

    n_users: int
    flip_probability: float

    def __post_init__(self) -> None:
        owner = type(self).__name__
        object.__setattr__(self, "n_users", check_integer(self.n_users, "n_users", owner, low=1))
        flip = check_real(self.flip_probability, "flip_probability", owner, low=0.0, high=0.5, low_open=True, high_open=True)
        object.__setattr__(self, "flip_probability", flip)

    @classmethod
    def from_privacy(cls, *, epsilon: float, n_users: int, delta: float = 0.0, calibration: str = "tight") -> LocalRRBitSum:
        """``q = 1/(1 + e^epsilon)`` (both calibrations: the closed form is exact).

        Args:
            epsilon: target local epsilon.
            n_users: users.
            delta: accepted for a uniform interface; the guarantee is pure (delta 0).
            calibration: ``"tight"`` or ``"analytic"`` (identical here).
        """
        owner = cls.__name__
        epsilon = check_epsilon(epsilon, owner)
        check_delta(delta, owner)
        check_calibration(calibration, owner)
        return cls(n_users=n_users, flip_probability=1.0 / (1.0 + math.exp(epsilon)))

    @property
    def local_epsilon(self) -> float:
        """``log((1-q)/q)``."""
        return math.log((1.0 - self.flip_probability) / self.flip_probability)

    @functools.cached_property
    def event(self) -> PrivacyEvent:
        """Pure local DP with the exact binary-RR profile, replace-one."""
        return ProfileEvent.at_delta(randomized_response_profile(self.local_epsilon), 0.0)

    @property
    def depends_on_participants(self) -> bool:
        return False


def _worst_case_profile(n_users: int, flip: float, delta: float, epsilon: float, bound: float) -> PrivacyProfile:
    """`rr_worst_case_profile` with an absolute slack of ``1e-6 delta`` and the sample at ``epsilon`` at most ``bound``.

    ``bound`` must be an upper bound on every neighbour's delta at ``epsilon``, already proved by
    the caller (the calibration's verification, or the verified epsilon at ``delta``): it
    replaces the second branch and bound that `rr_worst_case_profile` runs for its ``epsilons``.
    """
    atol = min(1e-3, 1e-6 * delta)
    grid, upper = _sampled_worst_case(n_users, flip, atol, _PROFILE_RESOLUTION, np.array([epsilon]))
    at = np.searchsorted(grid, epsilon)
    if at < grid.size and grid[at] == epsilon:
        upper[at] = min(upper[at], bound)
    return symmetric_pair_from_samples(grid, np.minimum(upper, 1.0), neighbouring=Neighbouring.REPLACE_ONE)


def _rr_event(epsilon: float, delta: float) -> GuaranteeEvent:
    return GuaranteeEvent(PrivacyGuarantee(epsilon, delta, Neighbouring.REPLACE_ONE))


def _csuzz_flip_probability(epsilon: float, delta: float, n_users: int) -> float:
    log_term = math.log(4.0 / delta)
    if epsilon >= math.sqrt(192.0 * log_term / n_users):
        blanket = 64.0 * log_term / epsilon**2
    else:
        blanket = n_users - epsilon * n_users**1.5 / math.sqrt(432.0 * log_term)
    flip = blanket / (2.0 * n_users)
    if not 0.0 < flip < 0.5:
        raise invalid(
            "n_users",
            "RRBitSum.from_privacy",
            f"large enough for the CSUZZ19 bound at epsilon={epsilon}, delta={delta} (it gives q={flip:.4g}, needs q < 0.5)",
            n_users,
        )
    return flip


# ---------------------------------------------------------------------------------------------
# Worst case over every neighbour, by branch and bound over blocks of k.
#
# For k ones among the n - 1 others the count is C = B + k + U - D with U ~ Bin(n-1-k, q),
# D ~ Bin(k, q) and B ~ Bern(q) (target bit 0) or Bern(1 - q) (bit 1). A block of
# neighbours k in [a, a + m] is bounded by ONE pair, that of n - m users with a ones among the
# others (see `rr_worst_case_delta_bound`); branch and bound splits only the blocks whose bound
# is not already settled, so only a few hundred pairs are computed even at n = 10^6.
# ---------------------------------------------------------------------------------------------

# Mass cut from each tail of each binomial (Bernstein's inequality); it is added to delta.
_TAIL_MASS = 1e-30
# Relative slack of the returned worst case above the exact maximum over k.
_BOUND_RTOL = 1e-9
# Recently evaluated pairs are cached (they do not depend on epsilon or delta); at most 256 of them.
_PAIR_CACHE_SIZE = 256
# Binomial windows are cached too (a split block shares one window with its parent); read-only arrays.
_WINDOW_CACHE_SIZE = 1024
_ONE_POINT = np.ones(1)
_ONE_POINT.setflags(write=False)
# Long convolutions go by FFT when its error bound costs at most this share of the target delta
# (added to delta, so results stay upper bounds; see `_neighbour_pair`).
_FFT_DELTA_SHARE = 1e-4
# Blocks of neighbours laid out before branch and bound refines (`_predicted_blocks`).
_MAX_PREDICTED_BLOCKS = 2048
# Relative slack of the worst-case profile's samples above an exactly evaluated neighbour.
_ENVELOPE_RTOL = 1e-2
_SMALLEST_TAIL = math.ulp(0.0)  # 5e-324, the smallest positive float
# Epsilon step of the worst-case profile's samples (`rr_worst_case_profile`'s default).
_PROFILE_RESOLUTION = 1e-3


@functools.lru_cache(maxsize=_WINDOW_CACHE_SIZE)
def _binomial_window(trials: int, flip: float, tail_mass: float) -> tuple[np.ndarray, float]:
    """pmf of ``Bin(trials, flip)`` on a window ``low..high`` holding all but a provably tiny mass.

    The window is ``mean -/+ s`` with ``s`` from Bernstein's inequality,
    ``P(|S - mean| >= s) <= exp(-s^2 / (2 (var + s/3)))`` per side (summands in ``[0, 1]``), so each
    cut side holds at most ``tail_mass``. Returns the pmf from ``lo`` and a bound on the cut mass.
    """
    if trials == 0:
        return _ONE_POINT, 0.0
    tail_mass = max(tail_mass, _SMALLEST_TAIL)  # a larger cut is still bounded (and reported): no log(1/0)
    # log(1 / tail) as before where 1 / tail is finite (bit-identical windows); -log(tail) for a subnormal tail
    log_term = math.log(1.0 / tail_mass) if tail_mass > 1e-300 else -math.log(tail_mass)
    mean = trials * flip
    radius = log_term / 3.0 + math.sqrt((log_term / 3.0) ** 2 + 2.0 * mean * (1.0 - flip) * log_term)
    low = max(0, math.ceil(mean - radius - 1e-9))  # values below low are < mean - radius
    high = min(trials, math.floor(mean + radius + 1e-9))  # values above high are > mean + radius
    cut = (tail_mass if low > 0 else 0.0) + (tail_mass if high < trials else 0.0)
    pmf = binomial_pmf(low, high, trials, flip)
    pmf.setflags(write=False)  # cached and shared
    return pmf, cut


class _CountPair:
    """The count's pmfs for the target bit 0 and 1 on one support, the mass cut from both, and the profile on demand."""

    __slots__ = ("_profile", "bit_one", "bit_zero", "cut")

    def __init__(self, bit_zero: np.ndarray, bit_one: np.ndarray, cut: float) -> None:
        self.bit_zero, self.bit_one, self.cut = bit_zero, bit_one, cut
        self._profile: PrivacyProfile | None = None

    def profile(self) -> PrivacyProfile:
        """The exact profile, the cut mass counted as infinite loss in both directions (built once)."""
        if self._profile is None:
            self._profile = PrivacyProfile._trusted(
                self.bit_zero, self.bit_one, neighbouring=Neighbouring.REPLACE_ONE, p_tail=self.cut, q_tail=self.cut
            )
        return self._profile

    def delta_at(self, epsilon: float) -> float:
        """``profile().delta(epsilon)`` for one epsilon, summed directly: ``sum max(0, P - e^epsilon Q)`` both ways, plus the cut.

        The points where ``P > e^epsilon Q`` are exactly those whose privacy loss exceeds
        epsilon, so this is the profile's value (up to the rounding of the sums), without its logs and sorting.
        """
        scale = math.exp(epsilon)
        forward = float(np.maximum(self.bit_zero - scale * self.bit_one, 0.0).sum())
        backward = float(np.maximum(self.bit_one - scale * self.bit_zero, 0.0).sum())
        return max(forward, backward) + self.cut


@functools.lru_cache(maxsize=_PAIR_CACHE_SIZE)
def _neighbour_counts(n_users: int, flip: float, ones: int, tail_mass: float, fft_delta_error: float = 0.0) -> _CountPair:
    """The count's pair (truncated tails counted as infinite loss) for ``ones`` ones among ``n_users - 1`` others.

    The others' count ``U - D`` is a convolution, by FFT when that is long and its error bound
    ``e`` (L1, `privsum._convolution`) costs at most ``fft_delta_error`` in delta. That cost is
    ``e / q``: a point contributes to ``HS_x`` only where its likelihood ratio, at most
    ``(1-q)/q``, exceeds ``x``, so an L1 error ``e`` in the others' pmf (hence in each of ``P`` and
    ``Q``) moves ``HS_x`` by at most ``e + x e <= e / q``. It is added to both tails (infinite loss).
    """
    up, up_cut = _binomial_window(n_users - 1 - ones, flip, tail_mass)
    down, down_cut = _binomial_window(ones, flip, tail_mass)
    # U - D up to a shift (the profile is shift invariant)
    others, error = convolve_pmfs(up, down[::-1], allowed_error=fft_delta_error * flip)
    # bit 0: the count is U - D (+ Bern(q)); bit 1: U - D + Bern(1 - q); support of size len + 1
    bit_zero, bit_one = np.zeros(others.size + 1), np.zeros(others.size + 1)
    bit_zero[:-1] = (1.0 - flip) * others
    bit_zero[1:] += flip * others
    bit_one[:-1] = flip * others
    bit_one[1:] += (1.0 - flip) * others
    cut = min(1.0, up_cut + down_cut + error / flip)
    return _CountPair(bit_zero, bit_one, cut)


def _neighbour_pair(n_users: int, flip: float, ones: int, tail_mass: float, fft_delta_error: float = 0.0) -> PrivacyProfile:
    """Exact profile (truncated tails counted as infinite loss) for ``ones`` ones among ``n_users - 1`` others."""
    return _neighbour_counts(n_users, flip, ones, tail_mass, fft_delta_error).profile()


def _block_counts(n_users: int, flip: float, first: int, last: int, tail_mass: float, fft_delta_error: float = 0.0) -> _CountPair:
    """A pair dominating every neighbour ``k`` in ``first..last`` (exact when ``first == last``)."""
    return _neighbour_counts(n_users - (last - first), flip, first, tail_mass, fft_delta_error)


def _block_pair(
    n_users: int, flip: float, first: int, last: int, tail_mass: float, fft_delta_error: float = 0.0
) -> PrivacyProfile:
    """The profile of `_block_counts`."""
    return _block_counts(n_users, flip, first, last, tail_mass, fft_delta_error).profile()


def _seed_ks(half: int) -> list[int]:
    """A few neighbours evaluated exactly first, so that branch and bound prunes early."""
    if half <= 0:
        return [0]
    return sorted({0, half, *np.unique(np.geomspace(1, half, 24).astype(int)).tolist()})


def _predicted_blocks(
    half: int, seeds: list[int], seed_values: np.ndarray, growth: np.ndarray, settle_level: np.ndarray
) -> list[tuple[int, int]]:
    """Blocks covering every ``k`` in ``0..half`` that is not a seed, each predicted to settle when first bounded.

    Only the number of pairs depends on this prediction, never the result: a block is settled by
    its own proved bound or split further. Model: a block ``[a, a + m]`` is bounded by about
    ``v g^m``, with ``v`` the larger score of the seeds around ``a`` and ``g`` the measured
    growth of the score per user dropped (the block ``[0, 1]``'s bound over ``k = 0``'s score);
    ``m`` is taken at 80 % of the largest that keeps ``v g^m`` below ``settle_level``. At most
    ``_MAX_PREDICTED_BLOCKS`` blocks; what is left after them is one block.
    """
    log_growth = np.log(np.maximum(growth, 1.0 + 1e-12))
    blocks: list[tuple[int, int]] = []
    for index in range(len(seeds) - 1):
        first, stop = seeds[index] + 1, seeds[index + 1]  # the gap between two seeds
        around = np.maximum(seed_values[index], seed_values[index + 1])
        with np.errstate(divide="ignore", invalid="ignore"):
            room = np.where(around < settle_level, np.log(settle_level / np.maximum(around, 1e-300)) / log_growth, 0.0)
        size = int(min(0.8 * float(np.min(room)), 1e15)) + 1  # users per block
        while first < stop:
            if len(blocks) >= _MAX_PREDICTED_BLOCKS:
                return [*blocks, (first, half)] if first <= half else blocks
            last = min(first + size - 1, stop - 1)
            blocks.append((first, last))
            first = last + 1
    return blocks


def _branch_and_bound(
    n_users: int,
    flip: float,
    score: Callable[[_CountPair], np.ndarray],
    *,
    rtol: float,
    atol: float,
    tail_mass: float,
    threshold: float | None = None,
    fft_delta_error: float = 0.0,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Maximum over ``k = 0..(n-1)//2`` of ``score(pair_k)`` (non-decreasing under post-processing).

    Returns ``(upper, lower, k)``: ``lower`` = exact scores of an evaluated ``k``,
    ``upper >= max_k score`` with ``upper <= lower (1 + rtol) + atol`` componentwise. With
    ``threshold`` (scalar scores), stops as soon as some exact score exceeds it (then ``lower``
    is that score) or every block is bounded by it (then ``upper <= threshold``).
    """
    half = (n_users - 1) // 2
    lower, best_k = None, 0
    seeds, seed_values = _seed_ks(half), []
    for k in seeds:
        value = np.atleast_1d(score(_block_counts(n_users, flip, k, k, tail_mass, fft_delta_error)))
        seed_values.append(value)
        if lower is None or np.any(value > lower):
            lower, best_k = value if lower is None else np.maximum(lower, value), k
        if threshold is not None and value[0] > threshold:
            return value, value, k
    scale = np.maximum(lower, 1e-300)
    upper = lower.copy()
    settle_level = np.full_like(lower, threshold) if threshold is not None else lower * (1.0 + rtol) + atol

    def settled(bound: np.ndarray) -> bool:
        if threshold is not None:
            return bool(bound[0] <= threshold)
        return bool(np.all(bound <= lower * (1.0 + rtol) + atol))

    def push(first: int, last: int) -> None:
        bound = np.atleast_1d(score(_block_counts(n_users, flip, first, last, tail_mass, fft_delta_error)))
        heapq.heappush(heap, (-float(np.max(bound / scale)), first, last, bound))

    heap: list[tuple[float, int, int, np.ndarray]] = []
    if len(seeds) > 2:  # blocks sized to settle at once (a prediction: any that does not is split as usual)
        one_user = np.atleast_1d(score(_block_counts(n_users, flip, 0, 1, tail_mass, fft_delta_error)))
        growth = one_user / np.maximum(seed_values[0], 1e-300)
        for first, last in _predicted_blocks(half, seeds, np.array(seed_values), growth, settle_level):
            push(first, last)
    else:
        push(0, half)
    while heap:
        _, first, last, bound = heapq.heappop(heap)
        if settled(bound):
            upper = np.maximum(upper, bound)
        elif first == last:  # an exact neighbour above everything settled so far
            if threshold is not None:
                return bound, bound, first
            if np.any(bound > lower):
                best_k = first
            lower = np.maximum(lower, bound)
            upper = np.maximum(upper, bound)
        else:
            middle = (first + last) // 2
            push(first, middle)
            push(middle + 1, last)
    return np.maximum(upper, lower), lower, best_k


def rr_worst_case_delta_bound(
    n_users: int, flip_probability: float, epsilons: float | np.ndarray, *, return_worst_k: bool = False
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Upper bound, within a relative ``1e-9``, on the worst-case delta of shuffled RR over every neighbour.

    Same quantity as `privsum.bitsum.exact.rr_worst_case_delta` (the reference, which visits
    every ``k``), computed by branch and bound over blocks of ``k`` in ``O(log n)``-ish pair
    evaluations instead of ``n / 2``.

    Privacy:
        Replace-one. Block bound (proved): for ``k`` in ``[a, a + m]`` write
        ``n-1-k = (n-1-a-m) + (a+m-k)`` and ``k = a + (k-a)``, so ``U = U' + U''`` and
        ``D = D' + D''`` with independent ``U' ~ Bin(n-1-a-m, q)``, ``D' ~ Bin(a, q)``,
        ``U'' ~ Bin(a+m-k, q)``, ``D'' ~ Bin(k-a, q)``. The pair for ``k`` is then the pair
        ``(B + U' - D', B' + U' - D')`` -- which is, up to a shift, the pair of ``n - m`` users
        with ``a`` ones among the others -- post-processed by one Markov kernel (add the
        independent ``k - a + U'' - D''``). The hockey-stick divergence is an f-divergence, so by
        the data-processing inequality ``delta_k(e) <= delta^(n-m)_a(e)`` for every ``e`` and both
        directions. Symmetry ``k <-> n-1-k`` (reflect the count, swap directions) leaves
        ``k <= (n-1)/2``. A block whose bound is settled is never refined and its bound enters the
        result, so the result is always an upper bound on the exact maximum; blocks are split
        until every bound is within ``1e-9`` (relative) of an exactly evaluated neighbour.
        Binomial tails beyond a Bernstein radius (at most ``1e-30`` per side) are counted as
        infinite loss.

    Args:
        n_users: users taking part.
        flip_probability: the RR flip probability in ``(0, 0.5)``.
        epsilons: one or more epsilon values ``>= 0``.
        return_worst_k: also return the ``k <= (n-1)/2`` of the largest exactly evaluated neighbour.

    Examples:
        >>> bound = rr_worst_case_delta_bound(100_000, 3.4e-4, [0.7, 1.0])
        >>> bool(bound[0] > bound[1] > 0)
        True
    """
    owner = "rr_worst_case_delta_bound"
    n_users = check_integer(n_users, "n_users", owner, low=1)
    flip = _checked_flip(flip_probability, owner)
    eps = _checked_epsilons(epsilons, owner)
    upper, _, worst_k = _branch_and_bound(
        n_users, flip, lambda pair: pair.profile().delta(eps), rtol=_BOUND_RTOL, atol=4 * _TAIL_MASS, tail_mass=_TAIL_MASS
    )
    return (upper, np.full(eps.size, worst_k, dtype=np.int64)) if return_worst_k else upper


def rr_worst_case_epsilon(n_users: int, flip_probability: float, delta: float) -> float:
    """Upper bound, within a relative ``1e-9``, on ``max_k epsilon_k(delta)`` over every neighbour ``k``.

    ``max_k delta_k(e) <= delta`` holds exactly when ``e >= epsilon_k(delta)`` for every ``k``, so
    this is the smallest epsilon the worst case backs at ``delta`` (rounded up). Same block bound
    as `rr_worst_case_delta_bound` (a pair dominating a block has a larger ``epsilon(delta)``).

    Args:
        n_users: users taking part.
        flip_probability: the RR flip probability in ``(0, 0.5)``.
        delta: the delta in ``(0, 1)``.

    Examples:
        >>> epsilon = rr_worst_case_epsilon(2000, 0.02, 1e-6)
        >>> bool(rr_worst_case_delta_bound(2000, 0.02, epsilon)[0] <= 1e-6 * (1 + 1e-9))
        True
    """
    owner = "rr_worst_case_epsilon"
    n_users = check_integer(n_users, "n_users", owner, low=1)
    flip = _checked_flip(flip_probability, owner)
    delta = check_delta(delta, owner, allow_zero=False)
    tail = min(_TAIL_MASS, 1e-10 * delta)
    upper, _, _ = _branch_and_bound(
        n_users,
        flip,
        lambda pair: np.array([pair.profile().epsilon(delta)]),
        rtol=_BOUND_RTOL,
        atol=1e-12,
        tail_mass=tail,
        fft_delta_error=_FFT_DELTA_SHARE * delta,
    )
    return float(upper[0])


def rr_worst_case_profile(
    n_users: int, flip_probability: float, *, atol: float = 1e-15, resolution: float = 1e-3, epsilons: Any = ()
) -> PrivacyProfile:
    """A symmetric pair dominating shuffled RR's profile for **every** neighbour, both directions.

    The maximum over every ``k`` (ones among the others) and both directions of the exact
    ``delta_k(epsilon)`` is sampled on a grid of epsilons (step ``resolution``, from 0 to the
    largest possible privacy loss ``log((1-q)/q)``, plus any ``epsilons`` given) by the same
    branch and bound as `rr_worst_case_delta_bound` (every sample an upper bound, within a relative
    ``1e-2`` plus ``atol`` of an exactly evaluated neighbour: a 1 % slack in delta, far below what
    moves a calibration), and the pair whose profile is the
    chord interpolation of the samples is built by
    `privsum.accounting.envelope.symmetric_pair_from_samples`. Its profile is at least every
    ``delta_k`` at every epsilon (chords of a convex curve lie above it), and its privacy-loss
    distribution composes RR by its worst case (`RRBitSum.event`).

    Args:
        n_users: users taking part.
        flip_probability: the RR flip probability in ``(0, 0.5)``.
        atol: absolute slack accepted in each sample (half for the branch and bound, half for the
            error bound of FFT convolutions, both counted in full).
        resolution: epsilon step of the samples.
        epsilons: extra sample points, where the sample is tight to a relative ``1e-9`` (plus
            ``1e-6 atol``): a tighter upper bound than the grid's (lowering one sample of a convex
            curve keeps the chords convex and above the curve).

    Privacy:
        Replace-one, one instance; the pair dominates every neighbouring pair of the count view.

    References:
        Zhu, Dong & Wang, "Optimal Accounting of Differential Privacy via Characteristic
        Function", AISTATS 2022 (profiles and dominating pairs).

    Examples:
        >>> from privsum.bitsum.exact import rr_worst_case_delta
        >>> pair = rr_worst_case_profile(300, 0.05, epsilons=[0.7])
        >>> exact = rr_worst_case_delta(300, 0.05, 0.7)[0]
        >>> bool(exact <= pair.delta(0.7) <= exact * (1 + 1e-2) + 1e-15)
        True
    """
    owner = "rr_worst_case_profile"
    n_users = check_integer(n_users, "n_users", owner, low=1)
    flip = _checked_flip(flip_probability, owner)
    atol = check_real(atol, "atol", owner, low=0.0, high=1e-3, low_open=True)
    resolution = check_real(resolution, "resolution", owner, low=1e-6, high=0.1)
    extra = _checked_epsilons(epsilons, owner) if np.size(epsilons) else np.zeros(0)
    largest_loss = _largest_loss(flip)
    if math.ceil(largest_loss / resolution) > 1_000_000:
        raise invalid("resolution", owner, f"coarse enough for at most 10^6 samples up to epsilon {largest_loss:.3g}", resolution)
    grid, upper = _sampled_worst_case(n_users, flip, atol, resolution, extra)
    extra = extra[extra < largest_loss]
    if extra.size:  # the requested points to within a relative 1e-9: a tighter upper bound replaces the sample
        tight, _, _ = _branch_and_bound(
            n_users,
            flip,
            lambda pair: pair.profile().delta(extra),
            rtol=_BOUND_RTOL,
            atol=atol * 1e-6,
            tail_mass=min(_TAIL_MASS, atol * 1e-9),
            fft_delta_error=atol * 1e-6,
        )
        at = np.searchsorted(grid, extra)
        upper[at] = np.minimum(upper[at], tight)
    return symmetric_pair_from_samples(grid, np.minimum(upper, 1.0), neighbouring=Neighbouring.REPLACE_ONE)


def _largest_loss(flip: float) -> float:
    """Every likelihood ratio of the count view is below ``e^`` this."""
    return math.log((1.0 - flip) / flip) + 1e-9


def _sampled_worst_case(
    n_users: int, flip: float, atol: float, resolution: float, extra: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The grid of `rr_worst_case_profile` (step ``resolution`` and the ``extra`` points) and its upper bounds."""
    largest_loss = _largest_loss(flip)
    steps = math.ceil(largest_loss / resolution)
    grid = np.union1d(np.linspace(0.0, largest_loss, steps + 1), extra[extra < largest_loss])
    upper, _, _ = _branch_and_bound(
        n_users,
        flip,
        lambda pair: pair.profile().delta(grid),
        rtol=_ENVELOPE_RTOL,
        atol=atol / 2,
        tail_mass=min(_TAIL_MASS, atol * 1e-6),
        fft_delta_error=atol / 2,
    )
    return grid, upper


def _checked_flip(value: float, owner: str) -> float:
    return check_real(value, "flip_probability", owner, low=0.0, high=0.5, low_open=True, high_open=True)


def _checked_epsilons(epsilons: float | np.ndarray, owner: str) -> np.ndarray:
    eps = np.atleast_1d(np.asarray(epsilons, dtype=float))
    if not (eps.ndim == 1 and np.all(np.isfinite(eps)) and np.all(eps >= 0)):
        raise invalid("epsilons", owner, "finite values >= 0", epsilons)
    return eps


def _meets_target(n_users: int, flip: float, epsilon: float, delta: float) -> tuple[bool, int, float]:
    """Whether every neighbour's delta at ``epsilon`` is at most ``delta`` (up to float rounding).

    Returns ``(meets, k, bound)``: a violating ``k`` when it does not meet the target, and
    ``bound``, an upper bound on every neighbour's delta at ``epsilon`` when it does (the largest
    bound of the settled blocks and exactly evaluated neighbours).
    """
    tail = min(_TAIL_MASS, 1e-10 * delta)
    threshold = delta * (1 + _RTOL)
    upper, _, k = _branch_and_bound(
        n_users,
        flip,
        lambda pair: np.array([pair.delta_at(epsilon)]),
        rtol=0.0,
        atol=0.0,
        tail_mass=tail,
        threshold=threshold,
        fft_delta_error=_FFT_DELTA_SHARE * delta,
    )
    return bool(upper[0] <= threshold), k, float(upper[0])


def _tight_flip_probability(epsilon: float, delta: float, n_users: int) -> tuple[float, float]:
    """Least ``q`` (within a relative ``1e-6`` of ``log q``) against a growing set of neighbours, verified over all of them.

    Returns ``(q, bound)``: ``bound`` is an upper bound on every neighbour's delta at
    ``epsilon``, at most ``delta (1 + 1e-9)`` (``delta`` itself for the epsilon-LDP flip).
    """
    local = 1.0 / (1.0 + math.exp(epsilon))  # epsilon-LDP: meets any delta
    tail = min(_TAIL_MASS, 1e-10 * delta)
    fft = _FFT_DELTA_SHARE * delta
    candidates = {0}
    log_start = None
    for _ in range(40):

        def delta_at(log_flip: float, ks: frozenset[int] = frozenset(candidates)) -> float:
            flip = math.exp(log_flip)
            return max(_neighbour_counts(n_users, flip, k, tail, fft).delta_at(epsilon) for k in ks)

        lowest = math.log(_SMALLEST_FLIP) if log_start is None else log_start  # more neighbours need at least as much noise
        try:
            log_flip = calibrate(
                delta_at, target_delta=delta, lower=lowest, upper=math.log(local), more_private="increasing", method="illinois"
            )
        except InvalidParameterError:  # delta below the numerical accuracy of the bound: epsilon-LDP meets any delta
            return local * (1.0 + 1e-12), delta  # rounded towards more privacy: its local epsilon is below epsilon
        flip = min(math.exp(log_flip), local)
        meets, violating_k, bound = _meets_target(n_users, flip, epsilon, delta)
        if meets:
            return flip, bound
        candidates.add(violating_k)
        log_start = log_flip
    raise RuntimeError("RRBitSum: tight calibration did not converge; use calibration='analytic'")  # pragma: no cover


def _verified_epsilon(n_users: int, flip: float, delta: float) -> float:
    """Smallest epsilon (rounded up, relative ``1e-9``) whose worst-case delta over every neighbour is at most ``delta``."""
    return rr_worst_case_epsilon(n_users, flip, delta)
