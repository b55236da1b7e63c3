"""`BitSumProtocol.confidence_interval`: exact where the noise is data-independent, normal otherwise.

Coverage is tested statistically: each test counts how many of ``T`` independent instances'
intervals contain the true sum and applies a binomial test with false-alarm rate alpha = 1e-6
(fixed seeds). For the exact intervals the coverage itself is computed exactly and the count must
match it; for the normal approximation the count must not be significantly outside
``level +- 0.01``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privsum import InvalidParameterError
from privsum.bitsum import (
    CentralGaussianBitSum,
    CentralLaplaceBitSum,
    ConfidenceInterval,
    ExactBitSum,
    LocalRRBitSum,
    PureBitSum,
    RRBitSum,
    ThreeNBBitSum,
)
from privsum.bitsum.base import symmetric_noise_half_width
from privsum.bitsum.noise import negative_binomial_difference_pmf
from privsum.testing import FALSE_ALARM_RATE

TRIALS = 20_000


def coverage_count(protocol, bits: np.ndarray, level: float, seed: int) -> int:
    """How many instances' intervals contain their true sums (one fast-path run over ``TRIALS`` instances)."""
    estimate = protocol.run(bits, rng=np.random.default_rng(seed))
    low, high = protocol.confidence_interval(estimate, level=level)
    truth = bits.sum(axis=0)
    return int(np.count_nonzero((low <= truth) & (truth <= high)))


def assert_binomial(count: int, trials: int, probability: float) -> None:
    """Two-sided binomial test of ``count ~ Bin(trials, probability)`` at alpha = 1e-6."""
    p_value = stats.binomtest(count, trials, probability).pvalue
    assert p_value >= FALSE_ALARM_RATE, f"{count}/{trials} covered, expected probability {probability:.6f} (p = {p_value:.2g})"


def assert_not_outside(count: int, trials: int, low: float, high: float) -> None:
    """One-sided binomial tests: the coverage is not significantly below ``low`` nor above ``high``."""
    assert stats.binom.cdf(count, trials, low) >= FALSE_ALARM_RATE / 2, f"{count}/{trials} covered: below {low}"
    assert stats.binom.sf(count - 1, trials, high) >= FALSE_ALARM_RATE / 2, f"{count}/{trials} covered: above {high}"


def random_bits(n_users: int, seed: int, fraction: float = 0.3) -> np.ndarray:
    return (np.random.default_rng(seed).random((n_users, TRIALS)) < fraction).astype(np.int8)


def exact_coverage(pmf: np.ndarray, half_width: float) -> float:
    centre = (pmf.size - 1) // 2
    h = int(half_width)
    return float(pmf[centre - h : centre + h + 1].sum())


def laplace_pmf(ratio: float, reach: int = 200) -> np.ndarray:
    support = np.arange(-reach, reach + 1)
    return (1 - ratio) / (1 + ratio) * ratio ** np.abs(support)


@pytest.mark.parametrize("level", [0.9, 0.95])
def test_laplace_interval_is_exact_and_shortest(level):
    protocol = CentralLaplaceBitSum.from_privacy(epsilon=0.5, n_users=50, noise_source="numpy")
    interval = protocol.confidence_interval(10.0, level=level)
    assert interval.method == "exact" and interval.level == level
    half_width = interval.high - 10.0
    assert half_width == int(half_width) and interval.low == 10.0 - half_width
    pmf = laplace_pmf(protocol.noise_ratio)
    assert exact_coverage(pmf, half_width) >= level > exact_coverage(pmf, half_width - 1)
    count = coverage_count(protocol, random_bits(50, 1), level, seed=2)
    assert_binomial(count, TRIALS, exact_coverage(pmf, half_width))


def test_gaussian_interval_is_exact_and_shortest():
    protocol = CentralGaussianBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=50, noise_source="numpy")
    interval = protocol.confidence_interval(0.0)
    assert interval.method == "exact"
    support = np.arange(-400, 401)
    pmf = np.exp(-(support**2) / (2 * protocol.scale**2))
    pmf /= pmf.sum()
    assert exact_coverage(pmf, interval.high) >= 0.95 > exact_coverage(pmf, interval.high - 1)
    count = coverage_count(protocol, random_bits(50, 3), 0.95, seed=4)
    assert_binomial(count, TRIALS, exact_coverage(pmf, interval.high))


def test_three_nb_interval_is_exact_for_laplace_and_other_shapes():
    protocol = ThreeNBBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=200)
    assert protocol.noise_shape == 1.0  # NB(1, p) - NB(1, p) is DLap(p): the same interval as central Laplace
    laplace = CentralLaplaceBitSum(n_users=200, scale=-1.0 / math.log(protocol.noise_ratio), noise_source="numpy")
    assert laplace.noise_ratio == pytest.approx(protocol.noise_ratio, rel=1e-12)
    assert protocol.confidence_interval(5.0).high == laplace.confidence_interval(5.0).high
    count = coverage_count(protocol, random_bits(200, 5), 0.95, seed=6)
    assert_binomial(count, TRIALS, exact_coverage(laplace_pmf(protocol.noise_ratio), protocol.confidence_interval(0.0).high))

    shaped = ThreeNBBitSum(n_users=200, noise_ratio=0.6, flooding_shape=0.0, flooding_ratio=0.0, delta=1e-6, noise_shape=3.0)
    pmf = negative_binomial_difference_pmf(3.0, 0.6)
    half_width = shaped.confidence_interval(0.0, level=0.9).high
    assert exact_coverage(pmf, half_width) >= 0.9 > exact_coverage(pmf, half_width - 1)
    count = coverage_count(shaped, random_bits(200, 7), 0.9, seed=8)
    assert_binomial(count, TRIALS, exact_coverage(pmf, half_width))


def test_negative_binomial_difference_pmf_matches_the_variance():
    pmf = negative_binomial_difference_pmf(2.5, 0.7)
    support = np.arange(pmf.size) - (pmf.size - 1) // 2
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
    assert (pmf * support).sum() == pytest.approx(0.0, abs=1e-9)
    assert (pmf * support**2).sum() == pytest.approx(2 * 2.5 * 0.7 / 0.3**2, rel=1e-9)


def test_exact_sum_interval_is_the_estimate():
    interval = ExactBitSum(n_users=3).confidence_interval(np.array([1.0, 2.0]))
    assert np.array_equal(interval.low, [1.0, 2.0]) and np.array_equal(interval.high, [1.0, 2.0])


@pytest.mark.parametrize(
    ("protocol", "fraction"),
    [
        (RRBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=2000), 0.3),
        (LocalRRBitSum.from_privacy(epsilon=1.0, n_users=300), 0.3),
        (PureBitSum.from_privacy(epsilon=2.0, n_users=300), 1.0),  # all ones: the worst case the variance assumes
    ],
    ids=["rr", "local-rr", "pure"],
)
def test_normal_approximation_covers_close_to_the_level(protocol, fraction):
    interval = protocol.confidence_interval(0.0, level=0.95)
    assert interval.method == "normal approximation"
    flipped = hasattr(protocol, "flip_probability")
    step = 1 / (1 - 2 * protocol.flip_probability) if flipped else 1 / (1 - protocol.drop_probability)
    assert interval.high == pytest.approx(stats.norm.isf(0.025) * math.sqrt(protocol.variance()) + step / 2, rel=1e-12)
    count = coverage_count(protocol, random_bits(protocol.n_users, 9, fraction), 0.95, seed=10)
    assert_not_outside(count, TRIALS, 0.95, 0.97)


def rr_exact_coverage(protocol: RRBitSum, true_sum: int, half_width: float) -> float:
    """``P(|estimate - S| <= h)`` for RR.

    The estimate is ``(B0 + S - B1 - n q)/(1 - 2q)`` with ``B1 ~ Bin(S, q)``, ``B0 ~ Bin(n - S, q)``.
    """
    n, q = protocol.n_users, protocol.flip_probability
    reach = min(n + 1, 3000)
    flipped_ones = stats.binom.pmf(np.arange(reach), true_sum, q)
    flipped_zeros = stats.binom.pmf(np.arange(reach), n - true_sum, q)
    difference = np.convolve(flipped_zeros, flipped_ones[::-1])  # B0 - B1 on -(reach-1)..reach-1
    error = (np.arange(-(reach - 1), reach) - n * q + 2 * q * true_sum) / (1 - 2 * q)
    return float(difference[np.abs(error) <= half_width + 1e-9].sum())


@pytest.mark.parametrize("n_users", [2000, 100_000])
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_rr_normal_interval_covers_at_least_the_level_exactly(n_users, level):
    """The continuity-corrected normal interval, checked against RR's exact error distribution over true sums."""
    protocol = RRBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=n_users)
    half_width = protocol.confidence_interval(0.0, level=level).high
    coverages = [rr_exact_coverage(protocol, int(s), half_width) for s in np.linspace(0, n_users, 41)]
    assert level <= min(coverages) and max(coverages) <= level + 0.03


def test_interval_shapes_printing_and_unpacking():
    protocol = RRBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=2000)
    single = protocol.confidence_interval(np.float64(600.0))
    assert isinstance(single.low, float) and single.low < 600.0 < single.high
    assert str(single).endswith("(95% confidence, normal approximation)")
    low, high = protocol.confidence_interval([1.0, 2.0, 3.0], level=0.5)
    assert low.shape == high.shape == (3,) and np.all(high - low == high[0] - low[0])
    assert isinstance(single, ConfidenceInterval)


@pytest.mark.parametrize("level", [0.0, 1.0, 1.5, float("nan"), "high"])
def test_bad_level_is_refused(level):
    with pytest.raises(InvalidParameterError, match="'level' parameter of RRBitSum.confidence_interval"):
        RRBitSum(n_users=10, flip_probability=0.2, delta=1e-6).confidence_interval(1.0, level=level)


@pytest.mark.parametrize("estimate", [np.ones((2, 2)), float("inf"), "three"])
def test_bad_estimate_is_refused(estimate):
    with pytest.raises(InvalidParameterError, match="'estimate'"):
        ThreeNBBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=100).confidence_interval(estimate)


def test_half_width_helper_counts_truncated_mass_as_outside():
    pmf = np.array([0.1, 0.2, 0.4, 0.2, 0.1])
    assert symmetric_noise_half_width(pmf, 0.4) == 0
    assert symmetric_noise_half_width(pmf, 0.8) == 1
    assert symmetric_noise_half_width(pmf, 0.81) == 2
    with pytest.raises(ValueError, match="truncated"):
        symmetric_noise_half_width(pmf * 0.5, 0.9)
