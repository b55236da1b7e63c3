"""3NB's tight calibration: the noise ratio for the paper's flooding, and the communication-flooding search.

`~privsum.bitsum.noise.ThreeNBBitSum.from_privacy` takes its parameters from `calibrated_parameters`
(cached: a function of public parameters only). With ``flooding="communication"`` the search
(`communication_flooding`) looks for the flooding with the fewest expected messages whose noise
keeps the variance within a factor of the paper calibration's, each candidate checked against the
exact two-count profile (`privsum.bitsum.exact.signed_count_delta`).

References:
    Wagner, "Learning from End User Data with Shuffled Differential Privacy over Kernel
    Densities", ICLR 2025.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from privsum._validation import invalid
from privsum.accounting.calibration import bisect_last, calibrate
from privsum.bitsum.exact import signed_count_delta
from privsum.exceptions import InvalidParameterError

__all__ = ["COMMUNICATION_VARIANCE_FACTOR", "calibrated_parameters", "communication_flooding", "exact_or_refused", "tail_for"]

# flooding="communication": the default variance allowed above the "paper" flooding's tight calibration.
COMMUNICATION_VARIANCE_FACTOR = 1.1
# Tight 3NB calibration stops once the exact delta is within this fraction below the target
# (the variance is then within about 1e-4 of the least; see the calibration tests).
_CALIBRATION_DELTA_RTOL = 1e-2

# Flooding shapes r' tried, and the bisection's resolution on log(1 - p').
_FLOODING_SHAPES = (8.0, 12.0, 16.0, 24.0, 32.0, 48.0, 64.0)
_FLOODING_LOG_TOLERANCE = 0.01

# Steps of the search on log(1/p) from the variance bound towards the "paper" calibration's noise.
_NOISE_STEPS = 4


def exact_or_refused(owner: str, epsilon: float, compute: Callable[[], Any]) -> Any:
    """``compute()``, with the exact profile's work bound refused as too small an ``epsilon`` of ``owner``."""
    try:
        return compute()
    except InvalidParameterError:
        expected = "large enough for an exact two-count profile (its flooding pmf grows like 1/epsilon)"
        raise invalid("epsilon", owner, expected, epsilon) from None


@functools.lru_cache(maxsize=256)
def calibrated_parameters(
    owner: str, epsilon: float, delta: float, calibration: str, variance_factor: float | None
) -> tuple[float, float, float]:
    """``(p, r', p')`` of `ThreeNBBitSum.from_privacy` (``variance_factor=None``: the paper's flooding).

    A function of public parameters only (not of ``n_users``), cached: a classifier calibrates the
    same per-instance target once per class size.
    """
    flooding_shape = 3.0 * (1.0 + math.log(1.0 / delta))
    flooding_ratio = math.exp(-0.04 * epsilon)
    tail = tail_for(delta)
    if calibration == "analytic":
        return math.exp(-0.8 * epsilon), flooding_shape, flooding_ratio

    def delta_at(noise_ratio: float) -> float:  # the profile's delta at epsilon, in one pass
        return exact_or_refused(
            owner, epsilon, lambda: signed_count_delta(noise_ratio, flooding_shape, flooding_ratio, epsilon, tail_mass=tail)
        )

    share = calibrate(
        lambda share: delta_at(math.exp(-share * epsilon)),
        target_delta=delta,
        lower=0.5,
        upper=1.0,
        more_private="decreasing",
        tolerance=1e-5,
        caller=(owner, "delta", delta),
        method="illinois",
        delta_rtol=_CALIBRATION_DELTA_RTOL,
    )
    noise_ratio = math.exp(-share * epsilon)
    if variance_factor is None:
        return noise_ratio, flooding_shape, flooding_ratio
    return communication_flooding(epsilon, delta, noise_ratio, (flooding_shape, flooding_ratio), tail, variance_factor)


def _flooding_mean(shape: float, ratio: float) -> float:
    return shape * ratio / (1.0 - ratio)


def communication_flooding(
    epsilon: float,
    delta: float,
    paper_noise_ratio: float,
    paper_flooding: tuple[float, float],
    tail: float,
    factor: float = COMMUNICATION_VARIANCE_FACTOR,
) -> tuple[float, float, float]:
    """``(p, r', p')`` with the least summed noise and flooding means, variance at most ``factor`` times the paper's.

    The expected messages per user are ``1 + 2 (p/(1-p) + r' p'/(1-p'))/n``, so the calibration
    minimises ``p/(1-p) + r' p'/(1-p')`` (``n`` cancels). The most noise the variance bound
    allows, ``p_max``, solves ``2p/(1-p)^2 = factor * 2 p0/(1-p0)^2`` (closed form). More noise
    leaves more slack ``epsilon - log(1/p)`` for the flooding, but sends more noise messages, so
    ``log(1/p)`` is searched on ``_NOISE_STEPS + 1`` evenly spaced points from ``log(1/p_max)``
    towards the paper's ``log(1/p0)``, stopping at the first that does not lower the sum (at small
    ``epsilon`` the bound itself wins). For each ``p`` and each ``r'`` on a grid, the least ``p'``
    meeting the target is found by bisection on ``log(1 - p')`` (the result of each bisection is a
    point whose exact delta was evaluated and met the target; the bisection's questions are
    answered from few evaluations, see `_least_flooding`); the cheapest wins. The paper's
    parameters (with ``p0``) are kept if cheaper. The tests compare the result with a coarse
    exhaustive grid over ``(p, r', p')``, and with the same search evaluating every question.
    """
    variance = factor * 2.0 * paper_noise_ratio / (1.0 - paper_noise_ratio) ** 2
    most_noise = (variance + 1.0 - math.sqrt(2.0 * variance + 1.0)) / variance
    most_noise = max(paper_noise_ratio, min(most_noise, math.nextafter(1.0, 0.0)))
    best = (paper_noise_ratio, *paper_flooding)
    best_mean = _flooding_mean(1.0, paper_noise_ratio) + _flooding_mean(*paper_flooding)
    low_noise, high_noise = -math.log(most_noise), -math.log(paper_noise_ratio)
    for step in range(_NOISE_STEPS + 1):
        noise_ratio = math.exp(-(low_noise + (high_noise - low_noise) * step / _NOISE_STEPS))
        found, found_mean = _least_flooding(noise_ratio, epsilon, delta, tail, best_mean)
        if found is None:
            break  # less noise needs more flooding: the sum has passed its minimum
        best, best_mean = found, found_mean
        if high_noise - low_noise < 1e-12:
            break
    return best


def _least_flooding(
    noise_ratio: float, epsilon: float, delta: float, tail: float, best_mean: float
) -> tuple[tuple[float, float, float] | None, float]:
    """The least ``p/(1-p) + r' p'/(1-p')`` at this ``p``, if below ``best_mean``.

    ``r'`` runs over ``_FLOODING_SHAPES`` (stopping two shapes past the best), then the
    geometric midpoints on each side of the best shape are tried. For each ``r'`` a bisection on
    ``log(1 - p')`` finds the largest value (within ``_FLOODING_LOG_TOLERANCE``) that meets the
    target or cannot beat the best; its questions are answered by `_Feasibility`, which evaluates
    the exact delta only where monotonicity does not already decide them, so the bisection ends
    where it would with an evaluation at every step. The winner of each shape is evaluated exactly.
    """
    noise_mean = _flooding_mean(1.0, noise_ratio)
    best: tuple[float, float, float] | None = None

    def cannot_win(shape: float, log_gap: float) -> bool:
        return noise_mean + _flooding_mean(shape, -math.expm1(log_gap)) >= best_mean  # p' = 1 - e^log_gap

    def least_gap(shape: float, previous: float | None, feasibility: _Feasibility) -> float:
        """The largest ``log(1 - p')`` found "feasible or no better than the best" (within the tolerance)."""

        def meets(log_gap: float) -> bool:
            # cannot win: treat as feasible so that the bisection moves to less flooding
            return cannot_win(shape, log_gap) or feasibility.meets(log_gap)

        low, high = math.log(1e-7), math.log(0.5)
        # one evaluation where the shape stops being able to win, unless below where the search starts
        start = 0.5 * (low + high) if previous is None else max(low, previous - 1.0)
        feasibility.evaluate_break_even(noise_mean, best_mean, start, high)
        if previous is not None:  # warm start: the solution moves little between neighbouring shapes
            low_guess, high_guess = max(low, previous - 1.0), min(high, previous + 1.0)
            if meets(low_guess):
                low = low_guess
                if not meets(high_guess):
                    high = high_guess
                else:
                    low = high_guess
        if meets(high):
            return high
        return bisect_last(meets, low, high, tolerance=_FLOODING_LOG_TOLERANCE)

    def consider(shape: float, log_gap: float, feasibility: _Feasibility) -> bool:
        nonlocal best, best_mean
        ratio = -math.expm1(log_gap)
        mean = noise_mean + _flooding_mean(shape, ratio)
        if mean < best_mean and feasibility.evaluated_feasible(log_gap):
            best, best_mean = (noise_ratio, shape, ratio), mean
            return True
        return False

    def search(shape: float, previous: float | None) -> tuple[float, bool]:
        feasibility = _Feasibility(shape, noise_ratio, epsilon, delta, tail)
        gap = least_gap(shape, previous, feasibility)
        return gap, consider(shape, gap, feasibility)

    gaps: dict[float, float] = {}
    previous, worse_in_a_row = None, 0
    for shape in _FLOODING_SHAPES:
        previous, improved = search(shape, previous)
        gaps[shape] = previous
        if improved:
            worse_in_a_row = 0
        else:
            worse_in_a_row += 1
            if worse_in_a_row == 2 and best is not None:
                break  # the mean has passed its minimum over the grid
    if best is not None:
        centre = best[1]
        index = _FLOODING_SHAPES.index(centre)
        for neighbour in _FLOODING_SHAPES[max(0, index - 1) : index + 2]:
            if neighbour != centre and neighbour in gaps:
                search(math.sqrt(centre * neighbour), gaps[centre])
    return best, best_mean


class _Feasibility:
    """Whether the exact delta at ``(p, r', log(1 - p'))`` meets the target, as ``log(1 - p')`` varies.

    The delta grows with ``log(1 - p')`` (less flooding), so an evaluation at ``g`` that meets the
    target decides every point below ``g`` and one that misses decides every point above. A
    question not yet decided is answered by probing first near the root that the secant through
    the nearest evaluated points predicts (on the question's side of it, so that one evaluation
    usually decides the question and narrows the bracket), and by evaluating the point itself after
    two probes that do not decide it. The answers are those of an evaluation at every question.
    """

    _PROBES = 2
    _PROBE_REACH = 0.9  # probe this fraction of the way from the question to the predicted root

    def __init__(self, shape: float, noise_ratio: float, epsilon: float, delta: float, tail: float) -> None:
        self.shape, self.noise_ratio, self.epsilon, self.delta, self.tail = shape, noise_ratio, epsilon, delta, tail
        self.feasible, self.feasible_gap = -math.inf, math.nan  # largest point meeting the target, log(delta/target)
        self.infeasible, self.infeasible_gap = math.inf, math.nan  # smallest point missing it
        self.evaluated: dict[float, bool] = {}

    def evaluate(self, log_gap: float) -> bool:
        """The exact check at ``log_gap`` (one pass, `signed_count_delta`); a work-bound refusal misses."""
        if log_gap in self.evaluated:
            return self.evaluated[log_gap]
        try:
            exact = signed_count_delta(self.noise_ratio, self.shape, -math.expm1(log_gap), self.epsilon, tail_mass=self.tail)
        except InvalidParameterError:
            exact = math.inf
        met = bool(exact <= self.delta)
        self.evaluated[log_gap] = met
        excess = math.log(max(exact, 1e-300) / self.delta) if math.isfinite(exact) else math.nan
        if met and log_gap > self.feasible:
            self.feasible, self.feasible_gap = log_gap, excess
        elif not met and log_gap < self.infeasible:
            self.infeasible, self.infeasible_gap = log_gap, excess
        return met

    def evaluated_feasible(self, log_gap: float) -> bool:
        """Whether ``log_gap`` meets the target by its own exact evaluation (never by inference)."""
        return self.evaluate(log_gap)

    def evaluate_break_even(self, noise_mean: float, best_mean: float, low: float, high: float) -> None:
        """Evaluate where ``p/(1-p) + r' p'/(1-p')`` equals ``best_mean`` (points below cannot win), if in ``(low, high)``.

        If it misses the target, no point of this shape can win and the search needs no other
        evaluation. Points far below the root are costly (the flooding pmf grows like ``1/(1-p')``),
        hence the window.
        """
        excess = (best_mean - noise_mean) / self.shape  # p'/(1-p') there, so 1 - p' = 1/(1 + excess)
        if excess > 0.0 and math.isfinite(excess):
            break_even = -math.log1p(excess)
            if low < break_even < high:
                self.evaluate(break_even)

    def meets(self, log_gap: float) -> bool:
        for _ in range(self._PROBES):
            if log_gap <= self.feasible:
                return True
            if log_gap >= self.infeasible:
                return False
            probe = self._probe(log_gap)
            if probe is None:
                break
            self.evaluate(probe)
        if log_gap <= self.feasible:
            return True
        if log_gap >= self.infeasible:
            return False
        return self.evaluate(log_gap)

    def _probe(self, log_gap: float) -> float | None:
        """A point between ``log_gap`` and the secant's root, or ``None`` without a bracket of finite values."""
        low, high = self.feasible_gap, self.infeasible_gap
        if not (math.isfinite(self.feasible) and math.isfinite(self.infeasible) and low <= 0.0 < high):
            return None
        root = self.feasible + (self.infeasible - self.feasible) * (-low / (high - low))
        probe = log_gap + self._PROBE_REACH * (root - log_gap)
        return probe if self.feasible < probe < self.infeasible else None


def tail_for(delta: float) -> float:
    return min(1e-15, 1e-6 * delta)
