"""The protocol base: randomizer, shuffler and analyzer as separate roles."""

from __future__ import annotations

import abc
import math
from typing import Any

import numpy as np

from privsum._random import RNGLike, as_generator
from privsum._validation import check_choice, check_integer, invalid
from privsum.accounting.events import PrivacyEvent
from privsum.accounting.guarantee import Neighbouring, PrivacyGuarantee
from privsum.shuffle.histogram import MessageHistogram
from privsum.shuffle.messages import MessageBatch
from privsum.shuffle.shuffler import shuffle_messages

__all__ = ["EXECUTION_PATHS", "ShuffleProtocol"]

EXECUTION_PATHS = ("fast", "faithful")


class ShuffleProtocol(abc.ABC):
    """A shuffle-model protocol: ``run = analyze . shuffle . randomize``.

    Subclasses are frozen, keyword-only dataclasses of public parameters and implement
    `randomize` (each user's device, vectorised over users and instances), `analyze` (the
    analyzer, on the histogram view) and the cost and privacy properties. `sample_view` may be
    overridden by a *fast path* that samples the analyzer's histogram directly, when that is
    exact in distribution; the *faithful path* materialises and permutes every message.

    Privacy:
        Guarantees are on the shuffler's output (the multiset of messages) against an adversary
        who also knows every other user's input; the analyzer is post-processing. The shuffler is
        trusted.
    """

    @property
    @abc.abstractmethod
    def alphabet(self) -> tuple[int, ...]:
        """Sorted message values the randomizer can send."""

    @property
    @abc.abstractmethod
    def event(self) -> PrivacyEvent:
        """What the accountant consumes for one run."""

    @property
    @abc.abstractmethod
    def expected_messages_per_user(self) -> float:
        """Expected number of messages each user sends, per instance."""

    @abc.abstractmethod
    def randomize(self, x: Any, *, rng: RNGLike = None) -> MessageBatch:
        """Every user's messages, tagged with instance ids (the local randomizers)."""

    @abc.abstractmethod
    def analyze(self, view: MessageHistogram | MessageBatch) -> np.ndarray:
        """The estimate(s) computed from the shuffled messages."""

    @property
    def guarantee(self) -> PrivacyGuarantee:
        """The headline guarantee of one run."""
        return self.event.guarantee

    @property
    def neighbouring(self) -> Neighbouring:
        """The neighbouring relation of the guarantee."""
        return self.event.neighbouring

    def bits_per_message(self, n_instances: int = 1) -> int:
        """Bits of one message: the instance tag plus the value."""
        n_instances = check_integer(n_instances, "n_instances", type(self).__name__, low=1)
        tag_bits = math.ceil(math.log2(n_instances)) if n_instances > 1 else 0
        value_bits = max(1, math.ceil(math.log2(len(self.alphabet))))
        return tag_bits + value_bits

    def shuffle(self, messages: MessageBatch, *, rng: RNGLike = None) -> MessageBatch:
        """The trusted shuffler: a uniformly random permutation of all messages."""
        return shuffle_messages(messages, rng=as_generator(rng, type(self).__name__))

    def view(self, messages: MessageHistogram | MessageBatch) -> MessageHistogram:
        """The histogram view of a batch of messages (a histogram is returned unchanged)."""
        if isinstance(messages, MessageHistogram):
            if messages.alphabet != self.alphabet:
                raise invalid("view", type(self).__name__, f"a histogram over {self.alphabet}", messages.alphabet)
            return messages
        if isinstance(messages, MessageBatch):
            return MessageHistogram.from_messages(messages, alphabet=self.alphabet)
        raise invalid("view", type(self).__name__, "a MessageHistogram or MessageBatch", type(messages).__name__)

    def sample_view(self, x: Any, *, rng: RNGLike = None) -> MessageHistogram:
        """The analyzer's histogram; the default materialises every message."""
        return self.view(self.randomize(x, rng=as_generator(rng, type(self).__name__)))

    def run(self, x: Any, *, rng: RNGLike = None, path: str = "fast") -> np.ndarray:
        """Run the whole protocol on the users' inputs ``x``.

        Args:
            x: the users' inputs, first axis over users.
            rng: randomness for the randomizers and the shuffler.
            path: ``"faithful"`` materialises and permutes every message; ``"fast"`` samples
                the analyzer's histogram directly where the protocol provides an exact sampler.
        """
        owner = type(self).__name__
        path = check_choice(path, "path", owner, EXECUTION_PATHS)
        generator = as_generator(rng, owner)
        if path == "faithful":
            messages = self.randomize(x, rng=generator)
            return self.analyze(self.view(self.shuffle(messages, rng=generator)))
        return self.analyze(self.sample_view(x, rng=generator))
