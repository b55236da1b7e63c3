import math

import numpy as np
import pytest

import privsum
from privsum import InvalidParameterError
from privsum._random import as_generator
from privsum._validation import check_array, check_delta, check_epsilon, check_integer, check_probability


def test_version_and_public_names():
    assert isinstance(privsum.__version__, str) and privsum.__version__.count(".") == 2
    for name in privsum.__all__:
        assert hasattr(privsum, name)


@pytest.mark.parametrize("value", [math.nan, math.inf, -1.0, 0.0])
def test_epsilon_check(value):
    with pytest.raises(InvalidParameterError, match=r"The 'epsilon' parameter of Owner must be .* Got"):
        check_epsilon(value, "Owner")


@pytest.mark.parametrize("value", [math.nan, math.inf, -1e-12, 1.0])
def test_delta_check(value):
    with pytest.raises(InvalidParameterError, match="'delta' parameter of Owner"):
        check_delta(value, "Owner")


def test_other_checks():
    assert check_probability(0.0, "p", "Owner") == 0.0
    with pytest.raises(InvalidParameterError):
        check_probability(0.0, "p", "Owner", allow_zero=False)
    with pytest.raises(InvalidParameterError, match="'count'"):
        check_integer(2.0, "count", "Owner")
    with pytest.raises(InvalidParameterError, match="'count'"):
        check_integer(True, "count", "Owner")
    with pytest.raises(InvalidParameterError, match="'x'.*within"):
        check_array([0.5, 1.5], "x", "Owner", low=0, high=1)
    with pytest.raises(InvalidParameterError, match="'x'.*finite"):
        check_array([0.5, math.nan], "x", "Owner")
    with pytest.raises(InvalidParameterError, match="'x'.*integer-valued"):
        check_array([0.5, 1.0], "x", "Owner", integer=True)
    assert check_array([True, False], "x", "Owner").dtype == np.int64


def test_rng_normalisation():
    generator = np.random.default_rng(0)
    assert as_generator(generator) is generator
    assert as_generator(3).random() == np.random.default_rng(3).random()
    with pytest.raises(InvalidParameterError, match="'rng'"):
        as_generator(-1)
    with pytest.raises(InvalidParameterError, match="'rng'"):
        as_generator(1.5)
