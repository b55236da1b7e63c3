"""Black-box privacy auditing: a statistical lower bound on a mechanism's privacy loss.

The auditor runs a mechanism many times on two neighbouring datasets, chooses an output event
``T`` on a training half of the runs (the outputs whose empirical likelihood ratio is highest,
in the manner of DP-Sniper), and on a fresh testing half bounds ``Pr[M(X) in T]`` from below and
``Pr[M(X') in T]`` from above with Clopper-Pearson intervals. Then, with confidence ``1 - alpha``,

    epsilon >= log((p_low - delta) / q_high),

for any mechanism that is (epsilon, delta)-DP. A lower bound above the claimed epsilon is
evidence, at false-alarm rate ``alpha``, that the claim is false.

References:
    Bichsel, Steffen, Bogunovic & Vechev, "DP-Sniper" (IEEE S&P 2021); Jagielski, Ullman & Oprea,
    "Auditing differentially private machine learning" (NeurIPS 2020).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from privsum._random import RNGLike, as_generator
from privsum._validation import check_delta, check_integer, check_probability
from privsum.testing.stats import FALSE_ALARM_RATE

__all__ = ["AuditResult", "audit_privacy", "clopper_pearson"]


@dataclass(frozen=True)
class AuditResult:
    """Outcome of one audit.

    Attributes:
        epsilon_lower_bound: with confidence ``1 - alpha``, the mechanism's epsilon at ``delta``
            is at least this (0 when nothing could be shown).
        delta: the delta the bound is stated at.
        alpha: the false-alarm rate of the bound.
        event_size: number of distinct outputs in the chosen event.
        p_lower: Clopper-Pearson lower bound on ``Pr[M(X) in T]``.
        q_upper: Clopper-Pearson upper bound on ``Pr[M(X') in T]``.
    """

    epsilon_lower_bound: float
    delta: float
    alpha: float
    event_size: int
    p_lower: float
    q_upper: float

    def refutes(self, claimed_epsilon: float) -> bool:
        """Whether the audit shows, at confidence ``1 - alpha``, that ``claimed_epsilon`` is false."""
        return self.epsilon_lower_bound > claimed_epsilon


def clopper_pearson(successes: int, trials: int, alpha: float) -> tuple[float, float]:
    """The two-sided ``1 - alpha`` Clopper-Pearson interval for a binomial proportion.

    Examples:
        >>> low, high = clopper_pearson(50, 100, 0.05)
        >>> round(low, 3), round(high, 3)
        (0.398, 0.602)
    """
    low = 0.0 if successes == 0 else float(stats.beta.ppf(alpha / 2, successes, trials - successes + 1))
    high = 1.0 if successes == trials else float(stats.beta.isf(alpha / 2, successes + 1, trials - successes))
    return low, high


def _keys(outputs: list[Any]) -> list[Hashable]:
    return [tuple(np.ravel(o).tolist()) if isinstance(o, np.ndarray) else o for o in outputs]


def _best_event(first: list[Hashable], second: list[Hashable], delta: float) -> set[Hashable]:
    """Outputs ordered by smoothed likelihood ratio; the prefix maximising the empirical bound."""
    counts_first: dict[Hashable, int] = {}
    counts_second: dict[Hashable, int] = {}
    for key in first:
        counts_first[key] = counts_first.get(key, 0) + 1
    for key in second:
        counts_second[key] = counts_second.get(key, 0) + 1
    ranked = sorted(counts_first, key=lambda k: -(counts_first[k] + 0.5) / (counts_second.get(k, 0) + 0.5))
    best, best_score, running_p, running_q = 1, -math.inf, 0, 0
    for size, key in enumerate(ranked, 1):
        running_p += counts_first[key]
        running_q += counts_second.get(key, 0)
        p, q = running_p / len(first), (running_q + 1) / len(second)
        score = math.log(max(p - delta, 1e-300) / q) - 3.0 / math.sqrt(running_p)  # penalise tiny events
        if score > best_score:
            best, best_score = size, score
    return set(ranked[:best])


def audit_privacy(
    mechanism: Callable[[Any, np.random.Generator], Any],
    dataset: Any,
    neighbour: Any,
    *,
    n_trials: int,
    delta: float = 0.0,
    alpha: float = FALSE_ALARM_RATE,
    rng: RNGLike = None,
) -> AuditResult:
    """Lower-bound the privacy loss of ``mechanism`` between two neighbouring datasets.

    Args:
        mechanism: ``mechanism(data, rng)`` returns one output; outputs must be hashable or
            numpy arrays (compared exactly), e.g. the analyzer's message counts.
        dataset: the first dataset ``X``.
        neighbour: its neighbour ``X'``.
        n_trials: runs per dataset; half choose the event, half test it.
        delta: the delta the bound is stated at.
        alpha: false-alarm rate of the returned bound.
        rng: randomness for the runs.

    Both directions are audited (``X`` vs ``X'`` and ``X'`` vs ``X``); the larger bound is returned.

    Examples:
        >>> def coin(bit, rng):
        ...     return int(bit) ^ int(rng.random() < 0.25)  # log(3)-LDP randomized response
        >>> result = audit_privacy(coin, 0, 1, n_trials=20_000, alpha=1e-3, rng=0)
        >>> 0.9 < result.epsilon_lower_bound <= math.log(3)
        True
    """
    owner = "audit_privacy"
    n_trials = check_integer(n_trials, "n_trials", owner, low=20)
    delta = check_delta(delta, owner)
    alpha = check_probability(alpha, "alpha", owner, allow_zero=False)
    generator = as_generator(rng, owner)
    half = n_trials // 2
    runs_first = _keys([mechanism(dataset, generator) for _ in range(n_trials)])
    runs_second = _keys([mechanism(neighbour, generator) for _ in range(n_trials)])
    results = [
        _audit_direction(runs_first, runs_second, half, delta, alpha / 2),
        _audit_direction(runs_second, runs_first, half, delta, alpha / 2),
    ]
    return max(results, key=lambda r: r.epsilon_lower_bound)


def _audit_direction(first: list[Hashable], second: list[Hashable], half: int, delta: float, alpha: float) -> AuditResult:
    event = _best_event(first[:half], second[:half], delta)
    tests_first, tests_second = first[half:], second[half:]
    hits_first = sum(key in event for key in tests_first)
    hits_second = sum(key in event for key in tests_second)
    p_lower, _ = clopper_pearson(hits_first, len(tests_first), alpha)
    _, q_upper = clopper_pearson(hits_second, len(tests_second), alpha)
    bound = math.log((p_lower - delta) / q_upper) if p_lower > delta and q_upper > 0 else 0.0
    return AuditResult(max(bound, 0.0), delta, 2 * alpha, len(event), p_lower, q_upper)
