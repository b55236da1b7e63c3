import math

import pytest

from privsum import InvalidParameterError
from privsum.accounting import GuaranteeEvent, Neighbouring, PrivacyGuarantee, RelationEvent, ThreatModel, zero_out_to_replace_one


@pytest.mark.parametrize("epsilon", [math.nan, -1.0, -1e-300, -math.inf, "1", None, True, 10**400, -(10**400)])
def test_invalid_epsilon_raises_naming_it(epsilon):
    with pytest.raises(
        InvalidParameterError, match="'epsilon' parameter of PrivacyGuarantee must be a real number in \\[0, inf\\) or inf"
    ):
        PrivacyGuarantee(epsilon, 1e-6)


@pytest.mark.parametrize("delta", [0.0, 1e-6, 0.5])
def test_zero_epsilon_is_reportable(delta):
    """A mechanism whose output law does not depend on the data (up to delta) is (0, delta)-DP."""
    guarantee = PrivacyGuarantee(0, delta)
    assert guarantee.epsilon == 0.0 and guarantee.is_finite
    assert GuaranteeEvent(guarantee).pld().epsilon(max(delta, 1e-9)) <= 1e-3  # numerical accounting accepts it too


def test_a_composed_guarantee_may_exceed_the_calibration_maximum():
    assert PrivacyGuarantee(1e6, 0.0).epsilon == 1e6


@pytest.mark.parametrize("delta", [math.nan, -1e-9, 1.0, 2.0, math.inf])
def test_invalid_delta_raises_naming_it(delta):
    with pytest.raises(InvalidParameterError, match="'delta' parameter of PrivacyGuarantee"):
        PrivacyGuarantee(1.0, delta)


def test_invalid_parameter_error_is_value_and_type_error():
    with pytest.raises(ValueError):
        PrivacyGuarantee(-1.0)
    with pytest.raises(TypeError):
        PrivacyGuarantee(-1.0)


def test_relation_is_recorded_and_parsed():
    guarantee = PrivacyGuarantee(1.0, 1e-6, "add-remove")
    assert guarantee.neighbouring is Neighbouring.ADD_REMOVE
    assert "add-remove" in str(guarantee)
    with pytest.raises(InvalidParameterError, match="'neighbouring'"):
        PrivacyGuarantee(1.0, 1e-6, "swap")


def test_infinite_epsilon_means_no_guarantee():
    guarantee = PrivacyGuarantee(math.inf, 0.0)
    assert not guarantee.is_finite and guarantee.is_pure


def test_threat_model_parse():
    assert ThreatModel.parse("model") is ThreatModel.MODEL
    with pytest.raises(InvalidParameterError, match="'threat_model'"):
        ThreatModel.parse("server")


def test_zero_out_is_implied_by_replace_one_only():
    assert Neighbouring.REPLACE_ONE.implies(Neighbouring.ZERO_OUT)
    assert not Neighbouring.ZERO_OUT.implies(Neighbouring.REPLACE_ONE)
    assert not Neighbouring.ADD_REMOVE.implies(Neighbouring.ZERO_OUT)
    assert all(relation.implies(relation) for relation in Neighbouring)
    assert PrivacyGuarantee(1.0, 1e-6).under("zero-out") == PrivacyGuarantee(1.0, 1e-6, "zero-out")
    with pytest.raises(InvalidParameterError, match="'neighbouring'"):
        PrivacyGuarantee(1.0, 1e-6, "zero-out").under("replace-one")
    with pytest.raises(InvalidParameterError, match="'neighbouring'.*'add-remove' or 'replace-one'"):
        Neighbouring.parse("zero-out", "f", (Neighbouring.ADD_REMOVE, Neighbouring.REPLACE_ONE))


def test_relation_event_keeps_the_mechanism_and_checks_the_relation():
    event = GuaranteeEvent(PrivacyGuarantee(0.5, 1e-7))
    restated = RelationEvent(event, "zero-out")
    assert restated.guarantee == PrivacyGuarantee(0.5, 1e-7, "zero-out")
    assert restated.pld().epsilon(1e-6) == event.pld().epsilon(1e-6)
    with pytest.raises(InvalidParameterError, match="'relation'"):
        RelationEvent(GuaranteeEvent(PrivacyGuarantee(0.5, 1e-7, "zero-out")), "replace-one")


def test_zero_out_to_replace_one_is_group_privacy_of_two():
    implied = zero_out_to_replace_one(PrivacyGuarantee(0.5, 1e-6, "zero-out"))
    assert implied == PrivacyGuarantee(1.0, (1 + math.exp(0.5)) * 1e-6, "replace-one")
    assert not zero_out_to_replace_one(PrivacyGuarantee(5.0, 0.1, "zero-out")).is_finite
    with pytest.raises(InvalidParameterError, match="'guarantee'"):
        zero_out_to_replace_one(PrivacyGuarantee(0.5, 1e-6))
