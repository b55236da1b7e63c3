"""The shuffler: a uniformly random permutation of all messages."""

from __future__ import annotations

from privsum._random import RNGLike, as_generator
from privsum._validation import invalid
from privsum.shuffle.messages import MessageBatch

__all__ = ["shuffle_messages"]


def shuffle_messages(messages: MessageBatch, *, rng: RNGLike = None) -> MessageBatch:
    """Return the messages in a uniformly random order, detached from their senders.

    Privacy:
        This is the trusted shuffler of the shuffle model: the analyzer's view is the multiset
        of messages. In a deployment it is a mixnet or secure aggregation service; here it is
        a simulation.

    Examples:
        >>> import numpy as np
        >>> batch = MessageBatch(np.zeros(4, dtype=int), np.arange(4), n_instances=1)
        >>> sorted(shuffle_messages(batch, rng=0).values.tolist())
        [0, 1, 2, 3]
    """
    if not isinstance(messages, MessageBatch):
        raise invalid("messages", "shuffle_messages", "a MessageBatch", type(messages).__name__)
    generator = as_generator(rng, "shuffle_messages")
    return messages.take(generator.permutation(messages.n_messages))
