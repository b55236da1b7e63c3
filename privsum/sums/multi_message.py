"""Multi-message summation by additive shares plus discrete Laplace noise (Balle, Bell, Gascón & Nissim, CCS 2020).

The "split and mix" reduction of Ishai, Kushilevitz, Ostrovsky & Sahai (FOCS 2006): each user adds
its share of a central discrete-Laplace noise to its integer value and splits the result into
``m`` additive shares modulo ``q``; the shuffled multiset of shares reveals (almost) nothing but
the noisy sum modulo ``q``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from privsum._random import RNGLike, as_generator
from privsum._validation import check_choice, check_delta, check_epsilon, check_integer, check_probability, check_real, invalid
from privsum.accounting import GuaranteeEvent, PrivacyGuarantee
from privsum.shuffle import MessageBatch, MessageHistogram, ShuffleProtocol
from privsum.shuffle.noise import discrete_laplace_variance, sample_negative_binomial
from privsum.sums._common import integer_inputs

__all__ = ["MAX_MODULUS", "MultiMessageSum", "default_share_count"]

MAX_MODULUS = 2**22  # the histogram view has one column per residue


def default_share_count(security_bits: float, modulus: int, n_users: int) -> int:
    """``ceil((2 sigma + log2 q) / log2 n) + 1`` shares: the shape ``O(1 + (sigma + log q)/log n)`` of BBGN20.

    Not a verified constant: the paper's exact theorem was not available to us. A deployment should
    pass ``n_shares`` from BBGN20's (or Ghazi et al. 2020's) theorem for its ``(n, q, sigma)``.

    Examples:
        >>> default_share_count(20, 2**20, 10_000)
        6
    """
    owner = "default_share_count"
    security_bits = check_real(security_bits, "security_bits", owner, low=0.0, low_open=True)
    modulus = check_integer(modulus, "modulus", owner, low=2)
    n_users = check_integer(n_users, "n_users", owner, low=2)
    return math.ceil((2 * security_bits + math.log2(modulus)) / math.log2(n_users)) + 1


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
        n_users: users the noise shares are calibrated for; inputs must have exactly this many rows.
        domain: ``Delta``; inputs are integers in ``{0..Delta}``.
        noise_ratio: ``a`` of ``DLap(a)``; ``a = e^{-epsilon/Delta}`` gives epsilon-DP on the sum.
        n_shares: ``m``, messages per user and instance.
        modulus: ``q`` (at most `MAX_MODULUS`, the dense histogram view's width).
        share_security_bits: ``sigma``: the statistical distance between the share multisets of two
            inputs with the same sum is *assumed* (BBGN20's theorem for ``m`` shares) to be at most
            ``2^-sigma``.
        clip: clip inputs to ``{0..domain}`` instead of raising.

    Privacy:
        Replace-one, per instance, trusted shuffler. ``epsilon = Delta log(1/a)``: the noisy sum
        ``sum x + DLap(a)`` is epsilon-DP for sensitivity ``Delta`` (exact, and the noise's law is
        tested here). ``delta = (1 + e^epsilon) 2^-sigma``: if the share multiset is within
        statistical distance ``eta = 2^-sigma`` of a function of the noisy sum alone, then
        ``P[V(X) in T] <= e^eps (P[V(X') in T] + eta) + eta``. **The value of sigma for a given
        number of shares rests on the paper's theorem and is not verified by this library.**

    Utility:
        Unbiased (absent wrap-around); variance ``2a/(1-a)^2``, the central discrete Laplace's.

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
    #: `privsum.sums.clipped_shares.SparseMultiMessageSum` raises it by using a sparse view.
    max_modulus: ClassVar[int] = MAX_MODULUS

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
            n_shares: ``m``; ``None`` uses `default_share_count` (unverified constant, see there).
            wrap_probability: probability that the noise wraps around the modulus.
            clip: see the class.
        """
        owner = f"{cls.__name__}.from_privacy"
        epsilon = check_epsilon(epsilon, owner)
        delta = check_delta(delta, owner, allow_zero=False)
        n_users = check_integer(n_users, "n_users", owner, low=2)
        domain = check_integer(domain, "domain", owner, low=1)
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
        shares = default_share_count(security_bits, modulus, n_users) if n_shares is None else n_shares
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
    def event(self) -> GuaranteeEvent:
        delta = min((1 + math.exp(self.epsilon)) * 2.0 ** (-self.share_security_bits), 1 - 1e-16)
        return GuaranteeEvent(PrivacyGuarantee(self.epsilon, delta))

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
        values = integer_inputs(x, type(self).__name__, n_users=self.n_users, domain=self.domain, clip=self.clip)
        n = values.shape[0]
        noise = sample_negative_binomial(rng, 1.0 / n, self.noise_ratio, values.shape) - sample_negative_binomial(
            rng, 1.0 / n, self.noise_ratio, values.shape
        )
        secret = np.mod(values + noise, self.modulus)
        shares = rng.integers(0, self.modulus, size=(*values.shape, self.n_shares))
        shares[..., -1] = np.mod(secret - shares[..., :-1].sum(axis=-1), self.modulus)
        return shares  # (n_users, n_instances, n_shares)

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


def _discrete_laplace_tail(ratio: float, probability: float) -> int:
    """Least ``t`` with ``P(|DLap(ratio)| > t) = 2 ratio^{t+1} / (1 + ratio) <= probability``."""
    return max(0, math.ceil(math.log(probability * (1 + ratio) / 2) / math.log(ratio)) - 1)
