"""Per-sender message caps for randomizers that send a random number of messages.

The tails and the quantile search are `privsum.shuffle.robustness`'s (`count_tail`,
`count_tails`, `chernoff_tail`, `negative_binomial_excess`); `noise_cap` states the cap over many
instances as a `~privsum.shuffle.protocol.SenderCap`.
"""

from __future__ import annotations

from collections.abc import Sequence

from privsum._validation import check_real, invalid
from privsum.shuffle.protocol import SenderCap
from privsum.shuffle.robustness import chernoff_tail, count_tail, count_tails, negative_binomial_excess

__all__ = ["chernoff_tail", "count_tail", "count_tails", "noise_cap"]

# Caps beyond this many messages per instance are refused (the randomizer is too heavy-tailed to deploy).
_LARGEST_CAP = 1 << 24


def noise_cap(
    n_instances: int, exceed_probability: float, parts: Sequence[tuple[float, float, int]], owner: str
) -> SenderCap:
    """The cap of a user sending at most one data message plus ``sum_k m_k NB(parts_k)`` noise messages per instance.

    The least ``c`` whose probability of being exceeded in any of ``n_instances`` instances (a
    union bound over instances) is at most ``exceed_probability``: the noise exceeds ``c - 1``
    with probability at most ``exceed_probability / n_instances`` in one instance
    (`~privsum.shuffle.robustness.negative_binomial_excess`: exact tails up to
    `~privsum.shuffle.robustness.EXACT_CAP_LIMIT` messages, the Chernoff bound beyond, so there the
    cap may be a little larger than the least). The reported probability is an upper bound either way.
    """
    target = check_real(exceed_probability, "exceed_probability", owner, low=0.0, high=1.0, low_open=True)
    excess, tail = negative_binomial_excess(parts, target / n_instances)
    cap = excess + 1  # one message is the data
    if cap > _LARGEST_CAP:
        raise invalid("exceed_probability", owner, f"reachable with at most {_LARGEST_CAP} messages per instance", target)
    return SenderCap(cap, cap * n_instances, min(1.0, n_instances * tail))
