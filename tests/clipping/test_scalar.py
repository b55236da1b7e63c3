"""Tests of the one-round clipped sum, its sparse view and BBGN20 with large moduli.

Statistical tests: false-alarm rate alpha = 1e-6, fixed seeds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from privsum.accounting import ParallelEvent, PrivacyProfile, zero_out_to_replace_one
from privsum.clipping import (
    CentralClippedSum,
    ClippedSum,
    ClippedVectorSum,
    PrivateCentralClippedSum,
    choose_instance,
    full_domain_correlated_sum,
    full_domain_multi_message_sum,
    sub_domain_index,
    upper_tail_threshold,
)
from privsum.exceptions import InvalidParameterError, PrivacyLeakWarning
from privsum.shuffle import MessageBatch
from privsum.shuffle.noise import discrete_laplace_pmf
from privsum.shuffle.sparse import SparseMessageHistogram
from privsum.sums import CorrelatedNoiseSum
from privsum.sums.sparse_shares import SparseMultiMessageSum, residue_sums
from privsum.testing import (
    FALSE_ALARM_RATE,
    ProtocolConformance,
    assert_matches_pmf,
    assert_mean,
    assert_same_distribution,
    assert_variance,
)


def _check_sparse_shapes(protocol, x) -> None:
    """`ProtocolConformance.test_shapes_and_types`, for a protocol whose view is sparse."""
    assert isinstance(protocol.randomize(x, rng=5), MessageBatch)
    view = protocol.sample_view(x, rng=5)
    assert isinstance(view, SparseMessageHistogram)
    assert view.values.size == 0 or (int(view.values.min()) in protocol.alphabet and int(view.values.max()) in protocol.alphabet)
    assert np.shape(protocol.run(x, rng=5)) == np.shape(protocol.run(x, rng=5, path="faithful"))


def _binomial_upper_p(successes: int, trials: int, probability: float) -> float:
    return float(stats.binom.sf(successes - 1, trials, probability))


# --------------------------------------------------------------------------- sparse view
def _random_batch(seed: int, n_messages: int = 200, n_instances: int = 3) -> MessageBatch:
    rng = np.random.default_rng(seed)
    return MessageBatch(rng.integers(0, n_instances, n_messages), rng.integers(-5, 2**40, n_messages) % 7 + 2**40, n_instances)


def test_sparse_view_is_coalesced_sorted_and_order_free():
    batch = _random_batch(0)
    view = SparseMessageHistogram.from_messages(batch)
    keys = list(zip(view.instances.tolist(), view.values.tolist(), strict=True))
    assert keys == sorted(set(keys))
    assert view.total_messages == batch.n_messages
    shuffled = batch.take(np.random.default_rng(1).permutation(batch.n_messages))
    assert SparseMessageHistogram.from_messages(shuffled) == view
    for value in set(batch.values.tolist()):
        expected = np.bincount(batch.instances[batch.values == value], minlength=3)
        np.testing.assert_array_equal(view.count(value), expected)
    assert view.count(-1).tolist() == [0, 0, 0]


@given(st.integers(0, 1_000), st.integers(0, 1_000), st.integers(0, 1_000))
def test_sparse_merge_is_commutative_associative_and_counts_disjoint_users(a, b, c):
    first, second, third = (SparseMessageHistogram.from_messages(_random_batch(s, 50)) for s in (a, b, c))
    assert first + second == second + first
    assert (first + second) + third == first + (second + third)
    assert first + SparseMessageHistogram.zeros(3) == first
    both = MessageBatch.concatenate([_random_batch(a, 50), _random_batch(b, 50)])
    assert SparseMessageHistogram.from_messages(both) == first + second


def test_sparse_view_validation_names_the_parameter():
    with pytest.raises(InvalidParameterError, match="'values'"):
        SparseMessageHistogram(np.array([0, 0]), np.array([3, 1]), np.array([1, 1]), 1)
    with pytest.raises(InvalidParameterError, match="'counts'"):
        SparseMessageHistogram(np.array([0]), np.array([3]), np.array([0]), 1)
    with pytest.raises(InvalidParameterError, match="'instances'"):
        SparseMessageHistogram(np.array([2]), np.array([3]), np.array([1]), 2)
    with pytest.raises(InvalidParameterError, match="'other'"):
        SparseMessageHistogram.zeros(2) + SparseMessageHistogram.zeros(3)


# --------------------------------------------------------------------------- BBGN20 with a sparse view
@given(st.lists(st.tuples(st.integers(0, 2**46 - 1), st.integers(1, 2**40)), min_size=1, max_size=30))
def test_residue_sums_are_exact(pairs):
    values = np.array([v for v, _ in pairs], dtype=np.int64)
    counts = np.array([c for _, c in pairs], dtype=np.int64)
    instances = np.arange(len(pairs)) % 2
    expected = [sum(int(v) * int(c) for v, c, i in zip(values, counts, instances, strict=True) if i == k) % 2**46 for k in (0, 1)]
    assert residue_sums(instances, values, counts, 2, 2**46).tolist() == expected


def _bbgn(**changes) -> SparseMultiMessageSum:
    parameters = {"n_users": 40, "domain": 50, "noise_ratio": 0.6, "n_shares": 3, "modulus": 2**40, "share_security_bits": 20.0}
    return SparseMultiMessageSum(**{**parameters, **changes})


class TestSparseMultiMessageConformance(ProtocolConformance):
    calibration_targets = ({"epsilon": 1.0, "delta": 1e-6, "n_users": 1_000, "domain": 2**20},)

    def make_protocol(self) -> SparseMultiMessageSum:
        return _bbgn()

    def make_input(self, rng: np.random.Generator) -> np.ndarray:
        return rng.integers(0, 51, size=(40, 2))

    def test_shapes_and_types(self) -> None:
        _check_sparse_shapes(self.make_protocol(), self.make_input(np.random.default_rng(3)))


@pytest.mark.parametrize("path", ["fast", "faithful"])
def test_large_modulus_noise_is_discrete_laplace(path):
    """With q = 2^40 the sum of shares is exact (no float rounding) and the error is DLap(a)."""
    protocol = _bbgn()
    rng = np.random.default_rng(50)
    x = rng.integers(0, 51, size=40)
    errors = np.array([protocol.run(x, rng=rng, path=path)[0] - x.sum() for _ in range(3_000)]).astype(int)
    assert_mean(errors, 0.0, variance=protocol.variance())
    support = np.arange(-60, 61)
    assert_matches_pmf(errors, support, discrete_laplace_pmf(support, 0.6))


def test_large_modulus_views_agree():
    protocol = _bbgn(modulus=2**12)
    x = np.arange(40) % 51
    rng = np.random.default_rng(51)
    fast = [protocol.sample_view(x, rng=rng) for _ in range(1_000)]
    faithful = [protocol.view(protocol.shuffle(protocol.randomize(x, rng=rng), rng=rng)) for _ in range(1_000)]
    low = [[int(v.counts[v.values < 2**10].sum()) for v in views] for views in (fast, faithful)]
    assert_same_distribution(np.array(low[0]), np.array(low[1]))
    assert_mean(np.array(low[0]), 120 / 4, variance=120 * 0.25 * 0.75)


def test_large_modulus_validation():
    with pytest.raises(InvalidParameterError, match="'modulus'"):
        _bbgn(modulus=2**47)
    with pytest.raises(InvalidParameterError, match="'view'"):
        _bbgn().analyze(MessageBatch(np.zeros(1, dtype=int), np.array([2**41]), n_instances=1))
    assert full_domain_multi_message_sum(epsilon=1.0, delta=1e-6, n_users=100_000, domain=2**20).modulus > 2**36


# --------------------------------------------------------------------------- sub-domains and thresholds
@given(st.integers(0, 2**50))
def test_sub_domain_index_matches_the_definition(value):
    j = int(sub_domain_index([value])[0])
    if value <= 1:
        assert j == 0
    else:
        assert 2 ** (j - 1) < value <= 2**j


@given(st.floats(0.01, 0.99), st.floats(1e-12, 0.5))
def test_upper_tail_threshold_is_the_least(ratio, probability):
    t = upper_tail_threshold(ratio, probability)
    assert ratio**t / (1 + ratio) <= probability
    assert t == 1 or ratio ** (t - 1) / (1 + ratio) > probability


def _clipped(n_users: int = 60, domain: int = 16, **changes) -> ClippedSum:
    parameters = {"epsilon": 2.0, "delta": 1e-6, "n_users": n_users, "domain": domain, "max_correlated_domain": 2}
    return ClippedSum.from_privacy(**{**parameters, **changes})


class TestClippedSumConformance(ProtocolConformance):
    calibration_targets = (
        {"epsilon": 1.0, "delta": 1e-6, "n_users": 1_000, "domain": 2**10},
        {"epsilon": 0.5, "delta": 1e-8, "n_users": 100_000, "domain": 2**20},
    )

    def make_protocol(self) -> ClippedSum:
        return _clipped()

    def make_input(self, rng: np.random.Generator) -> np.ndarray:
        return rng.integers(0, 17, size=(60, 2))

    def test_shapes_and_types(self) -> None:
        _check_sparse_shapes(self.make_protocol(), self.make_input(np.random.default_rng(3)))


def test_privacy_is_two_instances_under_replace_one():
    protocol = ClippedSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=100_000, domain=2**20)
    event = protocol.event
    assert isinstance(event, ParallelEvent) and event.parts_per_user == 2
    for instance in protocol.instances:
        assert instance.guarantee.epsilon <= 0.5 and instance.guarantee.delta <= 0.5e-6
    guarantee = protocol.guarantee
    assert guarantee.epsilon <= 1.0 and guarantee.delta <= 1e-6
    assert guarantee.neighbouring.value == "replace-one"


def test_auto_choice_takes_the_cheaper_instance_per_sub_domain():
    protocol = ClippedSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=100_000, domain=2**20)
    kinds = [type(p).__name__ for p in protocol.instances]
    assert kinds[0] == "CorrelatedNoiseSum" and kinds[-1] == "SparseMultiMessageSum"
    for j in range(4):
        both = [
            choose_instance(epsilon=0.5 * (1 - 1e-9), delta=0.5e-6 * (1 - 1e-9), n_users=100_000, domain=2**j, method=m)
            for m in ("correlated", "multi-message")
        ]
        cost = [p.expected_messages_per_user for p in both]  # GKMPS counts its data message, BBGN's shares carry it
        assert type(protocol.instances[j]) is type(both[int(np.argmin(cost))])
    assert protocol.expected_messages_per_user < 150


def _mixed(n_users: int = 30) -> ClippedSum:
    """GKMPS21 on I_0 and I_1, BBGN20 on I_2 (at small n "auto" picks BBGN20 everywhere)."""
    methods = ("correlated", "correlated", "multi-message")
    instances = tuple(
        choose_instance(epsilon=8.0, delta=5e-7, n_users=n_users, domain=2**j, method=m) for j, m in enumerate(methods)
    )
    return ClippedSum(n_users=n_users, domain=4, instances=instances)


def test_fast_and_faithful_sub_domain_estimates_agree():
    protocol = _mixed()
    x = np.array([0, 1, 2, 3, 4] * 6)
    rng = np.random.default_rng(60)
    fast = np.array([protocol.sample_sub_domain_estimates(x, rng=rng)[0] for _ in range(1_500)])
    faithful = np.array(
        [protocol.sub_domain_estimates(protocol.shuffle(protocol.randomize(x, rng=rng), rng=rng))[0] for _ in range(1_500)]
    )
    views = np.array([protocol.sub_domain_estimates(protocol.sample_view(x, rng=rng))[0] for _ in range(1_500)])
    for j in range(protocol.n_sub_domains):
        assert_same_distribution(fast[:, j].astype(int), faithful[:, j].astype(int))
        assert_same_distribution(views[:, j].astype(int), faithful[:, j].astype(int))


def test_sub_domain_estimates_are_unbiased_with_the_stated_variance():
    protocol = _clipped(n_users=200, domain=64, epsilon=1.0)
    rng = np.random.default_rng(61)
    x = rng.integers(0, 65, size=200)
    sub = sub_domain_index(x)
    samples = np.array([protocol.sample_sub_domain_estimates(x, rng=rng)[0] for _ in range(3_000)])
    for j in range(protocol.n_sub_domains):
        truth = x[sub == j].sum()
        assert_mean(samples[:, j], truth, variance=protocol.sub_domain_variances()[j])
        assert_variance(samples[:, j], protocol.sub_domain_variances()[j])


def test_threshold_rule_does_not_overshoot_on_small_values():
    """Data in {0, 1}: tau overshoots (j* > 0) with probability <= beta (one-sided binomial test, alpha = 1e-6);
    every empty sub-domain passes with exactly its stated probability (two-sided)."""
    beta = 0.3
    protocol = _clipped(n_users=200, domain=2**10, epsilon=1.0, failure_probability=beta)
    rng = np.random.default_rng(62)
    x = rng.integers(0, 2, size=200)
    runs = 4_000
    results = [protocol.combine(protocol.sample_sub_domain_estimates(x, rng=rng)[None, 0]) for _ in range(runs)]
    overshoots = sum(int(r.clipping_index[0] > 0) for r in results)
    assert _binomial_upper_p(overshoots, runs, beta) >= FALSE_ALARM_RATE, overshoots
    passes = np.array([r.passed[0] for r in results]).sum(axis=0)
    stated = protocol.empty_pass_probability()
    assert np.all(stated <= beta / protocol.n_sub_domains)
    for j in range(1, protocol.n_sub_domains):
        p = stats.binomtest(int(passes[j]), runs, stated[j]).pvalue
        assert p >= FALSE_ALARM_RATE, (j, passes[j], stated[j])


def test_threshold_rule_faithful_path_on_small_values():
    beta = 0.3
    protocol = _clipped(n_users=50, domain=2**6, epsilon=2.0, failure_probability=beta)
    rng = np.random.default_rng(63)
    x = rng.integers(0, 2, size=50)
    runs = 300
    overshoots = sum(int(protocol.analyze_details(protocol.randomize(x, rng=rng)).clipping_index[0] > 0) for _ in range(runs))
    assert _binomial_upper_p(overshoots, runs, beta) >= FALSE_ALARM_RATE


def test_skewed_data_beats_the_full_domain_baseline():
    n, domain = 20_000, 2**20
    rng = np.random.default_rng(64)
    x = np.minimum(rng.zipf(2.5, n), 2**10)
    ours = ClippedSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=n, domain=domain)
    baseline = full_domain_correlated_sum(epsilon=1.0, delta=1e-6, n_users=n, domain=domain)
    ours_errors = np.abs([ours.run(x, rng=rng)[0] - x.sum() for _ in range(30)])
    baseline_errors = np.abs([baseline.run(x, rng=rng)[0] - x.sum() for _ in range(30)])
    assert np.median(ours_errors) * 10 < np.median(baseline_errors)


def test_real_inputs_are_discretised_without_bias():
    protocol = _clipped(n_users=200, domain=2**8, epsilon=1.0, resolution=0.01)
    rng = np.random.default_rng(65)
    x = rng.uniform(0.0, 0.3, size=200)
    estimates = np.array([protocol.run(x, rng=rng)[0] for _ in range(2_000)])
    assert abs(np.median(estimates) - x.sum()) < 1.0  # ~ 30-unit noise times 0.01
    with pytest.raises(InvalidParameterError, match="'x'"):
        protocol.run(np.full(200, 2.57))


def test_average_messages_count_data_only_in_correlated_sub_domains():
    protocol = ClippedSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=100_000, domain=2**10)
    assert isinstance(protocol.instances[0], CorrelatedNoiseSum)
    zeros, ones = np.zeros(100_000, dtype=int), np.ones(100_000, dtype=int)
    assert protocol.average_messages_per_user(ones) == pytest.approx(protocol.average_messages_per_user(zeros) + 1.0)
    assert protocol.average_messages_per_user(ones) <= protocol.expected_messages_per_user + 1e-12


def test_clipped_validation_names_the_parameter():
    protocol = _clipped()
    with pytest.raises(InvalidParameterError, match="'x'"):
        protocol.run(np.full(60, 17))
    with pytest.warns(PrivacyLeakWarning):
        protocol.run(
            np.zeros(59, dtype=int)
        )  # fewer users: the achieved guarantee is weaker (tests/sums/test_clipped_streaming.py)
    with pytest.raises(InvalidParameterError, match="'x'"):
        protocol.run(np.zeros(61, dtype=int))  # more: the BBGN20 instances' moduli are sized for n_users
    with pytest.raises(InvalidParameterError, match="'domain'"):
        ClippedSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=60, domain=12)
    with pytest.raises(InvalidParameterError, match="'method'"):
        ClippedSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=60, domain=16, method="fastest")
    with pytest.raises(InvalidParameterError, match="'calibration'"):
        ClippedSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=60, domain=16, calibration="tight")
    with pytest.raises(InvalidParameterError, match="'epsilon'"):
        ClippedSum.from_privacy(epsilon=-1.0, delta=1e-6, n_users=60, domain=16)
    with pytest.raises(InvalidParameterError, match="'instances'"):
        ClippedSum(n_users=60, domain=16, instances=protocol.instances[:-1])
    with pytest.raises(InvalidParameterError, match="'failure_probability'"):
        ClippedSum(n_users=60, domain=16, instances=protocol.instances, failure_probability=0.0)
    with pytest.raises(InvalidParameterError, match="'resolution'"):
        ClippedSum(n_users=60, domain=16, instances=protocol.instances, resolution=-1.0)
    with pytest.raises(InvalidParameterError, match="'view'"):
        protocol.analyze(MessageBatch(np.zeros(1, dtype=int), np.array([-1]), n_instances=protocol.n_sub_domains))


# --------------------------------------------------------------------------- baselines and central reference
def test_full_domain_correlated_baseline_rounds():
    baseline = full_domain_correlated_sum(epsilon=1.0, delta=1e-6, n_users=10_000, domain=2**20)
    assert isinstance(baseline, CorrelatedNoiseSum) and baseline.levels == 100 and baseline.scale == 2**20 / 100


def test_central_clipped_sum_noise_law_and_labels():
    central = CentralClippedSum(epsilon=1.0, clipping_bound=4, noise_source="numpy")
    x = np.array([1, 2, 9, 3])
    rng = np.random.default_rng(66)
    errors = np.array([central.release(x, rng=rng) - 10 for _ in range(4_000)]).astype(int)  # 9 clipped to 4
    support = np.arange(-60, 61)
    assert_matches_pmf(errors, support, discrete_laplace_pmf(support, math.exp(-1.0 / 4)))
    assert central.guarantee.epsilon == 1.0
    assert CentralClippedSum(epsilon=1.0).guarantee.epsilon == math.inf  # the oracle is not private
    opendp = CentralClippedSum(epsilon=1.0, clipping_bound=4)
    assert abs(opendp.release(x) - 10) < 200
    with pytest.raises(InvalidParameterError, match="'noise_source'"):
        CentralClippedSum(epsilon=1.0, noise_source="laplace")
    with pytest.raises(InvalidParameterError, match="'x'"):
        central.release(np.array([-1, 2]))


# --------------------------------------------------------------------------- private central reference
def _selection_law(x: np.ndarray, domain: int, epsilon1: float, k: int) -> np.ndarray:
    """The exponential mechanism's law, recomputed here from its definition (independent of the class)."""
    n = len(x)
    scores = []
    for j in range(domain.bit_length()):
        clipped = sum(1 for v in x if v > 2**j)
        previous = n if j == 0 else sum(1 for v in x if v > 2 ** (j - 1))
        scores.append(-max(clipped - k, 0) - max(k - previous, 0))
    weights = np.exp(epsilon1 * np.array(scores, dtype=float) / 2)
    return weights / weights.sum()


def _release_pmf(central: PrivateCentralClippedSum, x: np.ndarray, outputs: np.ndarray) -> np.ndarray:
    law = _selection_law(x, central.domain, central.selection_epsilon, central.target_rank)
    pmf = np.zeros(outputs.size)
    for j, p in enumerate(law):
        tau = 2**j
        pmf += p * discrete_laplace_pmf(outputs - int(np.minimum(x, tau).sum()), math.exp(-central.release_epsilon / tau))
    return pmf


def test_private_central_selection_law_matches_its_definition():
    central = PrivateCentralClippedSum(epsilon=1.3, domain=2**6, failure_probability=0.2, selection_fraction=0.4)
    rng = np.random.default_rng(67)
    for _ in range(20):
        x = rng.integers(0, 65, size=int(rng.integers(1, 40)))
        expected = _selection_law(x, 2**6, central.selection_epsilon, central.target_rank)
        np.testing.assert_allclose(central.selection_probabilities(x), expected, rtol=1e-12)


def test_private_central_is_epsilon_dp_under_replace_one_exactly():
    """Every replace-one neighbour of small datasets: the exact output law's log-ratio is at most epsilon on a
    window holding all but 1e-12 of the mass, and the selection alone is within epsilon_1 everywhere."""
    central = PrivateCentralClippedSum(epsilon=1.0, domain=8, failure_probability=0.3, selection_fraction=0.5)
    outputs = np.arange(-700, 800)
    rng = np.random.default_rng(68)
    worst_selection = worst_release = 0.0
    for _ in range(6):
        base = rng.integers(0, 9, size=int(rng.integers(2, 12)))
        for i in range(base.size):
            for value in range(9):
                neighbour = base.copy()
                neighbour[i] = value
                p, q = central.selection_probabilities(base), central.selection_probabilities(neighbour)
                worst_selection = max(worst_selection, float(np.max(np.abs(np.log(p / q)))))
                a, b = _release_pmf(central, base, outputs), _release_pmf(central, neighbour, outputs)
                assert a.sum() > 1 - 1e-12 and b.sum() > 1 - 1e-12
                worst_release = max(worst_release, float(np.max(np.abs(np.log(a / b)))))
    assert worst_selection <= central.selection_epsilon * (1 + 1e-9)
    assert worst_release <= central.epsilon * (1 + 1e-9)
    assert worst_release > 0.5 * central.epsilon  # the check is not vacuous


def test_private_central_release_follows_its_law():
    central = PrivateCentralClippedSum(epsilon=2.0, domain=2**5, failure_probability=0.3)
    rng = np.random.default_rng(69)
    x = rng.integers(0, 33, size=30)
    outputs = np.arange(-300, 1_400)
    samples = np.array([central.release(x, rng=rng) for _ in range(4_000)]).astype(int)
    assert_matches_pmf(samples, outputs, _release_pmf(central, x, outputs))


def test_private_central_does_not_overshoot_small_values():
    """tau > 2 max(x) only with probability <= beta (exact law; n >= k)."""
    central = PrivateCentralClippedSum(epsilon=1.0, domain=2**20, failure_probability=0.1)
    x = np.random.default_rng(70).integers(0, 40, size=2_000)
    law = central.selection_probabilities(x)
    assert law[np.arange(law.size) > 6].sum() <= 0.1  # 2^6 = 64 < 80 = 2 * max
    assert central.guarantee.epsilon == 1.0 and central.guarantee.delta == 0.0


def test_private_central_validation_names_the_parameter():
    for kwargs, name in (
        ({"epsilon": 0.0, "domain": 8}, "epsilon"),
        ({"epsilon": 1.0, "domain": 6}, "domain"),
        ({"epsilon": 1.0, "domain": 8, "failure_probability": 0.0}, "failure_probability"),
        ({"epsilon": 1.0, "domain": 8, "selection_fraction": 1.0}, "selection_fraction"),
    ):
        with pytest.raises(InvalidParameterError, match=f"'{name}'"):
            PrivateCentralClippedSum(**kwargs)
    with pytest.raises(InvalidParameterError, match="'x'"):
        PrivateCentralClippedSum(epsilon=1.0, domain=8).release(np.array([1, 9]))


# --------------------------------------------------------------------------- zero-out relation
def _instance_inputs(protocol: ClippedSum, value: int) -> np.ndarray:
    """One user's input to every sub-domain instance (the user-by-sub-domain table's row)."""
    return np.array([int(column[0, 0]) for column in protocol._columns(np.array([[value]]))])


def _noise_loss_profile(protocol: ClippedSum, x: np.ndarray, y: np.ndarray) -> PrivacyProfile:
    """Exact profile of the instances' noisy totals (input totals plus each instance's ``DLap(a_j)``) on datasets ``x``, ``y``.

    For a shift ``s >= 0`` the loss of ``DLap(a)`` at ``k`` is ``|k - s| - |k|`` times ``log(1/a)``: it is constant for
    ``k <= 0`` (mass ``1/(1+a)``) and for ``k >= s`` (mass ``a^s/(1+a)``), so the law of the loss has ``s + 1`` atoms.
    The instances are independent: the joint pair is the outer product of the per-instance pairs.
    """
    p_joint, q_joint = np.ones(1), np.ones(1)
    shifts = np.abs(sum(_instance_inputs(protocol, int(v)) for v in x) - sum(_instance_inputs(protocol, int(v)) for v in y))
    for instance, shift in zip(protocol.instances, shifts, strict=True):
        a = instance.central_ratio if isinstance(instance, CorrelatedNoiseSum) else instance.noise_ratio
        k = np.arange(shift + 1)
        p = (1 - a) / (1 + a) * a**k
        p[0], p[-1] = 1 / (1 + a), a**shift / (1 + a)
        if shift == 0:
            p = np.ones(1)
        p_joint, q_joint = np.outer(p_joint, p).ravel(), np.outer(q_joint, p[::-1]).ravel()
    return PrivacyProfile(p_joint, q_joint)


def test_zero_out_changes_one_instance_and_replace_one_at_most_two():
    protocol = ClippedSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1_000, domain=2**4, method="multi-message")
    widths = 2 ** np.arange(protocol.n_sub_domains)
    for value in range(protocol.domain + 1):
        for other in range(protocol.domain + 1):
            change = np.abs(_instance_inputs(protocol, value) - _instance_inputs(protocol, other))
            assert np.all(change <= widths)
            assert np.count_nonzero(change) <= (1 if other == 0 else 2)
    assert np.count_nonzero(_instance_inputs(protocol, 16) - _instance_inputs(protocol, 1)) == 2  # the halving is needed


def test_zero_out_runs_every_instance_at_the_full_budget():
    replace = ClippedSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=100_000, domain=2**20)
    zero_out = ClippedSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=100_000, domain=2**20, neighbouring="zero-out")
    assert zero_out.event.parts_per_user == 1 and replace.event.parts_per_user == 2
    for half, full in zip(replace.instances, zero_out.instances, strict=True):
        assert full.guarantee.epsilon == pytest.approx(2 * half.guarantee.epsilon, rel=1e-9)
    guarantee = zero_out.guarantee
    assert guarantee.neighbouring.value == "zero-out" and guarantee.epsilon <= 1.0 and guarantee.delta <= 1e-6
    assert zero_out.event.pld().epsilon(1e-6) <= 1.0 + 3e-9  # the PLD's epsilon is rounded up by a relative 1e-9
    implied = zero_out_to_replace_one(guarantee)
    assert implied.epsilon == pytest.approx(2 * guarantee.epsilon) and implied.neighbouring.value == "replace-one"
    assert np.all(zero_out.thresholds < replace.thresholds)
    with pytest.raises(InvalidParameterError, match="'neighbouring'"):
        ClippedSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1_000, domain=16, neighbouring="add-remove")
    with pytest.raises(InvalidParameterError, match="'neighbouring'"):
        ClippedSum(n_users=1_000, domain=1, instances=zero_out.instances[:1], neighbouring="swap")


@pytest.mark.parametrize("neighbouring", ["replace-one", "zero-out"])
def test_noise_of_every_neighbouring_pair_is_within_the_instance_budget_exactly(neighbouring):
    protocol = ClippedSum.from_privacy(
        epsilon=1.0, delta=1e-6, n_users=1_000, domain=2**3, method="multi-message", neighbouring=neighbouring
    )
    base = np.array([0, 3, 8])
    worst = 0.0
    for index in range(base.size):
        for value in [0] if neighbouring == "zero-out" else range(protocol.domain + 1):
            other = base.copy()
            other[index] = value
            worst = max(worst, _noise_loss_profile(protocol, base, other).epsilon(0.0))
    assert worst <= protocol.guarantee.epsilon * (1 + 1e-9)
    assert worst >= 0.45 * protocol.guarantee.epsilon  # the noise's pure part is most of the budget


def test_zero_out_calibration_is_not_a_replace_one_guarantee():
    zero_out = ClippedSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1_000, domain=2**3, neighbouring="zero-out")
    moved = _noise_loss_profile(zero_out, np.array([8, 0]), np.array([4, 0]))  # 8 -> 4: two sub-domains change
    assert moved.epsilon(0.0) > zero_out.guarantee.epsilon
    assert moved.epsilon(0.0) <= zero_out_to_replace_one(zero_out.guarantee).epsilon * (1 + 1e-9)


def test_vector_sum_under_zero_out_composes_full_budget_coordinates():
    kwargs = dict(epsilon=4.0, delta=1e-6, n_users=500, dimension=6, radius=1.0, levels=2**8)
    replace = ClippedVectorSum.from_privacy(**kwargs)
    zero_out = ClippedVectorSum.from_privacy(**kwargs, neighbouring="zero-out")
    assert zero_out.guarantee.neighbouring.value == "zero-out" and zero_out.guarantee.epsilon <= 4.0
    assert zero_out.coordinate.event.parts_per_user == 1
    per_instance = [p.guarantee.epsilon for p in zero_out.coordinate.instances]
    assert per_instance == pytest.approx([2 * p.guarantee.epsilon for p in replace.coordinate.instances], rel=1e-9)
    with pytest.raises(InvalidParameterError, match="'headline'"):
        ClippedVectorSum(n_users=500, dimension=6, radius=1.0, coordinate=zero_out.coordinate, headline=replace.guarantee)
