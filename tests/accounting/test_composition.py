import math

import pytest

from privsum import InvalidParameterError
from privsum.accounting import (
    PrivacyGuarantee,
    advanced_composition,
    advanced_composition_epsilon,
    basic_composition,
    parallel_composition,
    pure_composition,
)


@pytest.mark.parametrize(
    ("epsilon0", "count", "slack", "expected"),
    [
        # eps0*sqrt(2k log(1/d')) + k*eps0*(e^eps0 - 1), evaluated by hand.
        (0.1, 100, 1e-6, 0.1 * math.sqrt(200 * math.log(1e6)) + 10 * (math.e**0.1 - 1)),
        (0.01, 768, 5e-7, 0.01 * math.sqrt(1536 * math.log(2e6)) + 7.68 * (math.e**0.01 - 1)),
        (1.0, 1, 0.5, math.sqrt(2 * math.log(2)) + (math.e - 1)),
    ],
)
def test_advanced_composition_golden_values(epsilon0, count, slack, expected):
    assert advanced_composition_epsilon(epsilon0, count, slack) == pytest.approx(expected, rel=1e-12)


def test_advanced_composition_known_numbers():
    # Seed 001 Theorem 3.2 form with eps0 = 0.1, k = 100, delta' = 1e-6: 5.2565... + 1.0517... = 6.3082...
    guarantee = advanced_composition(PrivacyGuarantee(0.1, 1e-8), 100, 1e-6)
    assert guarantee.epsilon == pytest.approx(6.308231, abs=1e-6)
    assert guarantee.delta == pytest.approx(100 * 1e-8 + 1e-6)


def test_basic_and_pure_composition():
    g = basic_composition([PrivacyGuarantee(0.5, 1e-7), PrivacyGuarantee(0.25, 2e-7)])
    assert (g.epsilon, g.delta) == (0.75, pytest.approx(3e-7))
    assert pure_composition([PrivacyGuarantee(0.5)] * 3).epsilon == 1.5
    with pytest.raises(InvalidParameterError, match="pure guarantees"):
        pure_composition([PrivacyGuarantee(0.5, 1e-9)])


def test_basic_composition_rejects_mixed_relations():
    with pytest.raises(InvalidParameterError, match="one neighbouring relation"):
        basic_composition([PrivacyGuarantee(1.0), PrivacyGuarantee(1.0, 0.0, "add-remove")])


def test_parallel_composition_takes_the_worst_part_per_touch():
    parts = [PrivacyGuarantee(1.0, 1e-6), PrivacyGuarantee(2.0, 1e-7)]
    assert parallel_composition(parts) == PrivacyGuarantee(2.0, 1e-6)
    assert parallel_composition(parts, parts_per_user=2) == PrivacyGuarantee(4.0, 2e-6)


@pytest.mark.parametrize(("epsilon0", "count", "slack"), [(math.nan, 1, 0.1), (0.1, 0, 0.1), (0.1, 2, 0.0), (0.1, 2, 1.0)])
def test_advanced_composition_invalid(epsilon0, count, slack):
    with pytest.raises(InvalidParameterError):
        advanced_composition_epsilon(epsilon0, count, slack)
