"""3NB fast paths: the communication-flooding search and shared calibrations.

The communication-flooding search answers its questions from fewer exact evaluations, with the same result.

The reference below is the search as it was before `_Feasibility`: every bisection question
evaluates the exact delta. The current search must return the identical parameters (its answers
are those of an evaluation at every question, by the monotonicity of delta in ``log(1 - p')``).
"""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privsum import InvalidParameterError
from privsum.bitsum import ThreeNBBitSum
from privsum.bitsum import _3nb_calibration as noise
from privsum.bitsum._3nb_calibration import (
    _FLOODING_LOG_TOLERANCE,
    _FLOODING_SHAPES,
    _NOISE_STEPS,
    _flooding_mean,
    calibrated_parameters,
    communication_flooding,
    tail_for,
)
from privsum.bitsum.exact import signed_count_delta, signed_count_profile_grid


class _Counter:
    def __init__(self) -> None:
        self.evaluations = 0

    def delta(self, *args, **kwargs):
        self.evaluations += 1
        return signed_count_delta(*args, **kwargs)


def _reference_search(epsilon, delta, paper_noise_ratio, paper_flooding, tail, factor, counter):
    """The previous `communication_flooding`: bisection with an exact evaluation at every question."""

    def checked(shape, log_gap, noise_ratio):
        try:
            exact = counter.delta(noise_ratio, shape, -math.expm1(log_gap), epsilon, tail_mass=tail)
        except InvalidParameterError:
            return False
        return bool(exact <= delta)

    def least_flooding(noise_ratio, best_mean):
        noise_mean = _flooding_mean(1.0, noise_ratio)
        best = None

        def meets(shape, log_gap):
            if noise_mean + _flooding_mean(shape, -math.expm1(log_gap)) >= best_mean:
                return True
            return checked(shape, log_gap, noise_ratio)

        def least_gap(shape, previous):
            low, high = math.log(1e-7), math.log(0.5)
            if previous is not None:
                low_guess, high_guess = max(low, previous - 1.0), min(high, previous + 1.0)
                if meets(shape, low_guess):
                    low = low_guess
                    if not meets(shape, high_guess):
                        high = high_guess
                    else:
                        low = high_guess
            if meets(shape, high):
                return high
            while high - low > _FLOODING_LOG_TOLERANCE:
                middle = 0.5 * (low + high)
                if meets(shape, middle):
                    low = middle
                else:
                    high = middle
            return low

        def consider(shape, log_gap):
            nonlocal best, best_mean
            ratio = -math.expm1(log_gap)
            mean = noise_mean + _flooding_mean(shape, ratio)
            if mean < best_mean and checked(shape, log_gap, noise_ratio):
                best, best_mean = (noise_ratio, shape, ratio), mean
                return True
            return False

        gaps = {}
        previous, worse_in_a_row = None, 0
        for shape in _FLOODING_SHAPES:
            previous = gaps[shape] = least_gap(shape, previous)
            if consider(shape, previous):
                worse_in_a_row = 0
            else:
                worse_in_a_row += 1
                if worse_in_a_row == 2 and best is not None:
                    break
        if best is not None:
            centre = best[1]
            index = _FLOODING_SHAPES.index(centre)
            for neighbour in _FLOODING_SHAPES[max(0, index - 1) : index + 2]:
                if neighbour != centre and neighbour in gaps:
                    shape = math.sqrt(centre * neighbour)
                    consider(shape, least_gap(shape, gaps[centre]))
        return best, best_mean

    variance = factor * 2.0 * paper_noise_ratio / (1.0 - paper_noise_ratio) ** 2
    most_noise = (variance + 1.0 - math.sqrt(2.0 * variance + 1.0)) / variance
    most_noise = max(paper_noise_ratio, min(most_noise, math.nextafter(1.0, 0.0)))
    best = (paper_noise_ratio, *paper_flooding)
    best_mean = _flooding_mean(1.0, paper_noise_ratio) + _flooding_mean(*paper_flooding)
    low_noise, high_noise = -math.log(most_noise), -math.log(paper_noise_ratio)
    for step in range(_NOISE_STEPS + 1):
        noise_ratio = math.exp(-(low_noise + (high_noise - low_noise) * step / _NOISE_STEPS))
        found, found_mean = least_flooding(noise_ratio, best_mean)
        if found is None:
            break
        best, best_mean = found, found_mean
        if high_noise - low_noise < 1e-12:
            break
    return best


def _both_searches(epsilon, delta, factor, monkeypatch):
    owner = "ThreeNBBitSum"
    paper_noise_ratio, paper_shape, paper_ratio = calibrated_parameters(owner, epsilon, delta, "tight", None)
    tail = tail_for(delta)
    reference_counter, counter = _Counter(), _Counter()
    reference = _reference_search(epsilon, delta, paper_noise_ratio, (paper_shape, paper_ratio), tail, factor, reference_counter)
    monkeypatch.setattr(noise, "signed_count_delta", counter.delta)
    current = communication_flooding(epsilon, delta, paper_noise_ratio, (paper_shape, paper_ratio), tail, factor)
    monkeypatch.undo()
    return reference, current, reference_counter.evaluations, counter.evaluations


# The demo's per-instance targets (classifier, epsilon 1, 3, 8 and both kernels; delta 1e-6 / 768),
# the default factor, and a large factor at epsilon 2 (an interior noise ratio wins).
SETTINGS = [
    (0.011549266359491307, 1.3020833333333332e-09, 4.0),
    (0.02360302634327495, 1.3020833333333332e-09, 4.0),
    (0.07643467378087608, 1.3020833333333332e-09, 4.0),
    (0.16128114583879982, 1.3020833333333332e-09, 4.0),
    (1.0, 1e-6, 1.1),
    (2.0, 1e-5, 16.0),
]


@pytest.mark.parametrize(("epsilon", "delta", "factor"), SETTINGS)
def test_search_returns_the_reference_parameters_with_fewer_evaluations(epsilon, delta, factor, monkeypatch):
    reference, current, reference_evaluations, evaluations = _both_searches(epsilon, delta, factor, monkeypatch)
    assert current == reference
    assert evaluations < 0.6 * reference_evaluations


@settings(max_examples=25, deadline=None)
@given(epsilon=st.floats(0.01, 2.0), log_delta=st.floats(-10, -4), factor=st.floats(1.0, 16.0))
def test_search_equals_the_reference_anywhere(epsilon, log_delta, factor):
    with pytest.MonkeyPatch.context() as monkeypatch:
        reference, current, reference_evaluations, evaluations = _both_searches(epsilon, 10.0**log_delta, factor, monkeypatch)
    assert current == reference
    assert evaluations <= reference_evaluations


def test_calibrated_parameters_are_shared_across_user_counts_and_backed_by_the_exact_grid():
    calibrated_parameters.cache_clear()
    options = {"epsilon": 0.5, "delta": 1e-7, "flooding": "communication", "variance_factor": 4.0}
    first = ThreeNBBitSum.from_privacy(n_users=1000, **options)
    second = ThreeNBBitSum.from_privacy(n_users=2200, **options)
    assert calibrated_parameters.cache_info().hits == 1
    assert (first.noise_ratio, first.flooding_shape, first.flooding_ratio) == (
        second.noise_ratio,
        second.flooding_shape,
        second.flooding_ratio,
    )
    assert second.n_users == 2200 and second.event.guarantee == first.event.guarantee
    grid = signed_count_profile_grid(1.0, second.noise_ratio, second.flooding_shape, second.flooding_ratio, tail_mass=1e-16)
    assert grid.delta(0.5) <= 1e-7 * (1 + 1e-9)
