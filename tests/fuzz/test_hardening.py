"""Regression tests for the hardening findings: no silent acceptance, no unbacked claim, no foreign crash.

Each test reproduces one reported input and checks the documented behaviour: a clear
`InvalidParameterError` naming the parameter the caller passed (and the public entry called), or a
correct result for valid input.
"""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest

from privsum._validation import MAX_EPSILON, check_epsilon, check_integer, check_real
from privsum.accounting import DiscreteGaussianEvent, PrivacyGuarantee
from privsum.accounting.events import _zcdp_delta
from privsum.apps import keep_probability, label_event, randomize_labels
from privsum.bitsum import CentralGaussianBitSum, CentralLaplaceBitSum, PureBitSum, RRBitSum, ThreeNBBitSum
from privsum.clipping import sub_domain_index
from privsum.exceptions import InvalidParameterError
from privsum.sketches import noise_scale
from privsum.sums import blanket_variance_bound, default_share_count
from privsum.testing import (
    assert_matches_pmf,
    assert_mean,
    assert_same_distribution,
    assert_variance,
    audit_samples,
    clopper_pearson,
)

N_USERS = 20


# --------------------------------------------------------------------------- core validator
@pytest.mark.parametrize("value", [10**400, -(10**400), 2**1024])
def test_integers_too_large_for_a_float_are_refused_clearly(value):
    with pytest.raises(InvalidParameterError, match="'x' parameter of f must be a finite real number"):
        check_real(value, "x", "f")
    with pytest.raises(InvalidParameterError, match="'epsilon' parameter of f"):
        check_epsilon(value, "f")


def test_huge_integers_are_shown_by_size_not_digits():
    with pytest.raises(InvalidParameterError, match="an integer of 401 digits") as caught:
        check_integer(10**400, "n", "f", low=1, high=2**62)
    assert len(str(caught.value)) < 200


def test_epsilon_message_states_the_supported_range():
    with pytest.raises(InvalidParameterError, match=r"must be a real number in \(0, 100\]\. Got -1"):
        check_epsilon(-1, "f")
    with pytest.raises(InvalidParameterError, match=r"must be a real number in \(0, 100\] or inf\."):
        check_epsilon(math.nan, "f", allow_infinite=True)
    assert check_epsilon(MAX_EPSILON, "f") == MAX_EPSILON
    assert check_epsilon(math.inf, "f", allow_infinite=True) == math.inf


@pytest.mark.parametrize("epsilon", [MAX_EPSILON * (1 + 1e-12), 710.0, 1e300, 10**400])
@pytest.mark.parametrize(
    "entry",
    [
        lambda e: RRBitSum.from_privacy(epsilon=e, delta=1e-6, n_users=N_USERS),
        lambda e: PureBitSum.from_privacy(epsilon=e, n_users=N_USERS),
        lambda e: keep_probability(e, 3),
        lambda e: label_event(e, 3),
    ],
)
def test_epsilon_above_the_maximum_is_refused(epsilon, entry):
    with pytest.raises(InvalidParameterError, match="'(label_)?epsilon' parameter of .* must be a real number in"):
        entry(epsilon)


# --------------------------------------------------------------------------- bits of every integer dtype
BIT_PROTOCOLS = [
    lambda: RRBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=N_USERS),
    lambda: ThreeNBBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=N_USERS),
    lambda: PureBitSum.from_privacy(epsilon=1.0, n_users=N_USERS),
    lambda: CentralLaplaceBitSum.from_privacy(epsilon=1.0, n_users=N_USERS, noise_source="numpy"),
    lambda: CentralGaussianBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=N_USERS, noise_source="numpy"),
]
BIT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool", "float16", "float32", "float64"]


@pytest.mark.parametrize("dtype", BIT_DTYPES)
@pytest.mark.parametrize("make", BIT_PROTOCOLS)
def test_zero_one_bits_of_every_dtype_give_the_same_run(make, dtype):
    protocol = make()
    bits = np.tile(np.arange(N_USERS) % 2, (3, 1)).T  # (n_users, 3)
    reference = protocol.run(bits.astype(np.int64), rng=1)
    assert np.array_equal(protocol.run(bits.astype(dtype), rng=1), reference)
    view = protocol.sample_view(bits.astype(dtype), rng=1)
    assert view.counts.dtype.kind == "i" and view.counts.shape[0] == 3
    messages = protocol.randomize(bits.astype(dtype), rng=1)
    assert messages.values.dtype.kind == "i"


@pytest.mark.parametrize("make", BIT_PROTOCOLS)
@pytest.mark.parametrize(
    "bits", [np.array([0, 1] * 10, dtype=object), np.array([0, 2] * 10, dtype=np.uint8), np.array([0, 255] * 10, dtype=np.uint8)]
)
def test_object_dtype_or_non_binary_bits_are_refused(make, bits):
    with pytest.raises(InvalidParameterError, match="'bits' parameter"):
        make().run(bits, rng=0)


# --------------------------------------------------------------------------- labels and sub-domains
@pytest.mark.parametrize(
    ("labels", "n_classes"),
    [([0.0, 1.0, 0.5, 2.0], 3), ([0, 1, 3], 3), ([-1, 0], 3), ([0, 1], 1), ([0, 1], math.inf), ([0, 1], 2.0), (["a"], 2)],
)
def test_randomize_labels_refuses_what_it_cannot_report(labels, n_classes):
    with pytest.raises(InvalidParameterError, match="parameter of randomize_labels"):
        randomize_labels(labels, n_classes, 1.0, np.random.default_rng(0))


def test_randomize_labels_returns_integer_labels_in_range():
    reported = randomize_labels(np.array([0.0, 1.0, 2.0] * 100), 3, 0.5, 0)
    assert reported.dtype == np.int64 and set(np.unique(reported)) <= {0, 1, 2}


@pytest.mark.parametrize(("epsilon", "n_classes"), [(math.inf, math.inf), (1.0, math.inf), (math.inf, 1), (1.0, 2.5)])
def test_label_event_checks_the_number_of_classes_even_without_privacy(epsilon, n_classes):
    with pytest.raises(InvalidParameterError, match="'n_classes' parameter of label_event"):
        label_event(epsilon, n_classes=n_classes)


@pytest.mark.parametrize("values", [[-1], [2.7], [1.0], [2**63], ["3"]])
def test_sub_domain_index_refuses_instead_of_mapping(values):
    with pytest.raises(InvalidParameterError, match="'values' parameter of sub_domain_index"):
        sub_domain_index(values)


def test_sub_domain_index_is_exact_up_to_int64():
    values = np.array([0, 1, 2, 3, 2**53, 2**53 + 1, 2**53 + 2, 2**62 + 1, 2**63 - 1], dtype=np.int64)
    expected = [0 if v <= 1 else (v - 1).bit_length() for v in values.tolist()]
    assert sub_domain_index(values).tolist() == expected


# --------------------------------------------------------------------------- events carry only backed claims
def test_discrete_gaussian_event_refuses_a_headline_its_sigma_does_not_back():
    with pytest.raises(InvalidParameterError, match="'headline' parameter of DiscreteGaussianEvent"):
        DiscreteGaussianEvent(1.0, PrivacyGuarantee(0.01, 1e-10))
    with pytest.raises(InvalidParameterError, match="'headline' parameter of DiscreteGaussianEvent"):
        DiscreteGaussianEvent(1000.0, PrivacyGuarantee(1e-4, 1e-10))  # beyond the exact check: zCDP must back it


@pytest.mark.parametrize("sigma", [1e-300, 0.0, -1.0, 3e16, math.nan, math.inf, 10**400])
def test_discrete_gaussian_sigma_is_bounded(sigma):
    with pytest.raises(InvalidParameterError, match="'sigma' parameter of DiscreteGaussianEvent"):
        DiscreteGaussianEvent(sigma, PrivacyGuarantee(1.0, 1e-6))


@pytest.mark.parametrize("sigma", [0.5, 2.0, 10.0, 60.0])
def test_zcdp_bound_is_above_the_exact_delta_and_at_delta_is_backed(sigma):
    """The cheap zCDP bound used to verify headlines never claims less delta than the exact PLD."""
    event = DiscreteGaussianEvent.at_delta(sigma, 1e-6)
    pld = event.pld()
    for epsilon in (0.05, 0.5, 1.0, 3.0):
        exact = pld.delta(epsilon)
        assert _zcdp_delta(1.0 / (2.0 * sigma**2), epsilon) >= exact * (1 - 1e-9) or exact < 1e-30
    assert pld.epsilon(1e-6) <= event.guarantee.epsilon + 1e-4  # the exact PLD backs the computed headline
    event.check_headline()


def test_central_gaussian_event_is_backed():
    protocol = CentralGaussianBitSum.from_privacy(epsilon=0.5, delta=1e-6, n_users=N_USERS, noise_source="numpy")
    protocol.event.check_headline()


# --------------------------------------------------------------------------- calibrations at the edges, errors naming the caller
def test_rr_with_a_delta_below_numerical_accuracy_falls_back_to_local_privacy():
    protocol = RRBitSum.from_privacy(epsilon=1.0, delta=1e-300, n_users=N_USERS)
    assert protocol.guarantee.epsilon <= 1.0 and protocol.guarantee.delta == 1e-300
    # the flip probability is (rounded towards privacy) the epsilon-LDP one, which meets any delta
    assert math.log((1 - protocol.flip_probability) / protocol.flip_probability) <= 1.0


def test_pure_bit_sum_refuses_an_epsilon_that_drops_every_bit():
    with pytest.raises(InvalidParameterError, match="'epsilon' parameter of PureBitSum"):
        PureBitSum.from_privacy(epsilon=1e-16, n_users=N_USERS)


@pytest.mark.parametrize(
    ("overrides", "name"),
    [({"levels": -3}, "levels"), ({"levels": 3}, "levels"), ({"n_users": 1}, "n_users"), ({"method": "x"}, "method")],
)
def test_clipped_vector_sum_refusals_name_its_own_parameters(overrides, name):
    from privsum.clipping import ClippedVectorSum

    arguments = {"epsilon": 1.0, "delta": 1e-6, "n_users": N_USERS, "dimension": 2, "radius": 1.0, "levels": 16}
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter of ClippedVectorSum.from_privacy") as caught:
        ClippedVectorSum.from_privacy(**{**arguments, **overrides})
    assert "ClippedSum.from_privacy" not in str(caught.value)


def test_calibrate_names_the_callers_parameter_when_told():
    from privsum.accounting.calibration import calibrate

    with pytest.raises(InvalidParameterError, match="'delta' parameter of SomeSum must be a target"):
        calibrate(
            lambda q: 1.0, target_delta=1e-9, lower=0.0, upper=1.0, more_private="increasing", caller=("SomeSum", "delta", 1e-9)
        )


# --------------------------------------------------------------------------- randomness
def test_distributed_seeds_carry_a_256_bit_pool():
    from privsum.distributed import spawn_seeds

    for rng in (7, np.random.default_rng(3)):
        seeds = spawn_seeds(rng, 3)
        assert all(seed.pool_size == 8 for seed in seeds)  # 8 x 32 = 256 bits, as secure_generator promises
        assert len(seeds[0].entropy) == 4 and max(seeds[0].entropy) >= 2**32  # four 64-bit words of entropy


@pytest.mark.parametrize("seed", [0, 7, np.int64(3), np.random.SeedSequence(1), np.random.PCG64(2)])
@pytest.mark.parametrize("cls", [CentralLaplaceBitSum, CentralGaussianBitSum])
def test_central_bit_sums_refuse_a_seed_their_opendp_sampler_would_ignore(cls, seed):
    arguments = {"epsilon": 1.0, "n_users": N_USERS} | ({"delta": 1e-6} if cls is CentralGaussianBitSum else {})
    protocol = cls.from_privacy(**arguments)  # default noise_source="opendp"
    bits = np.arange(N_USERS) % 2
    for entry in (protocol.run, protocol.sample_view, protocol.randomize):
        with pytest.raises(InvalidParameterError, match="'rng' parameter of .* cannot be seeded"):
            entry(bits, rng=seed)
    assert np.isfinite(protocol.run(bits, rng=None)).all()
    if importlib.util.find_spec("randomgen") is not None:  # rng="secure" needs the privsum[secure] extra
        assert np.isfinite(protocol.run(bits, rng="secure")).all()
    numpy_protocol = cls.from_privacy(**arguments, noise_source="numpy")  # reproducible noise: the numpy sampler
    assert np.array_equal(numpy_protocol.run(bits, rng=5), numpy_protocol.run(bits, rng=5))


def test_race_release_follows_the_same_seed_rule():
    from privsum.lsq import L2LSH
    from privsum.sketches import RACE

    sketch = RACE(L2LSH(dimension=2, n_repetitions=4, bucket_width=1.0, n_buckets=8, seed=0)).update(np.zeros((3, 2)))
    with pytest.raises(InvalidParameterError, match="'rng' parameter of .* cannot be seeded"):
        sketch.release(1.0, rng=0)
    assert sketch.release(1.0, rng="secure").counts.shape == (4, 8)


# --------------------------------------------------------------------------- every event class carries only a backed headline
def test_profile_event_refuses_a_headline_its_profile_misses():
    from privsum.accounting import ProfileEvent, randomized_response_profile

    with pytest.raises(InvalidParameterError, match="'headline' parameter of ProfileEvent"):
        ProfileEvent(randomized_response_profile(1.0), PrivacyGuarantee(0.5, 0.0))


def test_gaussian_event_refuses_a_headline_its_sigma_misses():
    from privsum.accounting import GaussianEvent

    with pytest.raises(InvalidParameterError, match="'headline' parameter of GaussianEvent"):
        GaussianEvent(1.0, 1.0, PrivacyGuarantee(0.1, 1e-9))


def test_skellam_event_computes_its_headline_from_its_parameters():
    from privsum.accounting import SkellamEvent

    event = SkellamEvent(mu=50.0, l2_sensitivity=2.0, l1_sensitivity=4.0, headline_delta=1e-6)
    assert event.guarantee.delta == 1e-6 and event.delta(event.guarantee.epsilon) <= 1e-6


def test_derived_events_report_only_the_composition_of_their_parts():
    from privsum.accounting import ComposedEvent, GuaranteeEvent, ParallelEvent, RelationEvent

    inner = GuaranteeEvent(PrivacyGuarantee(0.5, 1e-8))
    assert ComposedEvent(inner, 4).guarantee == PrivacyGuarantee(2.0, 4e-8)
    assert ParallelEvent((inner, inner), parts_per_user=2).guarantee == PrivacyGuarantee(1.0, 2e-8)
    assert RelationEvent(inner, "zero-out").guarantee == PrivacyGuarantee(0.5, 1e-8, "zero-out")


def test_composition_event_refuses_a_headline_no_composition_backs():
    from privsum.accounting import GuaranteeEvent
    from privsum.accounting.budget import ComposedEventWithHeadline, per_mechanism_budget

    single = GuaranteeEvent(PrivacyGuarantee(0.1, 1e-9))
    with pytest.raises(InvalidParameterError, match="'headline' parameter of ComposedEventWithHeadline"):
        ComposedEventWithHeadline(single, 400, PrivacyGuarantee(1.0, 1e-6))  # basic: 40; advanced at slack 6e-7: about 10
    for composition in ("advanced", "tight"):
        epsilon0, delta0, headline = per_mechanism_budget(1.0, 1e-6, 16, composition)
        assert ComposedEventWithHeadline(GuaranteeEvent(PrivacyGuarantee(epsilon0, delta0)), 16, headline).guarantee == headline


def test_clipped_vector_sum_refuses_a_forged_headline():
    import dataclasses

    from privsum.clipping import ClippedVectorSum

    honest = ClippedVectorSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=N_USERS, dimension=2, radius=1.0, levels=16)
    forged = PrivacyGuarantee(0.01, 1e-6, honest.headline.neighbouring)
    with pytest.raises(InvalidParameterError, match="'headline' parameter of ClippedVectorSum"):
        dataclasses.replace(honest, headline=forged)


def test_a_kde_function_carries_a_guarantee_only_from_a_release_or_a_load():
    """A released type must not report a guarantee its making does not back."""
    import dataclasses

    from privsum.bitsum import RRBitSum as Protocol
    from privsum.kde import KDEFunction, ShuffledKDE
    from privsum.lsq import RandomFourierFeatures

    family = RandomFourierFeatures(dimension=2, n_repetitions=4, seed=0)
    with pytest.raises(InvalidParameterError, match="'guarantee' parameter of KDEFunction"):
        KDEFunction(family, np.zeros((4, 1)), n_users=N_USERS, guarantee=PrivacyGuarantee(1.0, 1e-6))
    protocol = ShuffledKDE.from_privacy(family=family, protocol=Protocol, epsilon=4.0, delta=1e-6, n_users=N_USERS)
    released = protocol.run(np.zeros((N_USERS, 2)), rng=0)
    assert released.guarantee is not None and released.guarantee.epsilon <= 4.0
    assert KDEFunction.from_bytes(released.to_bytes()).guarantee == released.guarantee
    with pytest.raises(InvalidParameterError, match="'guarantee' parameter of KDEFunction"):
        dataclasses.replace(released, coefficients=released.coefficients + 1.0)  # other coefficients, same claim


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (
            lambda: __import__("privsum.clipping", fromlist=["x"]).CentralClippedSum(epsilon=1.0, clipping_bound=2**62),
            "clipping_bound",
        ),
        (
            lambda: __import__("privsum.clipping", fromlist=["x"]).CentralClippedSum(epsilon=1e-300, clipping_bound=4),
            "clipping_bound",
        ),
        (lambda: __import__("privsum.clipping", fromlist=["x"]).PrivateCentralClippedSum(epsilon=1e-12, domain=2**62), "domain"),
    ],
)
def test_central_clipped_sums_refuse_a_noise_ratio_that_rounds_to_one_naming_their_parameter(make, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter of (Private)?CentralClippedSum") as caught:
        make()
    assert "sample_discrete_laplace" not in str(caught.value)


@pytest.mark.parametrize("epsilon", [710.0, 1e300])
def test_numerical_accounting_refuses_a_guarantee_whose_pld_would_overflow(epsilon):
    from privsum.accounting import GuaranteeEvent

    with pytest.raises(InvalidParameterError, match="'headline' parameter of GuaranteeEvent .* numerical"):
        GuaranteeEvent(PrivacyGuarantee(epsilon, 1e-6)).epsilon(1e-6)


def test_sparse_vector_aggregation_refuses_a_forged_headline():
    import dataclasses

    from privsum.clipping import SparseVectorAggregation

    for calibration in ("analytic", "tight"):
        honest = SparseVectorAggregation.from_privacy(
            epsilon=1.0, delta=1e-6, n_users=N_USERS, dimension=4, calibration=calibration
        )
        assert dataclasses.replace(honest).headline == honest.headline  # the calibrated headline is backed
        with pytest.raises(InvalidParameterError, match="'headline' parameter of SparseVectorAggregation"):
            dataclasses.replace(honest, headline=PrivacyGuarantee(0.1, 1e-6))


# --------------------------------------------------------------------------- helpers and testing utilities
_DATES = np.array(["2024-01-01", "2024-01-02"], dtype="datetime64[D]")


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: blanket_variance_bound(1.0, 2, 100), "blanket_probability"),  # was ZeroDivisionError
        (lambda: blanket_variance_bound(math.nan, 2, 100), "blanket_probability"),  # was accepted
        (lambda: blanket_variance_bound(0.5, 2, 100, samples=1e308), "samples"),  # was OverflowError / inf
        (lambda: noise_scale(100, 0.0, "add-remove"), "epsilon"),  # was ZeroDivisionError
        (lambda: noise_scale("100", 1.0, "add-remove"), "n_rows"),  # was TypeError
        (lambda: default_share_count(1e308, 2**46, 10_000), "security_bits"),  # was OverflowError
        (lambda: clopper_pearson(math.nan, 10, 0.05), "successes"),  # was accepted
        (lambda: clopper_pearson(3, 10, math.nan), "alpha"),
        (lambda: audit_samples([math.nan] * 40, [0.0] * 40), "first"),
        (lambda: assert_mean([1.0, 2.0, math.nan], 1.5), "samples"),
        (lambda: assert_variance([1.0, 2.0, 3.0], math.nan), "expected"),
        (lambda: assert_matches_pmf([0, 1], [0, 1], [0.5, math.nan]), "pmf"),
        (lambda: assert_same_distribution(_DATES, _DATES), "first"),  # was accepted (cast to integers)
    ],
)
def test_helpers_and_testing_utilities_refuse_invalid_arguments(call, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter"):
        call()
