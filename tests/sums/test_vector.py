"""Tests of the shuffled vector sum (seed 003). Statistical tests: false-alarm rate alpha = 1e-6, fixed seeds."""

from __future__ import annotations

import numpy as np
import pytest

from privsum.accounting import GuaranteeEvent, ProfileEvent
from privsum.exceptions import InvalidParameterError
from privsum.sums import ShuffledVectorSum, blanket_profile
from privsum.testing import ProtocolConformance, assert_mean, assert_same_distribution, assert_variance


class TestVectorConformance(ProtocolConformance):
    calibration_targets = ({"epsilon": 1.0, "delta": 1e-6, "n_users": 3_000, "dimension": 3, "precision": 2},)

    def make_protocol(self) -> ShuffledVectorSum:
        return ShuffledVectorSum(n_users=300, dimension=5, precision=3, blanket_probability=0.3, delta=1e-3)

    def make_input(self, rng: np.random.Generator) -> np.ndarray:
        return rng.random((300, 5))


class TestVectorManySamplesConformance(ProtocolConformance):
    def make_protocol(self) -> ShuffledVectorSum:
        return ShuffledVectorSum(
            n_users=5_000, dimension=3, precision=2, samples=2, blanket_probability=0.9, delta=0.5, accounting="analytic"
        )

    def make_input(self, rng: np.random.Generator) -> np.ndarray:
        return rng.random((5_000, 3))


@pytest.mark.parametrize(("samples", "dimension", "n_users"), [(1, 4, 400), (2, 3, 2_000)])
def test_unbiased_per_coordinate_with_the_stated_variance(samples, dimension, n_users):
    accounting = "tight" if samples == 1 else "analytic"
    protocol = ShuffledVectorSum(
        n_users=n_users,
        dimension=dimension,
        precision=1,
        samples=samples,
        blanket_probability=0.9,
        delta=0.5,
        accounting=accounting,
    )
    rng = np.random.default_rng(20)
    x = rng.random((n_users, dimension))
    estimates = np.array([protocol.run(x, rng=rng) for _ in range(3_000)])
    variance = protocol.variance(x)
    for j in range(dimension):
        assert_mean(estimates[:, j], x[:, j].sum(), variance=variance[j])
        assert_variance(estimates[:, j], variance[j])
    assert np.all(variance <= protocol.variance())


def test_debiased_sampled_sums_are_unbiased_for_the_reported_values():
    protocol = ShuffledVectorSum(n_users=300, dimension=3, precision=2, blanket_probability=0.4, delta=1e-3)
    rng = np.random.default_rng(21)
    x = rng.random((300, 3))
    errors = []
    for _ in range(2_000):
        coordinates, reports = protocol.local_reports(x, rng=rng)
        batch_counts = np.zeros((3, 3), dtype=np.int64)
        np.add.at(batch_counts, (coordinates.ravel(), reports.ravel()), 1)
        from privsum.shuffle import MessageHistogram

        debiased = protocol.debiased_sampled_sums(MessageHistogram(batch_counts, protocol.alphabet))
        truth = np.bincount(coordinates.ravel(), weights=np.take_along_axis(x, coordinates, axis=1).ravel(), minlength=3)
        errors.append(debiased - truth)
    assert_mean(np.array(errors)[:, 0], 0.0)


def test_fast_and_faithful_paths_agree_in_distribution():
    protocol = ShuffledVectorSum(n_users=100, dimension=3, precision=2, blanket_probability=0.3, delta=1e-3)
    x = np.random.default_rng(22).random((100, 3))
    rng = np.random.default_rng(23)
    values = np.arange(3)
    fast = [protocol.sample_view(x, rng=rng).counts[1] @ values for _ in range(2_000)]
    faithful = [protocol.view(protocol.shuffle(protocol.randomize(x, rng=rng), rng=rng)).counts[1] @ values for _ in range(2_000)]
    assert_same_distribution(np.array(fast), np.array(faithful))


def test_symmetric_inputs_are_mapped_and_mapped_back():
    protocol = ShuffledVectorSum(n_users=400, dimension=2, precision=3, blanket_probability=0.3, delta=1e-3, symmetric=True)
    x = np.tile([-0.5, 0.75], (400, 1))
    rng = np.random.default_rng(24)
    estimates = np.array([protocol.run(x, rng=rng) for _ in range(2_000)])
    variance = protocol.variance(x)
    assert_mean(estimates[:, 0], -200.0, variance=variance[0])
    assert_mean(estimates[:, 1], 300.0, variance=variance[1])


def test_t1_tight_profile_is_the_blanket_over_all_pairs():
    protocol = ShuffledVectorSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=3_000, dimension=3, precision=2)
    assert isinstance(protocol.event, ProfileEvent)
    profile = blanket_profile(protocol.blanket_probability, 9, 3_000)
    assert profile.delta(1.0) <= 1e-6


def test_seed_default_setting_picks_k_3():
    protocol = ShuffledVectorSum.from_privacy(epsilon=0.95, delta=0.5, n_users=50_000, dimension=100, calibration="analytic")
    assert protocol.precision == 3
    assert isinstance(protocol.event, GuaranteeEvent)
    assert protocol.guarantee.epsilon <= 0.95 * (1 + 1e-9)


def test_validation_names_the_parameter():
    protocol = ShuffledVectorSum(n_users=10, dimension=3, precision=2, blanket_probability=0.5, delta=1e-3)
    with pytest.raises(InvalidParameterError, match="'x'"):
        protocol.run(np.full((10, 4), 0.5))
    with pytest.raises(InvalidParameterError, match="'x'"):
        protocol.run(np.full((10, 3), -0.1))
    with pytest.raises(InvalidParameterError, match="'samples'"):
        ShuffledVectorSum(n_users=10, dimension=3, precision=2, samples=4, blanket_probability=0.5, delta=1e-3)
    with pytest.raises(InvalidParameterError, match="'accounting'"):
        ShuffledVectorSum(n_users=10, dimension=3, precision=2, samples=2, blanket_probability=0.5, delta=1e-3)
    with pytest.raises(InvalidParameterError, match="'calibration'"):
        ShuffledVectorSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1_000, dimension=3, samples=2)
    clipped = ShuffledVectorSum(n_users=10, dimension=3, precision=2, blanket_probability=0.5, delta=1e-3, clip=True)
    assert clipped.randomize(np.full((10, 3), 3.0), rng=0).values.max() <= 2


# ----------------------------------------------------------------- dropouts
def test_fewer_participants_weaken_the_guarantee_and_warn():
    from privsum import PrivacyLeakWarning

    protocol = ShuffledVectorSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=20_000, dimension=3)
    fewer = protocol.event_for_participants(5_000)
    independent = blanket_profile(protocol.blanket_probability, 3 * (protocol.precision + 1), 5_000).epsilon(1e-6)
    assert fewer.guarantee.epsilon == pytest.approx(independent) and independent > protocol.guarantee.epsilon
    assert protocol.event_for_participants(30_000) == protocol.event
    with pytest.warns(PrivacyLeakWarning):
        protocol.run(np.full((5_000, 3), 0.5), rng=0)


def test_symmetric_estimate_uses_the_users_in_the_view():
    protocol = ShuffledVectorSum(n_users=100, dimension=2, precision=3, blanket_probability=0.2, delta=1e-6, symmetric=True)
    x = np.random.default_rng(5).uniform(-1, 1, size=(160, 2))
    estimates = np.array([protocol.run(x, rng=seed) for seed in range(400)])
    for j in range(2):
        assert_mean(estimates[:, j], x[:, j].sum(), variance=float(protocol.variance(x)[j]))


# ----------------------------------------------------------------- estimators, against exact enumeration
def _exact_moments(protocol: ShuffledVectorSum, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of `analyze` by enumerating every user's coordinates and reports (tiny n, d, k)."""
    import itertools

    from privsum.shuffle import MessageHistogram

    k, gamma, d, t = protocol.precision, protocol.blanket_probability, protocol.dimension, protocol.samples
    unit = (1 + x) / 2 if protocol.symmetric else x

    def report_pmf(value: float) -> np.ndarray:
        low = int(np.floor(value * k))
        pmf = np.zeros(k + 1)
        pmf[low] += 1 - (value * k - low)
        if low < k:
            pmf[low + 1] += value * k - low
        return (1 - gamma) * pmf + gamma / (k + 1)

    subsets = list(itertools.combinations(range(d), t))
    per_user = []  # list over users of [(probability, ((coordinate, report), ...))]
    for row in unit:
        outcomes = []
        for subset in subsets:
            for reports in itertools.product(range(k + 1), repeat=t):
                p = np.prod([report_pmf(row[j])[y] for j, y in zip(subset, reports, strict=True)]) / len(subsets)
                outcomes.append((p, tuple(zip(subset, reports, strict=True))))
        per_user.append(outcomes)
    first, second = np.zeros(d), np.zeros(d)
    for combination in itertools.product(*per_user):
        counts = np.zeros((d, k + 1), dtype=np.int64)
        probability = 1.0
        for p, messages in combination:
            probability *= p
            for j, y in messages:
                counts[j, y] += 1
        estimate = protocol.analyze(MessageHistogram(counts, protocol.alphabet))
        first += probability * estimate
        second += probability * estimate**2
    return first, second - first**2


@pytest.mark.parametrize("estimator", ["report_count", "sampling_rate"])
@pytest.mark.parametrize(("samples", "dimension", "symmetric"), [(1, 2, False), (2, 3, False), (1, 2, True)])
def test_estimators_match_exact_enumeration(estimator, samples, dimension, symmetric):
    protocol = ShuffledVectorSum(  # t > 1 needs the analytic bound, finite only for many users: analyze 3 of them
        n_users=3 if samples == 1 else 10**6,
        dimension=dimension,
        precision=2,
        samples=samples,
        blanket_probability=0.3 if samples == 1 else 0.95,
        delta=0.5,
        accounting="tight" if samples == 1 else "analytic",
        symmetric=symmetric,
        estimator=estimator,
    )
    x = np.array([[0.1, 0.8, 0.35], [0.6, 0.25, 1.0], [0.9, 0.45, 0.0]])[:, :dimension]
    if symmetric:
        x = 2 * x - 1
    mean, variance = _exact_moments(protocol, x)
    np.testing.assert_allclose(variance, protocol.variance(x), rtol=1e-9)
    if samples == 1:
        assert np.all(variance <= protocol.variance() * (1 + 1e-12))
    truth = x.sum(axis=0)
    if estimator == "sampling_rate":
        np.testing.assert_allclose(mean, truth, rtol=1e-9, atol=1e-12)
    else:  # unbiased given a report; no report (probability (1 - t/d)^n) gives the centre of the domain
        empty = (1 - samples / dimension) ** 3
        centre = 0.0 if symmetric else 1.5
        np.testing.assert_allclose(mean, (1 - empty) * truth + empty * centre, rtol=1e-9, atol=1e-12)


def test_report_count_estimator_beats_the_sampling_rate_one_at_the_papers_default_point():
    # n = 5e4, d = 100, k = 3, t = 1, epsilon = 0.95, delta = 0.5 (the paper's defaults); exact variances.
    common = {"epsilon": 0.95, "delta": 0.5, "n_users": 50_000, "dimension": 100, "calibration": "analytic", "precision": 3}
    paper = ShuffledVectorSum.from_privacy(**common)
    scaled = ShuffledVectorSum.from_privacy(**common, estimator="sampling_rate")
    x = np.random.default_rng(30).random((50_000, 100))
    assert paper.estimator == "report_count"
    assert paper.variance(x).sum() < 0.5 * scaled.variance(x).sum()
    with pytest.raises(InvalidParameterError, match="'estimator'"):
        ShuffledVectorSum.from_privacy(**common, estimator="mean")
