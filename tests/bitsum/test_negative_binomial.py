"""The fast negative-binomial pmf and its truncation, against 50-digit arithmetic and scipy."""

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from privsum._negative_binomial import (
    negative_binomial_pmf_up_to,
    negative_binomial_tail_bound,
    negative_binomial_truncation,
    truncated_negative_binomial,
)
from privsum.bitsum.exact import _MAX_PMF_LENGTH, _NB_CACHE, _PmfCache, _truncated_nb

# The stated relative accuracy of the pmf (3e-13 is the largest error seen below).
_PMF_RTOL = 1e-12
# The parameter ranges the bit sums use: shapes of a few users' shares up to large flooding totals,
# ratios up to 1 - 1e-5 (a flooding pmf of millions of points).
SHAPES = [1e-6, 1e-3, 0.3, 0.9, 1.0, 1.5, 7.3, 16.0, 66.4573, 300.0, 1000.0]
RATIOS = [1e-3, 0.2, 0.5, 0.9, 0.98425, 0.999, 0.99934747, 1.0 - 1e-5]


def _exact_pmf(k: int, shape: float, ratio: float) -> mpmath.mpf:
    with mpmath.workdps(50):
        r, a = mpmath.mpf(shape), mpmath.mpf(ratio)
        log_binomial = mpmath.loggamma(k + r) - mpmath.loggamma(r) - mpmath.loggamma(k + 1)
        return mpmath.exp(log_binomial + r * mpmath.log1p(-a) + k * mpmath.log(a))


def _exact_tail(last: int, shape: float, ratio: float) -> mpmath.mpf:
    """``P(X > last)`` by the regularised incomplete beta function, 50 digits."""
    with mpmath.workdps(50):
        r, a = mpmath.mpf(shape), mpmath.mpf(ratio)
        return mpmath.betainc(last + 1, r, 0, a, regularized=True)


def _points(last: int) -> np.ndarray:
    """The first 40 points, 40 spread to ``last``, and ``last`` (every block boundary kind is hit)."""
    return np.unique(np.concatenate([np.arange(min(last, 40) + 1), np.linspace(0, last, 40).astype(int), [last]]))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("ratio", RATIOS)
def test_pmf_matches_50_digit_arithmetic_up_to_a_far_quantile(shape, ratio):
    last = negative_binomial_truncation(shape, ratio, 1e-30, 50_000_000)
    if last is None:  # more than 5e7 points: the exact profiles refuse such flooding by name
        assert shape * ratio / (1 - ratio) > 1e7
        return
    values = negative_binomial_pmf_up_to(shape, ratio, last)
    assert values.shape == (last + 1,)
    for k in _points(last):
        exact = _exact_pmf(int(k), shape, ratio)
        if exact < mpmath.mpf("1e-290"):
            assert values[k] <= 1e-280
            continue
        assert abs(mpmath.mpf(float(values[k])) / exact - 1) <= _PMF_RTOL, (shape, ratio, int(k))


@settings(max_examples=60, deadline=None)
@given(shape=st.floats(1e-6, 1e3), ratio=st.floats(1e-6, 1.0 - 1e-4), data=st.data())
def test_pmf_matches_50_digit_arithmetic_anywhere(shape, ratio, data):
    last = negative_binomial_truncation(shape, ratio, 1e-20, 2_000_000)
    if last is None:
        return
    values = negative_binomial_pmf_up_to(shape, ratio, last)
    for k in sorted(set(data.draw(st.lists(st.integers(0, last), min_size=1, max_size=10)))):
        exact = _exact_pmf(k, shape, ratio)
        if exact > mpmath.mpf("1e-290"):
            assert abs(mpmath.mpf(float(values[k])) / exact - 1) <= _PMF_RTOL, (shape, ratio, k)


@pytest.mark.parametrize("shape", SHAPES[:-1])  # 50-digit tails of NB(1000, .) take seconds
@pytest.mark.parametrize("ratio", [1e-3, 0.5, 0.98425, 0.99934747])
@pytest.mark.parametrize("tail_mass", [1e-6, 1e-15, 6.5e-22])
def test_tail_bounds_are_true_upper_bounds(shape, ratio, tail_mass):
    """The geometric bound and the truncation's dropped mass never undercount 50-digit tails."""
    last = negative_binomial_truncation(shape, ratio, tail_mass, 50_000_000)
    bound = negative_binomial_tail_bound(shape, ratio, last)
    assert bound <= tail_mass and mpmath.mpf(bound) >= _exact_tail(last, shape, ratio)
    if last > 100:  # within 1% of the least point whose bound meets tail_mass
        assert negative_binomial_tail_bound(shape, ratio, math.floor(0.985 * last)) > tail_mass
    pmf, dropped = truncated_negative_binomial(shape, ratio, tail_mass, 50_000_000)
    cut = pmf.size - 1
    exact = _exact_tail(cut, shape, ratio)
    assert dropped <= tail_mass and mpmath.mpf(dropped) >= exact
    assert mpmath.mpf(dropped) <= exact * (1 + 1e-6) + mpmath.mpf(bound)  # tight: the sum is exact up to rounding
    # the least such point, up to the geometric bound beyond the computed pmf
    assert cut == 0 or _exact_tail(cut - 1, shape, ratio) + mpmath.mpf(tail_mass) / 64 > tail_mass * (1 - 1e-6)
    assert cut <= stats.nbinom.isf(tail_mass * (1 - 1 / 64) * (1 - 1e-6), shape, 1.0 - ratio) + 1


def test_tail_bound_is_one_where_no_geometric_bound_applies():
    assert negative_binomial_tail_bound(50.0, 0.9, 10) == 1.0  # below the mode the ratio exceeds one
    assert negative_binomial_truncation(50.0, 1.0 - 1e-5, 1e-15, 1000) is None


def test_truncated_pmf_replaces_scipy_within_its_accuracy():
    """What the exact profiles used before: scipy's pmf up to ``isf(tail) + 1`` and ``sf`` as the dropped mass."""
    for shape, ratio, tail in [(66.4573, 0.99934747, 6.5e-16), (24.0, 0.99, 1.3e-15), (0.9, 0.98425, 1e-15)]:
        pmf, dropped = _truncated_nb(shape, ratio, tail)
        distribution = stats.nbinom(shape, 1.0 - ratio)
        old_last = int(distribution.isf(tail)) + 1
        assert dropped <= tail and not pmf.flags.writeable
        assert abs(pmf.size - old_last) <= 0.02 * old_last + 2
        common = min(pmf.size, old_last + 1)
        np.testing.assert_allclose(pmf[:common], distribution.pmf(np.arange(common)), rtol=2e-12, atol=1e-300)
        assert dropped >= distribution.sf(pmf.size - 1)


def test_pmf_cache_is_bounded_by_bytes_and_least_recently_used():
    cache = _PmfCache(max_bytes=4000)
    small = (np.zeros(100), 0.0)  # 800 bytes
    for index in range(6):
        cache.put((float(index), 0.5, 1e-15), small)
    assert len(cache) == 5 and cache.get((0.0, 0.5, 1e-15)) is None  # the oldest went first
    assert cache.get((1.0, 0.5, 1e-15)) is small
    cache.put((9.0, 0.5, 1e-15), small)
    assert cache.get((1.0, 0.5, 1e-15)) is small and cache.get((2.0, 0.5, 1e-15)) is None  # 1 was used recently
    cache.put((10.0, 0.5, 1e-15), (np.zeros(200), 0.0))  # larger than a quarter of the budget: not kept
    assert cache.get((10.0, 0.5, 1e-15)) is None
    cache.cache_clear()
    assert len(cache) == 0
    assert _NB_CACHE.max_bytes <= 2**27 and _NB_CACHE.max_bytes // 4 < _MAX_PMF_LENGTH * 8
