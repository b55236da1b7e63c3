"""Randomized response bit sums: shuffled (CSUZZ19, exact calibration) and the local baseline."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from privsum._random import RNGLike, as_generator
from privsum._validation import check_delta, check_epsilon, check_integer, check_real, invalid
from privsum.accounting.calibration import calibrate
from privsum.accounting.events import GuaranteeEvent, PrivacyEvent, ProfileEvent
from privsum.accounting.guarantee import Neighbouring, PrivacyGuarantee
from privsum.accounting.profile import randomized_response_profile
from privsum.bitsum.base import BitSumProtocol, check_calibration, instance_ids
from privsum.bitsum.exact import rr_profile, rr_worst_case_delta
from privsum.shuffle.histogram import MessageHistogram
from privsum.shuffle.messages import MessageBatch

__all__ = ["LocalRRBitSum", "RRBitSum"]

_SMALLEST_FLIP = 1e-12
# A verified delta may exceed its target only by float rounding.
_RTOL = 1e-9


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


@dataclass(frozen=True, kw_only=True)
class RRBitSum(_FlippedReports):
    """Shuffled binary randomized response (Cheu, Smith, Ullman, Zeber & Zhilyaev 2019).

    Each user sends one 1-bit message, its bit flipped with probability ``flip_probability``;
    the analyzer counts the ones ``C`` and outputs ``(C - n q)/(1 - 2q)``.

    Args:
        n_users: users the guarantee is computed for (at least this many must take part).
        flip_probability: ``q`` in ``(0, 0.5)``.
        delta: the delta at which the headline epsilon is reported, in ``(0, 1)``.

    Privacy:
        Replace-one, for one instance. The adversary sees the count and knows every other bit;
        with ``k`` ones among the others the pair is
        ``Bin(k,1-q) + Bin(n-1-k,q) + Bern(q)`` versus ``... + Bern(1-q)``. The headline epsilon is
        the smallest one whose delta, **maximised over every k = 0..n-1 and both directions**,
        is at most ``delta`` (`privsum.bitsum.exact.rr_worst_case_delta`, exact up to floating
        point). The worst ``k`` depends on epsilon (at ``n = 10^5``, ``q = 3.4e-4`` it is
        ``k = 0`` at epsilon 1 but ``k ~ 290`` at epsilon 0.7), so no single pair dominates at
        every epsilon: the event is a `GuaranteeEvent` and composes as a generic
        (epsilon, delta) mechanism.

    Utility:
        Unbiased; variance ``n q(1-q)/(1-2q)^2`` for every true sum. One 1-bit message per user.

    References:
        Cheu et al., "Distributed Differential Privacy via Shuffling", EUROCRYPT 2019 (analytic
        calibration, SPEC section 2.1).

    Examples:
        >>> protocol = RRBitSum(n_users=1000, flip_probability=0.05, delta=1e-6)
        >>> estimate = protocol.run(np.ones((1000, 2), dtype=int), rng=0)
        >>> estimate.shape
        (2,)
    """

    n_users: int
    flip_probability: float
    delta: float

    def __post_init__(self) -> None:
        owner = type(self).__name__
        object.__setattr__(self, "n_users", check_integer(self.n_users, "n_users", owner, low=1))
        flip = check_real(self.flip_probability, "flip_probability", owner, low=0.0, high=0.5, low_open=True, high_open=True)
        object.__setattr__(self, "flip_probability", flip)
        object.__setattr__(self, "delta", check_delta(self.delta, owner, allow_zero=False))

    @classmethod
    def from_privacy(cls, *, epsilon: float, delta: float, n_users: int, calibration: str = "tight") -> RRBitSum:
        """The least flip probability meeting (epsilon, delta) for ``n_users`` users.

        Args:
            epsilon: target epsilon per instance.
            delta: target delta per instance, in ``(0, 1)``.
            n_users: users taking part.
            calibration: ``"tight"``: bisection on ``q`` against the exact worst case over every
                neighbour (checked at the result); ``"analytic"``: CSUZZ19 as in the seed's
                reference code, ``lambda = 64 log(4/delta)/epsilon^2`` if
                ``epsilon >= sqrt(192 log(4/delta)/n)``, else
                ``lambda = n - epsilon n^1.5/sqrt(432 log(4/delta))``; ``q = lambda/(2n)``.

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
        if calibration == "analytic":
            flip = _csuzz_flip_probability(epsilon, delta, n_users)
            return cls(n_users=n_users, flip_probability=flip, delta=delta)
        flip = _tight_flip_probability(epsilon, delta, n_users)  # verified over every neighbour at epsilon
        protocol = cls(n_users=n_users, flip_probability=flip, delta=delta)
        protocol.__dict__["event"] = _rr_event(epsilon, delta)  # pre-fill the cached property
        return protocol

    @functools.cached_property
    def event(self) -> PrivacyEvent:
        """Verified (epsilon, delta) of one instance, replace-one (see the class docstring)."""
        return _rr_event(_verified_epsilon(self.n_users, self.flip_probability, self.delta), self.delta)

    def _event_for_fewer(self, n_participants: int) -> PrivacyEvent:
        return _rr_event(_verified_epsilon(n_participants, self.flip_probability, self.delta), self.delta)


@dataclass(frozen=True, kw_only=True)
class LocalRRBitSum(_FlippedReports):
    """Local randomized response: the baseline without shuffling (seed 000 App. C).

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


def _worst_delta(n_users: int, flip: float, epsilon: float) -> tuple[float, int]:
    worst, worst_k = rr_worst_case_delta(n_users, flip, epsilon, return_worst_k=True)
    return float(worst[0]), int(worst_k[0])


def _tight_flip_probability(epsilon: float, delta: float, n_users: int) -> float:
    """Bisection on ``log q`` against the worst of a growing set of neighbours, verified over all of them."""
    local = 1.0 / (1.0 + math.exp(epsilon))  # epsilon-LDP: meets any delta
    candidates = {0}
    for _ in range(20):

        def delta_at(log_flip: float, ks: frozenset[int] = frozenset(candidates)) -> float:
            flip = math.exp(log_flip)
            return max(float(rr_profile(n_users, flip, k).delta(epsilon)) for k in ks)

        log_flip = calibrate(
            delta_at,
            target_delta=delta,
            lower=math.log(_SMALLEST_FLIP),
            upper=math.log(local),
            more_private="increasing",
            tolerance=1e-6,
        )
        flip = min(math.exp(log_flip), local)
        worst, worst_k = _worst_delta(n_users, flip, epsilon)
        if worst <= delta * (1 + _RTOL):
            return flip
        candidates.add(worst_k)
    raise RuntimeError("RRBitSum: tight calibration did not converge; use calibration='analytic'")  # pragma: no cover


def _verified_epsilon(n_users: int, flip: float, delta: float) -> float:
    """Smallest epsilon (up to float rounding) whose worst-case delta over every neighbour is at most ``delta``."""
    candidates = {0}
    for _ in range(40):
        epsilon = max(rr_profile(n_users, flip, k).epsilon(delta) for k in candidates)
        if not math.isfinite(epsilon):
            return math.inf
        worst, worst_k = _worst_delta(n_users, flip, epsilon)
        if worst <= delta * (1 + _RTOL):
            return epsilon
        if worst_k in candidates:  # float rounding between the two computations: step up a little
            start = epsilon * (1 + 1e-9) + 1e-12
            while _worst_delta(n_users, flip, start)[0] > delta * (1 + _RTOL):
                start = start * (1 + 1e-6) + 1e-9
            return start
        candidates.add(worst_k)
    raise RuntimeError("RRBitSum: could not verify epsilon")  # pragma: no cover
