"""Columns of sub-domain instances: how `ClippedSum` routes values to its instances and reads their views back.

``k`` columns (independent sums) of integers in ``{0..U}``, each summed by ``log2 U + 1``
instances, instance ``j`` over sub-domain ``j`` (``I_0 = {0, 1}``, ``I_j = (2^{j-1}, 2^j]``): a
value goes to the instance of its own sub-domain and ``0`` to the others. A message of column
``c``'s instance ``j`` carries the tag ``c (log2 U + 1) + j``. The mixin here routes validated
values, samples the instances' messages, views and noisy totals, checks a view, and decodes
every instance's estimate ``S_j``; the threshold rule on those estimates is
`privsum.clipping.threshold_rule`.
"""

from __future__ import annotations

import math

import numpy as np

from privsum import _validation as checks
from privsum.clipping.instances import (
    InstanceProtocol,
    NoisySums,
    decode_total,
    instance_estimates,
    instance_messages,
    instance_views,
    noisy_total,
    sparse_view,
    sub_domain_index,
    unsendable_values,
)
from privsum.shuffle import MessageBatch
from privsum.shuffle.sparse import SparseMessageHistogram
from privsum.shuffle.streaming import PartialView

__all__ = ["SubDomainColumns"]


class SubDomainColumns:
    """Mixed into `~privsum.clipping.ClippedSum`: its ``instances`` over ``k`` columns, tag ``column (log2 U + 1) + j``.

    The methods take validated integer inputs ``(n, k)`` and check no participant count (the
    protocol does, once); composite protocols (`~privsum.clipping.ClippedVectorSum`) call them on
    their own columns.
    """

    instances: tuple[InstanceProtocol, ...]

    @property
    def n_sub_domains(self) -> int:
        """``log2 U + 1``."""
        return len(self.instances)

    def bits_per_message(self, n_instances: int = 1) -> int:
        """Instance tag (``n_instances (log2 U + 1)`` instances) plus the widest instance's value bits."""
        n_instances = checks.check_integer(n_instances, "n_instances", type(self).__name__, low=1)
        total = n_instances * self.n_sub_domains
        tag_bits = math.ceil(math.log2(total)) if total > 1 else 0
        return tag_bits + max(p.bits_per_message(1) for p in self.instances)

    def _columns(self, values: np.ndarray) -> list[np.ndarray]:
        sub = sub_domain_index(values)
        return [np.where(sub == j, values, 0) for j in range(self.n_sub_domains)]

    def _pairs(self, values: np.ndarray) -> list[tuple[InstanceProtocol, np.ndarray]]:
        return list(zip(self.instances, self._columns(values), strict=True))

    def messages_of(self, values: np.ndarray, rng: np.random.Generator) -> MessageBatch:
        """Messages of validated integer inputs ``(n, k)``, with no participant check (for composite protocols)."""
        batches = instance_messages(self._pairs(values), rng)
        n_instances = values.shape[1] * self.n_sub_domains
        return MessageBatch(
            np.concatenate([b.instances * self.n_sub_domains + j for j, b in enumerate(batches)]),
            np.concatenate([b.values for b in batches]),
            n_instances=n_instances,
        )

    def message_view_of(self, values: np.ndarray, rng: np.random.Generator, path: str) -> SparseMessageHistogram:
        """The sparse message view of validated integer inputs, each instance's view on ``path``; no participant check."""
        width = self.n_sub_domains
        return instance_views(self._pairs(values), rng, path, values.shape[1] * width, lambda j, local: local * width + j)

    def noisy_sums_of(self, values: np.ndarray, rng: np.random.Generator) -> NoisySums:
        """Every (column, sub-domain) instance's noisy total (`~privsum.clipping.instances.noisy_total`) for validated integers.

        Shape ``(k, log2 U + 1)``.
        """
        return NoisySums(np.stack([noisy_total(p, c, rng) for p, c in self._pairs(values)], axis=1))

    def partial_of(self, values: np.ndarray, rng: np.random.Generator, path: str) -> PartialView:
        """`partial_view` of validated integer inputs (``"fast"``: `NoisySums`; ``"faithful"``: the message view)."""
        view = self.message_view_of(values, rng, "faithful") if path == "faithful" else self.noisy_sums_of(values, rng)
        return PartialView(view, values.shape[0])

    def view(self, messages: SparseMessageHistogram | MessageBatch) -> SparseMessageHistogram:
        """The sparse view of a batch, checked: every value must be one its instance can send."""
        owner = type(self).__name__
        messages = sparse_view(messages, owner)
        if messages.n_instances % self.n_sub_domains:
            raise checks.invalid("view", owner, f"a multiple of {self.n_sub_domains} instances", messages.n_instances)
        sub = messages.instances % self.n_sub_domains
        for j, protocol in enumerate(self.instances):
            values = messages.values[sub == j]
            bad = unsendable_values(protocol, values)
            if np.any(bad):
                raise checks.invalid("view", owner, f"values its instance {j} can send", int(values[bad][0]))
        return messages

    def sub_domain_estimates(self, view: SparseMessageHistogram | MessageBatch | NoisySums) -> np.ndarray:
        """``S_j`` per column and sub-domain, each by its own instance's analyzer: shape ``(k, log2 U + 1)``."""
        if isinstance(view, NoisySums):
            if view.totals.ndim != 2 or view.totals.shape[1] != self.n_sub_domains:
                raise checks.invalid(
                    "view", type(self).__name__, f"NoisySums of shape (k, {self.n_sub_domains})", view.totals.shape
                )
            return np.stack([decode_total(p, view.totals[:, j]) for j, p in enumerate(self.instances)], axis=1)
        sparse = self.view(view)
        n_columns = sparse.n_instances // self.n_sub_domains
        sub = sparse.instances % self.n_sub_domains
        estimates = np.zeros((n_columns, self.n_sub_domains))
        for j, protocol in enumerate(self.instances):
            mine = sub == j
            local = sparse.instances[mine] // self.n_sub_domains
            estimates[:, j] = instance_estimates(protocol, local, sparse.values[mine], sparse.counts[mine], n_columns)
        return estimates
