"""Statistical assertions for randomised code, each with a stated false-alarm rate.

Every assertion fails with probability at most ``alpha`` when the hypothesis it checks is true
(default ``alpha = 1e-6``), so a suite with fixed seeds is both stable and able to fail.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from privsum._validation import check_probability

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


def assert_mean(samples: np.ndarray, expected: float, *, variance: float | None = None, alpha: float = FALSE_ALARM_RATE) -> None:
    """Assert the samples' mean is ``expected`` (z-test with known ``variance``, else t-test)."""
    values = np.asarray(samples, dtype=float).ravel()
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
    values = np.asarray(samples, dtype=float).ravel()
    centred = values - values.mean()
    sample_variance = centred.var(ddof=1)
    fourth = np.mean(centred**4)
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
    a = np.asarray(first).ravel().astype(np.int64)
    b = np.asarray(second).ravel().astype(np.int64)
    low = min(a.min(), b.min())
    counts_a = np.bincount(a - low, minlength=max(a.max(), b.max()) - low + 1)
    counts_b = np.bincount(b - low, minlength=counts_a.size)
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
    values = np.asarray(samples).ravel().astype(np.int64)
    support = np.asarray(support, dtype=np.int64)
    probabilities = np.asarray(pmf, dtype=float)
    if np.any(~np.isin(values, support)):
        raise AssertionError("samples fall outside the support of the pmf")
    observed = np.array([np.count_nonzero(values == v) for v in support], dtype=float)
    expected = probabilities / probabilities.sum() * values.size
    labels = _pooled_bins(expected)
    observed_binned = np.bincount(labels, weights=observed)
    expected_binned = np.bincount(labels, weights=expected)
    if observed_binned.size < 2:
        return
    pvalue = stats.chisquare(observed_binned, expected_binned).pvalue
    if not pvalue >= alpha:
        raise AssertionError(f"samples do not follow the pmf (chi-square p={pvalue:.3g} < {alpha:g})")
