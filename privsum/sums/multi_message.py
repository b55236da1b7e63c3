"""Multi-message summation by additive shares plus discrete Laplace noise (Balle, Bell, Gascón & Nissim, CCS 2020).

The "split and mix" reduction of Ishai, Kushilevitz, Ostrovsky & Sahai (FOCS 2006): each user adds
its share of a central discrete-Laplace noise to its integer value and splits the result into
``m`` additive shares modulo ``q``; the shuffled multiset of shares reveals (almost) nothing but
the noisy sum modulo ``q``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from privsum._random import RNGLike, as_generator
from privsum._user_inputs import check_participant_limit
from privsum._validation import (
    MAX_INT64,
    check_choice,
    check_integer,
    check_probability,
    check_real,
    invalid,
)
from privsum.accounting import GuaranteeEvent, PrivacyGuarantee
from privsum.accounting.cache import cached_calibration
from privsum.exceptions import PrivacyLeakWarning
from privsum.shuffle import MessageBatch, MessageHistogram, ShuffleProtocol
from privsum.shuffle.noise import (
    discrete_laplace_variance,
    sample_negative_binomial,
)
from privsum.shuffle.protocol import EXECUTION_PATHS, SenderCap
from privsum.shuffle.robustness import check_malicious
from privsum.shuffle.streaming import PartialView
from privsum.sums._common import check_sum_request, integer_inputs
from privsum.sums.split_and_mix import MAX_CHI_SQUARE_USERS, share_distance_bound

__all__ = ["MAX_MODULUS", "MultiMessageSum", "default_share_count", "supported_security_bits"]

MAX_MODULUS = 2**22  # the histogram view has one column per residue


def default_share_count(security_bits: float, modulus: int, n_users: int) -> int:
    """Least ``m`` with ``m >= ceil((2 sigma + log2 q) / (log2 n - log2 e)) + 1``: BBGN20's sufficient share count.

    The explicit bound of Balle, Bell, Gascón & Nissim for the split-and-mix protocol: with that many
    shares, the multisets of two inputs with the same sum modulo ``q`` are within statistical
    distance ``2^-sigma``. It reproduces the paper's worked example (``n = 10^4`` users summing
    32-bit numbers, ``q >= n 2^32``, 12 shares for ``sigma = 40``). The bound is the paper's; this
    library does not re-prove it (see `supported_security_bits` for the inverse).

    Examples:
        >>> default_share_count(40, 2**46, 10_000)
        12
    """
    owner = "default_share_count"
    security_bits = check_real(security_bits, "security_bits", owner, low=0.0, low_open=True)
    modulus = check_integer(modulus, "modulus", owner, low=2)
    per_share = _bits_hidden_per_share(n_users, owner)
    shares = (2 * security_bits + math.log2(modulus)) / per_share
    if not (shares < MAX_INT64):
        raise invalid("security_bits", owner, "small enough that the share count is below 2^63", security_bits)
    return math.ceil(shares) + 1


def supported_security_bits(n_shares: int, modulus: int, n_users: int) -> float:
    """The largest ``sigma`` that BBGN20's bound backs for ``m`` shares: ``((m - 1)(log2 n - log2 e) - log2 q) / 2``.

    Examples:
        >>> round(supported_security_bits(12, 2**46, 10_000), 2)
        42.15
    """
    owner = "supported_security_bits"
    n_shares = check_integer(n_shares, "n_shares", owner, low=2)
    modulus = check_integer(modulus, "modulus", owner, low=2)
    per_share = _bits_hidden_per_share(n_users, owner)
    return ((n_shares - 1) * per_share - math.log2(modulus)) / 2


def _bits_hidden_per_share(n_users: int, owner: str) -> float:
    """``log2 n - log2 e``, positive for ``n >= 3`` (the bound needs at least three users)."""
    n_users = check_integer(n_users, "n_users", owner, low=3)
    return math.log2(n_users) - math.log2(math.e)


@dataclass(frozen=True, kw_only=True)
class MultiMessageSum(ShuffleProtocol):
    """BBGN20 shuffled sum of integers in ``{0..domain}``: ``m`` additive shares modulo ``q`` per user.

    User ``i`` draws ``eta_i = NB(1/n, a) - NB(1/n, a)`` (so ``sum_i eta_i ~ DLap(a)`` exactly,
    ``a = noise_ratio``), and sends ``m`` shares, uniform modulo ``q`` subject to summing to
    ``x_i + eta_i``. The analyzer sums all shares modulo ``q`` and maps the residue to the integer
    nearest ``n * domain / 2`` (correct unless ``|DLap| > q/2 - n domain/2``; the modulus is chosen
    so that has probability below ``wrap_probability``). Many instances: inputs of shape
    ``(n_users, n_instances)``, messages tagged by instance.

    Args:
        n_users: users the noise shares and the modulus are calibrated for: fewer warn (see
            Privacy), more raise (the sum could wrap around the modulus).
        domain: ``Delta``; inputs are integers in ``{0..Delta}``.
        noise_ratio: ``a`` of ``DLap(a)``; ``a = e^{-epsilon/Delta}`` gives epsilon-DP on the sum.
        n_shares: ``m``, messages per user and instance.
        modulus: ``q`` (at most `MAX_MODULUS`, the dense histogram view's width).
        share_security_bits: ``sigma`` targeted for the shares' statistical distance ``2^-sigma``; the
            guarantee uses at most what the share bounds back for ``(m, q, n)`` (`backed_security_bits`).
        clip: clip inputs to ``{0..domain}`` instead of raising.

    Privacy:
        Replace-one, per instance, trusted shuffler. ``epsilon = Delta log(1/a)``: the noisy sum
        ``sum x + DLap(a)`` is epsilon-DP for sensitivity ``Delta`` (exact, and the noise's law is
        tested here). ``delta = (1 + e^epsilon) 2^-sigma``: if the share multiset is within
        statistical distance ``eta = 2^-sigma`` of a function of the noisy sum alone, then
        ``P[V(X) in T] <= e^eps (P[V(X') in T] + eta) + eta``. ``sigma`` for ``m`` shares is the
        larger of what BBGN20's explicit bound backs (`supported_security_bits`, taken from the
        paper) and what the chi-square bound computed in `privsum.sums.split_and_mix` backs
        (checked against enumerated distances).

        Participation: each user adds ``NB(1/n, a) - NB(1/n, a)``, ``n = n_users``, so ``m < n``
        participants leave ``NB(m/n, a) - NB(m/n, a)`` on the sum, which is not ``DLap(a)``:
        `run`, `randomize` and `sample_view` warn with `PrivacyLeakWarning`, and
        `event_for_participants` reports the epsilon of the noise actually present, computed from
        its pmf (`divisible_laplace_epsilon`). More than ``n_users`` users raise: the analyzer's
        window of width ``q`` around ``n Delta / 2`` assumes the sum is at most ``n Delta``.

    Utility:
        Unbiased (absent wrap-around); variance ``2a/(1-a)^2``, the central discrete Laplace's.

    Robustness:
        ``m`` shares per sender and instance (`per_sender_message_cap`). **No useful bound**: the
        analyzer sums residues modulo ``q``, so one malicious sender's shares can make the sum any
        residue, and the estimate any integer of the analyzer's window of width ``q`` around ``n
        Delta / 2`` (``q > n Delta``: wider than every possible true sum). `manipulation_bound` is
        that window's width ``q - 1`` for any ``k >= 1``. Bounding it needs each sender to prove
        its shares encode a value in ``{0..Delta}`` (the validity proofs of Prio:
        Corrigan-Gibbs & Boneh, "Prio: Private, Robust, and Scalable Computation of Aggregate
        Statistics", NSDI 2017), which would bound the shift by ``k Delta`` plus the range
        the proof allows each sender's noise share (unbounded as drawn here).

    References:
        Balle, Bell, Gascón & Nissim, "Private summation in the multi-message shuffle model", CCS 2020;
        Ishai, Kushilevitz, Ostrovsky & Sahai, "Cryptography from anonymity", FOCS 2006.

    Examples:
        >>> protocol = MultiMessageSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1_000, domain=8)
        >>> x = np.arange(1_000) % 9
        >>> bool(abs(protocol.run(x, rng=0)[0] - x.sum()) < 60)
        True
        >>> protocol.expected_messages_per_user == protocol.n_shares
        True
    """

    #: Largest modulus the view can hold (the dense histogram has one column per residue);
    #: `privsum.sums.sparse_shares.SparseMultiMessageSum` raises it by using a sparse view.
    max_modulus: ClassVar[int] = MAX_MODULUS
    streams_chunks: ClassVar[bool] = True

    n_users: int
    domain: int
    noise_ratio: float
    n_shares: int
    modulus: int
    share_security_bits: float
    clip: bool = False

    def __post_init__(self) -> None:
        owner = type(self).__name__
        n_users = check_integer(self.n_users, "n_users", owner, low=2)
        domain = check_integer(self.domain, "domain", owner, low=1)
        check_probability(self.noise_ratio, "noise_ratio", owner, allow_zero=False)
        check_integer(self.n_shares, "n_shares", owner, low=2)
        check_integer(self.modulus, "modulus", owner, low=n_users * domain + 1, high=self.max_modulus)
        check_real(self.share_security_bits, "share_security_bits", owner, low=0.0, low_open=True)
        if not isinstance(self.clip, bool):
            raise invalid("clip", owner, "a bool", self.clip)

    @classmethod
    def from_privacy(
        cls,
        *,
        epsilon: float,
        delta: float,
        n_users: int,
        domain: int = 1,
        calibration: str = "analytic",
        n_shares: int | None = None,
        wrap_probability: float = 1e-12,
        clip: bool = False,
    ) -> MultiMessageSum:
        """Noise ``DLap(e^{-epsilon/Delta})``, sigma with ``(1 + e^eps) 2^-sigma = delta``, the least power-of-2 modulus.

        Args:
            epsilon: target epsilon (exact, from the noise).
            delta: target delta in ``(0, 1)``, spent on the shares' statistical distance.
            n_users: number of users.
            domain: ``Delta``.
            calibration: only ``"analytic"`` (the noise is already exact; the share count is the paper's).
            n_shares: ``m``; ``None`` takes the least the share bounds allow (`default_share_count`, or
                fewer where the chi-square bound of `privsum.sums.split_and_mix` backs them); fewer raise.
            wrap_probability: probability that the noise wraps around the modulus.
            clip: see the class.
        """
        owner = f"{cls.__name__}.from_privacy"
        epsilon, delta, n_users, domain = check_sum_request(epsilon, delta, n_users, domain, owner, least_users=2)
        check_choice(calibration, "calibration", owner, ("analytic",))
        wrap_probability = check_probability(wrap_probability, "wrap_probability", owner, allow_zero=False)
        ratio = math.exp(-epsilon / domain)
        tail = _discrete_laplace_tail(ratio, wrap_probability)
        modulus = 2 ** math.ceil(math.log2(n_users * domain + 2 * tail + 2))
        if modulus > cls.max_modulus:
            raise invalid(
                "n_users", owner, f"small enough that the modulus fits in {cls.max_modulus} (n * domain too large)", n_users
            )
        security_bits = math.log2((1 + math.exp(epsilon)) / delta)
        least_shares = _least_shares(security_bits, modulus, n_users)
        shares = least_shares if n_shares is None else check_integer(n_shares, "n_shares", owner, low=least_shares)
        return cls(
            n_users=n_users,
            domain=domain,
            noise_ratio=ratio,
            n_shares=shares,
            modulus=modulus,
            share_security_bits=security_bits,
            clip=clip,
        )

    @property
    def epsilon(self) -> float:
        """``Delta log(1/a)``: the pure epsilon of the noisy sum."""
        return -self.domain * math.log(self.noise_ratio)

    @property
    def backed_security_bits(self) -> float:
        """``sigma`` the guarantee uses: the declared one, capped by what the share bounds back for these shares.

        The larger of BBGN20's `supported_security_bits` and ``-log2`` of the chi-square distance
        bound (`privsum.sums.split_and_mix.share_distance_bound`, which takes the smaller distance).
        """
        return self._security_bits_for(self.n_users)

    def _security_bits_for(self, n_participants: int) -> float:
        if n_participants < 3:
            return -math.inf
        return min(self.share_security_bits, _backed_bits(self.n_shares, self.modulus, n_participants))

    @property
    def event(self) -> GuaranteeEvent:
        delta = min((1 + math.exp(self.epsilon)) * 2.0 ** (-self.backed_security_bits), 1 - 1e-16)
        return GuaranteeEvent(PrivacyGuarantee(self.epsilon, delta))

    def event_for_participants(self, n_participants: int) -> GuaranteeEvent:
        """The guarantee achieved when ``n_participants <= n_users`` users take part.

        Epsilon: the pure epsilon of the noisy sum with the noise actually present,
        ``NB(m/n, a) - NB(m/n, a)`` for ``m`` participants (`divisible_laplace_epsilon`,
        computed from the pmf). Delta: ``(1 + e^epsilon) 2^-sigma'`` with ``sigma'`` what BBGN20's
        share-count bound backs for ``m`` users (`supported_security_bits` at ``m``, at most the
        declared ``sigma``); below three participants the bound backs nothing (``delta -> 1``).

        Raises:
            InvalidParameterError: more than ``n_users`` participants (not supported: see the class).
        """
        owner = type(self).__name__
        n_participants = check_integer(n_participants, "n_participants", owner, low=1, high=self.n_users)
        if n_participants == self.n_users:
            return self.event
        # cached: the exact epsilon sums the noise pmf over up to ~domain/epsilon0 points (slow for large domains)
        epsilon = cached_calibration(divisible_laplace_epsilon, n_participants / self.n_users, self.noise_ratio, self.domain)
        security = self._security_bits_for(n_participants)
        delta = min((1 + math.exp(min(epsilon, 700.0))) * 2.0 ** (-security), 1 - 1e-16)
        return GuaranteeEvent(PrivacyGuarantee(epsilon, delta))

    def check_participants(self, n_participants: int) -> None:
        """Warn when fewer than ``n_users`` take part; raise when more do (the modulus is sized for ``n_users``)."""
        check_participant_limit(n_participants, self.n_users, type(self).__name__, "the modulus is sized for them")

    @cached_property
    def alphabet(self) -> tuple[int, ...]:
        return tuple(range(self.modulus))

    @property
    def expected_messages_per_user(self) -> float:
        return float(self.n_shares)

    def bits_per_message(self, n_instances: int = 1) -> int:
        """Instance tag plus ``log2 q`` bits."""
        n_instances = check_integer(n_instances, "n_instances", type(self).__name__, low=1)
        return (math.ceil(math.log2(n_instances)) if n_instances > 1 else 0) + math.ceil(math.log2(self.modulus))

    def variance(self, x: Any = None) -> float:
        """``2a/(1-a)^2`` per instance, whatever the inputs."""
        return discrete_laplace_variance(self.noise_ratio)

    # ----------------------------------------------------------------- roles
    def _shares(self, x: Any, rng: np.random.Generator) -> np.ndarray:
        values = integer_inputs(x, type(self).__name__, domain=self.domain, clip=self.clip)
        self.check_participants(values.shape[0])
        n = self.n_users  # each user's noise share is calibrated for n_users, whoever takes part
        noise = sample_negative_binomial(rng, 1.0 / n, self.noise_ratio, values.shape) - sample_negative_binomial(
            rng, 1.0 / n, self.noise_ratio, values.shape
        )
        secret = np.mod(values + noise, self.modulus)
        shares = rng.integers(0, self.modulus, size=(*values.shape, self.n_shares))
        shares[..., -1] = np.mod(secret - shares[..., :-1].sum(axis=-1), self.modulus)
        return shares  # (n_users, n_instances, n_shares)

    def sender_cap(self, n_instances: int, exceed_probability: float) -> SenderCap:
        """``m`` shares per instance."""
        return SenderCap.fixed(self.n_shares, n_instances)

    def randomize(self, x: Any, *, rng: RNGLike = None) -> MessageBatch:
        """``m`` shares per user and instance, tagged with instance ids."""
        shares = self._shares(x, as_generator(rng, type(self).__name__))
        instances = np.broadcast_to(np.arange(shares.shape[1])[None, :, None], shares.shape)
        return MessageBatch(instances.ravel(), shares.ravel(), n_instances=shares.shape[1])

    def sample_view(self, x: Any, *, rng: RNGLike = None) -> MessageHistogram:
        """Fast path: the same shares counted directly (no message batch, no permutation)."""
        shares = self._shares(x, as_generator(rng, type(self).__name__))
        n_instances = shares.shape[1]
        flat = (np.arange(n_instances) * self.modulus)[None, :, None] + shares
        counts = np.bincount(flat.ravel(), minlength=n_instances * self.modulus).reshape(n_instances, self.modulus)
        return MessageHistogram(counts, self.alphabet)

    def partial_view(self, chunk: Any, *, rng: RNGLike = None, path: str = "fast") -> PartialView:
        """One chunk of users' shares, counted; the users are the messages over ``n_instances * n_shares``."""
        owner = type(self).__name__
        path = check_choice(path, "path", owner, EXECUTION_PATHS)
        generator = as_generator(rng, owner)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)  # checked once, on the total
            if path == "faithful":
                histogram = self.view(self.randomize(chunk, rng=generator))
            else:
                histogram = self.sample_view(chunk, rng=generator)
        return PartialView(histogram, histogram.total_messages // (histogram.n_instances * self.n_shares))

    def _message_cap(self, tail_probability: float) -> int:
        """``m`` shares per user and instance."""
        return self.n_shares

    def manipulation_bound(self, n_malicious: int, *, cap: int | None = None) -> float:
        """``q - 1`` for ``n_malicious >= 1``: one sender sets the residue, so the estimate, anywhere in the window."""
        owner = f"{type(self).__name__}.manipulation_bound"
        n_malicious = check_malicious(n_malicious, owner)
        self._enforced_cap(cap, owner)  # any cap: one share suffices
        return float(self.modulus - 1) if n_malicious else 0.0

    def analyze(self, view: MessageHistogram | MessageBatch) -> np.ndarray:
        """The noisy sum per instance: the residue of all shares modulo ``q`` nearest ``n Delta / 2``."""
        if isinstance(view, MessageBatch):  # no need for the dense histogram
            if view.n_messages and not (view.values.min() >= 0 and view.values.max() < self.modulus):
                raise invalid("view", type(self).__name__, f"messages with values in [0, {self.modulus})", "values outside")
            residues = np.bincount(view.instances, weights=np.mod(view.values, self.modulus), minlength=view.n_instances)
            residues = np.mod(residues.astype(np.int64), self.modulus)
        else:
            counts = self.view(view).counts
            residues = np.mod(counts @ (np.arange(self.modulus, dtype=np.int64)), self.modulus)
        centre = self.n_users * self.domain // 2
        offset = np.mod(residues - centre + self.modulus // 2, self.modulus) - self.modulus // 2
        return (centre + offset).astype(float)


def _backed_bits(n_shares: int, modulus: int, n_users: int) -> float:
    """``sigma`` backed for ``m`` shares: the larger of BBGN20's and the chi-square bound's."""
    return max(supported_security_bits(n_shares, modulus, n_users), -math.log2(share_distance_bound(n_users, n_shares, modulus)))


def _least_shares(security_bits: float, modulus: int, n_users: int) -> int:
    """Least ``m`` the share bounds back for ``sigma``: BBGN20's count, lowered while the chi-square bound backs fewer."""
    shares = default_share_count(security_bits, modulus, n_users)
    if n_users <= MAX_CHI_SQUARE_USERS:
        while shares > 3 and share_distance_bound(n_users, shares - 1, modulus) <= 2.0**-security_bits:
            shares -= 1
    return shares


def divisible_laplace_epsilon(share: float, ratio: float, sensitivity: int) -> float:
    """Pure epsilon of ``S + NB(share, a) - NB(share, a)`` for sums ``S`` of L1 sensitivity ``sensitivity``.

    ``share = 1`` is ``DLap(a)``: ``sensitivity * log(1/a)``. For ``share < 1`` the noise ``D`` has
    a symmetric pmf, decreasing in ``|k|``. ``NB(s, a)`` with ``s < 1`` is log-convex on
    ``k >= 0`` (``P(k+1)/P(k) = a (k+s)/(k+1)`` increases), hence so is ``P(D = k)``, ``k >= 0``,
    a positive mixture of its shifts. A decreasing log-convex sequence drops most over its first
    window, and windows that straddle 0 drop less by symmetry, so the largest
    ``|log P(u) - log P(v)|`` over ``|u - v| <= sensitivity`` is ``log P(0)/P(sensitivity)``,
    computed exactly from the closed forms (``X, Y`` i.i.d. ``NB(s, a)``, ``z = a^2``)::

        P(D = 0) = (1 - a)^(2s) 2F1(s, s; 1; z)
        P(D = t) = (1 - a)^(2s) a^t Gamma(s + t) / (Gamma(s) t!) 2F1(s, s + t; t + 1; z)

    (the sums ``sum_k P(X = k) P(X = k + t)`` written as Gauss hypergeometric series), evaluated
    with mpmath at 40 significant digits in constant time, where summing the pmf needs about
    ``70 / (1 - a)`` terms (seconds and hundreds of MiB for ratios near 1). A ``1e-12`` relative
    margin is added; a test checks agreement with the pmf sums to ``1e-13``.

    Examples:
        >>> round(divisible_laplace_epsilon(1.0, math.exp(-0.5), 2), 12)
        1.0
        >>> bool(divisible_laplace_epsilon(0.5, math.exp(-0.5), 2) > 1.0)
        True
    """
    owner = "divisible_laplace_epsilon"
    share = check_real(share, "share", owner, low=0.0, low_open=True)
    ratio = check_probability(ratio, "ratio", owner, allow_zero=False)
    sensitivity = check_integer(sensitivity, "sensitivity", owner, low=1)
    if share >= 1.0:  # DLap(a) (share 1); more noise than that is never needed here
        return sensitivity * math.log(1.0 / ratio)
    import mpmath  # imported on use

    with mpmath.workdps(40):
        shape, a = mpmath.mpf(share), mpmath.mpf(ratio)
        z = a * a
        at_zero = mpmath.hyp2f1(shape, shape, 1, z)
        coefficient = mpmath.exp(mpmath.loggamma(shape + sensitivity) - mpmath.loggamma(shape) - mpmath.loggamma(sensitivity + 1))
        at_shift = a**sensitivity * coefficient * mpmath.hyp2f1(shape, shape + sensitivity, sensitivity + 1, z)
        epsilon = float(mpmath.log(at_zero / at_shift))
    return epsilon * (1 + 1e-12)


def _discrete_laplace_tail(ratio: float, probability: float) -> int:
    """Least ``t`` with ``P(|DLap(ratio)| > t) = 2 ratio^{t+1} / (1 + ratio) <= probability``."""
    return max(0, math.ceil(math.log(probability * (1 + ratio) / 2) / math.log(ratio)) - 1)
