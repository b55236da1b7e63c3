"""Instance-optimal clipped sums in one shuffle round (Dong, Luo, Fanti, Shi & Yi, CCS 2024; Dong et al. (CCS 2024)).

The domain ``{0..U}`` (``U`` a power of two) is cut into ``log2 U + 1`` sub-domains
``I_0 = {0, 1}`` and ``I_j = (2^{j-1}, 2^j]``. Every user takes part in one summation instance per
sub-domain (GKMPS21 correlated noise or BBGN20 shares, whichever sends fewer messages), with its
value in the instance of its own sub-domain and ``0`` in the others, all in the same round. The
analyzer estimates every sub-domain's sum ``S_j``, picks the clipping threshold ``tau = 2^{j*}``
with ``j*`` the last sub-domain whose estimate clears a threshold set from the noise tail, and
returns ``sum_{j <= j*} S_j``: the noise of an instance scales with its sub-domain's width, so the
error is proportional to the data's own maximum rather than to ``U``.


Also here: the baselines over the full domain (`full_domain_correlated_sum`,
`full_domain_multi_message_sum`). Routing values to the sub-domain instances and reading their
views back is `privsum.clipping.sub_domains`; the threshold rule `privsum.clipping.threshold_rule`;
the budget per instance `privsum.clipping.calibration`; the helpers the clipped sums share are in
`privsum.clipping.instances`, the central-DP references in `privsum.clipping.central`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from privsum import _validation as checks
from privsum._random import RNGLike, as_generator
from privsum._user_inputs import check_has_users, randomized_round
from privsum.accounting import Neighbouring, ParallelEvent, PrivacyEvent
from privsum.clipping import instances as shared
from privsum.clipping._parties import ClippedPartyHooks
from privsum.clipping.calibration import sub_domain_instances
from privsum.clipping.instances import CLIPPED_RELATIONS, INSTANCE_METHODS, InstanceProtocol, NoisySums
from privsum.clipping.sub_domains import SubDomainColumns
from privsum.clipping.threshold_rule import empty_pass_probabilities, last_passing, sub_domain_thresholds
from privsum.shuffle import MessageBatch, ShuffleProtocol
from privsum.shuffle.noise import discrete_laplace_variance
from privsum.shuffle.robustness import check_malicious
from privsum.shuffle.sparse import SparseMessageHistogram
from privsum.shuffle.streaming import PartialView
from privsum.sums.correlated import CorrelatedNoiseSum
from privsum.sums.sparse_shares import SparseMultiMessageSum

__all__ = [
    "ClippedSum",
    "ClippedSumResult",
    "default_rounding_levels",
    "full_domain_correlated_sum",
    "full_domain_multi_message_sum",
]


# --------------------------------------------------------------------------- the one-round clipped sum
@dataclass(frozen=True)
class ClippedSumResult:
    """What the analyzer of `ClippedSum` computes, per column.

    Attributes:
        estimate: ``sum_{j <= j*} S_j`` (in input units), shape ``(k,)``.
        sub_domain_estimates: ``S_j`` per column and sub-domain (integer units), shape ``(k, log2 U + 1)``.
        passed: whether each ``S_j`` cleared its threshold, same shape.
        clipping_index: ``j*`` per column.
        clipping_threshold: ``tau = 2^{j*}`` per column (integer units).
    """

    estimate: np.ndarray
    sub_domain_estimates: np.ndarray
    passed: np.ndarray
    clipping_index: np.ndarray
    clipping_threshold: np.ndarray


@dataclass(frozen=True, kw_only=True)
class ClippedSum(ClippedPartyHooks, SubDomainColumns, shared.InstanceParticipation, ShuffleProtocol):
    """One-round shuffled sum of integers in ``{0..U}`` with an instance-optimal clipping threshold.

    Inputs ``(n_users,)`` or ``(n_users, k)`` (``k`` independent sums, e.g. coordinates).
    Sub-domain ``j`` (``I_0 = {0,1}``, ``I_j = (2^{j-1}, 2^j]``) is summed by ``instances[j]``, a
    `CorrelatedNoiseSum` or `SparseMultiMessageSum` with domain ``2^j``; a user's input to
    instance ``j`` is its value if the value lies in ``I_j`` and ``0`` otherwise. Messages carry the
    instance id ``column (log2 U + 1) + j``. The analyzer estimates every ``S_j``, lets ``j*`` be
    the last ``j`` with ``S_j >= T_j`` (``j* = 0`` if none), and returns ``sum_{j <= j*} S_j``.

    **Threshold.** ``T_j = scale_j t_j`` with ``t_j`` the least integer whose one-sided tail
    ``P(DLap(a_j) >= t_j)`` (plus, for BBGN20, the wrap-around bound) is at most
    ``failure_probability / (log2 U + 1)``. An empty sub-domain's estimate *is* ``scale_j DLap(a_j)``
    (the flooding cancels; the shares add up to the noise), so an empty sub-domain passes with
    probability at most ``beta / (log2 U + 1)`` and ``tau`` overshoots the data's sub-domain with
    probability at most ``beta`` (union bound; tested).

    **Real inputs** (Dong et al. (CCS 2024), footnote 3): with ``resolution`` set, inputs are reals in
    ``[0, U resolution]``, randomly rounded (unbiased) to multiples of ``resolution`` before the
    protocol; the estimate is in input units. Extra error: at most ``resolution`` per user,
    ``resolution sqrt(n)/2`` standard deviation at worst.

    **Streaming.** `run` also takes users in chunks (`run_streamed`, `privsum.distributed.run`),
    memory bounded by one chunk: each chunk's `partial_view` holds only its users' randomness
    (the ``"fast"`` path: their `NoisySums`, every instance's noisy integer total with per-user
    ``NB(1/n, a)`` noise shares; ``"faithful"``: the sparse view of their messages), the views
    add up and the analyzer runs once. The result has the law of one run over all users.

    Args:
        n_users: users the instances are calibrated for (fewer warn; more are accepted unless an
            instance is BBGN20, whose modulus is sized for ``n_users``: see Privacy).
        domain: ``U``, a power of two.
        instances: ``log2 U + 1`` instance protocols, instance ``j`` with domain ``2^j`` and ``n_users``.
        failure_probability: ``beta``: the chance that ``tau`` overshoots (sets the thresholds).
        resolution: real value of one integer step (real inputs), or ``None`` for integer inputs.
        neighbouring: ``"replace-one"`` (default) or ``"zero-out"`` (see Privacy).

    Privacy:
        Communication threat (the shuffled multiset), trusted shuffler. The instances are
        independent mechanisms on disjoint columns of a user-by-sub-domain table.
        **Replace-one** (default): a user whose value moves from ``I_j`` to ``I_k`` changes one
        entry of column ``j`` and one of column ``k``, so the guarantee is the basic composition of
        two instances' guarantees: ``ParallelEvent(instance events, parts_per_user=2)``,
        and `from_privacy` runs every instance at ``(epsilon/2, delta/2)``. **Zero-out**: a user's
        value is replaced by ``0`` (who takes part is unchanged); ``0`` contributes nothing to any
        instance, so the change touches only the user's own sub-domain and every instance runs at
        the full ``(epsilon, delta)``. This is the accounting of Dong et al. (CCS 2024)'s parallel-composition
        argument; under replace-one the same protocol is only ``(2 epsilon, (1 + e^epsilon) delta)``-DP
        (`zero_out_to_replace_one`). The instances' own guarantees are those of
        `CorrelatedNoiseSum` (analytic: GKMPS21's claim with restated constants) and
        `SparseMultiMessageSum` (epsilon exact from the noise; delta from BBGN20's share theorem,
        not verified here). The analyzer (thresholds, ``tau``) is post-processing.

        Participation: every user sends ``1/n_users`` of each instance's noise. **Fewer**
        participants leave less: `run`, `randomize` and `sample_view` (and a streamed run, once)
        warn with `PrivacyLeakWarning`, and `event_for_participants` composes the instances' own
        `event_for_participants` as the headline is composed. **More** are accepted when every
        instance is GKMPS21 (the extra noise only adds; the threshold rule's ``beta`` then holds
        for ``n_users`` only, as the noise grows) and raise otherwise (BBGN20's modulus).

    Utility:
        Each ``S_j`` is unbiased with error ``O(2^j / epsilon)``; with probability ``1 - beta``
        ``tau`` does not overshoot, and the error is ``O(max_i x_i log(log U / beta) / epsilon)``
        (Theorem 5.1 of Dong et al. (CCS 2024)). The output drops (does not clip) values above ``tau``.

    Robustness:
        A shuffler caps every instance at the largest of the sub-domain instances' caps
        (`per_sender_message_cap`). ``k`` malicious senders move ``S_j`` by at most ``A_j``
        (`sub_domain_manipulation_bounds`; a BBGN20 instance: its whole window) and, through the
        threshold rule, add or drop honest sub-domains. Whenever every honest ``S_j >= -T_j``
        (probability at least ``1 - beta`` with ``n_users`` honest users, as for the threshold
        rule), the estimate moves by at most ``A_0 + sum_{j >= 1} (A_j + T_j)``
        (`manipulation_bound`; reached up to one lattice step per sub-domain).

    References:
        Dong, Luo, Fanti, Shi & Yi, "(Almost) instance-optimal clipping for summation problems in
        the shuffle model of differential privacy", CCS 2024 (Dong et al. (CCS 2024)), sections 5 and 8.

    Examples:
        >>> protocol = ClippedSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=2_000, domain=2**10)
        >>> x = np.random.default_rng(0).integers(0, 40, size=2_000)  # far below U = 1024
        >>> result = protocol.analyze_details(protocol.sample_view(x, rng=1))
        >>> int(result.clipping_threshold[0]) <= 64, bool(abs(result.estimate[0] - x.sum()) < 2_000)
        (True, True)
        >>> guarantee = protocol.guarantee
        >>> guarantee.epsilon <= 1.0, round(guarantee.epsilon, 6), guarantee.delta <= 1e-6, guarantee.neighbouring.value
        (True, 1.0, True, 'replace-one')
        >>> zero_out = ClippedSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=2_000, domain=2**10, neighbouring="zero-out")
        >>> round(zero_out.instances[5].guarantee.epsilon / protocol.instances[5].guarantee.epsilon, 6), str(zero_out.guarantee)
        (2.0, '(1, 1e-06)-DP, zero-out')
    """

    streams_chunks: ClassVar[bool] = True

    n_users: int
    domain: int
    instances: tuple[InstanceProtocol, ...]
    failure_probability: float = 0.1
    resolution: float | None = None
    neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE

    def __post_init__(self) -> None:
        owner = type(self).__name__
        object.__setattr__(self, "neighbouring", Neighbouring.parse(self.neighbouring, owner, CLIPPED_RELATIONS))
        n_users = checks.check_integer(self.n_users, "n_users", owner, low=2)
        domain = checks.check_integer(self.domain, "domain", owner, low=1)
        if domain & (domain - 1):
            raise checks.invalid("domain", owner, "a power of two", domain)
        instances = tuple(self.instances)
        if len(instances) != domain.bit_length():
            raise checks.invalid(
                "instances", owner, f"{domain.bit_length()} protocols (log2 U + 1)", f"{len(instances)} protocols"
            )
        for j, protocol in enumerate(instances):
            constraint = f"instance {j} with domain 2^{j}, n_users={n_users} and clip=False"
            shared.check_instance(protocol, domain=2**j, n_users=n_users, name="instances", owner=owner, constraint=constraint)
        object.__setattr__(self, "instances", instances)
        checks.check_probability(self.failure_probability, "failure_probability", owner, allow_zero=False)
        if self.resolution is not None:
            checks.check_real(self.resolution, "resolution", owner, low=0.0, low_open=True)

    @classmethod
    def from_privacy(
        cls,
        *,
        epsilon: float,
        delta: float,
        n_users: int,
        domain: int,
        calibration: str = "analytic",
        failure_probability: float = 0.1,
        method: str = "auto",
        max_correlated_domain: int = 64,
        resolution: float | None = None,
        neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
    ) -> ClippedSum:
        """Instances at ``(epsilon/2, delta/2)`` (replace-one) or ``(epsilon, delta)`` (zero-out); headline ``(epsilon, delta)``.

        Args:
            epsilon: target epsilon under ``neighbouring``.
            delta: target delta in ``(0, 1)``.
            n_users: number of users.
            domain: ``U``, a power of two.
            calibration: only ``"analytic"``: the instances' guarantees are the papers' (see the class).
            failure_probability: ``beta`` of the threshold rule.
            method: ``"auto"`` (fewest messages per sub-domain, section 8 of Dong et al. (CCS 2024)), ``"correlated"``
                (GKMPS21 everywhere) or ``"multi-message"`` (BBGN20 everywhere).
            max_correlated_domain: largest sub-domain width for which ``"auto"`` considers GKMPS21.
            resolution: see the class.
            neighbouring: ``"replace-one"`` or ``"zero-out"`` (see the class).
        """
        owner = f"{cls.__name__}.from_privacy"
        neighbouring = Neighbouring.parse(neighbouring, owner, CLIPPED_RELATIONS)
        parts = shared.touched_parts(neighbouring)
        epsilon = checks.check_epsilon(epsilon, owner)
        delta = checks.check_delta(delta, owner, allow_zero=False)
        n_users = checks.check_integer(n_users, "n_users", owner, low=2)
        domain = checks.check_integer(domain, "domain", owner, low=1)
        if domain & (domain - 1):
            raise checks.invalid("domain", owner, "a power of two", domain)
        checks.check_choice(calibration, "calibration", owner, ("analytic",))
        method = checks.check_choice(method, "method", owner, INSTANCE_METHODS)
        instances = sub_domain_instances(
            epsilon / parts,
            delta / parts,
            n_users=n_users,
            domain=domain,
            method=method,
            max_correlated_domain=max_correlated_domain,
        )
        return cls(
            n_users=n_users,
            domain=domain,
            instances=instances,
            failure_probability=failure_probability,
            resolution=resolution,
            neighbouring=neighbouring,
        )

    # ----------------------------------------------------------------- description
    @property
    def event(self) -> ParallelEvent:
        """The instances in parallel, two touched per replace-one change, one per zero-out change."""
        events = tuple(shared.stated_under(p.event, self.neighbouring) for p in self.instances)
        return ParallelEvent(events, parts_per_user=shared.touched_parts(self.neighbouring))

    @property
    def alphabet(self) -> range:  # type: ignore[override]
        """All message values any instance can send (GKMPS21: ``-D..D``; BBGN20: residues), as a lazy range."""
        low = min(p.alphabet[0] for p in self.instances)  # alphabets are sorted (tuples or ranges)
        high = max(p.alphabet[-1] for p in self.instances)
        return range(low, high + 1)

    @property
    def expected_messages_per_user(self) -> float:
        """Worst-case user: every instance's noise messages plus the largest data-message overhead (per column)."""
        noise = sum(shared.noise_messages(p) for p in self.instances)
        return noise + max(shared.data_messages(p) for p in self.instances)

    def average_messages_per_user(self, x: Any) -> float:
        """Expected messages per user (per column) for these inputs: noise everywhere plus data messages where sent."""
        values = self._integer_view(x)
        sub = shared.sub_domain_index(values)
        data = np.zeros(values.shape)
        for j, protocol in enumerate(self.instances):
            data += shared.data_messages(protocol) * ((sub == j) & (values != 0))
        return sum(shared.noise_messages(p) for p in self.instances) + float(data.mean())

    @cached_property
    def thresholds(self) -> np.ndarray:
        """``T_j`` per sub-domain (integer units): an empty sub-domain reaches it w.p. at most ``beta / (log2 U + 1)``."""
        return sub_domain_thresholds(self.instances, self.failure_probability, type(self).__name__)

    def empty_pass_probability(self) -> np.ndarray:
        """Exact chance that an empty sub-domain's estimate reaches its threshold (GKMPS21), or a bound (BBGN20)."""
        return empty_pass_probabilities(self.instances, self.thresholds)

    def sub_domain_variances(self) -> np.ndarray:
        """Variance of each ``S_j``'s noise (integer units, without rounding)."""
        return np.array([shared.noise_scale(p) ** 2 * discrete_laplace_variance(shared.noise_ratio(p)) for p in self.instances])

    # ----------------------------------------------------------------- inputs
    def _integer_view(self, x: Any) -> np.ndarray:
        """Validate inputs (no rounding): integers, or reals for ``resolution``; shape ``(n, k)``."""
        if self.resolution is not None:
            return np.floor(self._real_inputs(x) / self.resolution).astype(np.int64)  # for message counting only
        owner = type(self).__name__
        array = checks.check_array(x, "x", owner, ndim=(1, 2), low=0, high=self.domain, integer=True).astype(np.int64)
        check_has_users(array, owner)
        return array.reshape(array.shape[0], -1)

    def _real_inputs(self, x: Any) -> np.ndarray:
        """Real inputs in ``[0, U resolution]``, validated; shape ``(n, k)``."""
        owner = type(self).__name__
        array = checks.check_array(x, "x", owner, ndim=(1, 2), low=0.0, high=self.domain * self.resolution).astype(float)
        check_has_users(array, owner)
        return array.reshape(array.shape[0], -1)

    def _inputs(self, x: Any, rng: np.random.Generator) -> np.ndarray:
        """Integer inputs ``(n, k)`` in ``{0..U}``: validated, and randomly rounded for real inputs."""
        if self.resolution is None:
            return self._integer_view(x)
        rounded = randomized_round(self._real_inputs(x) / self.resolution, rng)
        return np.minimum(rounded, self.domain)  # x/res <= U, so the cap never binds

    # ----------------------------------------------------------------- participation
    @property
    def _participating_instances(self) -> tuple[InstanceProtocol, ...]:
        return tuple(self.instances)

    def _event_for_fewer(self, n_participants: int) -> PrivacyEvent:
        """Every instance's own `event_for_participants` (the noise its participants actually send), composed as
        the headline is (`event`). Where that composition's delta would reach 1, no guarantee (``epsilon = inf``).
        """
        events = tuple(shared.stated_under(p.event_for_participants(n_participants), self.neighbouring) for p in self.instances)
        return shared.parallel_event_or_none(events, parts_per_user=shared.touched_parts(self.neighbouring))

    # ----------------------------------------------------------------- roles
    def randomize(self, x: Any, *, rng: RNGLike = None) -> MessageBatch:
        """Every user's messages for every (column, sub-domain) instance, tagged ``column (log2 U + 1) + j``."""
        generator = as_generator(rng, type(self).__name__)
        return self.messages_of(self._all_participants(self._inputs(x, generator)), generator)

    def sample_view(self, x: Any, *, rng: RNGLike = None) -> SparseMessageHistogram:  # type: ignore[override]
        """The view assembled from every instance's own fast view (GKMPS21: NB totals; BBGN20: counted shares)."""
        generator = as_generator(rng, type(self).__name__)
        return self.message_view_of(self._all_participants(self._inputs(x, generator)), generator, "fast")

    def partial_view(self, chunk: Any, *, rng: RNGLike = None, path: str = "fast") -> PartialView:
        """One chunk of users' share of the view, with only their own randomness (no participant check).

        ``"fast"``: their `NoisySums` (per-user noise shares, no message); ``"faithful"``: the
        sparse view of their messages. Either adds up over chunks; `analyze` takes the sum.
        """
        generator, path = shared.chunk_request(rng, path, type(self).__name__)
        return self.partial_of(self._inputs(chunk, generator), generator, path)

    def _message_cap(self, tail_probability: float) -> int:
        """The largest sub-domain instance's cap (a shuffler caps every instance tag alike)."""
        return shared.largest_cap(self.instances, tail_probability)

    def sub_domain_manipulation_bounds(self, n_malicious: int, *, cap: int | None = None) -> np.ndarray:
        """``A_j``: the largest shift of ``S_j`` by ``n_malicious`` senders of ``cap`` messages per instance (integer units)."""
        owner = f"{type(self).__name__}.sub_domain_manipulation_bounds"
        n_malicious = check_malicious(n_malicious, owner)
        cap = self._enforced_cap(cap, owner)
        return np.array([shared.instance_shift(p, n_malicious, cap) for p in self.instances])

    def manipulation_bound(self, n_malicious: int, *, cap: int | None = None) -> float:
        """``A_0 + sum_{j >= 1} (A_j + T_j)`` (input units), whenever every honest ``S_j >= -T_j``.

        A sub-domain below ``j*`` and ``j*'`` (the clipping index without and with the attack)
        moves by its ``A_j``; one added by the attack (``j* < j <= j*'``) held an honest
        ``S_j`` in ``[-T_j, T_j)``; one dropped (``j*' < j <= j*``) an honest ``S_j`` in
        ``[-T_j, T_j + A_j)``; sub-domain 0 is always kept.
        """
        attack = self.sub_domain_manipulation_bounds(n_malicious, cap=cap)
        if not attack.any():
            return 0.0
        unit = 1.0 if self.resolution is None else self.resolution
        return unit * float(attack[0] + np.sum(attack[1:] + self.thresholds[1:]))

    def combine(self, sub_domain_estimates: np.ndarray) -> ClippedSumResult:
        """The threshold rule and the clipped sum, from the sub-domain estimates (post-processing)."""
        estimates = np.asarray(sub_domain_estimates, dtype=float)
        passed, clipping_index = last_passing(estimates, self.thresholds)
        keep = np.arange(self.n_sub_domains)[None, :] <= clipping_index[:, None]
        unit = 1.0 if self.resolution is None else self.resolution
        return ClippedSumResult(
            estimate=unit * (estimates * keep).sum(axis=1),
            sub_domain_estimates=estimates,
            passed=passed,
            clipping_index=clipping_index,
            clipping_threshold=2**clipping_index,
        )

    def analyze_details(self, view: SparseMessageHistogram | MessageBatch | NoisySums) -> ClippedSumResult:
        """Everything the analyzer computes (estimates, thresholds passed, ``j*``, ``tau``)."""
        return self.combine(self.sub_domain_estimates(view))

    def analyze(self, view: SparseMessageHistogram | MessageBatch | NoisySums) -> np.ndarray:  # type: ignore[override]
        """The clipped-sum estimate per column, shape ``(k,)``."""
        return self.analyze_details(view).estimate

    def sample_sub_domain_estimates(self, x: Any, *, rng: RNGLike = None) -> np.ndarray:
        """The analyzer's ``S_j`` sampled exactly in law without materialising any message (the fast path).

        Each instance's output is decoded from its noisy integer total (`NoisySums`); with all
        ``n_users`` users its noise is ``DLap(a)``, with ``m`` users ``NB(m/n, a) - NB(m/n, a)``,
        as in the faithful messages. Participants are checked (`check_participants`).
        """
        generator = as_generator(rng, type(self).__name__)
        values = self._all_participants(self._inputs(x, generator))
        return self.sub_domain_estimates(self.noisy_sums_of(values, generator))

    def run(self, x: Any, *, rng: RNGLike = None, path: str = "fast") -> np.ndarray:
        """Run the protocol.

        Args:
            x: the users' inputs, ``(n_users,)`` or ``(n_users, k)``; or chunks of users (an
                iterator of arrays, a `~privsum.shuffle.streaming.UserChunks` or a Dask array),
                streamed with memory bounded by one chunk (`run_streamed`).
            rng: randomness for the randomizers and the shuffler.
            path: ``"faithful"`` materialises, shuffles and analyses every message; ``"fast"``
                samples each instance's noisy integer total directly (`NoisySums`), exact in law
                (tested against the faithful path), then applies the same threshold rule.
                `sample_view` gives the full message view when it is wanted.
        """
        return super().run(x, rng=rng, path=path)

    def _run_fast(self, x: Any, generator: np.random.Generator) -> np.ndarray:
        return self.combine(self.sample_sub_domain_estimates(x, rng=generator)).estimate


# --------------------------------------------------------------------------- baselines over the full domain
def default_rounding_levels(epsilon: float, n_users: int, domain: int) -> int:
    """``min(U, ceil(epsilon sqrt(n)))``: GKMPS21's rounding granularity for the full-domain baseline.

    With ``D`` levels the rounding error has standard deviation at most ``(U/D) sqrt(n)/2``
    against the central noise's ``~ sqrt(2) U/(0.7 epsilon)``; at ``D = epsilon sqrt(n)`` rounding
    adds about 3% to the error variance. (Dong et al. (CCS 2024) rounds to a coarser grid of its own; its value
    was lost in extraction.)

    Examples:
        >>> default_rounding_levels(1.0, 100_000, 2**20)
        317
    """
    owner = "default_rounding_levels"
    epsilon = checks.check_epsilon(epsilon, owner)
    n_users = checks.check_integer(n_users, "n_users", owner, low=1)
    domain = checks.check_integer(domain, "domain", owner, low=1)
    return int(min(domain, math.ceil(epsilon * math.sqrt(n_users))))


def full_domain_correlated_sum(
    *, epsilon: float, delta: float, n_users: int, domain: int, levels: int | None = None
) -> CorrelatedNoiseSum:
    """GKMPS21 over the whole domain ``{0..U}`` (baseline), with random rounding to `default_rounding_levels`.

    Examples:
        >>> baseline = full_domain_correlated_sum(epsilon=1.0, delta=1e-6, n_users=10_000, domain=2**20)
        >>> baseline.levels, baseline.guarantee.epsilon
        (100, 1.0)
    """
    if levels is None:
        levels = default_rounding_levels(epsilon, n_users, domain)
    return CorrelatedNoiseSum.from_privacy(epsilon=epsilon, delta=delta, n_users=n_users, domain=domain, levels=levels)


def full_domain_multi_message_sum(*, epsilon: float, delta: float, n_users: int, domain: int) -> SparseMultiMessageSum:
    """BBGN20 over the whole domain ``{0..U}`` (baseline), with the sparse view (any modulus up to ``2^46``).

    Examples:
        >>> full_domain_multi_message_sum(epsilon=1.0, delta=1e-6, n_users=100_000, domain=2**20).n_shares
        7
    """
    return SparseMultiMessageSum.from_privacy(epsilon=epsilon, delta=delta, n_users=n_users, domain=domain)
