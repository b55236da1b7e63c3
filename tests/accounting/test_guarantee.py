import math

import pytest

from privsum import InvalidParameterError
from privsum.accounting import Neighbouring, PrivacyGuarantee, ThreatModel


@pytest.mark.parametrize("epsilon", [math.nan, -1.0, 0.0, -math.inf, "1", None, True])
def test_invalid_epsilon_raises_naming_it(epsilon):
    with pytest.raises(InvalidParameterError, match="'epsilon' parameter of PrivacyGuarantee"):
        PrivacyGuarantee(epsilon, 1e-6)


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
