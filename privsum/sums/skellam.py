"""Shuffled vector sum with L2 accounting: conditional rounding, divisible Skellam noise, split-and-mix shares.

Each user scales its vector by ``gamma``, rounds it to an integer vector whose L2 norm is at most
``Delta_2`` (conditional randomized rounding), adds its share ``Pois(mu/n) - Pois(mu/n)`` of the
central Skellam noise to every coordinate, and splits every coordinate into ``m`` additive shares
modulo ``q``. Each coordinate's shares are shuffled on their own (one shuffle per coordinate), so a
share needs no coordinate tag: the user uploads ``d m`` residues in a fixed order, and the shuffler
knows each share's coordinate by its position. The analyzer sums the shares of
each coordinate modulo ``q``, centres the residue and divides by ``gamma``. Up to the split-and-mix
statistical distance, the analyzer sees the central Skellam mechanism on the sum of the rounded
vectors: Gaussian-like noise calibrated to the **L2** sensitivity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from privsum._random import RNGLike, as_generator
from privsum._validation import (
    check_array,
    check_choice,
    check_delta,
    check_epsilon,
    check_integer,
    check_integer_array,
    check_real,
    invalid,
)
from privsum.accounting import Neighbouring, PrivacyGuarantee, calibrate
from privsum.accounting.skellam import RDP_ORDERS, SkellamEvent, rdp_delta
from privsum.shuffle import MessageBatch, MessageHistogram, ShuffleProtocol
from privsum.shuffle.protocol import EXECUTION_PATHS, SenderCap
from privsum.shuffle.robustness import check_malicious
from privsum.shuffle.sparse import SparseMessageHistogram
from privsum.shuffle.streaming import PartialView, is_chunk_stream
from privsum.sums._common import warn_if_fewer, wire_coordinates
from privsum.sums._skellam_search import candidates, fewest_bits, share_value_mass
from privsum.sums.labelled_rows import check_label_parameters, check_labelled_rows, labelled_row_shifts
from privsum.sums.sparse_shares import SPARSE_MAX_MODULUS, residue_sums, residue_view
from privsum.sums.split_and_mix import share_distance_bound

__all__ = [
    "MAX_DIMENSION",
    "MAX_FAITHFUL_MESSAGES",
    "MAX_SCALED_NORM",
    "MAX_SHARES",
    "NORM_TOLERANCE",
    "SkellamVectorSum",
    "conditional_rounding_l2_bound",
    "conditional_rounding_squared_bound",
    "skellam_tail",
]

MAX_DIMENSION = 2**24
MAX_FAITHFUL_MESSAGES = 2**23  # the faithful path materialises n * d * m messages
MAX_SHARES = 1024  # shares per coordinate: sums of m residues below 2^46 stay below 2^63
MAX_SCALED_NORM = 2.0**30  # gamma * c: squared norms of the rounded vectors, (gamma c + sqrt(d))^2, fit in int64
NORM_TOLERANCE = 1e-9  # relative slack on the norm check (unit vectors normalised in floating point)
RELATIONS = (Neighbouring.REPLACE_ONE, Neighbouring.ZERO_OUT)
_RETRY_FAILURE_LOG2 = -80.0  # a user's rounding gives up with probability at most 2^-80 (counted in delta)
_SCALE_GRID = tuple(2.0**k for k in range(2, 21))  # candidate gamma * norm_bound, refined near the accuracy boundary
_REFINEMENT = (2.0**-0.75, 2.0**-0.5, 2.0**-0.25, 2.0**0.25, 2.0**0.5, 2.0**0.75, 2.0**1.25, 2.0**1.5, 2.0**1.75)
_SHARE_FRACTIONS = (0.01, 0.03, 0.1, 0.3)  # candidate parts of delta for the shares


def conditional_rounding_squared_bound(radius: float, dimension: int, rejection_probability: float) -> int:
    """``K``: the integer bound conditional randomized rounding enforces on ``||round(y)||^2`` for ``||y|| <= radius``.

    Randomized rounding writes ``round(y) = y + e`` with independent ``e_j`` in ``{-f_j, 1 - f_j}``
    (``f_j`` the fractional part of ``y_j``), ``E e_j = 0``. Then
    ``||y + e||^2 = ||y||^2 + sum_j (2 y_j e_j + e_j^2)``, a sum of independent terms, the ``j``-th
    taking two values ``|2 y_j + 1 - 2 f_j|`` apart, with mean ``||y||^2 + sum_j f_j(1 - f_j)``.
    Hoeffding's inequality and ``sum_j (2 y_j + 1 - 2 f_j)^2 <= (2 ||y|| + sqrt(d))^2`` give, with
    probability at least ``1 - beta`` (``beta = rejection_probability``)::

        ||round(y)||^2 <= r^2 + d/4 + (r + sqrt(d)/2) sqrt(2 log(1/beta))

    (the form of Kairouz, Liu & Steinke, ICML 2021). Deterministically ``||round(y)|| < r + sqrt(d)``.
    The integer vector's squared norm is an integer, so ``K = floor(min(both bounds))`` (computed
    with a ``1e-12`` relative margin upwards, which only lowers the rejection probability). The
    rounding *enforces* ``||round(y)||^2 <= K`` exactly (integer arithmetic), whatever the margin.

    Examples:
        >>> conditional_rounding_squared_bound(10.0, 4, math.exp(-2))
        123
    """
    owner = "conditional_rounding_squared_bound"
    radius = check_real(radius, "radius", owner, low=0.0, high=MAX_SCALED_NORM)
    dimension = check_integer(dimension, "dimension", owner, low=1, high=MAX_DIMENSION)
    beta = check_real(rejection_probability, "rejection_probability", owner, low=0.0, high=0.5, low_open=True)
    root_d = math.sqrt(dimension)
    hoeffding = radius**2 + dimension / 4 + (radius + root_d / 2) * math.sqrt(2 * math.log(1 / beta))
    deterministic = (radius + root_d) ** 2
    return math.floor(min(hoeffding, deterministic) * (1 + 1e-12))


def conditional_rounding_l2_bound(radius: float, dimension: int, rejection_probability: float) -> float:
    """``Delta_2 = sqrt(K)`` (rounded up to the next float) for `conditional_rounding_squared_bound`'s ``K``.

    Examples:
        >>> round(conditional_rounding_l2_bound(1024.0, 384, 1e-6), 2)
        1026.7
    """
    return _root_up(conditional_rounding_squared_bound(radius, dimension, rejection_probability))


def _root_up(value: float) -> float:
    """``sqrt(value)`` rounded up: at least the exact square root."""
    return math.nextafter(math.sqrt(value), math.inf)


def skellam_tail(mu: float, probability: float) -> int:
    """Least integer ``t`` with ``P(|Sk(mu)| > t) <= probability`` by the Chernoff bound.

    ``E exp(lambda K) = exp(2 mu (cosh(lambda) - 1))`` for ``K ~ Sk(mu)``, so
    ``P(K >= t) <= exp(-t asinh(t / 2mu) + 2 mu (sqrt(1 + (t / 2mu)^2) - 1))`` and the two tails
    are equal.

    Examples:
        >>> skellam_tail(100.0, 1e-9) > 6 * math.sqrt(200)
        True
    """
    from scipy.optimize import brentq  # imported where a modulus is sized

    owner = "skellam_tail"
    mu = check_real(mu, "mu", owner, low=1e-300, high=1e300)  # 2 mu and t / 2 mu stay finite
    probability = check_real(probability, "probability", owner, low=0.0, high=1.0, low_open=True)
    target = math.log(2 / probability)

    def exponent(t: float) -> float:
        ratio = t / (2 * mu)
        return t * math.asinh(ratio) - 2 * mu * (math.hypot(1.0, ratio) - 1) - target  # hypot: no overflow of ratio^2

    upper = 1.0
    while exponent(upper) < 0:
        upper *= 2
    return math.ceil(brentq(exponent, 0.0, upper, xtol=1e-6)) + 1


@dataclass(frozen=True, kw_only=True)
class SkellamVectorSum(ShuffleProtocol):
    """Shuffled sum of real vectors of bounded L2 norm with Skellam noise and split-and-mix shares.

    User ``i`` holds ``x_i`` in ``R^d`` with ``||x_i||_2 <= c`` (``c = norm_bound``; larger norms
    raise, nothing is clipped). It computes ``y = gamma x_i`` and rounds every coordinate down or up
    at random, up with probability equal to the fractional part (unbiased), resampling the whole
    vector until ``||round(y)||_2 <= Delta_2`` (`conditional_rounding_l2_bound`; each attempt fails
    with probability at most ``beta = rejection_probability``, and after ``K`` attempts, with
    ``beta^K <= 2^-80``, the randomizer raises instead of looping on). It adds
    ``Pois(mu/n) - Pois(mu/n)`` to every coordinate (``n = n_users``; the ``n`` shares sum to exactly
    ``Sk(mu)``) and sends ``m`` shares per coordinate, uniform modulo ``q`` subject to summing to
    the noisy value. The analyzer sums each coordinate's shares modulo ``q``, maps the residue to
    ``(-q/2, q/2]`` and divides by ``gamma``.

    Args:
        n_users: users the noise shares and the modulus are calibrated for (fewer warn, more raise).
        dimension: ``d``.
        norm_bound: ``c``, the L2 bound on every user's vector.
        scale: ``gamma``.
        noise_mu: ``mu``: the summed noise on every coordinate is ``Sk(mu)``, variance ``2 mu``.
        n_shares: ``m``, shares per coordinate and user.
        modulus: ``q`` (at most ``2^46``).
        delta: the delta of the headline guarantee.
        rejection_probability: ``beta``, the Hoeffding bound on one rounding attempt's failure.
        neighbouring: ``"replace-one"`` (a user's vector changes: shifts of L2 norm ``2 Delta_2``)
            or ``"zero-out"`` (it becomes the zero vector: ``Delta_2``).

    Privacy:
        Under ``neighbouring``, on the shuffled multiset (trusted shuffler; split-and-mix assumes
        the shares are mixed with everybody else's, as by secure aggregation or a mixnet). The
        rounded vectors differ by an integer shift of L2 norm at most ``2 Delta_2`` (replace-one)
        and L1 norm at most ``2 Delta_1`` with ``Delta_1 = min(sqrt(d) Delta_2, Delta_2^2)`` (an
        integer ``a`` has ``|a| <= a^2``). The noisy sum ``sum round(y_i) + Sk(mu)^d`` is then
        ``(epsilon, delta_rdp)``-DP by the Rényi bound of Agarwal, Kairouz & Liu converted with the
        conversion of Canonne, Kamath & Steinke (`privsum.accounting.SkellamEvent`; verified in the
        tests against exact privacy-loss distributions). The shares: each coordinate's share
        multiset is close to the ideal view, ``n m`` residues uniform given their total (a function
        of that coordinate's noisy sum modulo ``q``); the ``d`` coordinates' views are independent
        given the rounded vectors, and their joint distance ``eta`` to the ideal (averaged over
        the users' noise shares, whatever the rounded vectors) is the smaller of the tensorised
        chi-square bound computed in `privsum.sums.split_and_mix` with each user's value mass
        (`share_value_mass`: the noise share's largest probability of a residue; checked against
        enumerated distances) and Balle, Bell, Gascón & Nissim's ``d 2^-sigma`` (their share
        theorem, taken from the paper). The ideal is a post-processing of the noisy sum, so the
        view is ``(epsilon, delta_rdp + (1 + e^epsilon) eta + delta_other)``-DP.
        Shuffling each coordinate on its own gives the analyzer the view it has with tagged
        messages shuffled together: the multiset of ``(coordinate, share)`` pairs is exactly the
        ``d`` per-coordinate multisets, so the guarantee is the same and the tag is saved. ``delta_other`` adds the
        probability that the noisy sum wraps modulo ``q`` (a post-processing of the noisy sum, so
        this is conservative) and the ``2^-80`` of a rounding that gives up. ``add-remove`` is not
        offered: removing a user also removes its noise share. With ``label_rows = C`` the
        vectors must be labelled rows (`privsum.sums.labelled_rows`; others raise) and replace-one
        changes a user's point and label: the shift bounds are that module's exact ones
        (`shift_bounds`) instead of twice the norm bound.

        Participation: each user's noise share is calibrated for ``n_users``; with ``k < n``
        participants the noise is ``Sk(k mu / n)``: `run` warns with `PrivacyLeakWarning` and
        `event_for_participants` reports the guarantee achieved (less noise, and the share bound
        at ``k`` users). More than ``n_users`` raise (the modulus is sized for them).

    Utility:
        The decoded sum is ``sum round(y_i) + Sk(mu)`` unless it wraps (probability below the
        ``delta_other`` share): per coordinate variance ``(2 mu + sum_i f_ij (1 - f_ij)) / gamma^2``
        for unconditional rounding (`variance`; at most ``(2 mu + n/4) / gamma^2``). Conditioning on
        the norm bound biases each user's rounded vector by at most ``sqrt(beta) / (2 (1 - beta))``
        in L2 and scales the rounding variance by at most ``1 / (1 - beta)`` (`bias_bound`). A user
        uploads ``d m`` shares of ``ceil(log2 q)`` bits (`bits_per_user`). Floating point: scaling and the
        norm check are in double precision (norms up to ``c (1 + 1e-9)`` are accepted and the
        bounds use that radius); the noise and the shares are exact integers.

    Robustness:
        ``m`` shares per sender and coordinate (`per_sender_message_cap`). **No useful bound**:
        the shares are summed modulo ``q``, so one malicious sender can make any coordinate's
        residue anything and its estimate any value of the decoding window, ``q - 1`` steps of
        ``1/gamma`` wide, whatever its norm bound (`manipulation_bound`: ``(q - 1)/gamma`` for
        ``k >= 1``). Bounding it needs a proof that each sender's shares encode a vector of norm
        at most ``Delta_2`` (validity proofs as in Prio: Corrigan-Gibbs & Boneh, "Prio: Private, Robust, and
        Scalable Computation of Aggregate Statistics", NSDI 2017), which would bound the shift
        by ``k Delta_2 / gamma`` in L2 plus the range the proof allows each sender's noise share.

    References:
        Agarwal, Kairouz & Liu, "The Skellam Mechanism for Differentially Private Federated
        Learning", NeurIPS 2021; Kairouz, Liu & Steinke, "The Distributed Discrete Gaussian
        Mechanism for Federated Learning with Secure Aggregation", ICML 2021; Balle, Bell, Gascón &
        Nissim, "Private Summation in the Multi-Message Shuffle Model", CCS 2020; Ishai,
        Kushilevitz, Ostrovsky & Sahai, "Cryptography from Anonymity", FOCS 2006.

    Examples:
        >>> protocol = SkellamVectorSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1_000, dimension=8, norm_bound=1.0)
        >>> x = np.full((1_000, 8), 0.25)
        >>> estimate = protocol.run(x, rng=0)
        >>> bool(np.all(np.abs(estimate - 250.0) < 6 * math.sqrt(protocol.variance())))
        True
        >>> protocol.guarantee.epsilon <= 1.0
        True
        >>> protocol.expected_messages_per_user == 8 * protocol.n_shares
        True
    """

    streams_chunks: ClassVar[bool] = True

    n_users: int
    dimension: int
    norm_bound: float
    scale: float
    noise_mu: float
    n_shares: int
    modulus: int
    delta: float
    rejection_probability: float = 1e-6
    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE  # type: ignore[assignment]
    label_rows: int = 0
    count_weight: float = 0.0

    def __post_init__(self) -> None:
        owner = type(self).__name__
        n_users = check_integer(self.n_users, "n_users", owner, low=3)
        check_integer(self.dimension, "dimension", owner, low=1, high=MAX_DIMENSION)
        check_real(self.norm_bound, "norm_bound", owner, low=0.0, low_open=True)
        check_real(self.scale, "scale", owner, low=0.0, low_open=True)
        check_real(self.noise_mu, "noise_mu", owner, low=0.0, low_open=True)
        check_integer(self.n_shares, "n_shares", owner, low=2, high=MAX_SHARES)
        check_integer(self.modulus, "modulus", owner, low=2, high=SPARSE_MAX_MODULUS)
        check_delta(self.delta, owner, allow_zero=False)
        check_real(self.rejection_probability, "rejection_probability", owner, low=0.0, high=0.5, low_open=True)
        relation = Neighbouring.parse(self.neighbouring, owner, RELATIONS)
        object.__setattr__(self, "neighbouring", relation)
        rows = check_label_parameters(self.label_rows, self.count_weight, self.dimension, self.norm_bound, owner)
        object.__setattr__(self, "label_rows", rows[0])
        object.__setattr__(self, "count_weight", rows[1])
        if not self.radius * self.scale < MAX_SCALED_NORM:
            raise invalid("scale", owner, "such that scale * norm_bound < 2^30 (integer norms must fit in 64 bits)", self.scale)
        if not self.wrap_probability() + 2.0**_RETRY_FAILURE_LOG2 < self.delta:
            raise invalid(
                "modulus",
                owner,
                f"large enough that the noisy sum wraps with probability below delta={self.delta:g} "
                f"(the bound is {self.wrap_probability():.3g} for n_users={n_users})",
                self.modulus,
            )
        if not math.isfinite(self.event.guarantee.epsilon):
            raise invalid(
                "n_shares",
                owner,
                f"large enough for a finite epsilon at delta={self.delta:g} (the split-and-mix distance "
                f"{self.share_distance:.3g} over {self.dimension} coordinates costs (1 + e^epsilon) times that)",
                self.n_shares,
            )

    # ----------------------------------------------------------------- calibration
    @classmethod
    def from_privacy(
        cls,
        *,
        epsilon: float,
        delta: float,
        n_users: int,
        dimension: int,
        norm_bound: float,
        neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
        calibration: str = "tight",
        scale: float | None = None,
        n_shares: int | None = None,
        rejection_probability: float = 1e-6,
        share_delta_fraction: float | None = None,
        wrap_delta_fraction: float = 0.001,
        variance_allowance: float = 0.05,
        label_rows: int = 0,
        count_weight: float = 0.0,
    ) -> SkellamVectorSum:
        """The fewest bits per user meeting ``(epsilon, delta)`` within a stated accuracy loss.

        The delta budget is split: ``share_delta_fraction`` for the split-and-mix distance (which
        fixes ``m``), ``wrap_delta_fraction`` for the wrap-around (which fixes ``q``), the rest for
        the noise, whose ``mu`` is the least (by bisection, on the safe side) whose Rényi bound
        meets ``epsilon``. ``q`` is the least modulus whose wrap-around probability is within its
        part (any integer: a power of two only where it happens to be the least), and ``m`` the
        least share count whose distance bound (`privsum.sums.split_and_mix.share_distance_bound`,
        the smaller of the chi-square bound averaged over the noise shares and BBGN20's) is within
        the shares' part. The search
        runs over ``gamma`` in octaves of ``2^2 .. 2^20`` over ``norm_bound``, refined to quarter
        octaves around the least admissible one (or the given ``scale``), and over share fractions
        ``0.01, 0.03, 0.1, 0.3`` (or the given one): among the candidates whose worst-case
        per-coordinate variance (`variance`) is within
        ``1 + variance_allowance`` of the least found, it takes the fewest bits per user
        (`bits_per_user`), then the least variance. The result's guarantee never exceeds the target.

        Args:
            epsilon: target epsilon.
            delta: target delta in ``(0, 1)``.
            n_users: number of users (at least 3).
            dimension: ``d``.
            norm_bound: ``c``.
            neighbouring: ``"replace-one"`` or ``"zero-out"``.
            calibration: ``"tight"`` (the only one: the Rényi bound with the tight conversion).
            scale: ``gamma``; ``None`` searches it.
            n_shares: ``m``; ``None`` takes the least the share bound allows; fewer raise.
            rejection_probability: ``beta`` (see the class).
            share_delta_fraction: part of ``delta`` for the shares; ``None`` searches it.
            wrap_delta_fraction: part of ``delta`` for the wrap-around.
            variance_allowance: the accuracy loss accepted for fewer bits: variance at most
                ``1 + variance_allowance`` times the least variance of the search (``0`` takes the
                most accurate candidate).
            label_rows: ``C >= 2`` for labelled-row vectors (`privsum.sums.labelled_rows`: one of
                ``C`` rows, whose last coordinate is ``count_weight``), calibrated for their exact
                replace-one shift; ``0`` (default) for plain vectors.
            count_weight: the count coordinate of labelled rows (in ``(0, norm_bound]``).
        """
        owner = f"{cls.__name__}.from_privacy"
        epsilon = check_epsilon(epsilon, owner)
        delta = check_delta(delta, owner, allow_zero=False)
        n_users = check_integer(n_users, "n_users", owner, low=3)
        dimension = check_integer(dimension, "dimension", owner, low=1, high=MAX_DIMENSION)
        norm_bound = check_real(norm_bound, "norm_bound", owner, low=0.0, low_open=True)
        relation = Neighbouring.parse(neighbouring, owner, RELATIONS)
        check_choice(calibration, "calibration", owner, ("tight",))
        beta = check_real(rejection_probability, "rejection_probability", owner, low=0.0, high=0.5, low_open=True)
        wrap_fraction = check_real(wrap_delta_fraction, "wrap_delta_fraction", owner, low=0.0, high=0.5, low_open=True)
        allowance = check_real(variance_allowance, "variance_allowance", owner, low=0.0, high=1.0)
        if share_delta_fraction is None:
            fractions = _SHARE_FRACTIONS
        else:
            fractions = (check_real(share_delta_fraction, "share_delta_fraction", owner, low=0.0, high=0.5, low_open=True),)
        if not delta * (1 - max(fractions) - wrap_fraction) - 2.0**_RETRY_FAILURE_LOG2 > 0:
            raise invalid("delta", owner, "above 2^-80 (the rounding's failure probability)", delta)
        label_rows, count_weight = check_label_parameters(label_rows, count_weight, dimension, norm_bound, owner)
        common = {
            "n_users": n_users,
            "dimension": dimension,
            "norm_bound": norm_bound,
            "delta": delta,
            "rejection_probability": beta,
            "neighbouring": relation,
            "label_rows": label_rows,
            "count_weight": count_weight,
        }
        if scale is None:
            scales = [g / norm_bound for g in _SCALE_GRID]
        else:
            scales = [check_real(scale, "scale", owner, low=0.0, low_open=True)]
        options = candidates(epsilon, scales, fractions, wrap_fraction, common)
        if scale is None and options:  # quarter octaves around the least admissible scale, where bits are fewest
            least = min(option[0] for option in options)
            lowest = min(option[1] for option in options if option[0] <= least * (1 + allowance))
            options += candidates(epsilon, [lowest * factor for factor in _REFINEMENT], fractions, wrap_fraction, common)
        if not options:
            raise invalid(
                "scale" if scale is not None else "n_users", owner, "small enough that the modulus fits in 2^46", scale or n_users
            )
        gamma, mu, modulus, shares = fewest_bits(options, allowance, n_shares, owner, n_users, dimension)
        protocol = cls(scale=gamma, noise_mu=mu, n_shares=shares, modulus=modulus, **common)
        for _ in range(60):  # float rounding in the conversion: never return a protocol above the target
            if protocol.guarantee.epsilon <= epsilon:
                return protocol
            protocol = cls(scale=gamma, noise_mu=protocol.noise_mu * (1 + 1e-9), n_shares=shares, modulus=modulus, **common)
        raise invalid("epsilon", owner, "reachable by the calibration", epsilon)  # pragma: no cover - defensive

    # ----------------------------------------------------------------- derived bounds
    @property
    def radius(self) -> float:
        """``c (1 + 1e-9)``: the largest norm accepted (the tolerance covers vectors normalised in floating point)."""
        return self.norm_bound * (1 + NORM_TOLERANCE)

    @cached_property
    def squared_norm_bound(self) -> int:
        """``K``: every user's rounded, scaled vector has squared L2 norm at most this (enforced exactly)."""
        return conditional_rounding_squared_bound(self.scale * self.radius, self.dimension, self.rejection_probability)

    @property
    def l2_bound(self) -> float:
        """``Delta_2 = sqrt(K)`` (rounded up): every user's rounded, scaled vector has L2 norm at most this."""
        return _root_up(self.squared_norm_bound)

    @property
    def l1_bound(self) -> float:
        """``Delta_1 = min(sqrt(d K), K)``: the rounded vector's L1 norm is at most this (``|a| <= a^2`` for integers)."""
        return _l1_bound(self.squared_norm_bound, self.dimension)

    @property
    def coordinate_bound(self) -> int:
        """Largest absolute value of a rounded coordinate: ``min(floor(Delta_2), ceil(gamma c))``."""
        return min(math.floor(self.l2_bound), math.ceil(self.scale * self.radius))

    @property
    def max_attempts(self) -> int:
        """Rounding attempts before a user's randomizer raises: the least ``K`` with ``beta^K <= 2^-80``."""
        return math.ceil(-_RETRY_FAILURE_LOG2 / -math.log2(self.rejection_probability))

    @property
    def shift_bounds(self) -> tuple[float, float]:
        """L2 and L1 bounds on the shift of the rounded vectors between neighbours (see the Privacy section)."""
        return _shifts(self.squared_norm_bound, self.dimension, self.scale, self.neighbouring, self.label_rows, self.count_weight)

    def wrap_probability(self, n_participants: int | None = None) -> float:
        """Chernoff bound on the probability that any coordinate's noisy sum leaves ``(-q/2, q/2]``."""
        n = (
            self.n_users
            if n_participants is None
            else check_integer(n_participants, "n_participants", type(self).__name__, low=1, high=self.n_users)
        )
        room = self.modulus // 2 - 1 - n * self.coordinate_bound
        if room <= 0:
            return 1.0
        mu = self.noise_mu * n / self.n_users
        ratio = room / (2 * mu)
        exponent = room * math.asinh(ratio) - 2 * mu * (math.sqrt(1 + ratio * ratio) - 1)
        return min(1.0, 2 * self.dimension * math.exp(-exponent))

    def share_distance_for(self, n_participants: int) -> float:
        """Distance of the ``d`` coordinates' share multisets from their ideal at ``n_participants`` users.

        `privsum.sums.split_and_mix.share_distance_bound` over ``d`` views: the smaller of the tensorised
        chi-square bound averaged over the noise shares (value mass of ``Sk(mu / n)``, `share_value_mass`)
        and BBGN20's union bound ``d 2^-sigma``.
        """
        if n_participants < 3:
            return 1.0
        mass = share_value_mass(self.noise_mu / self.n_users, self.modulus)
        return share_distance_bound(n_participants, self.n_shares, self.modulus, self.dimension, value_mass=mass)

    @property
    def share_distance(self) -> float:
        """Split-and-mix statistical distance of the whole view (``d`` coordinates; `share_distance_for`)."""
        return self.share_distance_for(self.n_users)

    # ----------------------------------------------------------------- privacy and costs
    def _event(self, n_participants: int) -> SkellamEvent:
        mu = self.noise_mu * n_participants / self.n_users
        return SkellamEvent(
            mu=mu,
            l2_sensitivity=self.shift_bounds[0],
            l1_sensitivity=self.shift_bounds[1],
            headline_delta=self.delta,
            statistical_distance=self.share_distance_for(n_participants),
            extra_delta=min(self.delta, self.wrap_probability(n_participants) + 2.0**_RETRY_FAILURE_LOG2),
            relation=self.neighbouring,
        )

    @cached_property
    def event(self) -> SkellamEvent:
        """The Skellam event of one run (Rényi bound, tight conversion, shares and wrap-around in delta)."""
        return self._event(self.n_users)

    def event_for_participants(self, n_participants: int) -> SkellamEvent:
        """The guarantee achieved when ``n_participants <= n_users`` take part: noise ``Sk(k mu / n)``, shares at ``k`` users."""
        n_participants = check_integer(n_participants, "n_participants", type(self).__name__, low=1, high=self.n_users)
        return self.event if n_participants == self.n_users else self._event(n_participants)

    @property
    def guarantee(self) -> PrivacyGuarantee:
        return self.event.guarantee

    def check_participants(self, n_participants: int) -> None:
        """Warn when fewer than ``n_users`` take part; raise when more do (the modulus is sized for ``n_users``)."""
        owner = type(self).__name__
        if n_participants > self.n_users:
            raise invalid(
                "x", owner, f"at most n_users={self.n_users} rows (the modulus is sized for them)", f"{n_participants} rows"
            )
        warn_if_fewer(n_participants, self.n_users, owner)

    @property
    def alphabet(self) -> range:  # type: ignore[override]
        """``range(modulus)``: every residue (never materialised)."""
        return range(self.modulus)

    @property
    def expected_messages_per_user(self) -> float:
        """``d m``: one share message per coordinate and share."""
        return float(self.dimension * self.n_shares)

    def bits_per_message(self, n_instances: int = 1) -> int:
        """``ceil(log2 q)``: one share; no tag, as every coordinate (of every instance) is shuffled on its own."""
        check_integer(n_instances, "n_instances", type(self).__name__, low=1)
        return math.ceil(math.log2(self.modulus))

    def bits_per_user(self, n_instances: int = 1) -> int:
        """What one user uploads: ``n_instances d m`` shares of ``ceil(log2 q)`` bits.

        Examples:
            >>> p = SkellamVectorSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1_000, dimension=8, norm_bound=1.0)
            >>> p.bits_per_user() == 8 * p.n_shares * p.bits_per_message()
            True
        """
        n_instances = check_integer(n_instances, "n_instances", type(self).__name__, low=1)
        return n_instances * self.dimension * self.n_shares * self.bits_per_message()

    def variance(self, x: Any = None) -> float | np.ndarray:
        """Per-coordinate variance of the estimate of ``sum_i x_i``.

        ``None``: the worst case over inputs, ``(2 mu + n / (4 (1 - beta))) / gamma^2`` (a float).
        With inputs ``x``: ``(2 mu' + sum_i f_ij (1 - f_ij)) / gamma^2`` per coordinate, the exact
        variance with unconditional rounding (``mu' = mu k / n`` for ``k`` rows); conditioning
        changes the rounding part by at most a factor ``1 / (1 - beta)`` (see `bias_bound`).
        """
        if x is None:
            return (2 * self.noise_mu + self.n_users / (4 * (1 - self.rejection_probability))) / self.scale**2
        scaled = self._scaled_inputs(x)
        if scaled.shape[0] > self.n_users:
            raise invalid("x", type(self).__name__, f"at most n_users={self.n_users} rows", f"{scaled.shape[0]} rows")
        fraction = scaled - np.floor(scaled)
        mu = self.noise_mu * scaled.shape[0] / self.n_users
        return (2 * mu + (fraction * (1 - fraction)).sum(axis=0)) / self.scale**2

    def bias_bound(self, n_participants: int | None = None) -> float:
        """Bound on the L2 norm of the estimate's bias: ``k sqrt(beta) / (2 (1 - beta) gamma)`` for ``k`` users.

        One attempt ``y + e`` is unbiased; conditioning on the event ``A`` (norm within
        ``Delta_2``, ``P(not A) <= beta``) moves the mean by ``E[e; not A] / P(A)``, and for a unit
        vector ``u``, ``E[|<u, e>|; not A] <= sqrt(Var <u, e>) sqrt(beta) <= sqrt(beta) / 2``.
        """
        k = (
            self.n_users
            if n_participants is None
            else check_integer(n_participants, "n_participants", type(self).__name__, low=1)
        )
        beta = self.rejection_probability
        return k * math.sqrt(beta) / (2 * (1 - beta) * self.scale)

    # ----------------------------------------------------------------- roles
    def _scaled_inputs(self, x: Any) -> np.ndarray:
        owner = type(self).__name__
        array = check_array(x, "x", owner, ndim=2)
        if array.shape[0] == 0 or array.shape[1] != self.dimension:
            raise invalid(
                "x", owner, f"an array of shape (n_users, {self.dimension}) with at least one row", f"shape {array.shape}"
            )
        values = array.astype(float)
        norms = np.sqrt(np.einsum("ij,ij->i", values, values))
        if not np.all(norms <= self.radius):
            worst = int(np.argmax(norms))
            raise invalid(
                "x", owner, f"rows of L2 norm at most norm_bound={self.norm_bound:g}", f"row {worst} of norm {norms[worst]:.6g}"
            )
        if self.label_rows:
            check_labelled_rows(values, self.label_rows, self.count_weight, owner)
        return values * self.scale

    def round_vectors(self, x: Any, *, rng: RNGLike = None) -> np.ndarray:
        """Conditional randomized rounding of ``gamma x``: unbiased rounding, rows resampled until within ``Delta_2``.

        Raises:
            RuntimeError: a row still exceeds ``Delta_2`` after `max_attempts` attempts (probability at most 2^-80).
        """
        return self._round_scaled(self._scaled_inputs(x), as_generator(rng, type(self).__name__))

    def _round_scaled(self, scaled: np.ndarray, generator: np.random.Generator) -> np.ndarray:
        floor = np.floor(scaled)
        fraction = scaled - floor
        rounded = (floor + (generator.random(scaled.shape) < fraction)).astype(np.int64)
        limit = self.squared_norm_bound
        pending = np.flatnonzero(np.einsum("ij,ij->i", rounded, rounded) > limit)
        for _ in range(self.max_attempts - 1):
            if pending.size == 0:
                return rounded
            retry = (floor[pending] + (generator.random((pending.size, self.dimension)) < fraction[pending])).astype(np.int64)
            rounded[pending] = retry
            pending = pending[np.einsum("ij,ij->i", retry, retry) > limit]
        if pending.size:
            raise RuntimeError(
                f"{type(self).__name__}: conditional rounding of row {int(pending[0])} exceeded the L2 bound "
                f"{self.l2_bound:.6g} in {self.max_attempts} attempts (probability below 2^-80)."
            )
        return rounded

    def _shares(self, x: Any, generator: np.random.Generator, *, check: bool = True) -> np.ndarray:
        owner = type(self).__name__
        scaled = self._scaled_inputs(x)
        if scaled.shape[0] * self.dimension * self.n_shares > MAX_FAITHFUL_MESSAGES:
            raise invalid(
                "x",
                owner,
                f"at most {MAX_FAITHFUL_MESSAGES} messages (n * d * m) on the share-level paths; "
                "use path='fast' or stream chunks",
                f"{scaled.shape[0]} rows",
            )
        rounded = self._round_scaled(scaled, generator)
        if check:
            self.check_participants(rounded.shape[0])
        rate = self.noise_mu / self.n_users
        noisy = rounded + generator.poisson(rate, rounded.shape) - generator.poisson(rate, rounded.shape)
        secret = np.mod(noisy, self.modulus)
        shares = generator.integers(0, self.modulus, size=(*secret.shape, self.n_shares), dtype=np.int64)
        shares[..., -1] = np.mod(secret - np.mod(shares[..., :-1].sum(axis=-1), self.modulus), self.modulus)
        return shares  # (n_users, dimension, n_shares)

    def wire_instances(self, n_instances: int | None = None) -> int:
        """The ``d`` coordinates are the instances."""
        return wire_coordinates(self.dimension, n_instances, type(self).__name__)

    def sender_cap(self, n_instances: int, exceed_probability: float) -> SenderCap:
        """``m`` shares per coordinate."""
        return SenderCap.fixed(self.n_shares, n_instances)

    def randomize(self, x: Any, *, rng: RNGLike = None) -> MessageBatch:
        """Every user's ``d m`` messages ``(coordinate, share)``."""
        shares = self._shares(x, as_generator(rng, type(self).__name__))
        coordinates = np.broadcast_to(np.arange(self.dimension)[None, :, None], shares.shape)
        return MessageBatch(coordinates.ravel(), shares.ravel(), n_instances=self.dimension)

    def view(self, messages: SparseMessageHistogram | MessageBatch | MessageHistogram) -> SparseMessageHistogram:  # type: ignore[override]
        """The sparse histogram of ``(coordinate, share)`` messages (a sparse view is checked and returned)."""
        owner = type(self).__name__
        messages = residue_view(messages, self.modulus, owner)
        if messages.n_instances != self.dimension:
            raise invalid("view", owner, f"a view of {self.dimension} coordinates", f"{messages.n_instances} instances")
        return messages

    def sample_view(self, x: Any, *, rng: RNGLike = None) -> SparseMessageHistogram:  # type: ignore[override]
        """The shares counted directly (no permutation): the faithful view's law, without the shuffle."""
        shares = self._shares(x, as_generator(rng, type(self).__name__))
        coordinates = np.broadcast_to(np.arange(self.dimension)[None, :, None], shares.shape)
        ones = np.ones(shares.size, dtype=np.int64)
        return SparseMessageHistogram.from_pairs(coordinates.ravel(), shares.ravel(), ones, self.dimension)

    def partial_view(self, chunk: Any, *, rng: RNGLike = None, path: str = "fast") -> PartialView:
        """One chunk of users, counted (participants are checked once, on the total).

        ``"faithful"``: the chunk's shares, shuffled, as a sparse view. ``"fast"``: one message per
        coordinate, the residue of the chunk's share sum, ``(sum round(y_i) + Sk(k mu / n)) mod q``
        for ``k`` users (exact in law: the ``k`` noise shares sum to ``Sk(k mu / n)``); the partial
        views add up modulo ``q`` to the law of the faithful analyzer's sum, in memory ``O(k d)``.
        """
        owner = type(self).__name__
        path = check_choice(path, "path", owner, EXECUTION_PATHS)
        generator = as_generator(rng, owner)
        if path == "faithful":
            view = self.view(self.shuffle(self.randomize_unchecked(chunk, rng=generator), rng=generator))
            return PartialView(view, int(view.total_messages // (self.dimension * self.n_shares)))
        rounded = self.round_vectors(chunk, rng=generator)
        residues = self.noisy_residues(rounded.sum(axis=0), rounded.shape[0], generator)
        coordinates = np.arange(self.dimension)
        view = SparseMessageHistogram.from_pairs(coordinates, residues, np.ones(self.dimension, dtype=np.int64), self.dimension)
        return PartialView(view, int(rounded.shape[0]))

    def randomize_unchecked(self, x: Any, *, rng: RNGLike = None) -> MessageBatch:
        """`randomize` without the participant check (for one chunk of a streamed run)."""
        shares = self._shares(x, as_generator(rng, type(self).__name__), check=False)
        coordinates = np.broadcast_to(np.arange(self.dimension)[None, :, None], shares.shape)
        return MessageBatch(coordinates.ravel(), shares.ravel(), n_instances=self.dimension)

    def _message_cap(self, tail_probability: float) -> int:
        """``m`` shares per user and coordinate."""
        return self.n_shares

    def manipulation_bound(self, n_malicious: int, *, cap: int | None = None) -> float:
        """``(q - 1)/gamma`` per coordinate for ``n_malicious >= 1`` (the whole decoding window; 0 for none)."""
        owner = f"{type(self).__name__}.manipulation_bound"
        n_malicious = check_malicious(n_malicious, owner)
        self._enforced_cap(cap, owner)  # any cap: one share suffices
        return (self.modulus - 1) / self.scale if n_malicious else 0.0

    def analyze(self, view: SparseMessageHistogram | MessageBatch | MessageHistogram) -> np.ndarray:  # type: ignore[override]
        """The estimate of ``sum_i x_i``: each coordinate's shares summed modulo ``q``, centred, divided by ``gamma``."""
        sparse = self.view(view)
        residues = residue_sums(sparse.instances, sparse.values, sparse.counts, self.dimension, self.modulus)
        return self.decode(residues)

    def decode(self, residues: Any) -> np.ndarray:
        """Residues modulo ``q`` (one per coordinate) to the estimate: the representative in ``(-q/2, q/2]`` over ``gamma``."""
        owner = type(self).__name__
        residues = check_integer_array(residues, "residues", owner, ndim=1, low=0)
        if residues.size != self.dimension or (residues.size and not residues.max() < self.modulus):
            raise invalid("residues", owner, f"{self.dimension} integers in [0, {self.modulus})", f"shape {residues.shape}")
        half = self.modulus // 2
        centred = np.mod(residues + half - 1, self.modulus) - (half - 1)
        return centred.astype(float) / self.scale

    def run(self, x: Any, *, rng: RNGLike = None, path: str = "fast") -> Any:
        """Run the protocol; the fast path samples the decoded noisy sum directly.

        ``"fast"``: the users' conditional rounding, then ``sum + Sk(k mu / n)`` modulo ``q``,
        decoded: the law of the faithful path's output (the shares of every coordinate sum to
        the noisy value modulo ``q``, and the ``k`` noise shares sum to ``Sk(k mu / n)``).
        ``"faithful"``: every share materialised, shuffled and analysed (``n d m`` messages at
        most `MAX_FAITHFUL_MESSAGES`). A stream of chunks goes to `run_streamed` (memory bounded by
        one chunk; see `partial_view`).
        """
        owner = type(self).__name__
        path = check_choice(path, "path", owner, EXECUTION_PATHS)
        generator = as_generator(rng, owner)
        if is_chunk_stream(x) or path == "faithful":
            return super().run(x, rng=generator, path=path)
        rounded = self.round_vectors(x, rng=generator)
        self.check_participants(rounded.shape[0])
        return self.decode(self.noisy_residues(rounded.sum(axis=0), rounded.shape[0], generator))

    def noisy_residues(self, rounded_total: np.ndarray, n_participants: int, generator: np.random.Generator) -> np.ndarray:
        """``(rounded_total + Sk(k mu / n)) mod q`` for ``k = n_participants``: what the shares of ``k`` users sum to.

        The fast paths' one noise draw (the ``k`` users' noise shares sum to ``Sk(k mu / n)``).
        """
        mu = self.noise_mu * n_participants / self.n_users
        noise = generator.poisson(mu, self.dimension) - generator.poisson(mu, self.dimension)
        return np.mod(rounded_total + noise, self.modulus)


def _shifts(
    squared: int, dimension: int, scale: float, relation: Neighbouring, label_rows: int, count_weight: float
) -> tuple[float, float]:
    """L2 and L1 shift bounds: ``(Delta_2, Delta_1)`` for zero-out, twice that for replace-one, exact for labelled rows."""
    if relation is not Neighbouring.REPLACE_ONE:
        return _root_up(squared), _l1_bound(squared, dimension)
    if label_rows:
        return labelled_row_shifts(squared, dimension, scale, label_rows, count_weight)
    return 2 * _root_up(squared), 2 * _l1_bound(squared, dimension)


def _l1_bound(squared_norm_bound: int, dimension: int) -> float:
    """``min(sqrt(d K), K)``, the square root rounded up."""
    return min(_root_up(dimension * squared_norm_bound), float(squared_norm_bound))


def _calibrate_mu(
    epsilon: float,
    noise_delta: float,
    *,
    gamma: float,
    dimension: int,
    norm_bound: float,
    rejection_probability: float,
    neighbouring: Neighbouring,
    label_rows: int = 0,
    count_weight: float = 0.0,
    **_: Any,
) -> float:
    """Least ``mu`` (bisection, safe end) whose Rényi bound gives ``epsilon`` at ``noise_delta``."""
    squared = conditional_rounding_squared_bound(gamma * norm_bound * (1 + NORM_TOLERANCE), dimension, rejection_probability)
    l2_shift, l1_shift = _shifts(squared, dimension, gamma, neighbouring, label_rows, count_weight)
    target = epsilon * (1 - 1e-9)

    def delta_at(log_mu: float) -> float:
        event_rdp = SkellamEvent(mu=math.exp(log_mu), l2_sensitivity=l2_shift, l1_sensitivity=l1_shift, headline_delta=0.5)
        return rdp_delta(RDP_ORDERS, event_rdp.rdp(), target)

    upper = math.log(l2_shift**2) + 2.0
    while not delta_at(upper) <= noise_delta:
        upper += 2.0
        if upper > 200:  # pragma: no cover - epsilon and delta are validated positive
            raise invalid("epsilon", "SkellamVectorSum.from_privacy", "achievable", epsilon)
    return math.exp(
        calibrate(delta_at, target_delta=noise_delta, lower=upper - 40.0, upper=upper, more_private="increasing", tolerance=1e-10)
    )
