"""What the clipped sums share: sub-domains, per-instance choice and noise, thresholds, views.

Every clipped sum of Dong et al. (CCS 2024) runs one summation instance (GKMPS21 correlated noise
or BBGN20 shares) per part of its domain; the helpers here choose that instance, sample and
decode its noisy total, read its noise, set tail thresholds and assemble the instances' views.
"""

from __future__ import annotations

import abc
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from privsum._random import RNGLike, as_generator
from privsum._user_inputs import check_participant_limit
from privsum._validation import check_choice, check_integer, check_integer_array, check_probability, invalid
from privsum.accounting import (
    GuaranteeEvent,
    Neighbouring,
    ParallelEvent,
    PrivacyEvent,
    PrivacyGuarantee,
    RelationEvent,
    basic_composition,
)
from privsum.exceptions import PrivacyLeakWarning
from privsum.shuffle import EXECUTION_PATHS, MessageBatch, MessageHistogram
from privsum.shuffle.noise import sample_negative_binomial
from privsum.shuffle.sparse import SparseMessageHistogram
from privsum.sums.correlated import CorrelatedNoiseSum
from privsum.sums.sparse_shares import SparseMultiMessageSum

__all__ = [
    "CLIPPED_RELATIONS",
    "INSTANCE_METHODS",
    "InstanceParticipation",
    "InstanceProtocol",
    "NoisySums",
    "basic_or_none",
    "check_instance",
    "check_instance_participants",
    "check_noise_ratio",
    "check_participant_count",
    "choose_instance",
    "chunk_request",
    "data_messages",
    "decode_total",
    "instance_estimates",
    "instance_messages",
    "instance_shift",
    "instance_views",
    "largest_cap",
    "noise_messages",
    "noise_ratio",
    "noise_scale",
    "noisy_total",
    "parallel_event_or_none",
    "sparse_view",
    "stated_under",
    "sub_domain_index",
    "touched_parts",
    "unsendable_values",
    "upper_tail_threshold",
    "wrap_probability",
]

INSTANCE_METHODS = ("auto", "correlated", "multi-message")
InstanceProtocol = CorrelatedNoiseSum | SparseMultiMessageSum
#: Relations the clipped sums are accounted under (the null input is ``0``, the zero vector, the empty set).
CLIPPED_RELATIONS = (Neighbouring.REPLACE_ONE, Neighbouring.ZERO_OUT)


def touched_parts(neighbouring: Neighbouring) -> int:
    """How many disjoint parts (sub-domains, sparsity levels) one neighbouring change touches.

    Replace-one: 2 (the value may move from one part to another). Zero-out: 1 (the null input
    lies in part 0 and contributes nothing to it, so only the user's own part changes).
    """
    return 2 if neighbouring == Neighbouring.REPLACE_ONE else 1


def stated_under(event: PrivacyEvent, neighbouring: Neighbouring) -> PrivacyEvent:
    """``event`` (an instance's replace-one event) stated under the protocol's relation."""
    return event if event.neighbouring == neighbouring else RelationEvent(event, neighbouring)


# --------------------------------------------------------------------------- sub-domains and thresholds
def sub_domain_index(values: Any) -> np.ndarray:
    """The sub-domain of each non-negative integer: ``0`` for ``{0, 1}``, ``j`` for ``(2^{j-1}, 2^j]``.

    Exact for every integer below ``2^63``; negative or non-integer values (``-1``, ``2.7``) and
    floats are refused, never rounded or clipped.

    Examples:
        >>> sub_domain_index([0, 1, 2, 3, 4, 5, 8, 9, 2**20]).tolist()
        [0, 0, 1, 2, 2, 3, 3, 4, 20]
    """
    array = check_integer_array(values, "values", "sub_domain_index", ndim=None, low=0)
    below = np.maximum(array - 1, 0).astype(np.uint64)
    exponent = np.frexp(below.astype(float))[1].astype(np.int64)  # bit length of x - 1, or one more where rounded up
    power = np.left_shift(np.uint64(1), np.maximum(exponent - 1, 0).astype(np.uint64))
    exponent -= (exponent > 0) & (power > below)  # the float rounded x - 1 up to the next power of two
    return np.where(array <= 1, 0, exponent).astype(np.int64)


def check_noise_ratio(epsilon: float, bound: int, name: str, owner: str) -> None:
    """Refuse a discrete Laplace ratio ``exp(-epsilon / bound)`` that rounds to 1 (no noise distribution exists)."""
    if not math.exp(-epsilon / bound) < 1.0:
        constraint = f"small enough that exp(-epsilon / {name}) < 1 in double precision (epsilon={epsilon:g})"
        raise invalid(name, owner, constraint, bound)


def upper_tail_threshold(ratio: float, probability: float) -> int:
    """Least integer ``t >= 1`` with ``P(DLap(ratio) >= t) = ratio^t / (1 + ratio) <= probability``.

    Examples:
        >>> t = upper_tail_threshold(0.5, 1e-3)
        >>> t, 0.5**t / 1.5 <= 1e-3 < 0.5 ** (t - 1) / 1.5
        (10, True)
    """
    owner = "upper_tail_threshold"
    ratio = check_probability(ratio, "ratio", owner, allow_zero=False)
    probability = check_probability(probability, "probability", owner, allow_zero=False)
    t = max(1, math.ceil(math.log(probability * (1 + ratio)) / math.log(ratio)))
    while t > 1 and ratio ** (t - 1) / (1 + ratio) <= probability:  # guard against log rounding
        t -= 1
    while ratio**t / (1 + ratio) > probability:
        t += 1
    return t


def noise_ratio(protocol: InstanceProtocol) -> float:
    return protocol.central_ratio if isinstance(protocol, CorrelatedNoiseSum) else protocol.noise_ratio


def noise_scale(protocol: InstanceProtocol) -> float:
    return protocol.scale if isinstance(protocol, CorrelatedNoiseSum) else 1.0


def instance_shift(protocol: InstanceProtocol, n_malicious: int, cap: int) -> float:
    """How far ``n_malicious`` senders of ``cap`` messages move an instance's estimate (BBGN20: its window)."""
    if isinstance(protocol, CorrelatedNoiseSum):
        return float(n_malicious * cap * protocol.largest_message_effect)
    return protocol.manipulation_bound(n_malicious)


def noise_messages(protocol: InstanceProtocol) -> float:
    """Expected messages a user sends in an instance where its input is 0."""
    if isinstance(protocol, CorrelatedNoiseSum):
        return protocol.expected_messages_per_user - 1.0
    return float(protocol.n_shares)


def data_messages(protocol: InstanceProtocol) -> float:
    """Extra messages a user sends in the instance that holds its (non-zero) value."""
    return 1.0 if isinstance(protocol, CorrelatedNoiseSum) else 0.0


def wrap_probability(protocol: InstanceProtocol) -> float:
    """Upper bound on the chance that an empty instance's output is not its noise (BBGN20 wrap-around from below)."""
    if isinstance(protocol, CorrelatedNoiseSum):
        return 0.0
    gap = protocol.modulus // 2 - protocol.n_users * protocol.domain // 2
    return protocol.noise_ratio**gap / (1 + protocol.noise_ratio)


def choose_instance(
    *, epsilon: float, delta: float, n_users: int, domain: int, method: str = "auto", max_correlated_domain: int = 64
) -> InstanceProtocol:
    """One sub-domain's summation instance: GKMPS21 or BBGN20, whichever sends fewer expected messages.

    GKMPS21 runs without random rounding (``levels = domain``; rounding would add an error that
    grows with the sub-domain's population); it is only considered for ``domain <=
    max_correlated_domain`` (its noise messages grow like ``domain^2 log^2 domain / (epsilon n)``).
    The comparison counts the messages of a user whose value is elsewhere (the noise), plus one
    data message for GKMPS21 (section 8 of Dong et al. (CCS 2024)).

    Examples:
        >>> choose_instance(epsilon=0.5, delta=5e-7, n_users=100_000, domain=1).__class__.__name__
        'CorrelatedNoiseSum'
        >>> choose_instance(epsilon=0.5, delta=5e-7, n_users=100_000, domain=2**10).__class__.__name__
        'SparseMultiMessageSum'
    """
    owner = "choose_instance"
    method = check_choice(method, "method", owner, INSTANCE_METHODS)
    domain = check_integer(domain, "domain", owner, low=1)
    max_correlated_domain = check_integer(max_correlated_domain, "max_correlated_domain", owner, low=1)
    candidates: list[InstanceProtocol] = []
    if method in ("auto", "correlated") and (domain <= max_correlated_domain or method == "correlated"):
        candidates.append(CorrelatedNoiseSum.from_privacy(epsilon=epsilon, delta=delta, n_users=n_users, domain=domain))
    if method in ("auto", "multi-message"):
        candidates.append(SparseMultiMessageSum.from_privacy(epsilon=epsilon, delta=delta, n_users=n_users, domain=domain))
    return min(candidates, key=lambda p: noise_messages(p) + data_messages(p))


def noisy_total(protocol: InstanceProtocol, inputs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """What these users add to the instance's noisy integer total, per column (their own randomness only).

    GKMPS21: the users' (rounded) values plus their central-noise shares, ``sum_i (NB(1/n, a) -
    NB'(1/n, a))`` drawn as one ``NB(m/n, a) - NB'(m/n, a)`` for ``m`` users (NB shares add up);
    the flooding multisets sum to zero, so this is the sum of every message value the users
    send. BBGN20: the users' values plus their noise shares ``eta_i``: the sum of their shares
    before the reduction modulo ``q``. Totals of disjoint groups of users add up; with all
    ``n_users`` users the noise is ``DLap(a)`` exactly.
    """
    share = inputs.shape[0] / protocol.n_users
    ratio = noise_ratio(protocol)
    columns = inputs.shape[1]
    noise = sample_negative_binomial(rng, share, ratio, columns) - sample_negative_binomial(rng, share, ratio, columns)
    values = protocol._rounded(inputs, rng) if isinstance(protocol, CorrelatedNoiseSum) else inputs
    return values.sum(axis=0, dtype=np.int64) + noise.astype(np.int64)


def decode_total(protocol: InstanceProtocol, totals: np.ndarray) -> np.ndarray:
    """The instance's analyzer output from its noisy integer totals (`noisy_total` summed over every user).

    Exactly the analyzer of the instance's message view: GKMPS21 returns ``scale`` times the sum
    of the message values; BBGN20 decodes the residue of the shares' sum modulo ``q``.
    """
    totals = np.asarray(totals, dtype=np.int64)
    if isinstance(protocol, CorrelatedNoiseSum):
        return protocol.scale * totals.astype(float)
    return protocol.decode(np.mod(totals, protocol.modulus))


@dataclass(frozen=True, eq=False)
class NoisySums:
    """The fast path's view of the clipped sums: every summation instance's noisy integer total.

    Each instance's analyzer output is a function of one integer, the sum of its message values
    (GKMPS21) or of its shares before the reduction modulo ``q`` (BBGN20); `noisy_total` samples
    what a group of users adds to it, with only their own randomness, so the totals of disjoint
    groups (chunks of users) merge by ``+`` and equal in law the totals of the faithful messages.

    Attributes:
        totals: integer array, one entry per instance (its shape is the protocol's).

    Examples:
        >>> total = NoisySums(np.array([[3, -1]])) + NoisySums(np.array([[2, 5]]))
        >>> total.totals.tolist()
        [[5, 4]]
    """

    totals: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "totals", check_integer_array(self.totals, "totals", "NoisySums", ndim=None))

    def __add__(self, other: NoisySums) -> NoisySums:
        if not isinstance(other, NoisySums):
            return NotImplemented
        if other.totals.shape != self.totals.shape:
            raise invalid("other", "NoisySums.__add__", f"totals of shape {self.totals.shape}", other.totals.shape)
        return NoisySums(self.totals + other.totals)


def check_instance(protocol: Any, *, domain: int, n_users: int, name: str, owner: str, constraint: str) -> None:
    """Refuse all but an unclipped instance protocol with this ``domain`` and ``n_users`` (``constraint`` says so in words)."""
    if not isinstance(protocol, (CorrelatedNoiseSum, SparseMultiMessageSum)):
        raise invalid(name, owner, "CorrelatedNoiseSum or SparseMultiMessageSum protocols", type(protocol).__name__)
    if protocol.domain != domain or protocol.n_users != n_users or protocol.clip:
        raise invalid(name, owner, constraint, protocol)


def check_instance_participants(n_participants: int, n_users: int, instances: Any, owner: str) -> None:
    """Warn when fewer than ``n_users`` take part; raise when more do and a BBGN20 instance's modulus is sized for ``n_users``."""
    has_shares = any(isinstance(p, SparseMultiMessageSum) for p in instances)
    sized = "the BBGN20 instances' moduli are sized for them" if has_shares else None
    check_participant_limit(n_participants, n_users, owner, sized)


def check_participant_count(n_participants: int, n_users: int, instances: Any, owner: str) -> int:
    """Validate ``n_participants`` for `event_for_participants`: at most ``n_users`` when a BBGN20 instance is present."""
    has_shares = any(isinstance(p, SparseMultiMessageSum) for p in instances)
    return check_integer(n_participants, "n_participants", owner, low=1, high=n_users if has_shares else math.inf)


class InstanceParticipation(abc.ABC):
    """How a protocol built from instance protocols treats the number of participants (one rule for all clipped sums).

    Fewer than ``n_users`` participants: a `PrivacyLeakWarning`, and the guarantee each instance's noise
    actually gives (``_event_for_fewer``). More: refused where a BBGN20 instance's modulus is sized for
    ``n_users``. For a protocol with ``n_users``, ``event`` and its instances in ``_participating_instances``.
    """

    n_users: int

    @property
    @abc.abstractmethod
    def _participating_instances(self) -> tuple[Any, ...]:
        """The instance protocols whose messages a participant sends."""

    @abc.abstractmethod
    def _event_for_fewer(self, n_participants: int) -> PrivacyEvent:
        """The guarantee when ``n_participants < n_users`` users take part."""

    def check_participants(self, n_participants: int) -> None:
        """Warn with `PrivacyLeakWarning` when fewer than ``n_users`` take part; raise when more do and an instance is BBGN20."""
        check_instance_participants(n_participants, self.n_users, self._participating_instances, type(self).__name__)

    def _all_participants(self, inputs: np.ndarray) -> np.ndarray:
        """``inputs`` (a row per user) of a whole run, after `check_participants` on their number."""
        self.check_participants(inputs.shape[0])
        return inputs

    def event_for_participants(self, n_participants: int) -> PrivacyEvent:
        """The guarantee achieved when ``n_participants`` users take part (`event` for ``n_users``, or more without BBGN20).

        Raises:
            InvalidParameterError: more than ``n_users`` participants with a BBGN20 instance.
        """
        owner = type(self).__name__
        n_participants = check_participant_count(n_participants, self.n_users, self._participating_instances, owner)
        if n_participants >= self.n_users:
            return self.event  # type: ignore[attr-defined]
        return self._event_for_fewer(n_participants)


def parallel_event_or_none(events: tuple[PrivacyEvent, ...], parts_per_user: int) -> PrivacyEvent:
    """``ParallelEvent(events, parts_per_user)``, or no guarantee (``epsilon = inf``) where its delta would reach 1."""
    worst_delta = max(e.guarantee.delta for e in events)
    if not parts_per_user * worst_delta < 1.0:
        return GuaranteeEvent(PrivacyGuarantee(math.inf, 1 - 1e-16, events[0].neighbouring))
    return ParallelEvent(events, parts_per_user=parts_per_user)


def instance_views(
    pairs: Any, rng: np.random.Generator, path: str, n_instances: int, place: Callable[[int, np.ndarray], np.ndarray]
) -> SparseMessageHistogram:
    """One sparse view of several instances' message views (``pairs``: protocol and its inputs, in order).

    Each instance's `partial_view` (no participant check) is taken on ``path``; ``place(i,
    local_ids)`` maps instance ``i``'s local instance ids to ids of the whole view.
    """
    parts = []
    for index, (protocol, inputs) in enumerate(pairs):
        view = protocol.partial_view(inputs, rng=rng, path=path).histogram
        if isinstance(view, MessageHistogram):
            local, positions = np.nonzero(view.counts)
            parts.append((place(index, local), np.asarray(view.alphabet)[positions], view.counts[local, positions]))
        else:
            parts.append((place(index, view.instances), view.values, view.counts))
    return SparseMessageHistogram.from_pairs(
        np.concatenate([p[0] for p in parts]),
        np.concatenate([p[1] for p in parts]),
        np.concatenate([p[2] for p in parts]),
        n_instances,
    )


def unsendable_values(protocol: InstanceProtocol, values: np.ndarray) -> np.ndarray:
    """Where ``values`` are not messages the instance can send (BBGN20: residues ``0..q-1``; GKMPS21: ``+-1..+-D``)."""
    if isinstance(protocol, SparseMultiMessageSum):
        return (values < 0) | (values >= protocol.modulus)
    return (values == 0) | (np.abs(values) > protocol.levels)


def instance_estimates(
    protocol: InstanceProtocol, local: np.ndarray, values: np.ndarray, counts: np.ndarray, size: int
) -> np.ndarray:
    """The instance's analyzer on its part of a sparse view: ``size`` instances, with ``local`` ids in ``0..size-1``."""
    if isinstance(protocol, SparseMultiMessageSum):
        return protocol.analyze(SparseMessageHistogram(local, values, counts, size))
    width = 2 * protocol.levels + 1
    dense = np.bincount(local * width + values + protocol.levels, weights=counts, minlength=size * width)
    dense = np.delete(dense.reshape(size, width).astype(np.int64), protocol.levels, axis=1)
    return protocol.analyze(MessageHistogram(dense, protocol.alphabet))


def largest_cap(instances: Any, tail_probability: float) -> int:
    """The largest of the instances' per-sender caps (a shuffler caps every instance tag of a composite alike)."""
    return max(p.per_sender_message_cap(tail_probability) for p in instances)


def chunk_request(rng: RNGLike, path: str, owner: str) -> tuple[np.random.Generator, str]:
    """A `partial_view` call's generator and its checked execution path (``"fast"`` or ``"faithful"``)."""
    path = check_choice(path, "path", owner, EXECUTION_PATHS)
    return as_generator(rng, owner), path


def sparse_view(messages: Any, owner: str) -> SparseMessageHistogram:
    """``messages`` as a `SparseMessageHistogram` (a `MessageBatch` is counted); anything else is refused."""
    if isinstance(messages, MessageBatch):
        messages = SparseMessageHistogram.from_messages(messages)
    if not isinstance(messages, SparseMessageHistogram):
        raise invalid("view", owner, "a SparseMessageHistogram or MessageBatch", type(messages).__name__)
    return messages


def instance_messages(pairs: Any, rng: np.random.Generator) -> list[MessageBatch]:
    """Every instance's messages (``pairs``: protocol and its inputs), the participants checked by the caller."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)  # checked once, by the composite protocol
        return [protocol.randomize(inputs, rng=rng) for protocol, inputs in pairs]


def basic_or_none(first: PrivacyGuarantee, second: PrivacyGuarantee) -> PrivacyGuarantee:
    """`basic_composition` of two guarantees, or no guarantee (``epsilon = inf``) where the delta would reach 1."""
    if not first.delta + second.delta < 1.0:
        return PrivacyGuarantee(math.inf, 1 - 1e-16, first.neighbouring)
    return basic_composition([first, second])
