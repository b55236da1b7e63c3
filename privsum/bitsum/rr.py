"""Randomized response bit sums: shuffled (CSUZZ19, exact calibration) and the local baseline.

References:
    Wagner, "Learning from End User Data with Shuffled Differential Privacy over Kernel
    Densities", ICLR 2025.
"""

from __future__ import annotations

import contextlib
import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from privsum._random import RNGLike, as_generator
from privsum._validation import check_array, check_choice, check_delta, check_epsilon, check_integer, check_real, invalid
from privsum.accounting.calibration import calibrate
from privsum.accounting.envelope import SampledEnvelope, symmetric_pair_from_samples
from privsum.accounting.events import GuaranteeEvent, PrivacyEvent, ProfileEvent
from privsum.accounting.guarantee import Neighbouring, PrivacyGuarantee
from privsum.accounting.profile import PrivacyProfile, randomized_response_profile
from privsum.bitsum._rr_pairs import count_pair, largest_crowd, window_points
from privsum.bitsum._rr_worst_case import (
    OutOfWorkError,
    meets_target,
    worst_case_deltas,
    worst_case_epsilon,
    worst_case_samples,
)
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
    messages_per_instance = 1

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

    def _message_cap(self, tail_probability: float) -> int:
        """One report per user and instance."""
        return 1

    @property
    def largest_message_effect(self) -> float:
        """A report ``y`` adds ``(y - q)/(1 - 2q)``: at most ``(1 - q)/(1 - 2q)`` in absolute value."""
        q = self.flip_probability
        return (1.0 - q) / (1.0 - 2.0 * q)

    def largest_decrease(self, n_malicious: int, *, cap: int | None = None) -> float:
        """``k q/(1 - 2q)`` per message: reports 0 pull the estimate down less than reports 1 push it up."""
        q = self.flip_probability
        return self.manipulation_bound(n_malicious, cap=cap) * q / (1.0 - q)

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
        ``Bin(k,1-q) + Bin(n-1-k,q) + Bern(q)`` versus ``... + Bern(1-q)``. The headline epsilon
        (`guarantee`, computed without building the profile) is an upper bound on the smallest
        one whose delta, **maximised over every k = 0..n-1 and both directions**, is at most
        ``delta``: a few neighbours are evaluated exactly and blocks of the others are each
        bounded by one pair proved to dominate them (see `rr_worst_case_epsilon`; the reference
        that visits every ``k`` is `privsum.bitsum.exact.rr_worst_case_delta`). The bound is within
        ``1e-9`` (relative) of that maximum while the search fits a fixed amount of work (up to
        about 10^5 users at ``q = 1/4``, far more at smaller ``q``), within ``1e-3`` while a
        looser search does, and beyond within about a percent (measured at ``q = 1/4``: 0.1 % at
        560,000 users, 0.2 % at 10^6, 1.0 % at 10^7, 1.2 % at 10^9, each in under a second);
        `rr_worst_case_epsilon` gives the ``1e-9`` one at any cost. It never exceeds the local
        epsilon ``log((1-q)/q)``. A crowd whose count window would pass 2^20 points
        (``n q (1-q)`` above about 3 10^9 at ``delta = 1e-8``) gets the bound of the largest crowd
        within it: ``n`` users' count is that crowd's plus an independent count, so the bound
        holds, but it stops falling with ``n``. The worst ``k``
        depends on epsilon (at ``n = 10^5``, ``q = 3.4e-4`` it is ``k = 0`` at epsilon 1 but
        ``k = 263`` at epsilon 0.7), so no single neighbour
        dominates at every epsilon. The maximum of all their profiles is still a privacy profile
        with a dominating pair (Zhu, Dong & Wang, AISTATS 2022): with ``composition="profile"``
        (default) the event is a `ProfileEvent` holding that pair (`rr_worst_case_profile`,
        sampled upper bounds joined by chords, which lie above the convex maximum), so PLD
        composition composes RR by its worst case over every neighbour (exactly at the
        profile's own step, its `native_discretization`), for crowds with ``n q (1-q)`` up to
        about 5 10^8 (beyond, its samples would take minutes and the event is the headline as a
        generic (epsilon, delta) pair); with ``composition="guarantee"`` it
        is a `GuaranteeEvent` composing as a generic (epsilon, delta) mechanism (also
        `generic_event`, for comparison).

    Robustness:
        One report per sender and instance (`per_sender_message_cap` 1). ``k`` malicious senders
        shift each instance's estimate by at most ``k (1 - q)/(1 - 2q)`` (all reporting 1;
        `manipulation_bound`), against an honest contribution between 0 and ``k``.

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
                settled only when its dominating pair meets the target); where that check needs
                more than a fixed amount of work (about 10^8 users and more at small epsilon),
                the least ``q`` whose headline meets the target (a percent or so above the
                tight one); ``"analytic"``: CSUZZ19 as in the paper's
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
        if not _profile_computable(n_users, flip, delta):  # a crowd too large for the profile: the verified target
            protocol = cls(n_users=n_users, flip_probability=flip, delta=delta, composition=composition)
            protocol.__dict__["event"] = _rr_event(epsilon, delta)
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
            with contextlib.suppress(OutOfWorkError):  # a larger q keeps the bound: RR(q') garbles RR(q)
                bound = _meets_target(n_users, flip, epsilon, delta)[2]
        raise RuntimeError("RRBitSum: the worst-case profile misses the calibrated target")  # pragma: no cover

    @classmethod
    def calibrate_for_compositions(cls, **request: Any) -> RRBitSum | None:
        """Tight RR composed by its profile: its flip probability searched directly (`calibrated_for_compositions`)."""
        from privsum.bitsum._rr_compositions import calibrated_for_compositions  # it imports this module

        return calibrated_for_compositions(cls, **request)

    @functools.cached_property
    def event(self) -> PrivacyEvent:
        """One instance, replace-one: the worst-case profile's pair, or a generic (epsilon, delta) (see the class docstring)."""
        return self._event_for(self.n_users)

    @functools.cached_property
    def guarantee(self) -> PrivacyGuarantee:
        """The headline guarantee of one run: the event's, computed without building its profile.

        Privacy:
            Replace-one, one instance: the verified worst-case epsilon over every neighbour at
            ``delta`` (`rr_worst_case_epsilon`), or the calibrated target (at least as large)
            for a calibrated protocol.
        """
        if "event" in self.__dict__:
            return self.event.guarantee
        return PrivacyGuarantee(
            _headline_epsilon(self.n_users, self.flip_probability, self.delta), self.delta, Neighbouring.REPLACE_ONE
        )

    def _event_for_fewer(self, n_participants: int) -> PrivacyEvent:
        return self._event_for(n_participants)

    def _event_for(self, n_participants: int) -> PrivacyEvent:
        if self.composition == "guarantee" or not _profile_computable(n_participants, self.flip_probability, self.delta):
            return _rr_event(_headline_epsilon(n_participants, self.flip_probability, self.delta), self.delta)
        epsilon = _headline_epsilon(n_participants, self.flip_probability, self.delta)
        # every neighbour's epsilon at delta is at most this epsilon, so every delta at it is at most delta
        profile = _worst_case_profile(n_participants, self.flip_probability, self.delta, epsilon, self.delta)
        if profile.delta(epsilon) <= self.delta * (1 + _RTOL):  # tight at the verified epsilon
            return ProfileEvent(profile, PrivacyGuarantee(epsilon, self.delta, Neighbouring.REPLACE_ONE))
        return ProfileEvent.at_delta(profile, self.delta)

    @property
    def generic_event(self) -> PrivacyEvent:
        """The verified headline as a generic (epsilon, delta) mechanism (the ``composition="guarantee"`` event)."""
        return _rr_event(_headline_epsilon(self.n_users, self.flip_probability, self.delta), self.delta)


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

    Robustness:
        One report per sender and instance (`per_sender_message_cap` 1). ``k`` malicious senders
        shift each instance's estimate by at most ``k (1 - q)/(1 - 2q)`` (all reporting 1;
        `manipulation_bound`), against an honest contribution between 0 and ``k``.

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
    """`rr_worst_case_profile` with an absolute slack of ``1e-3 delta`` and the sample at ``epsilon`` at most ``bound``.

    ``bound`` must be an upper bound on every neighbour's delta at ``epsilon``, already proved by
    the caller (the calibration's verification, or the verified epsilon at ``delta``).
    """
    atol = _profile_atol(delta)
    crowd = _computed_crowd(n_users, flip, _profile_tail(atol))
    grid, upper = _regular_samples(crowd, flip, atol, _PROFILE_RESOLUTION, _ENVELOPE_STRETCH, _ENVELOPE_RTOL)
    return _envelope(grid, upper, np.array([epsilon]), np.array([bound]))


def worst_case_event(n_users: int, flip: float, delta: float) -> ProfileEvent:
    """The worst-case profile's event with the headline the profile itself gives at ``delta``.

    The same pair as `RRBitSum.event`'s but without the verified headline sample (so without its
    search over every neighbour for the headline): for calibrations that only compose it.
    """
    atol = _profile_atol(delta)
    crowd = _computed_crowd(n_users, flip, _profile_tail(atol))
    grid, upper = _regular_samples(crowd, flip, atol, _PROFILE_RESOLUTION, _ENVELOPE_STRETCH, _ENVELOPE_RTOL)
    return ProfileEvent.at_delta(_envelope(grid, upper, np.zeros(0), np.zeros(0)), delta)


def _profile_atol(delta: float) -> float:
    return min(1e-3, _PROFILE_ATOL_SHARE * delta)


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
# Worst case over every neighbour (privsum.bitsum._rr_worst_case): a few neighbours evaluated
# exactly, the rest covered by blocks, each bounded by ONE pair (that of n - m users), so only a
# few hundred pairs are evaluated at any n.
# ---------------------------------------------------------------------------------------------

# Mass cut from each tail of each binomial (Bernstein's inequality); it is added to delta.
_TAIL_MASS = 1e-30
# Relative slack of the worst-case epsilon and deltas above the exact maximum over k.
_BOUND_RTOL = 1e-9
# Slack of the worst-case profile's samples (`rr_worst_case_profile`): at most the exact maximum
# at an epsilon smaller by this factor, or (near epsilon 0) this relative amount above it.
_ENVELOPE_STRETCH = 1.0025
_ENVELOPE_RTOL = 5e-3
# Epsilon step of the worst-case profile's samples (`rr_worst_case_profile`'s default): a power of
# two, so that its multiples are exact and the profile's privacy-loss distribution is exact at it.
_PROFILE_RESOLUTION = 2.0**-10
# Absolute slack of an RRBitSum event's profile samples, as a share of its delta.
_PROFILE_ATOL_SHARE = 1e-3
# Work (binomial-window points over the pairs evaluated) of a protocol's headline epsilon and of
# a worst-case profile: the worst case to 1e-9 (headline) or to the profile's slack while it
# suffices, a bound with up to about a percent of slack beyond (very large n q (1-q)).
_HEADLINE_WORK = 4e6
_PROFILE_WORK = 4e6
# Widest binomial window (points; 8 MiB of float64) a worst-case computation builds. RRBitSum's
# headline and profile for a larger crowd (n q (1 - q) above about 3 10^9 at delta = 1e-8) are
# those of the largest crowd within it, an upper bound (`_computed_crowd`); the functions exact
# to 1e-9 refuse such crowds.
_WIDEST_WINDOW = 2**20
# Widest window of a protocol's worst-case profile: the samples of a larger crowd (n q (1 - q)
# above about 5 10^8) would take minutes, so its event is the verified headline as a generic
# (epsilon, delta) pair.
_PROFILE_WIDEST_WINDOW = 2**19
# Work of the tight calibration's check over every neighbour; beyond it the headline decides.
_VERIFY_WORK = 4e6
# Steps of the headline-decided calibration before it settles for the epsilon-LDP flip.
_HEADLINE_STEPS = 16


def rr_worst_case_delta_bound(
    n_users: int, flip_probability: float, epsilons: float | np.ndarray, *, return_worst_k: bool = False
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Upper bound, within a relative ``1e-9``, on the worst-case delta of shuffled RR over every neighbour.

    Same quantity as `privsum.bitsum.exact.rr_worst_case_delta` (the reference, which visits
    every ``k``), computed from a few hundred pairs instead of ``n / 2``.

    Privacy:
        Replace-one. Block bound (proved): for ``k`` in ``[a, a + m]`` write
        ``n-1-k = (n-1-a-m) + (a+m-k)`` and ``k = a + (k-a)``: the others' count is that of
        ``n - m`` users with ``a`` ones among the others plus an independent count, a Markov
        kernel applied to both distributions of the pair. The hockey-stick divergence is an
        f-divergence, so by the data-processing inequality ``delta_k(e) <= delta^(n-m)_a(e)`` for
        every ``e`` and both directions. Symmetry ``k <-> n-1-k`` (reflect the count, swap
        directions) leaves ``k <= (n-1)/2``. Every neighbour is either evaluated exactly or in a
        block whose bound is within ``1e-9`` (relative) of an exactly evaluated neighbour at every
        epsilon, and those bounds enter the result, so it is an upper bound on the exact maximum.
        Binomial tails beyond a Bernstein radius (at most ``1e-30`` per side) are counted as
        infinite loss.

    Args:
        n_users: users taking part.
        flip_probability: the RR flip probability in ``(0, 0.5)``.
        epsilons: one or more epsilon values ``>= 0``.
        return_worst_k: also return the ``k <= (n-1)/2`` of the exactly evaluated neighbour that
            last raised the maximum.

    Examples:
        >>> bound = rr_worst_case_delta_bound(100_000, 3.4e-4, [0.7, 1.0])
        >>> bool(bound[0] > bound[1] > 0)
        True
    """
    owner = "rr_worst_case_delta_bound"
    n_users = check_integer(n_users, "n_users", owner, low=1)
    if not isinstance(return_worst_k, (bool, np.bool_)):
        raise invalid("return_worst_k", owner, "True or False", return_worst_k)
    flip = _checked_flip(flip_probability, owner)
    eps = _checked_epsilons(epsilons, owner)
    n_users = _check_computable(n_users, flip, _TAIL_MASS, owner)
    upper, worst_k = worst_case_deltas(n_users, flip, eps, rtol=_BOUND_RTOL, atol=4 * _TAIL_MASS, tail_mass=_TAIL_MASS)
    return (upper, np.full(eps.size, worst_k, dtype=np.int64)) if return_worst_k else upper


def rr_worst_case_epsilon(n_users: int, flip_probability: float, delta: float) -> float:
    """Upper bound, within a relative ``1e-9``, on ``max_k epsilon_k(delta)`` over every neighbour ``k``.

    ``max_k delta_k(e) <= delta`` holds exactly when ``e >= epsilon_k(delta)`` for every ``k``, so
    this is the smallest epsilon the worst case backs at ``delta`` (rounded up). Same block bound
    as `rr_worst_case_delta_bound` (a pair dominating a block has a larger ``epsilon(delta)``);
    blocks large enough also keep part of the noise of the users the bound drops (each report
    is a fair coin with probability ``2q``, whatever the bit: joint convexity of the hockey-stick
    divergence over which reports are coins). One neighbour's epsilon needs no convolution (its
    count is log-concave, so the hockey-stick sums are prefix and suffix sums at a crossing
    found by search), but the number of neighbours to evaluate exactly grows with ``n`` (about
    ``sqrt(n)``): at 10^6 users and ``q = 1/4`` this takes seconds. `RRBitSum`'s headline bounds
    the work instead (and its slack, stated there).

    Raises:
        InvalidParameterError: ``n_users`` so large that a binomial window of the others' count
            would pass 2^20 points (``n q (1-q)`` above about 2 10^9).

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
    return _verified_epsilon(_check_computable(n_users, flip, _bound_tail(delta), owner), flip, delta)


def rr_worst_case_profile(
    n_users: int,
    flip_probability: float,
    *,
    atol: float = 1e-15,
    resolution: float = _PROFILE_RESOLUTION,
    epsilons: Any = (),
    stretch: float = _ENVELOPE_STRETCH,
    rtol: float = _ENVELOPE_RTOL,
) -> PrivacyProfile:
    """A symmetric pair dominating shuffled RR's profile for **every** neighbour, both directions.

    The maximum ``m(e)`` over every ``k`` (ones among the others) and both directions of the
    exact ``delta_k(e)`` is sampled on a grid of epsilons (step ``resolution``, from 0 to the
    largest possible privacy loss ``log((1-q)/q)``, plus any ``epsilons`` given): every sample is
    an upper bound on ``m`` and at most ``max(m(e / stretch), m(e) (1 + rtol), atol)``. The slack
    is a block bound's natural one (dropping users acts like shrinking epsilon); composing the
    pair costs about half of ``max(stretch - 1, rtol)`` in the composed epsilon. The pair whose
    profile is the chord interpolation of the samples is built by
    `privsum.accounting.envelope.symmetric_pair_from_samples`. Its profile is at least every
    ``delta_k`` at every epsilon (chords of a convex curve lie above it), and its privacy-loss
    distribution composes RR by its worst case (`RRBitSum.event`).

    Args:
        n_users: users taking part.
        flip_probability: the RR flip probability in ``(0, 0.5)``.
        atol: absolute slack accepted in each sample (half for the blocks, half for the error
            bound of FFT convolutions, both counted in full).
        resolution: epsilon step of the samples; a power of two (the default, 2^-10) makes them exact
            multiples, so that the pair's privacy-loss distribution at that step is exact.
        epsilons: extra sample points, where the sample is tight to a relative ``1e-9`` (plus
            ``1e-6 atol``): a tighter upper bound than the grid's (lowering one sample of a convex
            curve keeps the chords convex and above the curve).
        stretch: the horizontal slack factor, at least 1 (see above).
        rtol: the relative slack, at least 0 (see above).

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
    stretch = check_real(stretch, "stretch", owner, low=1.0, high=2.0)
    rtol = check_real(rtol, "rtol", owner, low=0.0, high=1.0)
    extra = _checked_epsilons(epsilons, owner) if np.size(epsilons) else np.zeros(0)
    largest_loss = _largest_loss(flip)
    if math.ceil(largest_loss / resolution) > 1_000_000:
        raise invalid("resolution", owner, f"coarse enough for at most 10^6 samples up to epsilon {largest_loss:.3g}", resolution)
    n_users = _check_computable(n_users, flip, min(_profile_tail(atol), _TAIL_MASS, atol * 1e-9), owner)
    grid, upper = _regular_samples(n_users, flip, atol, resolution, stretch, rtol)
    extra = extra[extra < largest_loss]
    tight = np.zeros(0)
    if extra.size:  # the requested points to within a relative 1e-9: tighter upper bounds join the samples
        tight, _ = worst_case_deltas(
            n_users, flip, extra, rtol=_BOUND_RTOL, atol=atol * 1e-6, tail_mass=min(_TAIL_MASS, atol * 1e-9)
        )
    return _envelope(grid, upper, extra, tight)


def _largest_loss(flip: float) -> float:
    """Every likelihood ratio of the count view is below ``e^`` this."""
    return math.log((1.0 - flip) / flip) + 1e-9


@functools.lru_cache(maxsize=32)
def _regular_samples(
    n_users: int, flip: float, atol: float, resolution: float, stretch: float, rtol: float
) -> tuple[np.ndarray, np.ndarray]:
    """The worst case's upper bounds on the grid of step ``resolution`` from 0 to the largest loss (read-only, cached)."""
    grid = resolution * np.arange(math.ceil(_largest_loss(flip) / resolution) + 1)  # exact multiples of the step
    upper = worst_case_samples(
        n_users,
        flip,
        grid,
        stretch=stretch,
        rtol=rtol,
        atol=atol / 2,
        tail_mass=_profile_tail(atol),
        fft_delta_error=atol / 2,
        work=_PROFILE_WORK,
    )
    grid.setflags(write=False)
    upper.setflags(write=False)
    return grid, upper


def _envelope(grid: np.ndarray, upper: np.ndarray, points: np.ndarray, bounds: np.ndarray) -> SampledEnvelope:
    """The symmetric pair of the samples, with upper bounds ``bounds`` at ``points`` as further samples.

    Every sample is an upper bound on the maximum profile at its epsilon, so adding proved bounds
    at more points keeps the chords above it (where a point is already on the grid, the smaller
    of the two bounds is kept). The grid's step, when a power of two, is the pair's loss step.
    """
    step = float(grid[1] - grid[0])
    inside = points < grid[-1]  # beyond the last sample the profile is constant already
    points, bounds = points[inside], bounds[inside]
    merged = np.union1d(grid, points)
    samples = np.ones(merged.size)
    samples[np.searchsorted(merged, grid)] = upper
    at = np.searchsorted(merged, points)
    samples[at] = np.minimum(samples[at], bounds)
    return symmetric_pair_from_samples(
        merged,
        np.minimum(samples, 1.0),
        neighbouring=Neighbouring.REPLACE_ONE,
        loss_step=step if math.frexp(step)[0] == 0.5 else None,
    )


def _profile_tail(atol: float) -> float:
    """Tail mass of the profile's pairs: tiny, since their cut is the profile's mass of infinite loss (a delta floor)."""
    return min(_TAIL_MASS, atol * 1e-6)


def _checked_flip(value: float, owner: str) -> float:
    return check_real(value, "flip_probability", owner, low=0.0, high=0.5, low_open=True, high_open=True)


def _checked_epsilons(epsilons: float | np.ndarray, owner: str) -> np.ndarray:
    if isinstance(epsilons, bool):
        raise invalid("epsilons", owner, "finite values >= 0", epsilons)
    eps = np.atleast_1d(check_array(epsilons, "epsilons", owner, ndim=(0, 1))).astype(float)
    if not (eps.ndim == 1 and np.all(np.isfinite(eps)) and np.all(eps >= 0)):
        raise invalid("epsilons", owner, "finite values >= 0", epsilons)
    return eps


def _bound_tail(delta: float) -> float:
    """Tail mass of the pairs checked against ``delta``: their cut (four tails) costs at most ``4e-12 delta``."""
    return min(1e-20, 1e-12 * delta)


def _meets_target(n_users: int, flip: float, epsilon: float, delta: float) -> tuple[bool, int, float]:
    """Whether every neighbour's delta at ``epsilon`` is at most ``delta`` (up to float rounding).

    Returns ``(meets, k, bound)``: a violating ``k`` when it does not meet the target, and
    ``bound``, an upper bound on every neighbour's delta at ``epsilon`` when it does (the largest
    bound of the settled blocks and exactly evaluated neighbours).

    Raises:
        OutOfWorkError: the check needs more than `_VERIFY_WORK`.
    """
    tail = _bound_tail(delta)
    crowd = _computed_crowd(n_users, flip, tail)
    return meets_target(crowd, flip, epsilon, delta * (1 + _RTOL), tail_mass=tail, work=_VERIFY_WORK)


def _tight_flip_probability(epsilon: float, delta: float, n_users: int) -> tuple[float, float]:
    """Least ``q`` (within a relative ``1e-6`` of ``log q``) against a growing set of neighbours, verified over all of them.

    Returns ``(q, bound)``: ``bound`` is an upper bound on every neighbour's delta at
    ``epsilon``, at most ``delta (1 + 1e-9)`` (``delta`` itself for the epsilon-LDP flip).
    """
    local = 1.0 / (1.0 + math.exp(epsilon))  # epsilon-LDP: meets any delta
    tail = _bound_tail(delta)
    n_users = _computed_crowd(n_users, local, tail)  # every q searched is below local: narrower windows
    candidates = {0}
    log_start = None
    for _ in range(40):

        def delta_at(log_flip: float, ks: frozenset[int] = frozenset(candidates)) -> float:
            flip = math.exp(log_flip)
            return max(count_pair(n_users - 1 - k, k, flip, tail).delta_at(epsilon) for k in ks)

        lowest = math.log(_SMALLEST_FLIP) if log_start is None else log_start  # more neighbours need at least as much noise
        try:
            log_flip = calibrate(
                delta_at, target_delta=delta, lower=lowest, upper=math.log(local), more_private="increasing", method="illinois"
            )
        except InvalidParameterError:  # delta below the numerical accuracy of the bound: epsilon-LDP meets any delta
            return local * (1.0 + 1e-12), delta  # rounded towards more privacy: its local epsilon is below epsilon
        flip = min(math.exp(log_flip), local)
        try:
            meets, violating_k, bound = _meets_target(n_users, flip, epsilon, delta)
        except OutOfWorkError:  # too many neighbours to verify one by one: the budgeted headline decides
            return _headline_flip_probability(epsilon, delta, n_users, flip), delta
        if meets:
            return flip, bound
        candidates.add(violating_k)
        log_start = log_flip
    raise RuntimeError("RRBitSum: tight calibration did not converge; use calibration='analytic'")  # pragma: no cover


def _headline_flip_probability(epsilon: float, delta: float, n_users: int, flip: float) -> float:
    """A ``q`` at least ``flip`` whose headline (`_headline_epsilon`) is at most ``epsilon``, near the least such.

    Every neighbour's delta at the headline, hence at ``epsilon``, is then at most ``delta``.
    ``flip`` must be a lower bound (tight against some neighbours). The headline's slack (about a
    percent at most) makes ``q`` up to a few percent larger than the tight one. Steps up scale
    ``q`` by the squared ratio of the headline to the target (epsilon falls about as
    ``1/sqrt(q)`` here); once a ``q`` meets the target, bisection (in ``log q``) narrows the gap
    to a relative ``1e-3`` within `_HEADLINE_STEPS` headlines in all.
    """
    local = 1.0 / (1.0 + math.exp(epsilon))
    low, high = flip, None  # low misses the target (or is the lower bound); high meets it
    for _ in range(_HEADLINE_STEPS):
        if high is None:
            trial = flip
        elif high <= low * (1.0 + 1e-3):
            break
        else:
            trial = math.sqrt(low * high)
        headline = _headline_epsilon(n_users, trial, delta)
        if headline <= epsilon:
            high = trial
        else:
            low = trial
            if high is None:
                if flip >= local:
                    break
                flip = min(local, flip * max(1.0 + 1e-3, (headline / epsilon) ** 2))
    if high is None:
        return local * (1.0 + 1e-12)  # epsilon-LDP, rounded towards more privacy: meets any delta
    return high


def _verified_epsilon(n_users: int, flip: float, delta: float, work: float | None = None) -> float:
    """Smallest epsilon (rounded up) whose worst-case delta over every neighbour is at most ``delta``.

    Within a relative ``1e-9`` without a ``work`` budget; with one, an upper bound whose slack
    grows only when the budget does not suffice (`privsum.bitsum._rr_worst_case.worst_case_epsilon`).
    Never above the local epsilon ``log((1-q)/q)`` (every neighbour's privacy loss is below it).
    """
    shuffled = worst_case_epsilon(n_users, flip, delta, rtol=_BOUND_RTOL, tail_mass=_bound_tail(delta), work=work)
    return min(shuffled, _largest_loss(flip))


def _headline_epsilon(n_users: int, flip: float, delta: float) -> float:
    """A protocol's headline: `_verified_epsilon` within the work of `_HEADLINE_WORK`, for at most `_computed_crowd` users."""
    return _verified_epsilon(_computed_crowd(n_users, flip, _bound_tail(delta)), flip, delta, _HEADLINE_WORK)


def _computed_crowd(n_users: int, flip: float, tail_mass: float) -> int:
    """The users a protocol's worst case is computed for: ``n_users``, or fewer where its windows would be too wide.

    Fewer users bound more (the block bound: ``n`` users' count is that of fewer plus an
    independent count), so the result stays an upper bound; it stops falling with ``n``.
    """
    return min(n_users, largest_crowd(flip, tail_mass, _WIDEST_WINDOW))


def _profile_computable(n_users: int, flip: float, delta: float) -> bool:
    """Whether a protocol's worst-case profile is built for this crowd (windows within `_PROFILE_WIDEST_WINDOW`)."""
    return window_points(n_users - 1, flip, _profile_tail(_profile_atol(delta))) <= _PROFILE_WIDEST_WINDOW


def _check_computable(n_users: int, flip: float, tail_mass: float, owner: str) -> int:
    """``n_users`` if the exact worst case's windows fit `_WIDEST_WINDOW` points, else an error naming it."""
    largest = largest_crowd(flip, tail_mass, _WIDEST_WINDOW)
    if n_users > largest:
        raise invalid(
            "n_users",
            owner,
            f"at most {largest} at flip_probability={flip:.6g} (the exact worst case's binomial windows "
            f"would exceed {_WIDEST_WINDOW} points; RRBitSum bounds larger crowds by this one)",
            n_users,
        )
    return n_users
