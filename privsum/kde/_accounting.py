"""The shuffled-DP KDE's accounting: its bit sum's event composed over the touched instances.

`~privsum.kde.protocol.ShuffledKDE` takes its `event`, `guarantee` and their versions for fewer
participants from `ComposedInstancesAccounting`: ``"tight"`` composes ``I * min(Q, 2S)`` bit-sum
events by PLD (`privsum.accounting.budget.composed_guarantee`), ``"seed"`` by Theorem 3.2 of
Wagner (ICLR 2025) (advanced composition; pure composition for a pure bit sum).

References:
    Wagner, "Learning from End User Data with Shuffled Differential Privacy over Kernel
    Densities", ICLR 2025.
"""

from __future__ import annotations

import functools
import math

from privsum._delegation import delegated
from privsum._validation import check_integer, invalid
from privsum.accounting.budget import composed_guarantee
from privsum.accounting.cache import cached_calibration
from privsum.accounting.events import ComposedEvent, PrivacyEvent
from privsum.accounting.guarantee import PrivacyGuarantee
from privsum.bitsum.base import BitSumProtocol
from privsum.kde.calibration import touched_per_repetition
from privsum.kde.theory import seed_composition_epsilon
from privsum.lsq.base import LSQFamily

__all__ = ["ComposedInstancesAccounting", "guarantee_of_event"]


class ComposedInstancesAccounting:
    """The guarantee of a KDE whose ``bitsum`` runs once on each of ``touched_instances`` instances a user can change.

    For a frozen dataclass with the fields ``family``, ``bitsum``, ``accounting`` and ``delta``.
    """

    family: LSQFamily
    bitsum: BitSumProtocol
    accounting: str
    delta: float

    n_users = delegated("bitsum.n_users", "Users the bit sums are calibrated for.")

    @property
    def touched_per_repetition(self) -> int:
        """Instances per repetition whose input a replace-one change can alter: ``min(Q, 2S)``."""
        return touched_per_repetition(self.family)

    @property
    def touched_instances(self) -> int:
        """``I * min(Q, 2S)``: the bit-sum events one user's change composes."""
        return self.family.n_repetitions * self.touched_per_repetition

    @property
    def event(self) -> PrivacyEvent:
        """The ``I * min(Q, 2S)`` touched instances as one composed event (for an accountant)."""
        return ComposedEvent(self.bitsum.event, self.touched_instances)

    @functools.cached_property
    def guarantee(self) -> PrivacyGuarantee:
        """The overall guarantee by the configured accounting, with its neighbouring relation.

        ``"tight"``: ``epsilon`` at ``delta`` of the PLD composition (basic composition when
        ``delta = 0``); ``"seed"``: Theorem 3.2. No privacy (an infinite per-instance epsilon)
        gives ``epsilon = inf``. Cached by its parameters (`~privsum.accounting.cache`), so KDEs
        sharing a calibrated bit sum, accounting and number of touched instances share it.
        """
        return cached_calibration(_kde_guarantee, self.bitsum, None, *self._accounting_parameters())

    def event_for_participants(self, n_participants: int) -> PrivacyEvent:
        """The touched instances' events when ``n_participants`` users take part, composed (for an accountant)."""
        n_participants = check_integer(n_participants, "n_participants", "ShuffledKDE", low=1)
        return ComposedEvent(self.bitsum.event_for_participants(n_participants), self.touched_instances)

    def guarantee_for_participants(self, n_participants: int) -> PrivacyGuarantee:
        """The overall guarantee actually achieved when ``n_participants`` users take part.

        `guarantee` for ``n_users`` or more; fewer: the same accounting over the bit sum's
        `~privsum.bitsum.BitSumProtocol.event_for_participants` (computed for the smaller crowd).
        """
        n_participants = check_integer(n_participants, "n_participants", "ShuffledKDE", low=1)
        if n_participants >= self.n_users:
            return self.guarantee
        return cached_calibration(_kde_guarantee, self.bitsum, n_participants, *self._accounting_parameters())

    def _accounting_parameters(self) -> tuple[int, int, str, float]:
        """Everything besides the bit sum that the guarantee depends on (the cache key)."""
        return self.touched_per_repetition, self.family.n_repetitions, self.accounting, self.delta

    def _guarantee_of(self, instance_event: PrivacyEvent) -> PrivacyGuarantee:
        return guarantee_of_event(instance_event, *self._accounting_parameters())


def _kde_guarantee(
    bitsum: BitSumProtocol, n_participants: int | None, touched: int, repetitions: int, accounting: str, delta: float
) -> PrivacyGuarantee:
    """The KDE's guarantee from its bit sum (for ``n_participants``, or its own ``n_users`` when ``None``)."""
    event = bitsum.event if n_participants is None else bitsum.event_for_participants(n_participants)
    return guarantee_of_event(event, touched, repetitions, accounting, delta)


def guarantee_of_event(
    instance_event: PrivacyEvent, touched: int, repetitions: int, accounting: str, delta: float
) -> PrivacyGuarantee:
    instance = instance_event.guarantee
    if not instance.is_finite:
        return PrivacyGuarantee(math.inf, 0.0, instance.neighbouring)
    if accounting == "seed":
        return _seed_guarantee(instance, touched, repetitions, delta)
    event = ComposedEvent(instance_event, repetitions * touched)
    if delta == 0.0:
        return event.guarantee
    return composed_guarantee(event, delta)


def _seed_guarantee(instance: PrivacyGuarantee, touched: int, repetitions: int, delta: float) -> PrivacyGuarantee:
    if instance.is_pure:
        return PrivacyGuarantee(instance.epsilon * touched * repetitions, 0.0, instance.neighbouring)
    if delta == 0.0:
        raise invalid("delta", "ShuffledKDE", "positive for seed accounting of an approximate-DP bit sum", delta)
    slack = delta / 2
    epsilon = seed_composition_epsilon(instance.epsilon, touched, repetitions, slack)
    total_delta = repetitions * touched * instance.delta + slack
    if not total_delta < 1.0:
        raise invalid("delta", "ShuffledKDE", "large enough to cover the instances' deltas", delta)
    return PrivacyGuarantee(epsilon, total_delta, instance.neighbouring)
