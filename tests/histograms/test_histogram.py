"""Shuffled histograms: accounting against an exact computation, unbiasedness, calibration, bad input."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from privsum.accounting import Neighbouring
from privsum.bitsum import RRBitSum, ThreeNBBitSum
from privsum.exceptions import InvalidParameterError
from privsum.histograms import (
    BinsEvent,
    Categories,
    CentralHistogram,
    ShuffledHistogram,
    consistent_with_total,
    nonnegative,
    top_k,
)
from privsum.testing.stats import assert_mean, assert_variance

ALPHA = 1e-6


# ----------------------------------------------------------------- exact guarantee, tiny crowd
def _rr_count_pmf(bits: np.ndarray, flip: float) -> np.ndarray:
    """pmf of the number of reported ones in one bin of RR (users' bits ``bits``)."""
    pmf = np.array([1.0])
    for bit in bits:
        one = 1.0 - flip if bit else flip
        pmf = np.convolve(pmf, [1.0 - one, one])
    return pmf


def _view_pmf(dataset: tuple, n_categories: int, flip: float) -> np.ndarray:
    """The exact joint pmf of the shuffled view (reported ones per bin; the bins are independent)."""
    joint = np.array(1.0)
    for category in range(n_categories):
        bits = np.array([value == category for value in dataset])
        joint = np.multiply.outer(joint, _rr_count_pmf(bits, flip))
    return joint.ravel()


def _hockey_stick(first: np.ndarray, second: np.ndarray, epsilon: float) -> float:
    return float(np.maximum(first - math.exp(epsilon) * second, 0.0).sum())


def _exact_delta(n_users: int, n_categories: int, flip: float, epsilon: float, relation: str) -> float:
    """The largest delta(epsilon) over every neighbouring pair of datasets, both directions (by enumeration)."""
    worst = 0.0
    null = n_categories  # zero-out: the user holds no category (all bits 0)
    for dataset in itertools.product(range(n_categories), repeat=n_users):
        first = _view_pmf(dataset, n_categories, flip)
        targets = range(n_categories) if relation == "replace-one" else [null]
        for replacement in targets:
            if replacement == dataset[0]:
                continue
            second = _view_pmf((replacement, *dataset[1:]), n_categories, flip)
            worst = max(worst, _hockey_stick(first, second, epsilon), _hockey_stick(second, first, epsilon))
    return worst


@pytest.mark.parametrize("relation", ["replace-one", "zero-out"])
def test_bins_event_bounds_the_exact_view_of_three_users_and_three_categories(relation):
    flip = 0.2
    bins = RRBitSum(n_users=3, flip_probability=flip, delta=1e-3)
    histogram = ShuffledHistogram(categories=["a", "b", "c"], bin_protocol=bins, neighbouring=relation, delta=0.05)
    pld = histogram.event.pld()
    for epsilon in (0.5, 1.0, 2.0, 3.0):
        exact = _exact_delta(3, 3, flip, epsilon, relation)
        assert pld.delta(epsilon) >= exact - 1e-12
    headline = histogram.guarantee
    assert _exact_delta(3, 3, flip, headline.epsilon, relation) <= headline.delta
    assert headline.neighbouring == Neighbouring(relation)


def test_replace_one_needs_two_bins_and_no_more():
    """One bin's event does not cover a replace-one change of the histogram; two bins' does (k does not matter)."""
    flip = 0.2
    bins = RRBitSum(n_users=3, flip_probability=flip, delta=1e-3)
    one_bin = bins.event.pld()
    epsilon = 1.5
    exact = _exact_delta(3, 3, flip, epsilon, "replace-one")
    assert one_bin.delta(epsilon) < exact  # charging one bin would under-account
    two = BinsEvent(bins.event, 2, Neighbouring.REPLACE_ONE, delta=0.05).pld().delta(epsilon)
    assert exact <= two <= 1.05 * exact + 1e-9  # and two bins are tight here, not k-fold


# ----------------------------------------------------------------- calibration
@pytest.fixture(scope="module")
def histogram():
    return ShuffledHistogram.from_privacy(epsilon=1.0, delta=1e-6, n_users=3000, categories=range(10))


def test_from_privacy_meets_the_total_target_and_beats_the_basic_split(histogram):
    assert histogram.guarantee.epsilon <= 1.0
    assert histogram.guarantee.delta == 1e-6
    basic = ThreeNBBitSum.from_privacy(epsilon=0.5, delta=5e-7, n_users=3000)
    assert histogram.variance() <= basic.variance()
    central = CentralHistogram(epsilon=1.0, delta=1e-6, categories=range(10))
    assert histogram.rmse() <= 1.1 * central.rmse()


@pytest.mark.slow
def test_message_budget_picks_a_cheaper_protocol_and_refuses_an_impossible_one():
    categories = range(20)
    cheap = ShuffledHistogram.from_privacy(
        epsilon=1.0, delta=1e-6, n_users=30000, categories=categories, max_messages_per_user=1.5
    )
    assert cheap.expected_messages_per_user <= 1.5
    assert cheap.guarantee.epsilon <= 1.0
    with pytest.raises(InvalidParameterError, match="max_messages_per_user"):
        ShuffledHistogram.from_privacy(epsilon=1.0, delta=1e-6, n_users=30000, categories=categories, max_messages_per_user=0.5)


def test_messages_and_bits_per_user(histogram):
    per_bin = histogram.bin_protocol
    assert histogram.expected_messages_per_user == pytest.approx(
        per_bin.expected_messages(1.0) + 9 * per_bin.expected_messages(0.0)
    )
    assert histogram.bits_per_message() == 4 + 1  # bin tag of ceil(log2 10) bits, sign bit


# ----------------------------------------------------------------- statistics
def test_estimates_are_unbiased_with_the_stated_variance(histogram):
    rng = np.random.default_rng(7)
    values = rng.integers(0, 10, 3000)
    truth = np.bincount(values, minlength=10)
    runs = np.array([histogram.run(values, rng=seed) for seed in range(400)])
    errors = (runs - truth).ravel()  # 4000 errors, independent across bins and runs
    assert_mean(errors, 0.0, variance=histogram.variance(), alpha=ALPHA)
    assert_variance(errors, histogram.variance(), alpha=ALPHA)


def test_faithful_path_agrees_with_the_fast_path():
    bins = ThreeNBBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=200)
    histogram = ShuffledHistogram(categories=["x", "y", "z"], bin_protocol=bins, delta=1e-6)
    values = ["x"] * 120 + ["y"] * 50 + ["z"] * 30
    fast = np.array([histogram.run(values, rng=seed) for seed in range(300)])
    faithful = np.array([histogram.run(values, rng=10_000 + seed, path="faithful") for seed in range(300)])
    for column in range(3):
        result = stats.ks_2samp(fast[:, column], faithful[:, column])
        assert result.pvalue > ALPHA


def test_simultaneous_intervals_cover_every_bin(histogram):
    rng = np.random.default_rng(3)
    values = rng.integers(0, 10, 3000)
    truth = np.bincount(values, minlength=10)
    misses = 0
    for seed in range(200):
        low, high = histogram.confidence_interval(histogram.run(values, rng=seed), 0.9, simultaneous=True)
        misses += not np.all((low <= truth) & (truth <= high))
    # exact per-bin intervals: all bins covered with probability >= 0.9; misses ~ Bin(200, <= 0.1)
    assert misses <= stats.binom.isf(ALPHA, 200, 0.1)


def test_central_reference_variance_matches_its_samples():
    reference = CentralHistogram(epsilon=1.0, delta=1e-6, categories=range(5))
    values = np.repeat(np.arange(5), 10)
    errors = np.array([reference.run(values, rng=seed) - 10 for seed in range(2000)]).ravel()
    assert reference.mechanism == "discrete-laplace"
    assert_variance(errors, reference.variance(), alpha=ALPHA)
    assert (
        CentralHistogram(epsilon=1.0, delta=1e-6, categories=range(5), neighbouring="add-remove").variance()
        < reference.variance()
    )


# ----------------------------------------------------------------- post-processing
def test_post_processing():
    assert nonnegative([-1.0, 2.0]).tolist() == [0.0, 2.0]
    projected = consistent_with_total([40.0, -3.0, 70.0, 1.0], 100)
    assert projected.sum() == pytest.approx(100.0)
    assert np.all(projected >= 0)
    truth = np.array([35.0, 0.0, 65.0, 0.0])
    assert np.sum((projected - truth) ** 2) <= np.sum((np.array([40.0, -3.0, 70.0, 1.0]) - truth) ** 2)
    assert top_k([1.0, 5.0, 3.0], 2) == [1, 2]


# ----------------------------------------------------------------- bad input
def test_unknown_category_is_named(histogram):
    with pytest.raises(InvalidParameterError, match="'purple'"):
        ShuffledHistogram.from_privacy(epsilon=1.0, delta=1e-6, n_users=100, categories=["red"]).run(["red", "purple"])
    with pytest.raises(InvalidParameterError, match="12"):
        histogram.run(np.array([1, 2, 12]))
    with pytest.raises(InvalidParameterError, match="nan"):
        histogram.run([1, float("nan")])
    with pytest.raises(InvalidParameterError, match="True"):
        histogram.run([True, 1])
    with pytest.raises(InvalidParameterError, match="type"):
        histogram.run(np.array([1.0, 2.0]))
    with pytest.raises(InvalidParameterError, match="type"):
        histogram.run(["1", "2"])


@pytest.mark.parametrize(
    "categories",
    [[], ["a", "a"], [float("nan")], "abc", [[1, 2]], [True, 2]],
    ids=["empty", "dup", "nan", "str", "unhashable", "bool"],
)
def test_bad_category_lists(categories):
    with pytest.raises(InvalidParameterError, match="categories"):
        Categories(categories)


@pytest.mark.parametrize(
    "domain", [range(10**12), np.zeros(10**6, dtype=np.int8), (i for i in range(10**12))], ids=["range", "array", "generator"]
)
def test_huge_domains_are_refused_before_they_are_materialised(domain):
    with pytest.raises(InvalidParameterError, match="categories.*ShuffledCountSketch"):
        Categories(domain)


def test_bad_parameters(histogram):
    with pytest.raises(InvalidParameterError, match="neighbouring"):
        ShuffledHistogram.from_privacy(epsilon=1.0, delta=1e-6, n_users=100, categories=[1, 2], neighbouring="add-remove")
    with pytest.raises(InvalidParameterError, match="epsilon"):
        ShuffledHistogram.from_privacy(epsilon=float("nan"), delta=1e-6, n_users=100, categories=[1, 2])
    with pytest.raises(InvalidParameterError, match="values"):
        histogram.run("abc")
    with pytest.raises(InvalidParameterError, match="values"):
        histogram.run(np.zeros((3, 2), dtype=int))
    with pytest.raises(InvalidParameterError, match="estimate"):
        histogram.confidence_interval([1.0, 2.0])


def test_streamed_chunks_match_one_run_in_distribution(histogram):
    from privsum.shuffle.streaming import UserChunks

    rng = np.random.default_rng(8)
    values = rng.integers(0, 10, 3000)
    whole = np.array([histogram.run(values, rng=seed)[0] for seed in range(300)])
    chunks = np.array([histogram.run(UserChunks(np.array_split(values, 3)), rng=10**4 + seed)[0] for seed in range(300)])
    assert stats.ks_2samp(whole, chunks).pvalue > ALPHA


def test_zero_out_pays_one_bin(histogram):
    zero_out = ShuffledHistogram.from_privacy(
        epsilon=1.0, delta=1e-6, n_users=3000, categories=range(10), neighbouring="zero-out", protocol="3nb"
    )
    assert zero_out.guarantee.neighbouring == Neighbouring.ZERO_OUT
    assert zero_out.guarantee.epsilon <= 1.0 and zero_out.event.bins_per_change == 1
    assert zero_out.variance() < 0.5 * histogram.variance()  # the whole budget in each bin
