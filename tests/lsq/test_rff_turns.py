"""Random Fourier features evaluated in turns: the stated error against an extended-precision
cosine and against the radian formula ``sqrt(2) cos(w^T x + b)``, the bound, and the blocks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privsum.lsq import FastJLT, RandomFourierFeatures
from privsum.lsq.rff import FEATURE_ERROR, fourier_features_block, fourier_features_of_turns

EXTENDED = np.finfo(np.longdouble).nmant >= 63  # x87 extended precision (Linux x86-64)


@pytest.mark.skipif(not EXTENDED, reason="needs an extended-precision long double for the reference cosine")
@pytest.mark.parametrize("scale", [0.5, 30.0, 1e4, 1e9])
def test_features_of_turns_are_within_the_stated_error_of_an_extended_precision_cosine(scale):
    rng = np.random.default_rng(1)
    turns = rng.uniform(-scale, scale, (200, 700))
    phase_turns = rng.uniform(0.0, 1.0, 700)
    features = fourier_features_of_turns(turns, phase_turns, out=np.empty_like(turns))
    angle = (turns + phase_turns).astype(np.longdouble)  # s, rounded to float64 as the function rounds it
    two_pi = 8 * np.arctan(np.longdouble(1))
    reference = np.sqrt(np.longdouble(2)) * np.cos(two_pi * (angle - np.rint(angle)))
    assert np.max(np.abs(features - reference)) <= FEATURE_ERROR


def test_features_stay_within_the_bound():
    special = np.array([[0.0, 0.5, -0.5, 0.25, -0.25, 1.0, 3.0, 1e-300, 0.125, 2.0**40]])
    grid = np.linspace(-2.0, 2.0, 400_001).reshape(1, -1)
    for turns in (special, grid):
        features = fourier_features_of_turns(turns, np.zeros(turns.shape[1]), out=np.empty_like(turns))
        assert np.max(np.abs(features)) <= math.sqrt(2.0)
    features = fourier_features_of_turns(special, np.zeros(special.shape[1]), out=np.empty_like(special))
    expected = [math.sqrt(2.0), -math.sqrt(2.0), -math.sqrt(2.0), 0.0, 0.0, math.sqrt(2.0), math.sqrt(2.0)]
    np.testing.assert_allclose(features[0, :7], expected, rtol=0, atol=FEATURE_ERROR)


def test_blocks_and_aliasing_do_not_change_the_values():
    """Rows are processed in cache-sized blocks; ``out`` may be ``turns``; one block of everything gives the same values."""
    rng = np.random.default_rng(2)
    turns = rng.normal(0.0, 5.0, (1000, 90))  # about three blocks
    phase_turns = rng.uniform(0.0, 1.0, 90)
    blocked = fourier_features_of_turns(turns, phase_turns, out=np.empty_like(turns))
    whole = np.empty_like(turns)
    fourier_features_block(turns, phase_turns, whole, np.empty_like(turns), np.empty_like(turns))
    assert np.array_equal(blocked, whole)
    in_place = turns.copy()
    assert fourier_features_of_turns(in_place, phase_turns, out=in_place) is in_place
    assert np.array_equal(in_place, blocked)


@pytest.mark.parametrize("projected", [False, True])
@pytest.mark.parametrize("scale", [0.1, 1.0, 20.0])
def test_f_equals_the_radian_formula_up_to_the_float64_rounding_of_the_angle(projected, scale):
    """``f`` agrees with ``sqrt(2) cos(w^T x + b)`` (``np.cos`` in float64) to within the rounding of the two float64
    angles (each within ``(d + 3) 2^-53`` times ``|w|^T |x| + |b|``), plus ``FEATURE_ERROR`` and an ulp."""
    dimension = 96
    projection = FastJLT(input_dimension=dimension, output_dimension=32, seed=3) if projected else None
    family = RandomFourierFeatures(dimension=dimension, n_repetitions=300, bandwidth=0.8, seed=4, projection=projection)
    points = np.random.default_rng(5).standard_normal((150, dimension)) * scale
    working = points if projection is None else projection.transform(points)
    formula = math.sqrt(2.0) * np.cos(working @ family.frequencies.T + family.phases)
    features = family.f(points)[:, :, 0]
    magnitude = np.abs(working) @ np.abs(family.frequencies).T + family.phases
    tolerance = math.sqrt(2.0) * 2 * (working.shape[1] + 3) * 2.0**-53 * magnitude + FEATURE_ERROR + 2.0**-51
    assert np.all(np.abs(features - formula) <= tolerance)
    assert np.array_equal(family.g(points), family.f(points))
