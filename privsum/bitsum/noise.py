"""Bit sums by divisible noise messages: 3NB (GKMP20) and a verified pure-DP variant (after GKM23).

Both send messages ``+1`` and ``-1``; the analyzer sees the two counts ``(#(+1), #(-1))`` per
instance and estimates ``(#(+1) - #(-1)) / (1 - drop_probability)``.

References:
    Wagner, "Learning from End User Data with Shuffled Differential Privacy over Kernel
    Densities", ICLR 2025.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, signal, stats

from privsum._random import RNGLike, as_generator
from privsum._validation import (
    check_array,
    check_choice,
    check_delta,
    check_epsilon,
    check_integer,
    check_privacy_request,
    check_probability,
    check_real,
    invalid,
)
from privsum.accounting.events import GuaranteeEvent, PrivacyEvent, ProfileEvent
from privsum.accounting.guarantee import Neighbouring, PrivacyGuarantee
from privsum.accounting.profile import PrivacyProfile
from privsum.bitsum._3nb_calibration import COMMUNICATION_VARIANCE_FACTOR, calibrated_parameters, exact_or_refused, tail_for
from privsum.bitsum.base import (
    EXACT,
    BitSumProtocol,
    check_calibration,
    fit_for_compositions,
    signed_histogram,
    signed_messages,
    symmetric_noise_half_width,
)
from privsum.bitsum.exact import pure_epsilon_bound, signed_count_dominating_profile, signed_count_profile
from privsum.shuffle.caps import noise_cap
from privsum.shuffle.histogram import MessageHistogram
from privsum.shuffle.messages import MessageBatch
from privsum.shuffle.noise import sample_negative_binomial
from privsum.shuffle.protocol import SenderCap
from privsum.shuffle.robustness import weighted_negative_binomial_cap

__all__ = ["PureBitSum", "ThreeNBBitSum"]

_RTOL = 1e-9
# flooding="communication": the largest variance factor accepted (the default is COMMUNICATION_VARIANCE_FACTOR).
MAX_VARIANCE_FACTOR = 16.0
FLOODING_CHOICES = ("paper", "communication")
#: `ThreeNBBitSum.calibrate_for_compositions` without ``flooding``: ``"communication"`` with this
#: variance factor wherever its per-instance RMSE is within ``COMPOSITION_RMSE_TOLERANCE`` (1%) of
#: the paper flooding's (the composition buys the variance back), else the paper's.
COMPOSITION_VARIANCE_FACTOR = 4.0
COMPOSITION_RMSE_TOLERANCE = 0.01


class _SignedCounts(BitSumProtocol):
    """User ``i`` sends ``kept_i + psi1 + psi3`` messages ``+1`` and ``psi2 + psi3`` messages ``-1``.

    ``kept_i`` is the bit, dropped with probability ``drop_probability``; ``psi1, psi2 ~
    NB(noise_shape/n, noise_ratio)``, ``psi3 ~ NB(flooding_shape/n, flooding_ratio)`` with
    ``n = n_users`` (the calibration), so that over ``n`` users the noise is ``NB(noise_shape, .)``.
    """

    n_users: int
    noise_shape: float
    noise_ratio: float
    flooding_shape: float
    flooding_ratio: float
    drop_probability: float

    def _validate_noise(self) -> None:
        owner = type(self).__name__
        object.__setattr__(self, "n_users", check_integer(self.n_users, "n_users", owner, low=1))
        object.__setattr__(self, "noise_shape", check_real(self.noise_shape, "noise_shape", owner, low=0.0, low_open=True))
        object.__setattr__(self, "noise_ratio", check_probability(self.noise_ratio, "noise_ratio", owner))
        object.__setattr__(self, "flooding_shape", check_real(self.flooding_shape, "flooding_shape", owner, low=0.0))
        object.__setattr__(self, "flooding_ratio", check_probability(self.flooding_ratio, "flooding_ratio", owner))

    @property
    def alphabet(self) -> tuple[int, ...]:
        return (-1, 1)

    @staticmethod
    def _mean(shape: float, ratio: float) -> float:
        return shape * ratio / (1.0 - ratio)

    def expected_messages(self, fraction_of_ones: float = 1.0) -> float:
        """Expected messages per user and instance when a ``fraction_of_ones`` of users hold 1.

        ``(1 - q) * fraction + 2 E[psi1] + 2 E[psi3]``: the bit (if kept), the noise messages of
        both signs and the flooding pairs, which cancel in the estimate but are sent.
        """
        fraction = check_real(fraction_of_ones, "fraction_of_ones", type(self).__name__, low=0.0, high=1.0)
        noise = 2.0 * self._mean(self.noise_shape / self.n_users, self.noise_ratio)
        flooding = 2.0 * self._mean(self.flooding_shape / self.n_users, self.flooding_ratio)
        return (1.0 - self.drop_probability) * fraction + noise + flooding

    @property
    def expected_messages_per_user(self) -> float:
        """`expected_messages` for a user holding 1 (the most a user sends)."""
        return self.expected_messages(1.0)

    def randomize(self, x: Any, *, rng: RNGLike = None) -> MessageBatch:
        bits = self.check_bits(x)
        self.warn_if_fewer(bits.shape[0])
        return self._messages_of_bits(bits, as_generator(rng, type(self).__name__))

    def _messages_of_bits(self, bits: np.ndarray, generator: np.random.Generator) -> MessageBatch:
        plus, minus = self._user_counts(bits, generator)
        return signed_messages(plus, minus)

    def sender_cap(self, n_instances: int, exceed_probability: float) -> SenderCap:
        """The least cap that ``1 + psi1 + psi2 + 2 psi3`` exceeds (in any instance) w.p. ``<= exceed_probability``."""
        n = self.n_users
        parts = [(2 * self.noise_shape / n, self.noise_ratio, 1), (self.flooding_shape / n, self.flooding_ratio, 2)]
        return noise_cap(n_instances, exceed_probability, parts, type(self).__name__)

    def encode_users(self, x: Any, *, rng: RNGLike = None) -> tuple[MessageBatch, np.ndarray]:
        """Each user's ``+1`` and ``-1`` messages, user by user, and each user's number of messages."""
        plus, minus = self._user_counts(self.check_bits(x), as_generator(rng, type(self).__name__))
        return signed_messages(plus, minus), (plus + minus).sum(axis=1)

    def user_message_counts(self, bits: Any, *, rng: RNGLike = None) -> tuple[np.ndarray, np.ndarray]:
        """Per-user, per-instance counts of ``+1`` and ``-1`` messages (the randomizers' output)."""
        checked = self.check_bits(bits)
        return self._user_counts(checked, as_generator(rng, type(self).__name__))

    def _user_counts(self, bits: np.ndarray, generator: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        shape = bits.shape
        kept = bits if self.drop_probability == 0.0 else bits * (generator.random(shape) >= self.drop_probability)
        noise_shape = self.noise_shape / self.n_users
        plus = kept + sample_negative_binomial(generator, noise_shape, self.noise_ratio, shape)
        minus = sample_negative_binomial(generator, noise_shape, self.noise_ratio, shape)
        if self.flooding_shape > 0.0 and self.flooding_ratio > 0.0:
            pairs = sample_negative_binomial(generator, self.flooding_shape / self.n_users, self.flooding_ratio, shape)
            plus += pairs
            minus += pairs
        return plus, minus

    def sample_view(self, x: Any, *, rng: RNGLike = None) -> MessageHistogram:
        """Exact fast path: sums over ``m`` users of ``NB(r/n, a)`` are ``NB(r m/n, a)``; kept bits are ``Bin(S, 1-q)``."""
        bits = self.check_bits(x)
        self.warn_if_fewer(bits.shape[0])
        return self._view_of_bits(bits, as_generator(rng, type(self).__name__))

    def _view_of_bits(self, bits: np.ndarray, generator: np.random.Generator) -> MessageHistogram:
        share = bits.shape[0] / self.n_users
        ones = bits.sum(axis=0)
        kept = ones if self.drop_probability == 0.0 else generator.binomial(ones, 1.0 - self.drop_probability)
        size = ones.shape
        plus = kept + sample_negative_binomial(generator, self.noise_shape * share, self.noise_ratio, size)
        minus = sample_negative_binomial(generator, self.noise_shape * share, self.noise_ratio, size)
        if self.flooding_shape > 0.0 and self.flooding_ratio > 0.0:
            pairs = sample_negative_binomial(generator, self.flooding_shape * share, self.flooding_ratio, size)
            plus = plus + pairs
            minus = minus + pairs
        return signed_histogram(plus, minus)

    def _message_cap(self, tail_probability: float) -> int:
        """A bound on the ``tail_probability`` quantile of ``1 + NB(2r/n, p) + 2 NB(r'/n, p')`` (a user holding 1)."""
        noise = (2.0 * self.noise_shape / self.n_users, self.noise_ratio, 1)
        flooding = (self.flooding_shape / self.n_users, self.flooding_ratio, 2)
        return weighted_negative_binomial_cap([noise, flooding], 1, tail_probability)

    @property
    def largest_message_effect(self) -> float:
        """A message ``+-1`` moves the estimate by ``1/(1 - q)``."""
        return 1.0 / (1.0 - self.drop_probability)

    def analyze(self, view: MessageHistogram | MessageBatch) -> np.ndarray:
        """Unbiased estimate ``(#(+1) - #(-1)) / (1 - drop_probability)`` per instance."""
        histogram = self.view(view)
        return (histogram.count(1) - histogram.count(-1)) / (1.0 - self.drop_probability)

    def variance(self, true_sum: Any = None) -> np.ndarray | float:
        """``(S q(1-q) + 2 r a/(1-a)^2) / (1-q)^2``; ``S`` defaults to ``n_users`` (the worst case)."""
        q = self.drop_probability
        noise = 2.0 * self.noise_shape * self.noise_ratio / (1.0 - self.noise_ratio) ** 2
        if q == 0.0:
            return noise
        total = self.n_users if true_sum is None else check_array(true_sum, "true_sum", type(self).__name__, low=0.0)
        return (total * q * (1.0 - q) + noise) / (1.0 - q) ** 2

    def _lattice_step(self) -> float:
        """The estimate moves by ``1/(1-q)`` per message."""
        return 1.0 / (1.0 - self.drop_probability)


@dataclass(frozen=True, kw_only=True)
class ThreeNBBitSum(_SignedCounts):
    """3NB: correlated negative-binomial noise (Ghazi, Kumar, Manurangsi & Pagh, ICML 2020).

    User ``i`` sends ``b_i + psi1 + psi3`` messages ``+1`` and ``psi2 + psi3`` messages ``-1`` with
    ``psi1, psi2 ~ NB(r/n, p)`` and flooding ``psi3 ~ NB(r'/n, p')`` (Algorithm 2 of Wagner (ICLR 2025)). Over
    the users the view is ``(S + X1 + X3, X2 + X3)``, ``X1, X2 ~ NB(r, p)``, ``X3 ~ NB(r', p')``;
    the estimate ``#(+1) - #(-1) = S + X1 - X2`` is ``S + DLap(p)`` for ``r = 1``.

    Args:
        n_users: users the noise is divided among (at least this many must take part).
        noise_ratio: ``p`` in ``(0, 1)``.
        flooding_shape: total ``r' >= 0`` of the flooding pairs.
        flooding_ratio: ``p'`` in ``[0, 1)``.
        delta: the delta at which the headline epsilon is reported, in ``(0, 1)``.
        noise_shape: total ``r > 0`` (1 gives discrete Laplace noise).

    Privacy:
        Replace-one, for one instance, on the analyzer's full view (both counts). The event holds
        the **exact** profile of the two-count pair, which is the worst case over all neighbours
        (the others' bits only shift both datasets' views alike); for ``r = 1`` it is computed by
        an exact one-dimensional reduction (`privsum.bitsum.exact.signed_count_profile`),
        checked against the full two-dimensional grid in the tests. Tails are counted as infinite
        loss, so the profile is an upper bound. Fewer participants than ``n_users`` leave noise of
        shape ``r m/n < 1``: `event_for_participants` then reports the epsilon of a dominating
        pair, an upper bound (`privsum.bitsum.exact.signed_count_dominating_profile`: the exact
        grid when small, else exact columns near ``X1 = X2`` and likelihood-ratio bounds
        elsewhere, within 0.2% of the exact grid's epsilon wherever the tests compute it).

    Utility:
        Unbiased; variance ``2 r p/(1-p)^2`` whatever the true sum. Expected messages per user
        ``1 + 2 (r/n) p/(1-p) + 2 (r'/n) p'/(1-p')``, where ``1`` is the bit of a user holding 1
        (users holding 0 send one message less): flooding messages are counted.

    Robustness:
        Honest senders send a random number of messages, so the cap is a tail bound:
        `per_sender_message_cap` ``c`` with ``P(1 + NB(2r/n, p) + 2 NB(r'/n, p') > c) <=
        tail_probability`` per user and instance (its cost in delta: `privsum.shuffle.robustness`).
        ``k`` malicious senders shift an estimate by at most ``k c`` (all sending ``c`` messages
        ``+1``; `manipulation_bound`), against an honest contribution between 0 and ``k``: the
        flooding makes ``c`` large (see the threat-model page), so one malicious user outweighs
        many honest ones.

    References:
        Ghazi, Kumar, Manurangsi & Pagh, "Private Counting from Anonymous Messages: Near-Optimal
        Accuracy with Vanishing Communication Overhead", ICML 2020; App. A.2 of Wagner (ICLR 2025)

    Examples:
        >>> protocol = ThreeNBBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1000)
        >>> bool(protocol.guarantee.epsilon <= 1.0 and protocol.variance() < 5.0)
        True
    """

    n_users: int
    noise_ratio: float
    flooding_shape: float
    flooding_ratio: float
    delta: float
    noise_shape: float = 1.0

    @property
    def drop_probability(self) -> float:
        """3NB never drops bits."""
        return 0.0

    def _error_half_width(self, level: float) -> tuple[float, str]:
        """Exact: the error ``X1 - X2`` (``X1, X2 ~ NB(r, p)`` independent; flooding cancels) from its pmf."""
        pmf = negative_binomial_difference_pmf(self.noise_shape, self.noise_ratio)
        return float(symmetric_noise_half_width(pmf, level)), EXACT

    def __post_init__(self) -> None:
        self._validate_noise()
        owner = type(self).__name__
        if not self.noise_ratio > 0.0:
            raise invalid("noise_ratio", owner, "in (0, 1) (no noise gives no privacy)", self.noise_ratio)
        object.__setattr__(self, "delta", check_delta(self.delta, owner, allow_zero=False))

    @classmethod
    def from_privacy(
        cls,
        *,
        epsilon: float,
        delta: float,
        n_users: int,
        calibration: str = "tight",
        flooding: str = "paper",
        variance_factor: float | None = None,
    ) -> ThreeNBBitSum:
        """Parameters meeting (epsilon, delta) per instance, checked against the exact profile.

        Args:
            epsilon: target epsilon per instance.
            delta: target delta per instance, in ``(0, 1)``.
            n_users: users taking part.
            calibration: ``"analytic"``: ``r = 1``, ``p = e^{-0.8 epsilon}`` (a 0.2 share reserved
                for flooding, as in the paper's reference code), ``r' = 3(1 + log(1/delta))``,
                ``p' = e^{-0.04 epsilon}``. ``"tight"``: the same flooding and
                ``r = 1``, with the smallest ``p`` (least variance) whose exact delta at
                ``epsilon`` meets the target (regula falsi on ``log delta``, stopping within 1% below
                the target delta); it never sends more messages
                than the analytic setting.
            flooding: ``"paper"`` (the flooding above, ``r' = 3(1 + log(1/delta))``,
                ``p' = e^{-0.04 epsilon}``) or ``"communication"`` (with ``calibration="tight"``):
                ``(p, r', p')`` minimise the expected messages per user
                ``1 + 2 (p/(1-p) + r' p'/(1-p'))/n`` subject to (a) the exact delta at
                ``epsilon`` meeting the target and (b) the variance at most ``variance_factor``
                times the ``"paper"`` tight calibration's at the same target. More noise
                leaves more of the privacy budget to the flooding but sends more noise
                messages: ``log(1/p)`` is searched from the variance bound towards the
                ``"paper"`` noise, and for each ``p`` and each ``r'`` on a grid the least ``p'``
                meeting (a) is found by bisection (a coarse exhaustive grid in the tests finds
                nothing cheaper). Falls back to the ``"paper"`` parameters if they send fewer
                messages.
            variance_factor: with ``flooding="communication"`` only: the variance allowance of
                (b), in ``[1, 16]``; ``None`` means ``COMMUNICATION_VARIANCE_FACTOR`` (1.1, that
                is 1.049 in RMSE). Stand-alone, it is the price paid for fewer messages. Inside
                a tight composition (`privsum.kde.ShuffledKDE.from_privacy` with
                ``accounting="tight"``) a larger factor costs little: the composition search
                raises the per-instance ``epsilon`` until the composed guarantee meets its
                target, which buys most of the variance back. At the paper's KDE setting
                (``n = 40,000``, ``I = 768``, ``(2, 1e-6)``) factors 2 and 4 give 1.34 and 1.15
                messages per user per instance at a final RMSE within 0.2% of the ``"paper"``
                flooding's (6.11 messages); see ``benchmarks/bench_bitsum_optimum.py``.

        Raises:
            InvalidParameterError: out-of-range parameters, or the analytic parameters miss the
                target under the exact profile.
        """
        owner = cls.__name__
        epsilon, delta, n_users = check_privacy_request(epsilon, delta, n_users, owner)
        calibration = check_calibration(calibration, owner)
        flooding = check_choice(flooding, "flooding", owner, FLOODING_CHOICES)
        if flooding == "communication" and calibration != "tight":
            raise invalid("calibration", owner, "'tight' with flooding='communication'", calibration)
        if variance_factor is not None:
            if flooding != "communication":
                raise invalid("variance_factor", owner, "None unless flooding='communication'", variance_factor)
            variance_factor = check_real(variance_factor, "variance_factor", owner, low=1.0, high=MAX_VARIANCE_FACTOR)
        factor = None
        if flooding == "communication":
            factor = COMMUNICATION_VARIANCE_FACTOR if variance_factor is None else variance_factor
        noise_ratio, flooding_shape, flooding_ratio = calibrated_parameters(owner, epsilon, delta, calibration, factor)
        tail = tail_for(delta)
        profile = exact_or_refused(
            owner, epsilon, lambda: signed_count_profile(1.0, noise_ratio, flooding_shape, flooding_ratio, tail_mass=tail)
        )
        achieved = profile.delta(epsilon)
        if not achieved <= delta * (1 + _RTOL):
            raise invalid("epsilon", owner, f"met by the {calibration} parameters (their exact delta is {achieved:.3g})", epsilon)
        protocol = cls(
            n_users=n_users, noise_ratio=noise_ratio, flooding_shape=flooding_shape, flooding_ratio=flooding_ratio, delta=delta
        )
        protocol.__dict__["event"] = ProfileEvent(profile, PrivacyGuarantee(epsilon, delta, Neighbouring.REPLACE_ONE))
        return protocol

    @classmethod
    def calibrate_for_compositions(cls, **request: Any) -> ThreeNBBitSum | None:
        """Tight 3NB without a chosen ``flooding``: the paper's or the communication flooding, whichever the composition favours.

        Both are fitted by the generic search (`privsum.bitsum.base.fit_for_compositions`, the
        keywords of `BitSumProtocol.calibrate_for_compositions`); the ``flooding="communication"``
        one (``variance_factor=COMPOSITION_VARIANCE_FACTOR``, 4) is returned wherever its RMSE is
        within ``COMPOSITION_RMSE_TOLERANCE`` (1%) of the paper flooding's: it sends far fewer
        messages at the same accuracy. ``None`` (the generic search over the given options) for
        ``calibration="analytic"``, a chosen ``flooding`` or ``delta = 0``.
        """
        if request.get("calibration", "tight") != "tight" or "flooding" in request or not request["delta"] > 0:
            return None
        paper = fit_for_compositions(cls, **request)
        communication = fit_for_compositions(
            cls, **(request | {"flooding": "communication", "variance_factor": COMPOSITION_VARIANCE_FACTOR})
        )
        as_accurate = math.sqrt(communication.variance()) <= (1 + COMPOSITION_RMSE_TOLERANCE) * math.sqrt(paper.variance())
        return communication if as_accurate else paper

    @property
    def profile(self) -> PrivacyProfile:
        """Exact profile of the two-count view for ``n_users`` participants."""
        return self._profile_for(self.n_users)

    def _profile_for(self, n_participants: int) -> PrivacyProfile:
        share = n_participants / self.n_users
        return signed_count_profile(
            self.noise_shape * share,
            self.noise_ratio,
            self.flooding_shape * share,
            self.flooding_ratio,
            tail_mass=tail_for(self.delta),
        )

    @functools.cached_property
    def event(self) -> PrivacyEvent:
        """``(epsilon(delta), delta)`` from the exact profile, replace-one."""
        return ProfileEvent.at_delta(self.profile, self.delta)

    def _event_for_fewer(self, n_participants: int) -> PrivacyEvent:
        """``(epsilon(delta), delta)`` of a pair dominating the view of ``n_participants < n_users`` users.

        Their noise shares add up to ``NB(r m/n, p)`` with ``r m/n < 1``, whose exact profile needs
        the two-dimensional grid; `privsum.bitsum.exact.signed_count_dominating_profile` computes
        it when the grid is small and otherwise an upper bound within 0.2% of it (measured where
        the grid is computable; seconds at the paper's KDE scale, where the grid is not).
        """
        share = n_participants / self.n_users
        profile = signed_count_dominating_profile(
            self.noise_shape * share,
            self.noise_ratio,
            self.flooding_shape * share,
            self.flooding_ratio,
            tail_mass=tail_for(self.delta),
        )
        return ProfileEvent.at_delta(profile, self.delta)


@dataclass(frozen=True, kw_only=True)
class PureBitSum(_SignedCounts):
    """Pure-DP bit sum with dropped bits and divisible noise (after Ghazi, Kumar & Manurangsi 2023).

    User ``i`` sends its bit as a ``+1`` message unless it is dropped (probability ``q``), plus
    ``NB(r/n, a)`` messages ``+1`` and as many independent ones ``-1`` (central noise
    ``NB(r, a) - NB(r, a)``, ``DLap(a)`` for ``r = 1``), plus optional flooding pairs
    ``NB(r'/n, p')``. The analyzer outputs ``(#(+1) - #(-1)) / (1 - q)``.

    Args:
        n_users: users the noise is divided among.
        drop_probability: ``q`` in ``[0, 1)``; ``q = 0`` gives no finite pure epsilon.
        noise_ratio: ``a`` in ``[0, 1)``.
        noise_shape: total ``r > 0``.
        flooding_shape: total ``r' >= 0`` of the flooding pairs (they do not change the pure epsilon).
        flooding_ratio: ``p'`` in ``[0, 1)``.

    Privacy:
        Pure DP, replace-one, for one instance. **Verified**: the exact pure epsilon of the
        two-count view is ``max(log(1/q), log(q + (1-q)/(min(r,1) a)))`` when the first term is
        the larger (it is attained at ``#(+1) = 0``, where a dropped bit is the only way for a
        user holding 1 to send no ``+1``), and that value is an upper bound otherwise
        (`privsum.bitsum.exact.pure_epsilon_bound`; its proof is in the docstring there, and the
        tests compare it with the exact maximum log-ratio on small ``n``).

        **Not reproduced: the paper's claim.** privsum's reconstruction of GKM23, from the
        reference code of Wagner (ICLR 2025), uses ``q = 0.2 rho / (e^eps (1 - e^-eps)^2 n)``. Under the exact
        check above such a tiny ``q`` gives pure epsilon ``log(1/q) ~ log n`` (about 11.5 for
        ``n = 10^4``, ``eps = 1``), not ``eps``: the event ``#(+1) = 0`` is a product over users,
        so its probability ratio is one user's ``P(no +1 | bit 1) / P(no +1 | bit 0) = q``,
        whatever the noise or flooding. `from_reference_parameters` builds that setting and
        reports this verified epsilon. `from_privacy` instead calibrates ``q >= e^-eps``, which
        is verifiably ``eps``-DP but has error of order ``sqrt(S e^-eps)``, far from the
        paper's ``O(1/eps)``: the paper's protocol (not available here) must differ from this
        reconstruction.

    Utility:
        Unbiased; variance ``(S q(1-q) + 2 r a/(1-a)^2) / (1-q)^2`` (depends on the true sum ``S``).

    Robustness:
        As `ThreeNBBitSum` (a cap ``c`` from the tail of the noise and flooding counts): ``k``
        malicious senders shift an estimate by at most ``k c / (1 - q)`` (`manipulation_bound`).

    References:
        Ghazi, Kumar & Manurangsi, "Pure-DP Aggregation in the Shuffle Model: Error-Optimal and
        Communication-Efficient", arXiv 2305.17634 (2023)

    Examples:
        >>> protocol = PureBitSum.from_privacy(epsilon=1.0, n_users=1000)
        >>> round(protocol.guarantee.epsilon, 9), protocol.guarantee.delta
        (1.0, 0.0)
    """

    n_users: int
    drop_probability: float
    noise_ratio: float
    noise_shape: float = 1.0
    flooding_shape: float = 0.0
    flooding_ratio: float = 0.0

    def __post_init__(self) -> None:
        self._validate_noise()
        owner = type(self).__name__
        object.__setattr__(self, "drop_probability", check_probability(self.drop_probability, "drop_probability", owner))

    @classmethod
    def from_privacy(cls, *, epsilon: float, n_users: int, delta: float = 0.0, calibration: str = "tight") -> PureBitSum:
        """Verified pure-``epsilon`` parameters (``r = 1``, no flooding).

        Args:
            epsilon: target pure epsilon per instance.
            n_users: users taking part.
            delta: accepted for a uniform interface; the guarantee has delta 0.
            calibration: ``"analytic"``: ``q = e^-epsilon`` and the least noise ratio
                ``a = (1-q)/(e^epsilon - q)`` keeping ``log(q + (1-q)/a) <= epsilon`` (closed form;
                not the paper's formulas, which are not ``epsilon``-DP under the exact check:
                see the class docstring and `from_reference_parameters`). ``"tight"``: ``q`` in
                ``[e^-epsilon, 1)`` minimising the worst-case variance (``S = n_users``) with ``a``
                as above.
        """
        owner = cls.__name__
        epsilon = check_epsilon(epsilon, owner)
        check_delta(delta, owner)
        n_users = check_integer(n_users, "n_users", owner, low=1)
        calibration = check_calibration(calibration, owner)
        smallest_drop = math.exp(-epsilon)
        if not smallest_drop < 1.0 - 1e-9:  # the drop probability e^-epsilon rounds to 1 in double precision
            raise invalid("epsilon", owner, "a real number in [1e-08, 100] (smaller drops every bit)", epsilon)

        def noise_for(drop: float) -> float:
            return (1.0 - drop) / (math.exp(epsilon) - drop)

        def worst_variance(drop: float) -> float:
            ratio = noise_for(drop)
            return (n_users * drop * (1 - drop) + 2 * ratio / (1 - ratio) ** 2) / (1 - drop) ** 2

        drop = smallest_drop
        if calibration == "tight":
            found = optimize.minimize_scalar(worst_variance, bounds=(smallest_drop, 1.0 - 1e-9), method="bounded")
            if found.success and worst_variance(found.x) < worst_variance(drop):
                drop = float(found.x)
        protocol = cls(n_users=n_users, drop_probability=drop, noise_ratio=noise_for(drop))
        if not protocol.guarantee.epsilon <= epsilon * (1 + _RTOL):  # pragma: no cover - closed form
            raise RuntimeError(f"{owner}: calibration missed its target")
        return protocol

    @classmethod
    def from_reference_parameters(cls, *, epsilon: float, n_users: int, rho: float = 0.5) -> PureBitSum:
        """privsum's reconstruction of GKM23 section 4.4, with its verified epsilon.

        ``eps' = epsilon - 0.01 rho min(epsilon, 1)``, noise ratio ``e^-eps'``,
        ``q = 0.2 rho / (e^epsilon (1 - e^-epsilon)^2 n)``. The event reports the exact pure
        epsilon of this setting, ``log(1/q)``, which is far above ``epsilon``.

        Args:
            epsilon: the paper's epsilon.
            n_users: users.
            rho: in ``(0, 0.5]``.

        Raises:
            InvalidParameterError: ``rho`` outside ``(0, 0.5]``, or ``q >= 1`` (too few users).

        Examples:
            >>> reference = PureBitSum.from_reference_parameters(epsilon=1.0, n_users=10_000)
            >>> round(reference.guarantee.epsilon, 2)
            11.6
        """
        owner = f"{cls.__name__}.from_reference_parameters"
        epsilon = check_epsilon(epsilon, owner)
        n_users = check_integer(n_users, "n_users", owner, low=1)
        rho = check_real(rho, "rho", owner, low=0.0, high=0.5, low_open=True)
        noise_epsilon = epsilon - 0.01 * rho * min(epsilon, 1.0)
        drop = 0.2 * rho / (math.exp(epsilon) * (1.0 - math.exp(-epsilon)) ** 2 * n_users)
        if not drop < 1.0:
            raise invalid("n_users", owner, f"large enough for a drop probability below 1 (it gives {drop:.4g})", n_users)
        return cls(n_users=n_users, drop_probability=drop, noise_ratio=math.exp(-noise_epsilon))

    @functools.cached_property
    def event(self) -> PrivacyEvent:
        """Pure epsilon from `pure_epsilon_bound`, delta 0, replace-one."""
        return self._event_for_shape(self.noise_shape)

    def _event_for_fewer(self, n_participants: int) -> PrivacyEvent:
        return self._event_for_shape(self.noise_shape * n_participants / self.n_users)

    def _event_for_shape(self, noise_shape: float) -> PrivacyEvent:
        epsilon = pure_epsilon_bound(self.drop_probability, noise_shape, self.noise_ratio)
        return GuaranteeEvent(PrivacyGuarantee(epsilon, 0.0, Neighbouring.REPLACE_ONE))


def negative_binomial_difference_pmf(shape: float, ratio: float) -> np.ndarray:
    """The pmf of ``X1 - X2`` on ``-K..K`` for independent ``X1, X2 ~ NB(shape, ratio)`` (mean ``shape ratio/(1-ratio)``).

    Each ``NB`` is truncated where its upper tail falls below ``1e-16``; the missing mass (at most
    about ``2e-16``) is left out, so intervals computed from this pmf are conservative.
    """
    reach = int(stats.nbinom.isf(1e-16, shape, 1.0 - ratio)) + 1
    one = stats.nbinom.pmf(np.arange(reach + 1), shape, 1.0 - ratio)
    if reach < 4096:
        return np.convolve(one, one[::-1])
    return np.clip(signal.fftconvolve(one, one[::-1]), 0.0, None)
