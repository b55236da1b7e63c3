"""Statistical assertions for randomised code, each with a stated false-alarm rate.

Every assertion fails with probability at most ``alpha`` when the hypothesis it checks is true
(default ``alpha = 1e-6``), so a suite with fixed seeds is both stable and able to fail.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from privsum._validation import check_array, check_probability, check_real, invalid

__all__ = [
    "FALSE_ALARM_RATE",
    "assert_matches_pmf",
    "assert_mean",
    "assert_same_distribution",
    "assert_variance",
    "two_sided_z",
]

FALSE_ALARM_RATE = 1e-6


def two_sided_z(alpha: float = FALSE_ALARM_RATE) -> float:
    """The two-sided standard-normal critical value for false-alarm rate ``alpha``."""
    alpha = check_probability(alpha, "alpha", "two_sided_z", allow_zero=False)
    return float(stats.norm.isf(alpha / 2))


def _real_samples(samples: np.ndarray, owner: str) -> np.ndarray:
    """At least two finite real samples as a flat float array (NaN, inf, complex, object, strings refused)."""
    values = check_array(samples, "samples", owner).astype(float).ravel()
    if not values.size >= 2:
        raise invalid("samples", owner, "at least two samples", f"{values.size} samples")
    return values


#: Integer samples are compared exactly as int64: values beyond +-2^62 are refused, never wrapped.
_INTEGER_RANGE = 2.0**62


def _integer_samples(samples: np.ndarray, name: str, owner: str, *, ndim: int | None = None) -> np.ndarray:
    """At least one integer-valued sample as an int64 array (non-integers, NaN, datetimes refused, never rounded)."""
    values = check_array(samples, name, owner, ndim=ndim, low=-_INTEGER_RANGE, high=_INTEGER_RANGE, integer=True)
    values = values.astype(np.int64).ravel()
    if not values.size:
        raise invalid(name, owner, "a non-empty integer array", "an empty array")
    return values


def assert_mean(samples: np.ndarray, expected: float, *, variance: float | None = None, alpha: float = FALSE_ALARM_RATE) -> None:
    """Assert the samples' mean is ``expected`` (z-test with known ``variance``, else t-test)."""
    owner = "assert_mean"
    values = _real_samples(samples, owner)
    expected = check_real(expected, "expected", owner)
    if variance is not None:
        variance = check_real(variance, "variance", owner, low=0.0)
    alpha = check_probability(alpha, "alpha", owner, allow_zero=False)
    if variance is None:
        result = stats.ttest_1samp(values, expected)
        if not result.pvalue >= alpha:
            raise AssertionError(
                f"mean {values.mean():.6g} differs from {expected:.6g} (t-test p={result.pvalue:.3g} < {alpha:g})"
            )
        return
    if variance > 0:
        z = (values.mean() - expected) / math.sqrt(variance / values.size)
    else:
        z = 0.0 if values.mean() == expected else math.inf
    if not abs(z) <= two_sided_z(alpha):
        raise AssertionError(f"mean {values.mean():.6g} differs from {expected:.6g} (z={z:.3g}, alpha={alpha:g})")


def assert_variance(samples: np.ndarray, expected: float, *, alpha: float = FALSE_ALARM_RATE) -> None:
    """Assert the samples' variance is ``expected`` (large-sample z-test using the fourth moment)."""
    owner = "assert_variance"
    values = _real_samples(samples, owner)
    expected = check_real(expected, "expected", owner, low=0.0)
    alpha = check_probability(alpha, "alpha", owner, allow_zero=False)
    with np.errstate(over="ignore", invalid="ignore"):
        centred = values - values.mean()
        sample_variance = centred.var(ddof=1)
        fourth = np.mean(centred**4)
    if not (math.isfinite(fourth) and math.isfinite(sample_variance)):
        raise invalid("samples", owner, "values whose fourth central moment is finite in float64", "an overflowing moment")
    standard_error = math.sqrt(max(fourth - sample_variance**2, 1e-300) / values.size)
    z = (sample_variance - expected) / standard_error
    if not abs(z) <= two_sided_z(alpha):
        raise AssertionError(f"variance {sample_variance:.6g} differs from {expected:.6g} (z={z:.3g}, alpha={alpha:g})")


def _pooled_bins(expected_counts: np.ndarray, minimum: float = 5.0) -> np.ndarray:
    """Bin labels that merge neighbouring cells until each has expected count >= ``minimum``."""
    labels = np.zeros(expected_counts.size, dtype=np.int64)
    label, running = 0, 0.0
    for index, count in enumerate(expected_counts):
        labels[index] = label
        running += count
        if running >= minimum:
            label, running = label + 1, 0.0
    if running < minimum and label > 0:  # fold an under-filled last bin into the previous one
        labels[labels == label] = label - 1
    return labels


def assert_same_distribution(first: np.ndarray, second: np.ndarray, *, alpha: float = FALSE_ALARM_RATE) -> None:
    """Assert two samples of integers come from one distribution (chi-square homogeneity test)."""
    owner = "assert_same_distribution"
    a = _integer_samples(first, "first", owner)
    b = _integer_samples(second, "second", owner)
    alpha = check_probability(alpha, "alpha", owner, allow_zero=False)
    # counts of the values that occur, in increasing order (absent values would add empty cells only)
    _, cells = np.unique(np.concatenate([a, b]), return_inverse=True)
    counts_a = np.bincount(cells[: a.size], minlength=cells.max() + 1)
    counts_b = np.bincount(cells[a.size :], minlength=counts_a.size)
    pooled = (counts_a + counts_b) * min(a.size, b.size) / (a.size + b.size)
    labels = _pooled_bins(pooled)
    table = np.vstack([np.bincount(labels, weights=counts_a), np.bincount(labels, weights=counts_b)])
    if table.shape[1] < 2:
        return
    pvalue = stats.chi2_contingency(table, correction=False).pvalue
    if not pvalue >= alpha:
        raise AssertionError(f"samples differ in distribution (chi-square p={pvalue:.3g} < {alpha:g})")


def assert_matches_pmf(samples: np.ndarray, support: np.ndarray, pmf: np.ndarray, *, alpha: float = FALSE_ALARM_RATE) -> None:
    """Assert integer samples follow ``pmf`` on ``support`` (chi-square goodness of fit, pooled tails)."""
    owner = "assert_matches_pmf"
    values = _integer_samples(samples, "samples", owner)
    support = _integer_samples(support, "support", owner, ndim=1)
    if not np.unique(support).size == support.size:
        raise invalid("support", owner, "a 1-D array of distinct integers", "repeated values")
    probabilities = check_array(pmf, "pmf", owner, ndim=1, low=0.0).astype(float)
    if not (probabilities.size == support.size and 0 < probabilities.sum() < math.inf):
        shown = f"{probabilities.size} values summing to {probabilities.sum():g}"
        raise invalid("pmf", owner, f"{support.size} non-negative numbers with a positive finite sum", shown)
    alpha = check_probability(alpha, "alpha", owner, allow_zero=False)
    if np.any(~np.isin(values, support)):
        raise AssertionError("samples fall outside the support of the pmf")
    order = np.argsort(support)
    observed = np.zeros(support.size)
    observed[order] = np.bincount(np.searchsorted(support[order], values), minlength=support.size)
    expected = probabilities / probabilities.sum() * values.size
    labels = _pooled_bins(expected)
    observed_binned = np.bincount(labels, weights=observed)
    expected_binned = np.bincount(labels, weights=expected)
    if observed_binned.size < 2:
        return
    pvalue = stats.chisquare(observed_binned, expected_binned).pvalue
    if not pvalue >= alpha:
        raise AssertionError(f"samples do not follow the pmf (chi-square p={pvalue:.3g} < {alpha:g})")
