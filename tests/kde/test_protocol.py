"""Tests of the shuffled-DP KDE protocol (seed 001 Algorithm 1). Statistical tests: alpha = 1e-6."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import privsum.kde._rounding as rounding
import privsum.kde.protocol as protocol_module
from privsum.accounting.guarantee import Neighbouring
from privsum.bitsum import (
    CentralGaussianBitSum,
    CentralLaplaceBitSum,
    ExactBitSum,
    LocalRRBitSum,
    PureBitSum,
    RRBitSum,
    ThreeNBBitSum,
)
from privsum.exceptions import InvalidParameterError
from privsum.kde import KDEFunction, ShuffledKDE, seed_composition_epsilon, seed_per_instance_epsilon
from privsum.lsq import L2LSH, IdentityFeatures, RandomFourierFeatures
from privsum.testing import ProtocolConformance, assert_mean, assert_same_distribution, assert_variance, two_sided_z

N_USERS = 200
DIMENSION = 3


def unit_points(n: int, seed: int, dimension: int = DIMENSION) -> np.ndarray:
    points = np.random.default_rng(seed).standard_normal((n, dimension))
    return points / np.linalg.norm(points, axis=1, keepdims=True)


def rff(repetitions: int = 8, seed: int = 0) -> RandomFourierFeatures:
    return RandomFourierFeatures(dimension=DIMENSION, n_repetitions=repetitions, seed=seed)


BITSUMS = {
    "exact": lambda n: ExactBitSum(n_users=n),
    "rr": lambda n: RRBitSum(n_users=n, flip_probability=0.1, delta=1e-6),
    "3nb": lambda n: ThreeNBBitSum(n_users=n, noise_ratio=0.6, flooding_shape=3.0, flooding_ratio=0.5, delta=1e-6),
    "pure": lambda n: PureBitSum(n_users=n, drop_probability=0.3, noise_ratio=0.4),
    "local-rr": lambda n: LocalRRBitSum(n_users=n, flip_probability=0.2),
    "central-laplace": lambda n: CentralLaplaceBitSum(n_users=n, scale=2.0, noise_source="numpy"),
    "central-gaussian": lambda n: CentralGaussianBitSum(n_users=n, scale=2.0, delta=1e-6, noise_source="numpy"),
}


class TestShuffledKDEConformance(ProtocolConformance):
    calibration_targets = (
        {"family": rff(4), "protocol": ThreeNBBitSum, "epsilon": 3.0, "delta": 1e-6, "n_users": 50},
        {"family": rff(4), "protocol": PureBitSum, "epsilon": 3.0, "delta": 0.0, "n_users": 50},
        {"family": rff(4), "protocol": LocalRRBitSum, "epsilon": 3.0, "delta": 1e-6, "n_users": 50, "accounting": "seed"},
    )

    def make_protocol(self) -> ShuffledKDE:
        return ShuffledKDE(family=rff(4), bitsum=BITSUMS["3nb"](40), delta=1e-6, chunk_size=16)

    def make_input(self, rng: np.random.Generator) -> np.ndarray:
        return unit_points(40, int(rng.integers(1 << 30)))


class TestConformanceCentral(TestShuffledKDEConformance):
    calibration_targets = ()

    def make_protocol(self) -> ShuffledKDE:
        return ShuffledKDE(family=rff(4), bitsum=BITSUMS["central-laplace"](40), chunk_size=16)


def lsq_coefficients(family, points: np.ndarray) -> np.ndarray:
    """``sum_u f_i(x_u)_j``: what ``F_ij`` estimates given the draws."""
    return family.f(points).sum(axis=0)


@pytest.mark.parametrize("name", sorted(BITSUMS))
def test_coefficients_unbiased_with_the_predicted_variance(name: str) -> None:
    """``F_ij`` has mean ``sum_u f_i(x_u)_j`` and variance ``4 R^2 (sum_u p(1-p) + Var_bitsum)``."""
    family = rff(6)
    points = unit_points(N_USERS, 1)
    kde = ShuffledKDE(family=family, bitsum=BITSUMS[name](N_USERS), delta=1e-6, chunk_size=64)
    probabilities = 0.5 * (1 + family.f(points) / family.bound)
    expected_ones = probabilities.sum(axis=0).ravel()
    rounding = (probabilities * (1 - probabilities)).sum(axis=0).ravel()
    variance = 4 * family.bound**2 * (rounding + np.asarray(kde.bitsum.variance(expected_ones), dtype=float))
    generator = np.random.default_rng(2)
    runs = np.array([kde.run(points, rng=generator).coefficients.ravel() for _ in range(300)])
    standardised = (runs - lsq_coefficients(family, points).ravel()) / np.sqrt(variance)
    assert_mean(standardised, 0.0, variance=1.0)
    if name != "exact":
        assert_variance(standardised, 1.0)


@pytest.mark.parametrize("name", ["exact", "3nb", "central-gaussian"])
def test_estimate_unbiased_for_the_exact_kde(name: str) -> None:
    """Over fresh public draws and private noise, the mean estimate is the exact Gaussian KDE."""
    points = unit_points(N_USERS, 3)
    queries = unit_points(3, 4) * 0.5
    exact = rff().kernel(points, queries).mean(axis=0)
    generator = np.random.default_rng(5)
    estimates = []
    for seed in range(300):
        kde = ShuffledKDE(family=rff(8, seed=seed), bitsum=BITSUMS[name](N_USERS), delta=1e-6)
        estimates.append(kde.run(points, rng=generator)(queries))
    estimates = np.array(estimates)
    for column in range(queries.shape[0]):
        assert_mean(estimates[:, column], exact[column], alpha=1e-6 / queries.shape[0])


def measured_sup_rmse_test(protocol_name: str, n_users: int, repetitions: int, trials: int, n_queries: int = 1000) -> None:
    """Measured supRMSE over ``n_queries`` stays within Theorem 3.2's bound (one-sided, Bonferroni over queries)."""
    points = unit_points(n_users, 6)
    queries = unit_points(n_queries, 7) * np.random.default_rng(8).uniform(0, 1.5, size=(n_queries, 1))
    exact = rff().kernel(points, queries).mean(axis=0)
    generator = np.random.default_rng(9)
    squared = np.empty((trials, n_queries))
    bound = None
    for trial in range(trials):
        kde = ShuffledKDE(family=rff(repetitions, seed=100 + trial), bitsum=BITSUMS[protocol_name](n_users), delta=1e-6)
        bound = kde.sup_rmse_bound()
        squared[trial] = (kde.run(points, rng=generator)(queries) - exact) ** 2
    mse = squared.mean(axis=0)
    worst = int(np.argmax(mse))
    standard_error = squared[:, worst].std(ddof=1) / math.sqrt(trials)
    critical = two_sided_z(2e-6 / n_queries)  # one-sided 1e-6, over all queries
    assert mse[worst] <= bound**2 + critical * standard_error, (math.sqrt(mse[worst]), bound)


@pytest.mark.parametrize("name", ["rr", "3nb"])
def test_sup_rmse_within_theorem_bound(name: str) -> None:
    measured_sup_rmse_test(name, n_users=300, repetitions=32, trials=30)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BITSUMS))
def test_sup_rmse_within_theorem_bound_large(name: str) -> None:
    measured_sup_rmse_test(name, n_users=2000, repetitions=128, trials=60)


@pytest.mark.parametrize("name", ["rr", "3nb", "central-laplace", "pure"])
def test_chunked_equals_unchunked_in_distribution(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Small user chunks and repetition blocks give the same view distribution as one pass."""
    family = rff(6)
    points = unit_points(60, 10)
    bitsum = BITSUMS[name](60)
    whole = ShuffledKDE(family=family, bitsum=bitsum, chunk_size=10_000)
    chunked = ShuffledKDE(family=family, bitsum=bitsum, chunk_size=7)
    monkeypatch.setattr(protocol_module, "_BLOCK_ENTRIES", 20)  # 7 users x 2 repetitions per block
    first = [whole.sample_view(points, rng=seed).counts[3] for seed in range(2000)]
    second = [chunked.sample_view(points, rng=10_000 + seed).counts[3] for seed in range(2000)]
    for column in range(len(bitsum.alphabet)):
        assert_same_distribution(np.array(first)[:, column], np.array(second)[:, column], alpha=1e-6 / len(bitsum.alphabet))


@pytest.mark.parametrize("name", ["rr", "3nb", "central-laplace"])
def test_fast_path_equals_faithful_path_in_distribution(name: str) -> None:
    kde = ShuffledKDE(family=rff(3), bitsum=BITSUMS[name](40), chunk_size=16)
    points = unit_points(40, 11)
    fast = [kde.sample_view(points, rng=seed).counts[1] for seed in range(1500)]
    faithful = [kde.view(kde.randomize(points, rng=5000 + seed)).counts[1] for seed in range(1500)]
    for column in range(len(kde.alphabet)):
        assert_same_distribution(np.array(fast)[:, column], np.array(faithful)[:, column], alpha=1e-6 / len(kde.alphabet))


def test_iterable_of_chunks_equals_array_input() -> None:
    kde = ShuffledKDE(family=rff(4), bitsum=BITSUMS["3nb"](50), chunk_size=10)
    points = unit_points(50, 12)
    parts = [points[start : start + 10] for start in range(0, 50, 10)]
    assert kde.sample_view(points, rng=3) == kde.sample_view(iter(parts), rng=3)


def test_fewer_users_than_calibrated_warns_once() -> None:
    from privsum.exceptions import PrivacyLeakWarning

    kde = ShuffledKDE(family=rff(2), bitsum=BITSUMS["rr"](100), chunk_size=5)
    with pytest.warns(PrivacyLeakWarning) as record:
        kde.run(unit_points(20, 13), rng=0)
    assert len([w for w in record if issubclass(w.category, PrivacyLeakWarning)]) == 1


def test_guarantee_reports_relation_and_touched_instances() -> None:
    bitsum = RRBitSum(n_users=100, flip_probability=0.2, delta=1e-8)
    lsh = L2LSH(dimension=DIMENSION, n_repetitions=5, n_buckets=8, seed=0)
    kde = ShuffledKDE(family=lsh, bitsum=bitsum, delta=1e-6, accounting="seed")
    assert kde.touched_per_repetition == 2 and kde.event.count == 10
    assert kde.guarantee.neighbouring is Neighbouring.REPLACE_ONE
    instance = bitsum.guarantee
    assert kde.guarantee.epsilon == pytest.approx(seed_composition_epsilon(instance.epsilon, 2, 5, 5e-7))
    assert kde.guarantee.delta == pytest.approx(10 * 1e-8 + 5e-7)
    released = kde.run(unit_points(100, 14), rng=1)
    assert released.guarantee == kde.guarantee and released.neighbouring is Neighbouring.REPLACE_ONE
    identity = ShuffledKDE(family=IdentityFeatures(dimension=4, n_repetitions=1), bitsum=bitsum, delta=1e-6)
    assert identity.touched_instances == 4


def test_no_privacy_baseline_reports_infinite_epsilon() -> None:
    kde = ShuffledKDE(family=rff(2), bitsum=ExactBitSum(n_users=10))
    assert kde.guarantee.epsilon == math.inf


def test_tight_accounting_beats_the_seed_calibration() -> None:
    family = rff(64)
    common = {"family": family, "protocol": ThreeNBBitSum, "epsilon": 2.0, "delta": 1e-6, "n_users": 1000}
    tight = ShuffledKDE.from_privacy(**common, accounting="tight")
    seed = ShuffledKDE.from_privacy(**common, accounting="seed")
    assert tight.bitsum.guarantee.epsilon > seed.bitsum.guarantee.epsilon
    assert float(tight.bitsum.rmse()) < float(seed.bitsum.rmse())
    assert tight.guarantee.epsilon <= 2.0 and seed.guarantee.epsilon <= 2.0
    assert tight.guarantee.epsilon >= 2.0 * (1 - 3e-3)  # the search uses the budget


FAST_PROTOCOLS = (PureBitSum, LocalRRBitSum, CentralLaplaceBitSum)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    epsilon=st.floats(0.2, 8.0),
    delta=st.sampled_from([0.0, 1e-8, 1e-5]),
    repetitions=st.integers(1, 40),
    protocol=st.sampled_from(FAST_PROTOCOLS),
    accounting=st.sampled_from(["tight", "seed"]),
)
def test_from_privacy_never_overshoots(epsilon: float, delta: float, repetitions: int, protocol, accounting: str) -> None:
    options = {"noise_source": "numpy"} if protocol is CentralLaplaceBitSum else {}
    kde = ShuffledKDE.from_privacy(
        family=rff(repetitions),
        protocol=protocol,
        epsilon=epsilon,
        delta=delta,
        n_users=500,
        accounting=accounting,
        protocol_options=options,
    )
    assert kde.guarantee.epsilon <= epsilon * (1 + 1e-9)
    assert kde.guarantee.delta <= delta * (1 + 1e-9)
    assert kde.guarantee.neighbouring is Neighbouring.REPLACE_ONE


@pytest.mark.parametrize("accounting", ["tight", "seed"])
@pytest.mark.parametrize("protocol", [RRBitSum, ThreeNBBitSum, CentralGaussianBitSum])
def test_from_privacy_never_overshoots_approximate(protocol, accounting: str) -> None:
    options = {"noise_source": "numpy"} if protocol is CentralGaussianBitSum else {}
    family = L2LSH(dimension=DIMENSION, n_repetitions=6, n_buckets=4, seed=0)
    kde = ShuffledKDE.from_privacy(
        family=family, protocol=protocol, epsilon=1.5, delta=1e-5, n_users=300, accounting=accounting, protocol_options=options
    )
    guarantee = kde.guarantee
    assert guarantee.epsilon <= 1.5 * (1 + 1e-9) and guarantee.delta <= 1e-5 * (1 + 1e-9)
    if accounting == "tight":  # independently recomposed: the claim is backed by the event
        assert kde.event.pld().epsilon(1e-5) <= 1.5 * (1 + 1e-9)
        assert kde.event.count == 12


def test_seed_per_instance_epsilon_is_the_largest() -> None:
    epsilon0 = seed_per_instance_epsilon(2.0, 1, 100, 5e-7)
    assert seed_composition_epsilon(epsilon0, 1, 100, 5e-7) <= 2.0
    assert seed_composition_epsilon(epsilon0 * 1.001, 1, 100, 5e-7) > 2.0


@pytest.mark.parametrize(
    ("arguments", "parameter"),
    [
        ({"family": "rff"}, "family"),
        ({"bitsum": 3}, "bitsum"),
        ({"delta": 1.5}, "delta"),
        ({"delta": float("nan")}, "delta"),
        ({"accounting": "exact"}, "accounting"),
        ({"chunk_size": 0}, "chunk_size"),
        ({"precision": "float16"}, "precision"),
    ],
)
def test_validation_names_the_parameter(arguments: dict, parameter: str) -> None:
    valid = {"family": rff(2), "bitsum": BITSUMS["rr"](10), "delta": 1e-6}
    with pytest.raises(InvalidParameterError, match=f"'{parameter}'"):
        ShuffledKDE(**{**valid, **arguments})


@pytest.mark.parametrize(
    ("arguments", "parameter"),
    [
        ({"epsilon": -1.0}, "epsilon"),
        ({"epsilon": float("nan")}, "epsilon"),
        ({"delta": 1.0}, "delta"),
        ({"n_users": 0}, "n_users"),
        ({"protocol": int}, "protocol"),
        ({"family": None}, "family"),
        ({"accounting": "pld"}, "accounting"),
        ({"precision": "half"}, "precision"),
    ],
)
def test_from_privacy_validation_names_the_parameter(arguments: dict, parameter: str) -> None:
    valid = {"family": rff(2), "protocol": PureBitSum, "epsilon": 1.0, "delta": 1e-6, "n_users": 10}
    with pytest.raises(InvalidParameterError, match=f"'{parameter}'"):
        ShuffledKDE.from_privacy(**{**valid, **arguments})


def test_inputs_outside_the_domain_raise() -> None:
    kde = ShuffledKDE(family=rff(2), bitsum=BITSUMS["rr"](10))
    with pytest.raises(InvalidParameterError, match="'x'"):
        kde.run(np.zeros((10, DIMENSION + 1)), rng=0)
    with pytest.raises(InvalidParameterError, match="'x'"):
        kde.run(np.full((10, DIMENSION), np.nan), rng=0)
    with pytest.raises(InvalidParameterError, match="'view'"):
        kde.analyze(ShuffledKDE(family=rff(3), bitsum=BITSUMS["rr"](10)).sample_view(unit_points(10, 0), rng=0))


def test_released_function_is_a_kde_function() -> None:
    released = ShuffledKDE(family=rff(4), bitsum=BITSUMS["exact"](30)).run(unit_points(30, 15), rng=0)
    assert isinstance(released, KDEFunction) and released.coefficients.shape == (4, 1)


@pytest.mark.parametrize("bandwidth", [1.0, 0.3])
@pytest.mark.parametrize("projected", [False, True])
@pytest.mark.parametrize("repetitions", [None, slice(3, 40), slice(0, 1)])
def test_in_place_fourier_features_equal_the_familys_bit_for_bit(bandwidth: float, projected: bool, repetitions) -> None:
    """The rounding is unbiased for exactly the values ``family.f`` returns: the fast features are those values."""
    from privsum.lsq import FastJLT

    projection = FastJLT(input_dimension=12, output_dimension=8, seed=3) if projected else None
    family = RandomFourierFeatures(dimension=12, n_repetitions=50, bandwidth=bandwidth, seed=4, projection=projection)
    points = unit_points(37, 12, dimension=12)
    workspace = rounding.Workspace()
    workspace.take("turns", (100, 100), np.float64).fill(np.nan)  # a larger, dirty buffer is reused
    fast = rounding.features(family, points, repetitions, workspace)
    expected = family.f(points, repetitions=repetitions)
    assert np.array_equal(fast, expected.reshape(expected.shape[0], -1))


def test_rounded_bits_have_the_feature_probabilities() -> None:
    """Each bit is 1 with probability ``(1 + f/R)/2``; buffers reused across calls do not leak between draws."""
    family = rff(5)
    points = unit_points(4, 13)
    expected = (1.0 + family.f(points).reshape(4, -1) / family.bound) / 2.0
    rng = np.random.default_rng(14)
    workspace = rounding.Workspace()
    draws = np.array([rounding.round_to_bits(family, points, rng, None, workspace).copy() for _ in range(4000)])
    for user in range(4):
        for column in range(5):
            p = expected[user, column]
            assert_mean(draws[:, user, column], p, variance=p * (1 - p), alpha=1e-6 / 20)


def test_single_precision_features_are_close_to_the_familys() -> None:
    """``precision="float32"`` features (at the benchmark's d = 768) are within 1e-4 of ``family.f``."""
    family = RandomFourierFeatures(dimension=768, n_repetitions=64, seed=5)
    points = unit_points(50, 15, dimension=768)
    single = rounding.features(family, points, None, rounding.Workspace(), "float32")
    assert single.dtype == np.float32
    np.testing.assert_allclose(single, family.f(points).reshape(50, -1), rtol=0, atol=1e-4)


def test_single_precision_coefficients_are_unbiased() -> None:
    """With float32 features, ``F_ij`` still has mean ``sum_u f_i(x_u)_j`` (the float64 values, to 1e-4 per user)."""
    family = rff(6)
    points = unit_points(N_USERS, 16)
    kde = ShuffledKDE(family=family, bitsum=BITSUMS["exact"](N_USERS), chunk_size=64, precision="float32")
    probabilities = 0.5 * (1 + family.f(points) / family.bound)
    variance = 4 * family.bound**2 * (probabilities * (1 - probabilities)).sum(axis=0).ravel()
    generator = np.random.default_rng(17)
    runs = np.array([kde.run(points, rng=generator).coefficients.ravel() for _ in range(300)])
    assert_mean((runs - lsq_coefficients(family, points).ravel()) / np.sqrt(variance), 0.0, variance=1.0)


def test_precision_is_passed_on_by_from_privacy() -> None:
    kde = ShuffledKDE.from_privacy(family=rff(2), protocol=PureBitSum, epsilon=1.0, delta=0.0, n_users=10, precision="float32")
    assert kde.precision == "float32"


def test_fewer_participants_release_the_achieved_guarantee_and_their_count() -> None:
    bitsum = RRBitSum(n_users=100, flip_probability=0.2, delta=1e-8)
    kde = ShuffledKDE(family=rff(2), bitsum=bitsum, delta=1e-6, accounting="seed", chunk_size=7)
    achieved = kde.guarantee_for_participants(40)
    instance = bitsum.event_for_participants(40).guarantee
    touched = kde.touched_per_repetition
    expected = seed_composition_epsilon(instance.epsilon, touched, 2, 5e-7)  # Theorem 3.2 by hand
    assert achieved.epsilon == pytest.approx(expected) and achieved.epsilon > kde.guarantee.epsilon
    assert kde.event_for_participants(40).count == kde.touched_instances
    assert kde.guarantee_for_participants(100) == kde.guarantee == kde.guarantee_for_participants(150)
    with pytest.warns(Warning):
        released = kde.run(iter([unit_points(25, 15), unit_points(15, 16)]), rng=0)
    assert released.n_users == 40 and released.guarantee == achieved


def test_fewer_participants_keep_the_coefficients_unbiased() -> None:
    kde = ShuffledKDE(family=IdentityFeatures(dimension=2, n_repetitions=1), bitsum=BITSUMS["3nb"](80), chunk_size=9)
    points = np.tile([[0.5, -0.25]], (30, 1))
    with pytest.warns(Warning):
        coefficients = np.array([kde.run(points, rng=seed).coefficients.ravel() for seed in range(600)])
    exact = kde.family.f(points).reshape(30, -1).sum(axis=0)
    variance = 4 * kde.family.bound**2 * (float(kde.bitsum.variance()) * 30 / 80 + 30 * 0.25)
    for j in range(coefficients.shape[1]):
        assert_mean(coefficients[:, j], float(exact[j]), variance=variance)


@pytest.mark.parametrize("name", ["exact", "3nb"])
def test_debiased_lsh_estimate_is_unbiased_for_the_collision_kernel(name: str) -> None:
    """With folded L2-LSH the estimate targets k + (1 - k)/Q; ``debias=True`` targets the kernel k itself."""
    points = unit_points(N_USERS, 3)
    queries = unit_points(3, 4) * 0.5
    buckets = 4  # a large floor (1/4) makes the difference visible
    kernel = L2LSH(dimension=DIMENSION, n_repetitions=1, n_buckets=buckets, bucket_width=1.0, seed=0).kernel(points, queries)
    exact = kernel.mean(axis=0)
    generator = np.random.default_rng(6)
    raw, debiased = [], []
    for seed in range(400):
        family = L2LSH(dimension=DIMENSION, n_repetitions=4, n_buckets=buckets, bucket_width=1.0, seed=seed)
        released = ShuffledKDE(family=family, bitsum=BITSUMS[name](N_USERS), delta=1e-6).run(points, rng=generator)
        raw.append(released(queries))
        debiased.append(released(queries, debias=True))
    raw, debiased = np.array(raw), np.array(debiased)
    np.testing.assert_allclose(debiased, (raw - 1 / buckets) / (1 - 1 / buckets))
    for column in range(queries.shape[0]):
        assert_mean(debiased[:, column], exact[column], alpha=1e-6 / (2 * queries.shape[0]))
        assert_mean(raw[:, column], exact[column] + (1 - exact[column]) / buckets, alpha=1e-6 / (2 * queries.shape[0]))
    assert np.all(np.abs(raw.mean(axis=0) - exact) > 0.1)  # the floor is a real bias here (at least 0.1 off)


def test_debias_leaves_families_without_a_floor_unchanged_and_is_validated() -> None:
    points = unit_points(50, 1)
    released = ShuffledKDE(family=rff(4), bitsum=BITSUMS["exact"](50), delta=1e-6).run(points, rng=0)
    queries = unit_points(5, 2)
    np.testing.assert_array_equal(released(queries, debias=True), released(queries))
    with pytest.raises(InvalidParameterError, match="'debias'"):
        released(queries, debias=1)


def test_protocol_options_name_keywords_of_the_protocol() -> None:
    for options in ({"": 0}, {"epsilon": 1.0}, {"flooding": "paper"}):
        with pytest.raises(InvalidParameterError, match="'protocol_options' parameter of ShuffledKDE.from_privacy"):
            ShuffledKDE.from_privacy(family=rff(2), protocol="rr", epsilon=2.0, delta=1e-6, n_users=50, protocol_options=options)


def test_a_generic_instance_event_composes_exactly() -> None:
    """Pure instances (a generic (epsilon0, 0) event): the headline is the optimal composition, below the PLD's."""
    from privsum.accounting import optimal_composition

    kde = ShuffledKDE.from_privacy(family=rff(30), protocol="pure", epsilon=2.0, delta=1e-6, n_users=500)
    instance = kde.bitsum.guarantee
    assert kde.guarantee.epsilon == optimal_composition(instance, kde.event.count, 1e-6).epsilon <= 2.0
    assert kde.guarantee.epsilon <= kde.event.pld().epsilon(1e-6)
