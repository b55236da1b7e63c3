"""Shuffled count sketch and prefix-tree heavy hitters: exact privacy, unbiasedness, merging, bytes, bad input."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

from privsum.accounting import Neighbouring, PrivacyGuarantee
from privsum.exceptions import IncompatibleSketchError, InvalidParameterError
from privsum.histograms import (
    BinsEvent,
    PoissonCounterEvent,
    PrefixHeavyHitters,
    ReleasedCountSketch,
    ReleasedPrefixTree,
    ShuffledCountSketch,
)
from privsum.testing.stats import assert_mean

ALPHA = 1e-6


def _exact_pair_delta(first: np.ndarray, second: np.ndarray, epsilon: float) -> float:
    forward = np.maximum(first - math.exp(epsilon) * second, 0.0).sum()
    backward = np.maximum(second - math.exp(epsilon) * first, 0.0).sum()
    return float(max(forward, backward))


@pytest.mark.parametrize("noise_mean", [3.0, 40.0])
def test_counter_event_bounds_the_exact_poisson_pair(noise_mean):
    support = np.arange(0, 400)
    without = stats.poisson.pmf(support, noise_mean)
    with_one = stats.poisson.pmf(support - 1, noise_mean)
    event = PoissonCounterEvent(noise_mean=noise_mean, delta=1e-6)
    for epsilon in (0.2, 0.5, 1.0, 2.0):
        exact = _exact_pair_delta(without, with_one, epsilon)
        assert exact <= event.pld().delta(epsilon) <= exact * 1.02 + 1e-12


def test_two_changed_cells_are_two_compositions_of_the_exact_pair():
    """One row, two cells: ``(N1 + 1, N2)`` versus ``(N1, N2 + 1)`` enumerated on a grid."""
    noise_mean = 4.0
    support = np.arange(0, 60)
    pmf = stats.poisson.pmf(support, noise_mean)
    shifted = stats.poisson.pmf(support - 1, noise_mean)
    first = np.outer(shifted, pmf).ravel()
    second = np.outer(pmf, shifted).ravel()
    event = BinsEvent(PoissonCounterEvent(noise_mean=noise_mean, delta=1e-3), 2, Neighbouring.REPLACE_ONE, delta=1e-3)
    for epsilon in (1.0, 2.0, 3.0):
        exact = _exact_pair_delta(first, second, epsilon)
        assert exact <= event.pld().delta(epsilon) <= exact * 1.05 + 1e-12


@pytest.fixture(scope="module")
def sketch():
    return ShuffledCountSketch.from_privacy(epsilon=1.0, delta=1e-6, n_users=2000, rows=3, width=64)


def test_calibration_meets_the_target_for_two_cells_per_row(sketch):
    assert sketch.guarantee.epsilon <= 1.0
    assert sketch.event.bins_per_change == 6
    smaller = ShuffledCountSketch(n_users=2000, rows=3, width=64, noise_mean=0.98 * sketch.noise_mean, delta=1e-6)
    assert smaller.guarantee.epsilon > 1.0 - 1e-3  # the calibration is tight within its tolerance


def test_a_change_of_item_moves_at_most_two_cells_per_row(sketch):
    cells = sketch._cells(np.array([11, 12], dtype=np.uint64))
    assert cells.shape == (2, 3)
    assert len(set(cells[0]) ^ set(cells[1])) <= 2 * 3


def test_messages_per_user(sketch):
    assert sketch.expected_messages_per_user == pytest.approx(3 + sketch.noise_mean * 2 * 3 * 64 / 2000)
    assert sketch.bits_per_message() == math.ceil(math.log2(2 * 3 * 64))


def test_faithful_messages_agree_with_the_fast_view():
    sketch = ShuffledCountSketch(n_users=50, rows=2, width=4, noise_mean=3.0, delta=1e-6)
    items = np.arange(50) % 3
    fast = np.array([sketch.sample_view(items, rng=seed).counts[:, 0] for seed in range(400)])
    faithful = np.array(
        [sketch.view(sketch.shuffle(sketch.randomize(items, rng=seed), rng=seed)).counts[:, 0] for seed in range(400)]
    )
    for cell in range(sketch.n_cells):
        assert stats.ks_2samp(fast[:, cell], faithful[:, cell]).pvalue > ALPHA


def test_row_estimates_are_unbiased_without_collisions(sketch):
    items = np.full(2000, 42)
    rows = np.array([sketch.run(items, rng=seed).row_estimates([42])[:, 0] for seed in range(300)]).ravel()
    assert_mean(rows, 2000.0, variance=2 * sketch.noise_mean, alpha=ALPHA)


def test_error_bound_holds_for_most_items():
    sketch = ShuffledCountSketch(n_users=20000, rows=5, width=512, noise_mean=150.0, delta=1e-6)
    rng = np.random.default_rng(5)
    items = rng.zipf(1.3, 20000)
    values, counts = np.unique(items, return_counts=True)
    released = sketch.run(items, rng=1)
    bound = released.error_bound(0.05, second_moment=float(np.sum(counts.astype(float) ** 2)))
    misses = np.mean(np.abs(released.estimate(values) - counts) > bound)
    assert misses <= 0.05


def test_merge_and_bytes(sketch):
    first = sketch.run(np.arange(2000) % 7, rng=1)
    second = sketch.run(np.arange(2000) % 5, rng=2)
    merged = first.merge(second, disjoint_users=True)
    np.testing.assert_array_equal(merged.table, first.table + second.table)
    assert merged.noise_variance == first.noise_variance + second.noise_variance
    assert merged.merge(first, disjoint_users=True).n_users == 3 * first.n_users
    other = ShuffledCountSketch(n_users=2000, rows=3, width=64, noise_mean=sketch.noise_mean, delta=1e-6, seed=9)
    with pytest.raises(IncompatibleSketchError):
        first.merge(other.run(np.arange(2000), rng=3), disjoint_users=True)
    with pytest.raises(InvalidParameterError, match="disjoint_users"):
        first.merge(second, disjoint_users=False)
    key = b"k" * 16
    restored = ReleasedCountSketch.from_bytes(merged.to_bytes(key=key), key=key)
    np.testing.assert_array_equal(restored.table, merged.table)
    assert restored.guarantee == merged.guarantee and restored.seed == merged.seed
    data = bytearray(merged.to_bytes())
    data[-40] ^= 1
    with pytest.raises(InvalidParameterError, match="data"):
        ReleasedCountSketch.from_bytes(bytes(data))
    with pytest.raises(InvalidParameterError, match="data"):
        ReleasedCountSketch.from_bytes(merged.to_bytes(), key=key)


def test_strings_are_items(sketch):
    released = sketch.run(["apple"] * 1500 + ["pear"] * 500, rng=0)
    apple, pear = released.estimate(["apple", "pear"])
    assert abs(apple - 1500) < 200 and abs(pear - 500) < 200
    assert released.heavy_hitters(["pear", "apple", "plum"], 1000)[0][0] == "apple"


@pytest.mark.parametrize(
    "items", [[1.0, 2.0], [float("nan")], [True, 1], [-1, 2], np.array([1.5]), "abc", np.zeros((2, 2), dtype=int), []]
)
def test_bad_items_are_refused(sketch, items):
    with pytest.raises(InvalidParameterError, match="items|x"):
        sketch.run(items, rng=0)


def test_bad_parameters():
    with pytest.raises(InvalidParameterError, match="width"):
        ShuffledCountSketch(n_users=10, rows=1, width=0, noise_mean=1.0, delta=1e-6)
    with pytest.raises(InvalidParameterError, match="noise_mean"):
        ShuffledCountSketch(n_users=10, rows=1, width=4, noise_mean=float("nan"), delta=1e-6)
    with pytest.raises(InvalidParameterError, match="max_messages_per_user"):
        ShuffledCountSketch.from_privacy(epsilon=1.0, delta=1e-6, n_users=100, max_messages_per_user=2.0)
    with pytest.raises(InvalidParameterError, match="domain_size"):
        PrefixHeavyHitters.from_privacy(epsilon=1.0, delta=1e-6, n_users=100, domain_size=0)


# ----------------------------------------------------------------- heavy hitters without candidates
@pytest.fixture(scope="module")
def tree():
    return PrefixHeavyHitters.from_privacy(
        epsilon=1.0, delta=1e-6, n_users=20000, domain_size=5000, bits_per_level=4, max_messages_per_user=150
    )


def test_tree_finds_planted_heavy_hitters_and_nothing_light(tree):
    assert tree.domain_bits == 13  # 5000 rounded up to 2^13
    assert tree.guarantee.epsilon <= 1.0
    assert tree.expected_messages_per_user <= 150
    rng = np.random.default_rng(2)
    items = np.concatenate([np.full(3000, 4321), np.full(2000, 17), rng.integers(0, 5000, 15000)])
    found = tree.run(items, rng=4).heavy_hitters(min_count=1500)
    assert sorted(item for item, _ in found) == [17, 4321]


def test_tree_refuses_items_outside_the_domain(tree):
    with pytest.raises(InvalidParameterError, match="items"):
        tree.run(np.array([1, 5000]), rng=0)
    with pytest.raises(InvalidParameterError, match="items"):
        tree.run(np.array([1.0, 2.0]), rng=0)


def test_tree_releases_merge(tree):
    rng = np.random.default_rng(3)
    first = tree.run(np.concatenate([np.full(1000, 99), rng.integers(0, 5000, 19000)]), rng=1)
    second = tree.run(np.concatenate([np.full(1000, 99), rng.integers(0, 5000, 19000)]), rng=2)
    merged = first.merge(second, disjoint_users=True)
    assert [item for item, _ in merged.heavy_hitters(min_count=1500)] == [99]
    np.testing.assert_array_equal(merged.levels[0].table, first.levels[0].table + second.levels[0].table)
    with pytest.raises(InvalidParameterError, match="disjoint_users"):
        first.merge(second, disjoint_users=False)
    key = b"s" * 16
    restored = ReleasedPrefixTree.from_bytes(merged.to_bytes(key=key), key=key)
    assert restored.heavy_hitters(min_count=1500) == merged.heavy_hitters(min_count=1500)
    with pytest.raises(InvalidParameterError, match="data"):
        ReleasedPrefixTree.from_bytes(merged.to_bytes()[:-1])


@pytest.mark.parametrize("path", ["fast", "faithful"])
def test_streamed_sketch_matches_one_run(path):
    from privsum.shuffle.streaming import UserChunks

    sketch = ShuffledCountSketch(n_users=60, rows=2, width=4, noise_mean=5.0, delta=1e-6)
    items = np.arange(60) % 4
    whole = np.array([sketch.run(items, rng=seed, path=path).table[0, 0] for seed in range(300)])
    chunks = [sketch.run(UserChunks(np.array_split(items, 3)), rng=10**4 + seed, path=path).table[0, 0] for seed in range(300)]
    assert stats.ks_2samp(whole, np.array(chunks)).pvalue > ALPHA


# ----------------------------------------------------------------- properties of releases
_TABLES = arrays(np.int64, (2, 4), elements=st.integers(-(10**6), 10**6))


def _released(table: np.ndarray, n_users: int = 10) -> ReleasedCountSketch:
    guarantee = PrivacyGuarantee(0.9, 1e-6)
    return ReleasedCountSketch(table=table, seed=3, noise_variance=60.0, n_users=n_users, guarantee=guarantee)


@settings(max_examples=40, deadline=None)
@given(first=_TABLES, second=_TABLES, third=_TABLES)
def test_sketch_merge_is_commutative_associative_and_round_trips(first, second, third):
    a, b, c = _released(first), _released(second), _released(third)
    ab, ba = a.merge(b, disjoint_users=True), b.merge(a, disjoint_users=True)
    np.testing.assert_array_equal(ab.table, ba.table)
    left = ab.merge(c, disjoint_users=True)
    right = a.merge(b.merge(c, disjoint_users=True), disjoint_users=True)
    np.testing.assert_array_equal(left.table, right.table)
    assert left.n_users == right.n_users == 30 and left.noise_variance == right.noise_variance == 180.0
    restored = ReleasedCountSketch.from_bytes(left.to_bytes())
    np.testing.assert_array_equal(restored.table, left.table)
    assert (restored.seed, restored.n_users, restored.guarantee) == (left.seed, left.n_users, left.guarantee)
