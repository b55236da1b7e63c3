"""A reusable pytest base that every protocol's tests inherit.

Subclass `ProtocolConformance` in a class named ``Test...`` and set:

* ``make_protocol(self)`` returning a configured protocol;
* ``make_input(self, rng)`` returning valid users' inputs;
* optionally ``calibration_targets``: dicts of ``from_privacy`` keyword arguments, each checked
  to produce a protocol whose headline guarantee meets the target.

Examples:
    >>> ProtocolConformance.calibration_targets
    ()
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from privsum.accounting.events import PrivacyEvent
from privsum.accounting.guarantee import Neighbouring
from privsum.shuffle.histogram import MessageHistogram
from privsum.shuffle.messages import MessageBatch
from privsum.shuffle.protocol import ShuffleProtocol

__all__ = ["ProtocolConformance"]


class ProtocolConformance:
    """Checks every shuffle-model protocol must pass."""

    calibration_targets: ClassVar[tuple[dict[str, Any], ...]] = ()

    def make_protocol(self) -> ShuffleProtocol:  # pragma: no cover - overridden by subclasses
        raise AssertionError("subclasses define make_protocol()")

    def make_input(self, rng: np.random.Generator) -> Any:  # pragma: no cover - overridden by subclasses
        raise AssertionError("subclasses define make_input(rng)")

    def test_run_is_analyze_shuffle_randomize(self) -> None:
        protocol = self.make_protocol()
        x = self.make_input(np.random.default_rng(1))
        by_run = protocol.run(x, rng=np.random.default_rng(7), path="faithful")
        generator = np.random.default_rng(7)
        messages = protocol.randomize(x, rng=generator)
        by_hand = protocol.analyze(protocol.view(protocol.shuffle(messages, rng=generator)))
        np.testing.assert_array_equal(by_run, by_hand)

    def test_same_seed_same_output(self) -> None:
        protocol = self.make_protocol()
        x = self.make_input(np.random.default_rng(2))
        for path in ("fast", "faithful"):
            np.testing.assert_array_equal(protocol.run(x, rng=11, path=path), protocol.run(x, rng=11, path=path))

    def test_shapes_and_types(self) -> None:
        protocol = self.make_protocol()
        x = self.make_input(np.random.default_rng(3))
        messages = protocol.randomize(x, rng=5)
        assert isinstance(messages, MessageBatch)
        view = protocol.sample_view(x, rng=5)
        assert isinstance(view, MessageHistogram)
        assert view.alphabet == protocol.alphabet
        fast, faithful = protocol.run(x, rng=5), protocol.run(x, rng=5, path="faithful")
        assert np.shape(fast) == np.shape(faithful)

    def test_analyze_accepts_batch_or_histogram(self) -> None:
        protocol = self.make_protocol()
        messages = protocol.randomize(self.make_input(np.random.default_rng(4)), rng=6)
        np.testing.assert_array_equal(protocol.analyze(messages), protocol.analyze(protocol.view(messages)))

    def test_shuffle_preserves_the_multiset(self) -> None:
        protocol = self.make_protocol()
        messages = protocol.randomize(self.make_input(np.random.default_rng(5)), rng=8)
        assert protocol.view(protocol.shuffle(messages, rng=9)) == protocol.view(messages)

    def test_reports_privacy_and_costs(self) -> None:
        protocol = self.make_protocol()
        assert isinstance(protocol.event, PrivacyEvent)
        assert isinstance(protocol.neighbouring, Neighbouring)
        assert protocol.expected_messages_per_user >= 0
        assert protocol.bits_per_message() >= 1
        assert protocol.bits_per_message(1024) >= 10

    def test_calibration_meets_target(self) -> None:
        for target in self.calibration_targets:
            protocol = type(self.make_protocol()).from_privacy(**target)
            guarantee = protocol.guarantee
            assert guarantee.epsilon <= target["epsilon"] * (1 + 1e-9), (target, guarantee)
            assert guarantee.delta <= target.get("delta", 0.0) * (1 + 1e-9) + 0.0, (target, guarantee)
