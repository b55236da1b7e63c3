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

The class holds the parameters, the guarantee and the costs; it mixes in its calibration search
(`privsum.sums._skellam_search`), its parties' shares and their decoding (`privsum.sums._skellam_wire`)
and the conditional rounding with its norm bounds (`privsum._conditional_rounding`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from privsum._conditional_rounding import (
    MAX_DIMENSION,
    MAX_SCALED_NORM,
    RETRY_FAILURE_LOG2,
    ConditionalRounding,
    conditional_rounding_l2_bound,
    conditional_rounding_squared_bound,
)
from privsum._random import RNGLike, as_generator
from privsum._validation import check_array, check_choice, check_integer, check_real, invalid
from privsum.accounting import Neighbouring, PrivacyGuarantee
from privsum.accounting.skellam import SkellamEvent
from privsum.shuffle import ShuffleProtocol
from privsum.shuffle.protocol import EXECUTION_PATHS
from privsum.shuffle.streaming import is_chunk_stream
from privsum.sums._common import warn_if_fewer
from privsum.sums._skellam_search import (
    COMMON_FIELDS,
    MAX_SHARES,
    MIN_SCALE,
    NORM_TOLERANCE,
    SkellamCalibration,
    checked_common,
    neighbour_shifts,
    share_value_mass,
    skellam_tail,
)
from privsum.sums._skellam_wire import MAX_FAITHFUL_MESSAGES, SkellamShareWire
from privsum.sums.labelled_rows import check_labelled_rows
from privsum.sums.sparse_shares import SPARSE_MAX_MODULUS
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


@dataclass(frozen=True, kw_only=True)
class SkellamVectorSum(SkellamCalibration, SkellamShareWire, ConditionalRounding, ShuffleProtocol):
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
        common = checked_common({name: getattr(self, name) for name in COMMON_FIELDS}, owner)
        for name in ("neighbouring", "label_rows", "count_weight"):
            object.__setattr__(self, name, common[name])
        check_real(self.scale, "scale", owner, low=MIN_SCALE)
        check_real(self.noise_mu, "noise_mu", owner, low=0.0, low_open=True)
        check_integer(self.n_shares, "n_shares", owner, low=2, high=MAX_SHARES)
        check_integer(self.modulus, "modulus", owner, low=2, high=SPARSE_MAX_MODULUS)
        if not self.radius * self.scale < MAX_SCALED_NORM:
            raise invalid("scale", owner, "such that scale * norm_bound < 2^30 (integer norms must fit in 64 bits)", self.scale)
        if not self.wrap_probability() + 2.0**RETRY_FAILURE_LOG2 < self.delta:
            raise invalid(
                "modulus",
                owner,
                f"large enough that the noisy sum wraps with probability below delta={self.delta:g} "
                f"(the bound is {self.wrap_probability():.3g} for n_users={common['n_users']})",
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

    # ----------------------------------------------------------------- derived bounds
    @property
    def radius(self) -> float:
        """``c (1 + 1e-9)``: the largest norm accepted (the tolerance covers vectors normalised in floating point)."""
        return self.norm_bound * (1 + NORM_TOLERANCE)

    @property
    def _rounding_radius(self) -> float:
        """``gamma c (1 + 1e-9)``: the largest norm of a user's scaled vector (what `ConditionalRounding` rounds)."""
        return self.scale * self.radius

    @property
    def shift_bounds(self) -> tuple[float, float]:
        """L2 and L1 bounds on the shift of the rounded vectors between neighbours (see the Privacy section)."""
        return neighbour_shifts(
            self.squared_norm_bound, self.dimension, self.scale, self.neighbouring, self.label_rows, self.count_weight
        )

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
            extra_delta=min(self.delta, self.wrap_probability(n_participants) + 2.0**RETRY_FAILURE_LOG2),
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
        return self._round_rows(self._scaled_inputs(x), as_generator(rng, type(self).__name__))

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
