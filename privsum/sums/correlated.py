"""Correlated-noise integer summation (Ghazi, Kumar, Manurangsi, Pagh & Sinha, ICML 2021; "GKMPS21").

Each user sends its value (if non-zero), its share of a central discrete-Laplace noise as
``+1``/``-1`` messages, and zero-sum *flooding* multisets that cancel in the sum but hide which
messages carry data: pairs ``(+1, -1)`` and, for ``2 <= |i| <= D``, triples
``(i, -sign(i) floor(|i|/2), -sign(i) ceil(|i|/2))``. Every count is negative binomial, split
over users by infinite divisibility.

The numerical privacy check (exact per pair of values, certified at any number of levels) is
`privsum.sums._correlated_verification`, mixed into `CorrelatedNoiseSum`.

References:
    Ghazi, Kumar, Manurangsi, Pagh & Sinha, "Differentially Private Aggregation in the Shuffle
    Model: Almost Central Accuracy in Almost a Single Message", ICML 2021; the parameters as
    restated by Dong, Luo, Fanti, Shi & Yi, "(Almost) Instance-optimal Clipping for Summation
    Problems in the Shuffle Model of Differential Privacy", CCS 2024.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from privsum._random import RNGLike, as_generator
from privsum._validation import (
    check_choice,
    check_delta,
    check_epsilon,
    check_integer,
    check_probability,
    check_real,
    invalid,
    refusals_as,
)
from privsum.accounting import GuaranteeEvent, PrivacyGuarantee
from privsum.accounting.cache import cached_calibration
from privsum.shuffle import MessageBatch, MessageHistogram, ShuffleProtocol
from privsum.shuffle.caps import noise_cap
from privsum.shuffle.noise import discrete_laplace_variance, sample_negative_binomial
from privsum.shuffle.protocol import EXECUTION_PATHS, SenderCap
from privsum.shuffle.robustness import weighted_negative_binomial_cap
from privsum.shuffle.streaming import PartialView
from privsum.sums._common import check_sum_request, integer_inputs, randomized_round, warn_if_fewer
from privsum.sums._correlated_flooding import (
    CERTIFIED_MAX_LEVELS,
    COMMUNICATION_VARIANCE_FACTOR,
    MAX_VARIANCE_FACTOR,
    communication_flooding,
    noisiest_ratio,
)
from privsum.sums._correlated_verification import VERIFIABLE_LEVELS, CorrelatedVerification, triple

__all__ = ["CorrelatedNoiseSum", "gkmps_parameters"]

#: Most levels ``D`` a user's messages may span: each user sends flooding triples for ``2D - 1`` offsets.
MAX_LEVELS = 2**16


def gkmps_parameters(epsilon: float, delta: float, levels: int, *, spread_log: str = "natural") -> dict[str, Any]:
    """The analytic noise parameters of GKMPS21 as publicly restated (Dong, Luo, Fanti, Shi & Yi, CCS 2024).

    ``eps* = 0.7 eps`` for the central noise ``DLap(e^{-eps*/D})``; ``eps1 = eps2 = min(1, 0.3 eps)/2``
    and ``delta1 = delta2 = delta/2`` for flooding: pairs ``NB(3(1 + log(1/delta1)), e^{-0.2 eps1/D})``
    and, with ``Gamma = D (ceil(log D) + 1)`` and ``t_i = ceil(Gamma/|i|)``, triples
    ``NB(3(1 + log((2D-1)/delta2)), e^{-0.1 eps2/t_i})`` (shapes are totals over all users).

    ``spread_log="natural"`` (the default) takes the natural log in ``Gamma``, as the paper and
    its public restatement do; ``"log2"`` the base-2 log of privsum's earlier versions, which
    floods more (at ``D = 317``, 42% more messages per user). The two differ only for
    ``D`` in ``5..7`` among the levels ``CorrelatedNoiseSum.verify`` can check, where the natural
    log is verified to meet the target (at a claimed ``(1, 1e-6)``: 0.711, 0.7124 and 0.7162 for
    ``D = 5, 6, 7`` by `CorrelatedNoiseSum.verified_epsilon`, the last two re-run for issue 28 in
    about 2 and 3 minutes; ``D = 5`` in a slow test); larger ``D`` rest on the paper's claim.

    Examples:
        >>> parameters = gkmps_parameters(1.0, 1e-6, 1)
        >>> round(parameters["central_ratio"], 6), parameters["triple_ratios"]
        (0.496585, ())
    """
    owner = "gkmps_parameters"
    epsilon = check_epsilon(epsilon, owner)
    delta = check_delta(delta, owner, allow_zero=False)
    levels = check_integer(levels, "levels", owner, low=1, high=MAX_LEVELS)
    log = {"natural": math.log, "log2": math.log2}[check_choice(spread_log, "spread_log", owner, ("natural", "log2"))]
    flood_epsilon = min(1.0, 0.3 * epsilon) / 2
    flood_delta = delta / 2
    spread = levels * (math.ceil(log(levels)) + 1) if levels > 1 else 1
    triple_ratios = tuple(math.exp(-0.1 * flood_epsilon / math.ceil(spread / size)) for size in range(2, levels + 1))
    return {
        "central_ratio": math.exp(-0.7 * epsilon / levels),
        "pair_shape": 3 * (1 + math.log(1 / flood_delta)),
        "pair_ratio": math.exp(-0.2 * flood_epsilon / levels),
        "triple_shape": 3 * (1 + math.log((2 * levels - 1) / flood_delta)),
        "triple_ratios": triple_ratios,
    }


@dataclass(frozen=True, kw_only=True)
class CorrelatedNoiseSum(CorrelatedVerification, ShuffleProtocol):
    """GKMPS21 shuffled sum of integers in ``{0..domain}``, with many independent instances.

    Inputs: ``(n_users,)`` or ``(n_users, n_instances)`` integers; with ``levels < domain`` each
    value is first randomly rounded to ``{0..levels}`` (``x levels / domain``, unbiased; Dong et al. (CCS 2024)
    section 3.3) and the estimate is scaled back. Per user and instance the randomizer sends its
    (rounded) value if non-zero, ``NB(1/n, a)`` messages ``+1`` and as many ``-1`` (the central
    noise sums to ``DLap(a)``, ``a = central_ratio``), ``NB(pair_shape/n, pair_ratio)`` pairs
    ``(+1, -1)`` and, for each ``2 <= |i| <= levels``, ``NB(triple_shape/n, triple_ratios[|i|-2])``
    zero-sum triples of kind ``i``. Messages carry the instance id. The analyzer returns the sum of
    all message values (times ``domain/levels``).

    Args:
        n_users: users the noise shares are calibrated for (fewer warn, more are accepted: see Privacy).
        domain: ``Delta``; inputs are integers in ``{0..Delta}``.
        levels: ``D``, the domain after random rounding (``D = Delta``: no rounding).
        central_ratio: ``a`` of the central ``DLap(a)``.
        pair_shape: total shape (over users) of the flooding pairs' NB.
        pair_ratio: ratio of the flooding pairs' NB.
        triple_shape: total shape of each kind of flooding triple.
        triple_ratios: ratio for ``|i| = 2..D`` (the same for ``i`` and ``-i``).
        epsilon: the headline epsilon.
        delta: the headline delta.
        verified: whether the headline was checked numerically when it was built (`verify`, or
            `certified_delta` for ``flooding="communication"``).
        clip: clip inputs to ``{0..domain}`` instead of raising.

    Privacy:
        Replace-one, per instance, on the shuffled multiset (the message-count view); trusted
        shuffler. With ``calibration="analytic"`` the headline is the *claim* of GKMPS21 with
        the constants of a public restatement of GKMPS21 (not proven here). What the code
        verifies, with `privacy_profile_bound` / `verify`: the view is a fixed linear map of the
        independent noise counts plus the data, and the change of one user's value is
        reproduced by shifting the 2-D central block ``(#A + #P, #B + #P)`` and a few triple
        counts (the tree of triples that splits ``x`` into ``+-1`` messages); the profile of that
        shift (2-D block exact, triples exact 1-D, composed with pessimistic PLDs) bounds the
        view's profile for every neighbouring pair and every other users' data. For ``D <= 2``
        the linear map is invertible, so the bound is the exact profile of the count view.
        ``calibration="tight"`` runs this check for all pairs of rounded values (``D <= 8``),
        refuses parameters that miss the target and reports the verified epsilon. At any ``D``
        (up to 1024), `certified_delta` bounds all pairs at once by one composition (looser than
        `verify`, never below it in the tests); ``flooding="communication"`` is calibrated by it. The view's
        distribution does not depend on ``n`` (per-user NB shares sum to the totals), so the
        check covers every ``n`` -- provided all ``n`` users take part.

        Participation: each user sends ``1/n_users`` of every noise kind, so ``m`` participants
        put ``m/n_users`` of it in the view. **More** than ``n_users`` never hurt: the extra noise
        (and the extra users' data) is independent of the target, so the view is a
        post-processing of the calibrated one (the sum's variance grows by the extra noise).
        **Fewer** leave less noise: `run`, `randomize` and `sample_view` warn with
        `PrivacyLeakWarning`, and `event_for_participants` runs the verification above on the
        noise actually present (every shape times ``m/n_users``), for ``D <= 8``.

    Utility:
        Unbiased; variance ``(Delta/D)^2 (2a/(1-a)^2 + sum_i f_i (1 - f_i))`` with ``f_i`` the
        rounding remainders (`variance`); `error_bound` for a failure probability.

    Robustness:
        Honest senders send a random number of messages: `per_sender_message_cap` ``c`` is the
        ``tail_probability`` quantile of one user's count per instance (its data message and
        every noise kind, computed exactly; its cost in delta: `privsum.shuffle.robustness`).
        Each message is worth at most ``D (Delta/D) = Delta``, so ``k`` malicious senders shift
        an estimate by at most ``k c Delta`` (all sending ``c`` messages ``D``;
        `manipulation_bound`), against an honest contribution between 0 and ``k Delta``.

    References:
        Ghazi, Kumar, Manurangsi, Pagh & Sinha, "Differentially private aggregation in the shuffle
        model: almost central accuracy in almost a single message", ICML 2021; Dong, Luo, Fanti,
        Shi & Yi, CCS 2024 (Dong et al. (CCS 2024)), section 3.3.

    Examples:
        >>> protocol = CorrelatedNoiseSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1_000, domain=3)
        >>> x = np.arange(1_000) % 4
        >>> bool(abs(protocol.run(x, rng=0)[0] - x.sum()) < protocol.error_bound(1e-6))
        True
        >>> round(protocol.expected_messages_per_user, 1) > 1
        True
    """

    streams_chunks: ClassVar[bool] = True

    n_users: int
    domain: int
    levels: int
    central_ratio: float
    pair_shape: float
    pair_ratio: float
    triple_shape: float
    triple_ratios: tuple[float, ...]
    epsilon: float
    delta: float
    verified: bool = False
    clip: bool = False

    def __post_init__(self) -> None:
        owner = type(self).__name__
        check_integer(self.n_users, "n_users", owner, low=1)
        domain = check_integer(self.domain, "domain", owner, low=1)
        levels = check_integer(self.levels, "levels", owner, low=1, high=domain)
        check_probability(self.central_ratio, "central_ratio", owner, allow_zero=False)
        check_real(self.pair_shape, "pair_shape", owner, low=0.0, low_open=True)
        check_probability(self.pair_ratio, "pair_ratio", owner, allow_zero=False)
        check_real(self.triple_shape, "triple_shape", owner, low=0.0, low_open=True)
        ratios = tuple(self.triple_ratios)
        if len(ratios) != levels - 1:
            raise invalid("triple_ratios", owner, f"{levels - 1} ratios (one per |i| = 2..levels)", self.triple_ratios)
        for ratio in ratios:
            check_probability(ratio, "triple_ratios", owner, allow_zero=False)
        object.__setattr__(self, "triple_ratios", tuple(float(r) for r in ratios))
        check_epsilon(self.epsilon, owner)
        check_delta(self.delta, owner, allow_zero=False)
        for name in ("verified", "clip"):
            if not isinstance(getattr(self, name), bool):
                raise invalid(name, owner, "a bool", getattr(self, name))

    @classmethod
    def from_privacy(
        cls,
        *,
        epsilon: float,
        delta: float,
        n_users: int,
        domain: int = 1,
        calibration: str = "analytic",
        levels: int | None = None,
        clip: bool = False,
        spread_log: str = "natural",
        flooding: str = "paper",
        variance_factor: float | None = None,
    ) -> CorrelatedNoiseSum:
        """The protocol with the restated GKMPS21 parameters for ``(epsilon, delta)``.

        Args:
            epsilon: target epsilon.
            delta: target delta in ``(0, 1)``.
            n_users: number of users.
            domain: ``Delta``.
            calibration: ``"analytic"`` (the paper's constants, claimed) or ``"tight"`` (the same
                parameters, verified numerically for every neighbouring pair; needs ``levels <= 8``;
                raises if the check fails; the headline is the verified epsilon).
            levels: ``D`` after random rounding; ``None`` keeps ``D = Delta``.
            clip: see the class.
            spread_log: the log in the flooding spread ``Gamma`` (see `gkmps_parameters`).
            flooding: ``"paper"`` (the flooding of `gkmps_parameters`) or ``"communication"``
                (with ``calibration="tight"``, any ``levels`` up to 1024): the central noise is
                the most the variance allowance permits (``DLap(a)``, ``2a/(1-a)^2`` at most
                ``variance_factor`` times the paper's ``a = e^(-0.7 epsilon/D)``: it leaves the
                most budget to flooding, and its own ``2a/(1-a)`` messages are few), and the
                flooding is the cheapest in expected messages per user whose certified delta
                (`certified_delta`, a bound valid at any ``levels``) meets the target, searched
                over one shape ``r >= 1`` for pairs and triples and standard deviations ``kappa``
                times the largest shift each count must hide (``privsum.sums._correlated_flooding``).
                The headline is the certified epsilon at ``delta``. At ``n = 50,000``,
                ``Delta = 100``, ``(1, 1e-6)``: about 100 times fewer messages than ``"paper"``
                (``benchmarks/bench_correlated_flooding.py``).
            variance_factor: with ``flooding="communication"`` only: the central noise variance
                allowed, as a multiple in ``[1, 16]`` of the ``"paper"`` noise's; ``None`` means 1.1.

        Raises:
            InvalidParameterError: out-of-range parameters; ``calibration="tight"`` with the paper
                flooding above 8 levels; no certified communication flooding meets the target.
        """
        owner = f"{cls.__name__}.from_privacy"
        epsilon, delta, n_users, domain = check_sum_request(epsilon, delta, n_users, domain, owner)
        calibration = check_choice(calibration, "calibration", owner, ("tight", "analytic"))
        factor = _communication_factor(owner, calibration, flooding, variance_factor)
        if levels is None:
            if domain > MAX_LEVELS:
                raise invalid("domain", owner, f"at most {MAX_LEVELS} unless levels= rounds it to fewer levels", domain)
            levels = domain
        else:
            levels = check_integer(levels, "levels", owner, low=1, high=min(domain, MAX_LEVELS))
        with refusals_as(owner):
            parameters = gkmps_parameters(epsilon, delta, levels, spread_log=spread_log)
        protocol = cls(n_users=n_users, domain=domain, levels=levels, epsilon=epsilon, delta=delta, clip=clip, **parameters)
        if factor is not None:
            return _communication_protocol(protocol, factor)
        if calibration == "analytic":
            return protocol
        if levels > VERIFIABLE_LEVELS:
            raise invalid("levels", owner, f"at most {VERIFIABLE_LEVELS} for the verified ('tight') calibration", levels)
        verified_epsilon = protocol.verified_epsilon(delta)
        if not verified_epsilon <= epsilon:
            raise invalid("epsilon", owner, f"met by the verified bound (it certifies only {verified_epsilon:.4g})", epsilon)
        return cls(
            n_users=n_users,
            domain=domain,
            levels=levels,
            epsilon=verified_epsilon,
            delta=delta,
            verified=True,
            clip=clip,
            **parameters,
        )

    # ----------------------------------------------------------------- message kinds
    @cached_property
    def _kinds(self) -> tuple[tuple[float, float, tuple[int, ...]], ...]:
        """``(total shape, ratio, message values)`` of every noise kind."""
        kinds = [(1.0, self.central_ratio, (1,)), (1.0, self.central_ratio, (-1,)), (self.pair_shape, self.pair_ratio, (1, -1))]
        for size in range(2, self.levels + 1):
            ratio = self.triple_ratios[size - 2]
            kinds += [(self.triple_shape, ratio, triple(size)), (self.triple_shape, ratio, triple(-size))]
        return tuple(kinds)

    @property
    def alphabet(self) -> tuple[int, ...]:
        return tuple(v for v in range(-self.levels, self.levels + 1) if v != 0)

    @property
    def event(self) -> GuaranteeEvent:
        return GuaranteeEvent(PrivacyGuarantee(self.epsilon, self.delta))

    def event_for_participants(self, n_participants: int) -> GuaranteeEvent:
        """The guarantee achieved when ``n_participants`` users take part (`event` for ``n_users`` or more).

        Fewer: the verified epsilon at `delta` (`verified_epsilon`) of the noise actually present,
        every noise shape scaled by ``n_participants / n_users``. With ``levels > 8`` nothing can
        be verified here and the event has infinite epsilon (no guarantee is claimed).
        """
        owner = type(self).__name__
        n_participants = check_integer(n_participants, "n_participants", owner, low=1)
        if n_participants >= self.n_users:
            return self.event
        if self.levels > VERIFIABLE_LEVELS:
            return GuaranteeEvent(PrivacyGuarantee(math.inf, self.delta))
        return GuaranteeEvent(PrivacyGuarantee(self.verified_epsilon(self.delta, n_participants=n_participants), self.delta))

    def check_participants(self, n_participants: int) -> None:
        """Warn with `PrivacyLeakWarning` when fewer than ``n_users`` take part; more are fine."""
        warn_if_fewer(n_participants, self.n_users, type(self).__name__)

    @property
    def expected_messages_per_user(self) -> float:
        """``1 + sum over kinds of (messages per kind) shape/n ratio/(1-ratio)``, per instance (1 counts the data message)."""
        noise = sum(len(values) * shape * ratio / (1 - ratio) for shape, ratio, values in self._kinds)
        return 1.0 + noise / self.n_users

    @property
    def scale(self) -> float:
        """``Delta / D``: what one unit of the rounded domain is worth."""
        return self.domain / self.levels

    def variance(self, x: Any = None) -> np.ndarray | float:
        """Variance per instance: exact for inputs ``x`` (rounding, and the noise their users send), else for ``n_users``."""
        noise = discrete_laplace_variance(self.central_ratio)
        if x is None:
            rounding = self.n_users / 4 if self.levels < self.domain else 0.0
            return self.scale**2 * (noise + rounding)
        values = integer_inputs(x, type(self).__name__, domain=self.domain, clip=self.clip)
        scaled = values * self.levels / self.domain
        fraction = scaled - np.floor(scaled)
        share = values.shape[0] / self.n_users  # the noise present with these users
        return self.scale**2 * (noise * share + (fraction * (1 - fraction)).sum(axis=0))

    def error_bound(self, beta: float) -> float:
        """A bound on ``|estimate - sum|`` holding with probability at least ``1 - beta`` (per instance).

        The DLap tail ``P(|Z| > t) = 2 a^{t+1}/(1+a)`` at ``beta/2``, plus Hoeffding for the rounding
        (``sqrt(n log(4/beta)/2)``) when ``levels < domain``; times ``Delta/D``.
        """
        beta = check_probability(beta, "beta", f"{type(self).__name__}.error_bound", allow_zero=False)
        a = self.central_ratio
        log_beta = math.log(beta)  # in logs: beta * (1 + a) / 4 underflows for subnormal beta
        tail = max(0, math.ceil((log_beta + math.log1p(a) - math.log(4)) / math.log(a)) - 1)
        rounding = math.sqrt(self.n_users * (math.log(4) - log_beta) / 2) if self.levels < self.domain else 0.0
        return self.scale * (tail + rounding)

    # ----------------------------------------------------------------- roles
    def _values(self, x: Any) -> np.ndarray:
        return integer_inputs(x, type(self).__name__, domain=self.domain, clip=self.clip)

    def _rounded(self, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if self.levels == self.domain:
            return values
        return randomized_round(values * (self.levels / self.domain), rng)

    def randomize(self, x: Any, *, rng: RNGLike = None) -> MessageBatch:
        """Every user's messages (data, central-noise and flooding), tagged with instance ids."""
        generator = as_generator(rng, type(self).__name__)
        values = self._values(x)
        self.check_participants(values.shape[0])
        return self._messages_of(values, generator)

    def _messages_of(self, values: np.ndarray, generator: np.random.Generator) -> MessageBatch:
        rounded = self._rounded(values, generator)
        n, n_instances = rounded.shape
        owner_instances = np.broadcast_to(np.arange(n_instances), rounded.shape)
        nonzero = rounded != 0
        instance_parts, value_parts = [owner_instances[nonzero]], [rounded[nonzero]]
        for shape, ratio, values in self._kinds:
            copies = sample_negative_binomial(generator, shape / self.n_users, ratio, (n, n_instances))
            repeated = np.repeat(owner_instances.ravel(), copies.ravel())
            for value in values:
                instance_parts.append(repeated)
                value_parts.append(np.full(repeated.size, value, dtype=np.int64))
        return MessageBatch(np.concatenate(instance_parts), np.concatenate(value_parts), n_instances=n_instances)

    def sender_cap(self, n_instances: int, exceed_probability: float) -> SenderCap:
        """The least cap that one data message plus every kind's noise copies exceed w.p. ``<= exceed_probability``."""
        parts = [(shape / self.n_users, ratio, len(values)) for shape, ratio, values in self._kinds]
        return noise_cap(n_instances, exceed_probability, parts, type(self).__name__)

    def encode_users(self, x: Any, *, rng: RNGLike = None) -> tuple[MessageBatch, np.ndarray]:
        """Every user's messages (data, central-noise and flooding), listed user by user, and each user's count."""
        generator = as_generator(rng, type(self).__name__)
        rounded = self._rounded(self._values(x), generator)
        n, n_instances = rounded.shape
        cells = np.arange(n * n_instances).reshape(n, n_instances)  # (user, instance), user by user
        nonzero = rounded != 0
        cell_parts, value_parts = [cells[nonzero]], [rounded[nonzero]]
        for shape, ratio, values in self._kinds:
            copies = sample_negative_binomial(generator, shape / self.n_users, ratio, (n, n_instances))
            repeated = np.repeat(cells.ravel(), copies.ravel())
            cell_parts += [repeated] * len(values)
            value_parts += [np.full(repeated.size, value, dtype=np.int64) for value in values]
        order = np.argsort(np.concatenate(cell_parts), kind="stable")
        listed = np.concatenate(cell_parts)[order]
        batch = MessageBatch(listed % n_instances, np.concatenate(value_parts)[order], n_instances=n_instances)
        return batch, np.bincount(listed // n_instances, minlength=n)

    def sample_view(self, x: Any, *, rng: RNGLike = None) -> MessageHistogram:
        """Fast path: each kind's count over ``m`` users is ``NB(total shape m/n_users, ratio)`` (exact: NB shares add up)."""
        generator = as_generator(rng, type(self).__name__)
        values = self._values(x)
        self.check_participants(values.shape[0])
        return self._view_of(values, generator)

    def partial_view(self, chunk: Any, *, rng: RNGLike = None, path: str = "fast") -> PartialView:
        """One chunk of users' histogram, with their share ``m/n_users`` of every noise kind."""
        owner = type(self).__name__
        path = check_choice(path, "path", owner, EXECUTION_PATHS)
        generator = as_generator(rng, owner)
        values = self._values(chunk)
        histogram = self.view(self._messages_of(values, generator)) if path == "faithful" else self._view_of(values, generator)
        return PartialView(histogram, values.shape[0])

    def _view_of(self, values: np.ndarray, generator: np.random.Generator) -> MessageHistogram:
        rounded = self._rounded(values, generator)
        share = values.shape[0] / self.n_users
        n_instances = rounded.shape[1]
        width = 2 * self.levels + 1  # columns -D..D, zero dropped at the end
        flat = (np.arange(n_instances) * width)[None, :] + rounded + self.levels
        counts = np.bincount(flat.ravel(), minlength=n_instances * width).reshape(n_instances, width)
        for shape, ratio, values in self._kinds:
            kind_counts = sample_negative_binomial(generator, shape * share, ratio, n_instances)
            for value in values:
                counts[:, value + self.levels] += kind_counts
        counts = np.delete(counts, self.levels, axis=1)
        return MessageHistogram(counts, self.alphabet)

    def _message_cap(self, tail_probability: float) -> int:
        """The quantile of ``1 + sum over kinds of (messages per kind) NB(shape/n, ratio)`` (a non-zero value)."""
        kinds = [(shape / self.n_users, ratio, len(values)) for shape, ratio, values in self._kinds]
        return weighted_negative_binomial_cap(kinds, 1, tail_probability)

    @property
    def largest_message_effect(self) -> float:
        """A message ``+-D`` moves the estimate by ``Delta``."""
        return float(self.domain)

    def analyze(self, view: MessageHistogram | MessageBatch) -> np.ndarray:
        """Sum of all message values per instance, times ``Delta / D``."""
        counts = self.view(view).counts
        return self.scale * (counts @ np.asarray(self.alphabet, dtype=float))


def _communication_factor(owner: str, calibration: str, flooding: str, variance_factor: float | None) -> float | None:
    """The variance allowance of ``flooding="communication"`` (``None`` for the paper flooding), validated."""
    flooding = check_choice(flooding, "flooding", owner, ("paper", "communication"))
    if flooding == "paper":
        if variance_factor is not None:
            raise invalid("variance_factor", owner, "None unless flooding='communication'", variance_factor)
        return None
    if calibration != "tight":
        raise invalid("calibration", owner, "'tight' with flooding='communication'", calibration)
    if variance_factor is None:
        return COMMUNICATION_VARIANCE_FACTOR
    return check_real(variance_factor, "variance_factor", owner, low=1.0, high=MAX_VARIANCE_FACTOR)


def _communication_protocol(paper: CorrelatedNoiseSum, factor: float) -> CorrelatedNoiseSum:
    """``paper`` with the most central noise ``factor`` allows and the cheapest certified flooding (`from_privacy`)."""
    owner = f"{type(paper).__name__}.from_privacy"
    if paper.levels > CERTIFIED_MAX_LEVELS:
        raise invalid("levels", owner, f"at most {CERTIFIED_MAX_LEVELS} with flooding='communication'", paper.levels)
    central_ratio = noisiest_ratio(paper.central_ratio, factor)
    with refusals_as(owner, derived_from=("epsilon", paper.epsilon)):
        found = cached_calibration(communication_flooding, paper.epsilon, paper.delta, paper.levels, central_ratio)
    if found is None:
        raise invalid("epsilon", owner, "met by a certified communication flooding (none found)", paper.epsilon)
    flooding, pld = found
    return type(paper)(
        n_users=paper.n_users,
        domain=paper.domain,
        levels=paper.levels,
        central_ratio=central_ratio,
        epsilon=pld.epsilon(paper.delta),
        delta=paper.delta,
        verified=True,
        clip=paper.clip,
        **dict(flooding),  # type: ignore[arg-type]
    )
