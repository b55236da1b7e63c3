"""The shuffle model: message batches, the shuffler, the histogram view, the protocol base."""

from privsum.shuffle.histogram import MessageHistogram
from privsum.shuffle.messages import MessageBatch
from privsum.shuffle.protocol import EXECUTION_PATHS, ShuffleProtocol
from privsum.shuffle.shuffler import shuffle_messages

__all__ = ["EXECUTION_PATHS", "MessageBatch", "MessageHistogram", "ShuffleProtocol", "shuffle_messages"]
