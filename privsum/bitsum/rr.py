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
from privsum._validation import (
    check_choice,
    check_delta,
    check_epsilon,
    check_integer,
    check_privacy_request,
    check_real,
    invalid,
)
from privsum.accounting.events import GuaranteeEvent, PrivacyEvent, ProfileEvent
from privsum.accounting.guarantee import Neighbouring, PrivacyGuarantee
from privsum.accounting.profile import randomized_response_profile
from privsum.bitsum._rr_accounting import (
    VERIFIED_RTOL,
    headline_epsilon,
    meets_flip_target,
    profile_computable,
    rr_worst_case_delta_bound,
    rr_worst_case_epsilon,
    rr_worst_case_profile,
    tight_flip_probability,
    verified_worst_case_profile,
)
from privsum.bitsum._rr_compositions import calibrated_for_compositions
from privsum.bitsum._rr_worst_case import OutOfWorkError
from privsum.bitsum.base import BitSumProtocol, check_calibration, instance_ids
from privsum.shuffle.histogram import MessageHistogram
from privsum.shuffle.messages import MessageBatch

__all__ = ["LocalRRBitSum", "RRBitSum", "rr_worst_case_delta_bound", "rr_worst_case_epsilon", "rr_worst_case_profile"]

# Blocks of the counting faithful view: at most 255 users (so that per-block counts fit in uint8)
# and about 2^15 entries (256 KiB of float64 uniforms: the block stays in a core's L2 cache).
_MAX_BLOCK_ROWS = 255
_BLOCK_ENTRIES = 1 << 15
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
        epsilon, delta, n_users = check_privacy_request(epsilon, delta, n_users, owner)
        calibration = check_calibration(calibration, owner)
        composition = check_choice(composition, "composition", owner, RR_COMPOSITIONS)
        if calibration == "analytic":
            flip = _csuzz_flip_probability(epsilon, delta, n_users)
            return cls(n_users=n_users, flip_probability=flip, delta=delta, composition=composition)
        flip, bound = tight_flip_probability(epsilon, delta, n_users)  # verified over every neighbour at epsilon
        if composition == "guarantee":
            protocol = cls(n_users=n_users, flip_probability=flip, delta=delta, composition=composition)
            protocol.__dict__["event"] = _rr_event(epsilon, delta)  # pre-fill the cached property
            return protocol
        if not profile_computable(n_users, flip, delta):  # a crowd too large for the profile: the verified target
            protocol = cls(n_users=n_users, flip_probability=flip, delta=delta, composition=composition)
            protocol.__dict__["event"] = _rr_event(epsilon, delta)
            return protocol
        if flip > 1.0 / (1.0 + math.exp(epsilon)):  # delta below the bounds' accuracy: the epsilon-LDP flip
            protocol = cls(n_users=n_users, flip_probability=flip, delta=delta, composition=composition)
            local = randomized_response_profile(math.log((1.0 - flip) / flip))  # dominates the shuffled output
            protocol.__dict__["event"] = ProfileEvent(local, PrivacyGuarantee(epsilon, delta, Neighbouring.REPLACE_ONE))
            return protocol
        for _ in range(_HEADLINE_NUDGES):  # float rounding of the chords may need a slightly larger q
            profile = verified_worst_case_profile(n_users, flip, delta, epsilon, bound)
            if profile.delta(epsilon) <= delta * (1 + VERIFIED_RTOL):
                protocol = cls(n_users=n_users, flip_probability=flip, delta=delta, composition=composition)
                protocol.__dict__["event"] = ProfileEvent(profile, PrivacyGuarantee(epsilon, delta, Neighbouring.REPLACE_ONE))
                return protocol
            flip = min(flip * (1.0 + 1e-3), 1.0 / (1.0 + math.exp(epsilon)))
            with contextlib.suppress(OutOfWorkError):  # a larger q keeps the bound: RR(q') garbles RR(q)
                bound = meets_flip_target(n_users, flip, epsilon, delta)[2]
        raise RuntimeError("RRBitSum: the worst-case profile misses the calibrated target")  # pragma: no cover

    @classmethod
    def calibrate_for_compositions(cls, **request: Any) -> RRBitSum | None:
        """Tight RR composed by its profile: its flip probability searched directly (`calibrated_for_compositions`)."""
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
            headline_epsilon(self.n_users, self.flip_probability, self.delta), self.delta, Neighbouring.REPLACE_ONE
        )

    def _event_for_fewer(self, n_participants: int) -> PrivacyEvent:
        return self._event_for(n_participants)

    def _event_for(self, n_participants: int) -> PrivacyEvent:
        if self.composition == "guarantee" or not profile_computable(n_participants, self.flip_probability, self.delta):
            return _rr_event(headline_epsilon(n_participants, self.flip_probability, self.delta), self.delta)
        epsilon = headline_epsilon(n_participants, self.flip_probability, self.delta)
        # every neighbour's epsilon at delta is at most this epsilon, so every delta at it is at most delta
        profile = verified_worst_case_profile(n_participants, self.flip_probability, self.delta, epsilon, self.delta)
        if profile.delta(epsilon) <= self.delta * (1 + VERIFIED_RTOL):  # tight at the verified epsilon
            return ProfileEvent(profile, PrivacyGuarantee(epsilon, self.delta, Neighbouring.REPLACE_ONE))
        return ProfileEvent.at_delta(profile, self.delta)

    @property
    def generic_event(self) -> PrivacyEvent:
        """The verified headline as a generic (epsilon, delta) mechanism (the ``composition="guarantee"`` event)."""
        return _rr_event(headline_epsilon(self.n_users, self.flip_probability, self.delta), self.delta)


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
