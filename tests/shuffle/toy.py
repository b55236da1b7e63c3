"""A minimal protocol used to test the shuffle core: shuffled binary randomized response."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from privsum._random import as_generator
from privsum._validation import check_array, check_probability
from privsum.accounting import GuaranteeEvent, PrivacyGuarantee
from privsum.shuffle import MessageBatch, MessageHistogram, ShuffleProtocol


@dataclass(frozen=True, kw_only=True)
class ToyFlip(ShuffleProtocol):
    flip_probability: float

    def __post_init__(self) -> None:
        check_probability(self.flip_probability, "flip_probability", "ToyFlip", allow_zero=False)

    @property
    def alphabet(self) -> tuple[int, ...]:
        return (0, 1)

    @property
    def event(self) -> GuaranteeEvent:
        return GuaranteeEvent(PrivacyGuarantee(math.log((1 - self.flip_probability) / self.flip_probability)))

    @property
    def expected_messages_per_user(self) -> float:
        return 1.0

    def randomize(self, x, *, rng=None) -> MessageBatch:
        bits = check_array(x, "x", "ToyFlip", ndim=2, low=0, high=1, integer=True)
        flips = as_generator(rng).random(bits.shape) < self.flip_probability
        instances = np.broadcast_to(np.arange(bits.shape[1]), bits.shape)
        return MessageBatch(instances.ravel(), (bits ^ flips).ravel(), n_instances=bits.shape[1])

    def sample_view(self, x, *, rng=None) -> MessageHistogram:
        bits = check_array(x, "x", "ToyFlip", ndim=2, low=0, high=1, integer=True)
        generator = as_generator(rng)
        ones = bits.sum(axis=0)
        reported_ones = generator.binomial(ones, 1 - self.flip_probability) + generator.binomial(
            bits.shape[0] - ones, self.flip_probability
        )
        counts = np.stack([bits.shape[0] - reported_ones, reported_ones], axis=1)
        return MessageHistogram(counts, self.alphabet)

    def analyze(self, view) -> np.ndarray:
        histogram = self.view(view)
        n = histogram.counts.sum(axis=1)
        return (histogram.count(1) - n * self.flip_probability) / (1 - 2 * self.flip_probability)
