"""Simulated attacks: malicious senders' well-formed messages added to an honest view.

The honest view is drawn once (fixed seed); the analyzer runs on it with and without the
attackers' messages, so the measured shift is exact (no statistics).
"""

from __future__ import annotations

import numpy as np

from privsum.shuffle import MessageBatch, MessageHistogram
from privsum.shuffle.sparse import SparseMessageHistogram


def attack_batch(n_instances: int, per_instance: dict[int, int] | list[dict[int, int]]) -> MessageBatch:
    """Messages ``{value: count}`` in every instance (one dict for all, or one per instance)."""
    plans = per_instance if isinstance(per_instance, list) else [per_instance] * n_instances
    instances, values = [], []
    for instance, plan in enumerate(plans):
        for value, count in plan.items():
            instances.append(np.full(count, instance, dtype=np.int64))
            values.append(np.full(count, value, dtype=np.int64))
    return MessageBatch(np.concatenate(instances), np.concatenate(values), n_instances)


def with_attack(protocol, honest, attack: MessageBatch):
    """The honest view plus the attackers' messages, in the protocol's view type."""
    extra = protocol.view(attack)
    if isinstance(honest, (MessageHistogram, SparseMessageHistogram)):
        return honest + extra
    raise TypeError(type(honest))


def shift(protocol, honest, attack: MessageBatch) -> np.ndarray:
    """The analyzer's output on the attacked view minus its output on the honest view."""
    return np.asarray(protocol.analyze(with_attack(protocol, honest, attack)), float) - np.asarray(
        protocol.analyze(honest), float
    )


def random_plans(rng: np.random.Generator, alphabet, n_instances: int, n_senders: int, cap: int) -> list[dict[int, int]]:
    """Random well-formed uploads: each sender at most ``cap`` messages per instance, values in ``alphabet``."""
    alphabet = np.asarray(alphabet)
    plans = []
    for _ in range(n_instances):
        plan: dict[int, int] = {}
        for _ in range(n_senders):
            count = int(rng.integers(0, cap + 1))
            for value in rng.choice(alphabet, size=count):
                plan[int(value)] = plan.get(int(value), 0) + 1
        plans.append(plan)
    return plans
