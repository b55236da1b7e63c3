"""The shuffle model: message batches, the shuffler, the histogram view, the protocol base."""

from privsum.shuffle.histogram import MessageHistogram
from privsum.shuffle.messages import MessageBatch
from privsum.shuffle.protocol import EXECUTION_PATHS, ShuffleProtocol
from privsum.shuffle.shuffler import shuffle_messages
from privsum.shuffle.streaming import PartialView, UserChunks

__all__ = [
    "EXECUTION_PATHS",
    "MessageBatch",
    "MessageHistogram",
    "PartialView",
    "ShuffleProtocol",
    "UserChunks",
    "shuffle_messages",
]
