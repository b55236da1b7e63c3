"""The correlated-noise sum's certified delta bound (any number of levels) and its communication flooding."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privsum.accounting.cache import cached_calibration
from privsum.exceptions import InvalidParameterError
from privsum.sums import CorrelatedNoiseSum
from privsum.sums._correlated_flooding import (
    certified_pld,
    communication_flooding,
    flooding_messages,
    noisiest_ratio,
    scaled_flooding,
    shift_structure,
)
from privsum.sums._correlated_verification import representation as _representation
from privsum.testing.stats import assert_mean, assert_variance

# Both the bound and `verify` are upper bounds discretised on different loss grids (2^-14 and
# 1e-4): where they coincide in principle (one level) they agree to this relative tolerance.
_GRID_TOLERANCE = 1e-3


def _protocol(levels: int, central_ratio: float, flooding: dict) -> CorrelatedNoiseSum:
    return CorrelatedNoiseSum(
        n_users=1_000, domain=levels, levels=levels, central_ratio=central_ratio, epsilon=1.0, delta=1e-6, **flooding
    )


def _paper(levels: int) -> CorrelatedNoiseSum:
    return CorrelatedNoiseSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1_000, domain=levels)


def _exact_deltas(protocol: CorrelatedNoiseSum, epsilons: tuple[float, ...]) -> list[float]:
    return [protocol.verify(epsilon) for epsilon in epsilons]


def test_shift_structure_matches_the_latent_representation():
    """``H``, ``M_k`` and ``K`` are the largest shifts over all pairs, computed independently here."""
    levels = 12
    structure = shift_structure(levels)
    reps = [_representation(v) for v in range(levels + 1)]
    most_kinds, central, kinds = 0, 0, {}
    for v in range(levels + 1):
        for w in range(levels + 1):
            shift = {key: reps[w].get(key, 0) - reps[v].get(key, 0) for key in set(reps[v]) | set(reps[w])}
            central = max(central, abs(shift.get("+", 0)), abs(shift.get("-", 0)))
            triples = {key[1]: c for key, c in shift.items() if key not in ("+", "-") and c != 0}
            most_kinds = max(most_kinds, len(triples))
            for kind, amount in triples.items():
                kinds[kind] = max(kinds.get(kind, 0), abs(amount))
    assert structure.central_shift == central
    assert structure.kinds_per_pair == most_kinds
    for size in range(2, levels + 1):
        assert structure.kind_shifts[size - 2] == kinds.get(size, 0)
        assert structure.kind_shifts[levels - 1 + size - 2] == kinds.get(-size, 0)


@pytest.mark.parametrize("levels", [1, 2])
@pytest.mark.parametrize(("shape", "kappa"), [(2.0, 5.0), (4.0, 20.0), (8.0, 100.0)])
def test_certified_delta_bounds_the_exact_verification(levels, shape, kappa):
    """At every epsilon tested the one-composition bound is at least the pair-by-pair `verify`, and close to it."""
    protocol = _protocol(levels, math.exp(-0.7 / levels), scaled_flooding(levels, shape, kappa))
    epsilons = (0.5, 0.8, 1.0)
    exact = _exact_deltas(protocol, epsilons)
    certified = [protocol.certified_delta(epsilon) for epsilon in epsilons]
    for bound, value in zip(certified, exact, strict=True):
        assert bound >= value * (1.0 - _GRID_TOLERANCE)
        assert bound <= 3.0 * value + 1e-10  # measured: at most 2.4 times on these cases


@pytest.mark.parametrize("levels", [1, 2])
def test_certified_delta_bounds_the_paper_parameters(levels):
    """The bound also holds for the paper's flooding (here its shapes are above 1)."""
    protocol = _paper(levels)
    assert protocol.certified_delta(0.72) >= protocol.verify(0.72) * (1.0 - _GRID_TOLERANCE)
    assert protocol.certified_delta() <= 1e-9  # the paper's flooding is far more than the target needs


_MORE_LEVELS = [(levels, shape, kappa) for levels in (3, 4, 5, 6) for shape, kappa in [(2.0, 5.0), (8.0, 30.0), (8.0, 100.0)]]


@pytest.mark.slow
@pytest.mark.parametrize(("levels", "shape", "kappa"), [*_MORE_LEVELS, (7, 8.0, 30.0), (8, 8.0, 30.0)])
def test_certified_delta_bounds_the_exact_verification_on_more_levels(levels, shape, kappa):
    """As above on 3..8 levels (`verify` takes 10-15 s at 7 and 8 levels with this flooding, idle)."""
    protocol = _protocol(levels, math.exp(-0.7 / levels), scaled_flooding(levels, shape, kappa))
    epsilons = (0.8, 1.0)
    for bound, value in zip([protocol.certified_delta(e) for e in epsilons], _exact_deltas(protocol, epsilons), strict=True):
        assert bound >= value * (1.0 - _GRID_TOLERANCE)


def test_the_bound_only_grows_with_less_flooding():
    """Sanity of the search's monotone premise on one case: less flooding, larger certified delta."""
    deltas = [certified_pld(2, math.exp(-0.35), **scaled_flooding(2, 8.0, kappa)).delta(1.0) for kappa in (20.0, 40.0, 80.0)]
    assert deltas[0] > deltas[1] > deltas[2]


@pytest.fixture(scope="module")
def communication() -> CorrelatedNoiseSum:
    return CorrelatedNoiseSum.from_privacy(
        epsilon=1.0, delta=1e-6, n_users=1_000, domain=3, calibration="tight", flooding="communication"
    )


def test_communication_flooding_is_certified_cheaper_and_within_the_variance(communication):
    paper = _paper(3)
    assert communication.verified and communication.epsilon <= 1.0
    assert communication.certified_delta(1.0) <= 1e-6
    assert communication.verify(1.0) <= 1e-6  # the exact pair-by-pair check agrees
    assert communication.variance() <= 1.1 * paper.variance() * (1 + 1e-12)
    assert communication.expected_messages_per_user < paper.expected_messages_per_user / 10


def test_communication_search_beats_its_neighbours():
    """The point found is feasible; 10% less flooding of its shape is not (the bisection's resolution is 2%)."""
    levels, ratio = 3, noisiest_ratio(math.exp(-0.7 / 3), 1.1)
    flooding, pld = cached_calibration(communication_flooding, 1.0, 1e-6, levels, ratio)  # shared with from_privacy
    assert pld.delta(1.0) <= 1e-6
    shape = float(flooding["pair_shape"])
    kappa_found = _kappa_of(levels, flooding)
    cheaper = scaled_flooding(levels, shape, kappa_found * 0.9)
    assert flooding_messages(levels, cheaper) < flooding_messages(levels, flooding)
    assert certified_pld(levels, ratio, **cheaper).delta(1.0) > 1e-6


def _kappa_of(levels: int, flooding: dict) -> float:
    """Recover ``kappa`` from the pairs' ratio (sd = kappa H)."""
    shape, ratio = float(flooding["pair_shape"]), float(flooding["pair_ratio"])
    return math.sqrt(shape * ratio) / (1.0 - ratio) / shift_structure(levels).central_shift


def test_calibrated_protocol_is_unbiased_with_the_stated_variance(communication):
    """alpha = 1e-6 each (privsum.testing.stats), fixed seed: 4,000 instances of the fast path."""
    x = np.tile((np.arange(1_000) % 4)[:, None], (1, 4_000))
    estimates = communication.run(x, rng=2026)
    variance = float(communication.variance())
    assert_mean(estimates, float(x[:, 0].sum()), variance=variance)
    assert_variance(estimates - x[:, 0].sum(), variance)


def test_fewer_participants_claim_nothing_above_eight_levels():
    protocol = CorrelatedNoiseSum(
        n_users=1_000, domain=12, levels=12, central_ratio=0.9, epsilon=1.0, delta=1e-6, **scaled_flooding(12, 8.0, 50.0)
    )
    assert math.isinf(protocol.event_for_participants(500).guarantee.epsilon)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"flooding": "cheap"}, "flooding"),
        ({"flooding": "communication"}, "calibration"),  # the default calibration is analytic
        ({"variance_factor": 2.0}, "variance_factor"),  # paper flooding takes none
        ({"calibration": "tight", "flooding": "communication", "variance_factor": 0.5}, "variance_factor"),
        ({"calibration": "tight", "flooding": "communication", "variance_factor": math.nan}, "variance_factor"),
        ({"calibration": "tight", "flooding": "communication", "variance_factor": 17.0}, "variance_factor"),
        ({"calibration": "tight", "flooding": "communication", "domain": 2048}, "levels"),
        ({"calibration": "tight", "domain": 9}, "levels"),  # the paper flooding is verified up to 8 levels
    ],
)
def test_bad_calibration_parameters_are_refused_by_name(kwargs, name):
    arguments = {"epsilon": 1.0, "delta": 1e-6, "n_users": 100, "domain": 3, **kwargs}
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter of CorrelatedNoiseSum.from_privacy"):
        CorrelatedNoiseSum.from_privacy(**arguments)


@pytest.mark.parametrize("name", ["pair_shape", "triple_shape"])
def test_certified_delta_refuses_shapes_below_one(name):
    flooding = {**scaled_flooding(3, 8.0, 20.0), name: 0.5}
    protocol = _protocol(3, 0.8, flooding)
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter of CorrelatedNoiseSum.certified_delta"):
        protocol.certified_delta()


def test_certified_delta_validates_epsilon():
    with pytest.raises(InvalidParameterError, match="'epsilon' parameter of CorrelatedNoiseSum.certified_delta"):
        _paper(1).certified_delta(-1.0)


@pytest.mark.parametrize("name", ["central_ratio", "pair_ratio", "triple_ratios"])
def test_certified_delta_refuses_counts_too_long_to_build(name):
    """A ratio this close to 1 needs a pmf of billions of entries: refused before any is built."""
    flooding, central_ratio = scaled_flooding(3, 8.0, 20.0), 0.8
    if name == "central_ratio":
        central_ratio = 1.0 - 1e-9
    else:
        flooding[name] = 1.0 - 1e-9 if name == "pair_ratio" else (flooding[name][0], 1.0 - 1e-9)
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter of CorrelatedNoiseSum.certified_delta"):
        _protocol(3, central_ratio, flooding).certified_delta()


def test_certified_delta_bounds_the_total_work_over_triple_kinds():
    """99 distinct ratios with pmfs of about 1.7 million entries each: refused before any is built."""
    levels = 100
    flooding = {**scaled_flooding(levels, 8.0, 20.0), "triple_ratios": tuple(1.0 - 3e-5 - 1e-9 * i for i in range(levels - 1))}
    with pytest.raises(InvalidParameterError, match="'triple_ratios' parameter of .* pmf entries over all triple kinds"):
        _protocol(levels, 0.99, flooding).certified_delta()
