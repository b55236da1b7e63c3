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
from privsum._validation import check_delta, check_integer, check_probability, invalid
from privsum.testing.stats import FALSE_ALARM_RATE

__all__ = ["AuditResult", "audit_privacy", "audit_samples", "clopper_pearson"]


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
    owner = "clopper_pearson"
    trials = check_integer(trials, "trials", owner, low=1)
    successes = check_integer(successes, "successes", owner, low=0, high=trials)
    alpha = check_probability(alpha, "alpha", owner, allow_zero=False)
    low = 0.0 if successes == 0 else float(stats.beta.ppf(alpha / 2, successes, trials - successes + 1))
    high = 1.0 if successes == trials else float(stats.beta.isf(alpha / 2, successes + 1, trials - successes))
    return low, high


def _keys(outputs: Any, name: str, owner: str) -> list[Hashable]:
    """Hashable keys: the rows of an array, or each output (arrays flattened to tuples); NaN refused.

    Outputs are compared exactly, so an output holding NaN (never equal to itself) or an
    unhashable output cannot be counted: refused rather than counted as a new output each time.
    """
    if isinstance(outputs, np.ndarray):
        if outputs.ndim == 0:
            raise invalid(name, owner, "a sequence of outputs (an array with at least one axis)", "a 0-D array")
        keys = outputs.tolist() if outputs.ndim == 1 else [tuple(row) for row in outputs.reshape(outputs.shape[0], -1).tolist()]
    elif isinstance(outputs, (str, bytes)) or not hasattr(outputs, "__iter__"):
        raise invalid(name, owner, "a sequence of outputs", type(outputs).__name__)
    else:
        keys = [tuple(np.ravel(o).tolist()) if isinstance(o, np.ndarray) else o for o in outputs]
    for key in keys:
        try:
            hash(key)
        except TypeError:
            raise invalid(name, owner, "hashable outputs or numpy arrays", type(key).__name__) from None
        if key != key or (isinstance(key, tuple) and any(part != part for part in key)):
            raise invalid(name, owner, "outputs without NaN (outputs are compared exactly)", key)
    return keys


def _best_event(first: list[Hashable], second: list[Hashable], delta: float, alpha: float) -> set[Hashable]:
    """Outputs ordered by smoothed likelihood ratio; the prefix whose bound would be best on these counts.

    Each prefix is scored by the bound the testing half would give if it saw the same counts
    (Clopper-Pearson at ``alpha``), so a tiny event with a large empirical ratio but no
    statistical weight is not chosen over a large event with a slightly smaller ratio.
    """
    counts_first: dict[Hashable, int] = {}
    counts_second: dict[Hashable, int] = {}
    for key in first:
        counts_first[key] = counts_first.get(key, 0) + 1
    for key in second:
        counts_second[key] = counts_second.get(key, 0) + 1
    ranked = sorted(counts_first, key=lambda k: -(counts_first[k] + 0.5) / (counts_second.get(k, 0) + 0.5))
    hits_first = np.cumsum([counts_first[key] for key in ranked])
    hits_second = np.cumsum([counts_second.get(key, 0) for key in ranked])
    n_first, n_second = len(first), len(second)
    p_lower = stats.beta.ppf(alpha / 2, hits_first, n_first - hits_first + 1)
    q_upper = np.where(
        hits_second < n_second, stats.beta.isf(alpha / 2, hits_second + 1, np.maximum(n_second - hits_second, 1)), 1.0
    )
    with np.errstate(divide="ignore"):
        score = np.log(np.maximum(p_lower - delta, 0.0)) - np.log(q_upper)
    return set(ranked[: int(np.argmax(score)) + 1])


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
    if not callable(mechanism):
        raise invalid("mechanism", owner, "a callable mechanism(data, rng)", mechanism)
    n_trials = check_integer(n_trials, "n_trials", owner, low=20)
    delta = check_delta(delta, owner)
    alpha = check_probability(alpha, "alpha", owner, allow_zero=False)
    generator = as_generator(rng, owner)
    runs_first = [mechanism(dataset, generator) for _ in range(n_trials)]
    runs_second = [mechanism(neighbour, generator) for _ in range(n_trials)]
    return audit_samples(runs_first, runs_second, delta=delta, alpha=alpha, owner=owner)


def audit_samples(
    first: Any, second: Any, *, delta: float = 0.0, alpha: float = FALSE_ALARM_RATE, owner: str = "audit_samples"
) -> AuditResult:
    """Lower-bound the privacy loss from independent outputs already sampled on two neighbours.

    The statistics of `audit_privacy`, for callers that draw many runs at once (e.g. one protocol
    run over many independent instances, each instance one run). Outputs must be i.i.d. within
    each sample; the first half of each chooses the event, the second half tests it.

    Args:
        first: outputs of ``M(X)``: a sequence of hashable outputs or arrays, or an array whose
            rows (first axis) are the runs.
        second: outputs of ``M(X')``, the same length.
        delta: the delta the bound is stated at.
        alpha: false-alarm rate of the returned bound (both directions together).
        owner: the name used in error messages.

    Examples:
        >>> rng = np.random.default_rng(0)
        >>> first = rng.random(20_000) < 0.75  # RR of bit 1 and of bit 0: log(3)-DP
        >>> second = rng.random(20_000) < 0.25
        >>> result = audit_samples(first.astype(int), second.astype(int), alpha=1e-3)
        >>> 0.9 < result.epsilon_lower_bound <= math.log(3)
        True
    """
    if not isinstance(owner, str):
        raise invalid("owner", "audit_samples", "a string", owner)
    delta = check_delta(delta, owner)
    alpha = check_probability(alpha, "alpha", owner, allow_zero=False)
    runs_first, runs_second = _keys(first, "first", owner), _keys(second, "second", owner)
    if not len(runs_first) == len(runs_second) >= 20:
        raise invalid("second", owner, f"as many runs as 'first' (at least 20; it has {len(runs_first)})", len(runs_second))
    half = len(runs_first) // 2
    results = [
        _audit_direction(runs_first, runs_second, half, delta, alpha / 2),
        _audit_direction(runs_second, runs_first, half, delta, alpha / 2),
    ]
    return max(results, key=lambda r: r.epsilon_lower_bound)


def _audit_direction(first: list[Hashable], second: list[Hashable], half: int, delta: float, alpha: float) -> AuditResult:
    event = _best_event(first[:half], second[:half], delta, alpha)
    tests_first, tests_second = first[half:], second[half:]
    hits_first = sum(key in event for key in tests_first)
    hits_second = sum(key in event for key in tests_second)
    p_lower, _ = clopper_pearson(hits_first, len(tests_first), alpha)
    _, q_upper = clopper_pearson(hits_second, len(tests_second), alpha)
    bound = math.log((p_lower - delta) / q_upper) if p_lower > delta and q_upper > 0 else 0.0
    return AuditResult(max(bound, 0.0), delta, 2 * alpha, len(event), p_lower, q_upper)
