"""The analyzer: absorbs released batches incrementally and reports the estimate with its guarantee."""

from __future__ import annotations

from typing import Any

import numpy as np

from privsum._validation import invalid
from privsum.accounting.events import GuaranteeEvent, PrivacyEvent
from privsum.accounting.guarantee import PrivacyGuarantee
from privsum.parties.deployment import Deployment
from privsum.shuffle.histogram import MessageHistogram
from privsum.shuffle.sparse import SparseMessageHistogram
from privsum.wire.format import WireFormatError

__all__ = ["Analyzer"]


class Analyzer:
    """The analyzer of a `Deployment`: any number of batches in, one estimate and guarantee out.

    Each `absorb` validates a whole batch (header, fingerprint, sizes against the caps before
    anything is allocated, every message in range, a batch id not seen before) and then adds its
    counts; a refused batch leaves the state unchanged. The view is the protocol's canonical
    histogram of (instance, value) counts; the number of participants is the sum of the senders
    the shuffler vouches for in each batch.

    Examples:
        >>> from privsum.bitsum import RRBitSum
        >>> from privsum.parties import Client, Shuffler
        >>> deployment = Deployment(RRBitSum(n_users=3, flip_probability=0.1, delta=0.5), n_instances=1)
        >>> shuffler, client, analyzer = Shuffler(deployment, rng=1), Client(deployment, rng=2), Analyzer(deployment)
        >>> for sender in range(3):
        ...     shuffler.submit(sender, client.encode([1]))
        >>> analyzer.absorb(shuffler.release())
        3
        >>> analyzer.n_participants, analyzer.estimate().shape
        (3, (1,))
    """

    def __init__(self, deployment: Deployment) -> None:
        if not isinstance(deployment, Deployment):
            raise invalid("deployment", "Analyzer", "a Deployment", type(deployment).__name__)
        self.deployment = deployment
        spec = deployment.spec
        # A `range` alphabet (shares modulo q) is never materialised: its view is sparse.
        self.dense = spec.countable and not isinstance(deployment.protocol.alphabet, range)
        self._counts = np.zeros((spec.n_instances, spec.alphabet_size), dtype=np.int64) if self.dense else None
        # The sparse view as sorted distinct logical fields (instance << value_bits | value index) and their counts.
        self._fields = np.zeros(0, dtype=np.int64)
        self._field_counts = np.zeros(0, dtype=np.int64)
        self._batch_ids: set[bytes] = set()
        self.n_participants = 0
        #: Senders of the smallest batch absorbed: each user is in one batch, so that crowd sets the guarantee.
        self.smallest_batch: int | None = None

    @property
    def n_batches(self) -> int:
        """Batches absorbed."""
        return len(self._batch_ids)

    def absorb(self, batch: bytes) -> int:
        """Validate and add one released batch; returns its number of messages.

        Raises:
            WireFormatError: malformed, foreign, over a cap, a crowd outside ``min_senders`` ..
                `Deployment.largest_batch`, or a batch id already absorbed (nothing is changed).
        """
        spec = self.deployment.spec
        if self.dense:
            batch_id, n_senders, counts = spec.batch_counts(batch)
            self._check_crowd(n_senders)
            self._check_new(batch_id)
            self._counts += counts
            messages = int(counts.sum())
        else:
            decoded = spec.decode_batch(batch)
            self._check_crowd(decoded.n_senders)
            self._check_new(decoded.batch_id)
            self._fields, self._field_counts = _merged_counts(self._fields, self._field_counts,
                                                              np.asarray(decoded.fields, dtype=np.int64))
            batch_id, n_senders, messages = decoded.batch_id, decoded.n_senders, int(decoded.fields.size)
        self._batch_ids.add(batch_id)
        self.n_participants += n_senders
        self.smallest_batch = n_senders if self.smallest_batch is None else min(self.smallest_batch, n_senders)
        return messages

    def _check_crowd(self, n_senders: int) -> None:
        """Refuse a batch below ``min_senders`` (it would set every user's guarantee to its crowd) or above the largest."""
        fewest, most = self.deployment.min_senders, self.deployment.largest_batch
        if not fewest <= n_senders <= (n_senders if most is None else most):
            bounds = f"at least {fewest} (min_senders)" + ("" if most is None else f" and at most {most} (n_users)")
            raise WireFormatError(
                f"The 'batch' parameter of Analyzer.absorb must be a batch of {bounds} senders. Got {n_senders} instead."
            )

    def _check_new(self, batch_id: bytes) -> None:
        if batch_id in self._batch_ids:
            raise WireFormatError(
                "The 'batch' parameter of Analyzer.absorb must be a batch not absorbed before. "
                f"Got the replayed id {batch_id.hex()} instead."
            )

    @property
    def view(self) -> MessageHistogram | SparseMessageHistogram:
        """The canonical analyzer view of everything absorbed."""
        if self._counts is not None:
            return MessageHistogram(self._counts.copy(), tuple(int(v) for v in self.deployment.protocol.alphabet))
        instances, indices = self.deployment.spec.split(self._fields)
        # sorted by (instance, value index), and values grow with their index: sorted by (instance, value)
        return SparseMessageHistogram(instances, self.deployment.values_of(indices), self._field_counts.copy(),
                                      self.deployment.spec.n_instances)

    def _require_participants(self, owner: str) -> None:
        if self.n_participants < 1:
            raise invalid("batches", owner, "at least one absorbed batch", "none")

    def estimate(self) -> Any:
        """The protocol's estimate from the absorbed view, for the participants received."""
        self._require_participants("Analyzer.estimate")
        return self.deployment.protocol.analyze_participants(self.view, self.n_participants)

    @property
    def guarantee_crowd(self) -> int:
        """The crowd the guarantee is computed for: the senders of the smallest batch absorbed.

        Batches are separate shuffles: the analyzer sees which batch each message came from, so a
        user is hidden only among the senders of its own batch (the other batches do not depend on
        its input). With one batch this is `n_participants`.
        """
        self._require_participants("Analyzer.guarantee_crowd")
        return int(self.smallest_batch)  # type: ignore[arg-type]

    @property
    def event(self) -> PrivacyEvent:
        """What an accountant composes for this release: the protocol's `event_for_participants` (of `guarantee_crowd`).

        Where the protocol's message counts are random, the cap's redraws add to delta (see
        `guarantee`) and the event is that (epsilon, delta) guarantee.
        """
        self._require_participants("Analyzer.event")
        if self.deployment.cap.exceed_probability == 0.0:
            return self.deployment.protocol.event_for_participants(self.guarantee_crowd)
        return GuaranteeEvent(self.guarantee)

    @property
    def guarantee(self) -> PrivacyGuarantee:
        """The headline guarantee of every participant: `guarantee_for_participants` of `guarantee_crowd`.

        Where the protocol's message counts are random, the cap's redraws add
        ``(1 + e^epsilon) n exceed_probability`` to delta (`Deployment.delta_for_cap`, ``n`` all
        participants).
        """
        self._require_participants("Analyzer.guarantee")
        guarantee = self.deployment.protocol.guarantee_for_participants(self.guarantee_crowd)
        extra = self.deployment.delta_for_cap(guarantee.epsilon, self.n_participants)
        if extra == 0.0:
            return guarantee
        delta = min(guarantee.delta + extra, float(np.nextafter(1.0, 0.0)))
        return PrivacyGuarantee(guarantee.epsilon, delta, guarantee.neighbouring)


def _merged_counts(fields: np.ndarray, counts: np.ndarray, new: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct fields and their counts, after adding the (unsorted, repeated) ``new`` fields once each.

    The logical field orders messages by instance, then value index: one sort of the new int64
    keys, then a merge with the (already coalesced) earlier ones.
    """
    keys, added = _coalesced(np.sort(new), np.ones(new.size, dtype=np.int64))
    if fields.size == 0:
        return keys, added
    order = np.argsort(np.concatenate([fields, keys]), kind="stable")
    return _coalesced(np.concatenate([fields, keys])[order], np.concatenate([counts, added])[order])


def _coalesced(keys: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted keys with repeats summed."""
    if keys.size == 0:
        return keys, weights
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    return keys[starts], np.add.reduceat(weights, starts)
