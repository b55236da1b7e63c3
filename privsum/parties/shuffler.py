"""The shuffler: collects uploads from identified senders, enforces the cap, releases anonymous permuted batches."""

from __future__ import annotations

import secrets
from collections.abc import Hashable

import numpy as np

from privsum._random import RNGLike, as_generator
from privsum._validation import invalid
from privsum.parties.deployment import Deployment
from privsum.wire.format import BATCH_ID_BYTES, WireFormatError

__all__ = ["Shuffler"]


class Shuffler:
    """The shuffle model's trusted shuffler for one `Deployment`.

    It accepts one upload per sender for the whole collection (`submit`; a sender who uploaded
    for an earlier batch is refused too, since the protocol randomizes each user once), checks it fully (header,
    fingerprint, the per-sender cap overall and per instance, every message in range), and
    releases (`release`) only once it holds at least ``deployment.min_senders`` senders: the
    messages of all of them, without sender identities, in an order drawn uniformly at random
    by a CSPRNG, under a fresh random 16-byte batch id, with the number of senders. In the
    positional layout (`Deployment.positional`) each instance's messages are permuted on their
    own, by independent permutations, and the batch lists them instance by instance.

    Args:
        deployment: the configuration.
        rng: ``None`` (default): the permutation comes from the OS-keyed ChaCha20 stream
            (``"secure"``); a seed only in tests.

    Privacy:
        This object sees who sent what: the shuffle model's guarantee assumes it is trusted (or
        replaced by a mixnet, a trusted execution environment or a separately operated
        service; see the deployment page). It enforces the cap so that one sender's influence on
        the analyzer's view is bounded; it cannot tell a real user from a fake one (Sybils),
        which only an authenticated identity can. Permuting each instance separately releases
        the same information as one permutation of all messages: either way, the batch is
        (given each instance's multiset of messages) a uniformly random arrangement drawn
        independently of the inputs, so both are post-processings of the per-instance
        histograms the protocols are analysed on. The permutations of different instances must be
        independent: one shared permutation would link a sender's messages across instances.

    Examples:
        >>> from privsum.bitsum import RRBitSum
        >>> from privsum.parties import Client
        >>> deployment = Deployment(RRBitSum(n_users=2, flip_probability=0.1, delta=0.5), n_instances=1)
        >>> shuffler, client = Shuffler(deployment, rng=1), Client(deployment, rng=2)
        >>> for sender in ("alice", "bob"):
        ...     shuffler.submit(sender, client.encode([1]))
        >>> len(shuffler.release()) - deployment.spec.batch_header_bytes  # two 1-bit messages
        1
    """

    def __init__(self, deployment: Deployment, *, rng: RNGLike = None) -> None:
        if not isinstance(deployment, Deployment):
            raise invalid("deployment", "Shuffler", "a Deployment", type(deployment).__name__)
        self.deployment = deployment
        self._generator = as_generator("secure" if rng is None else rng, "Shuffler")
        self._senders: set[Hashable] = set()  # held for the next batch
        self._released: set[Hashable] = set()  # in earlier batches of this collection
        self._fields: list[np.ndarray] = []
        self._held = 0
        self._largest_batch = deployment.largest_batch

    @property
    def n_senders(self) -> int:
        """Senders whose uploads are held for the next batch."""
        return len(self._senders)

    @property
    def n_messages(self) -> int:
        """Messages held for the next batch."""
        return self._held

    @property
    def ready(self) -> bool:
        """Whether at least ``min_senders`` senders are held."""
        return self.n_senders >= self.deployment.min_senders

    def submit(self, sender: Hashable, upload: bytes) -> None:
        """Accept one sender's upload for the next batch; refuse (state unchanged) anything malformed.

        Raises:
            WireFormatError: the bytes are not a well-formed upload of this deployment, or exceed
                the per-sender cap (overall or in one instance).
            InvalidParameterError: the sender already submitted (in this batch or an earlier one).
        """
        try:
            hash(sender)
        except TypeError:
            raise invalid("sender", "Shuffler.submit", "a hashable identity", type(sender).__name__) from None
        if sender != sender:  # nan is never equal to itself: it would pass the one-upload check every time
            raise invalid("sender", "Shuffler.submit", "an identity equal to itself", sender)
        if sender in self._senders or sender in self._released:
            raise invalid("sender", "Shuffler.submit", "a sender without an upload in this collection", sender)
        if self._largest_batch is not None and self.n_senders >= self._largest_batch:
            raise invalid("sender", "Shuffler.submit", f"one of at most {self._largest_batch} senders of one batch (the "
                          "protocol's n_users: its guarantee covers no larger crowd; release a batch first)", sender)
        spec, cap = self.deployment.spec, self.deployment.cap
        fields = spec.decode_upload(upload)  # positional: exactly c messages per instance, by construction
        if not spec.positional and fields.size > cap.per_instance and cap.per_instance < cap.total:
            busiest = int(np.bincount(spec.split(fields)[0], minlength=spec.n_instances).max())
            if busiest > cap.per_instance:
                raise WireFormatError(
                    f"The 'upload' parameter of Shuffler.submit must be at most {cap.per_instance} messages per instance "
                    f"(the per-sender cap). Got {busiest} instead."
                )
        if self._held + fields.size > spec.max_batch_messages:
            raise invalid("upload", "Shuffler.submit", f"within the batch cap of {spec.max_batch_messages} messages",
                          fields.size)
        self._senders.add(sender)
        self._fields.append(fields)
        self._held += int(fields.size)

    def release(self) -> bytes:
        """The batch of every held message, permuted, without identities; the next batch starts empty.

        Raises:
            InvalidParameterError: fewer than ``min_senders`` senders are held (nothing is released).
        """
        if not self.ready:
            raise invalid("senders", "Shuffler.release", f"at least {self.deployment.min_senders} (min_senders)",
                          self.n_senders)
        fields = np.concatenate(self._fields)
        if self.deployment.spec.positional:  # each instance's messages permuted on their own, listed instance by instance
            spec = self.deployment.spec
            by_instance = fields.reshape(self.n_senders, spec.n_instances, spec.positional).transpose(1, 0, 2)
            permuted = self._generator.permuted(by_instance.reshape(spec.n_instances, -1), axis=1).reshape(-1)
        else:
            permuted = fields[self._generator.permutation(fields.size)]
        batch = self.deployment.spec.encode_batch(permuted, n_senders=self.n_senders,
                                                  batch_id=secrets.token_bytes(BATCH_ID_BYTES))
        self._released |= self._senders
        self._senders, self._fields, self._held = set(), [], 0
        return batch
