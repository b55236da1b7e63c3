"""The clipped sums' threshold rule: a threshold per part from its instance's noise, and the last part that clears it.

Every clipped sum of Dong et al. (CCS 2024) cuts its data into parts (sub-domains of the value,
sparsity levels of a vector) and keeps the parts up to the last one whose noisy estimate clears
a threshold. An empty part's estimate is exactly its instance's noise (``scale DLap(a)``; BBGN20
adds its wrap-around chance), so a threshold from that noise's one-sided tail at ``beta / parts``
lets an empty part pass with probability at most that, and the rule overshoots with probability
at most ``beta`` (union bound).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privsum._validation import invalid
from privsum.clipping.instances import InstanceProtocol, noise_ratio, noise_scale, upper_tail_threshold, wrap_probability

__all__ = ["empty_pass_probabilities", "last_passing", "level_thresholds", "sub_domain_thresholds", "tail_threshold"]


def tail_threshold(protocol: InstanceProtocol, probability: float) -> float:
    """``scale t``, ``t`` the least integer with ``P(DLap(a) >= t) <= probability`` for the instance's noise ``DLap(a)``."""
    return noise_scale(protocol) * upper_tail_threshold(noise_ratio(protocol), probability)


def sub_domain_thresholds(instances: tuple[InstanceProtocol, ...], failure_probability: float, owner: str) -> np.ndarray:
    """``T_j`` per sub-domain: an empty sub-domain reaches it with probability at most ``beta / (log2 U + 1)``.

    Raises:
        InvalidParameterError: ``beta / (log2 U + 1)`` not above a BBGN20 instance's wrap-around chance.
    """
    share = failure_probability / len(instances)
    result = []
    for protocol in instances:
        budget = share - wrap_probability(protocol)
        if not budget > 0:
            raise invalid("failure_probability", owner, "larger than the instances' wrap-around chance", share)
        result.append(tail_threshold(protocol, budget))
    return np.array(result, dtype=float)


def empty_pass_probabilities(instances: tuple[InstanceProtocol, ...], thresholds: np.ndarray) -> np.ndarray:
    """Exact chance that an empty sub-domain's estimate reaches its threshold (GKMPS21), or a bound (BBGN20)."""
    result = []
    for protocol, threshold in zip(instances, thresholds, strict=True):
        ratio, t = noise_ratio(protocol), round(threshold / noise_scale(protocol))
        result.append(ratio**t / (1 + ratio) + wrap_probability(protocol))
    return np.array(result)


def level_thresholds(
    count: InstanceProtocol, levels: tuple[InstanceProtocol, ...], failure_probability: float, dimension: int
) -> np.ndarray:
    """``T_j`` per sparsity level (users): the larger of the count noise's tail and the level's coordinate-noise bound.

    Each at ``beta / (L + 1)``: an empty level's count passes with at most that chance, and with
    at least that chance none of the level's ``d`` coordinate noises exceeds the bound (two-sided
    tail ``2 a^t / (1 + a)`` per coordinate).
    """
    share = failure_probability / len(levels)
    count_tail = tail_threshold(count, share - wrap_probability(count))
    return np.array([max(count_tail, tail_threshold(p, share / (2 * dimension))) for p in levels], dtype=float)


def last_passing(estimates: Any, thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``estimates`` ``(k, parts)``: which parts clear their thresholds, and the last that does (``0`` if none)."""
    passed = estimates >= thresholds[None, :]
    last = passed.shape[1] - 1 - np.argmax(passed[:, ::-1], axis=1)
    return passed, np.where(passed.any(axis=1), last, 0)
