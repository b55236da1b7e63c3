import math

import pytest

from privsum import BudgetExceededError, InvalidParameterError
from privsum.accounting import (
    ComposedEvent,
    GuaranteeEvent,
    ParallelEvent,
    PrivacyAccountant,
    PrivacyGuarantee,
    ProfileEvent,
    advanced_composition_epsilon,
    randomized_response_profile,
)


def test_methods_agree_with_closed_forms():
    accountant = PrivacyAccountant()
    accountant.compose(GuaranteeEvent(PrivacyGuarantee(0.1)), count=100)
    assert accountant.epsilon(1e-6, method="basic") == pytest.approx(10.0)
    assert accountant.epsilon(1e-6, method="advanced") == pytest.approx(advanced_composition_epsilon(0.1, 100, 1e-6))
    assert accountant.epsilon(1e-6, method="pld") < accountant.epsilon(1e-6, method="advanced")
    assert accountant.epsilon(1e-6) == accountant.epsilon(1e-6, method="pld")


def test_delta_and_epsilon_are_consistent():
    accountant = PrivacyAccountant()
    accountant.compose(ProfileEvent.at_delta(randomized_response_profile(0.3), 0.0), count=50)
    epsilon = accountant.epsilon(1e-5)
    assert accountant.delta(epsilon) <= 1e-5 * (1 + 1e-6)
    assert accountant.delta(epsilon * 0.8) > 1e-5


def test_threat_models_are_tracked_separately():
    accountant = PrivacyAccountant()
    accountant.compose(GuaranteeEvent(PrivacyGuarantee(1.0, 1e-7)), label="kde")
    accountant.compose(GuaranteeEvent(PrivacyGuarantee(0.5)), visible_to_model=False, label="labels")
    assert accountant.epsilon(1e-6, threat_model="model", method="basic") == pytest.approx(1.0)
    assert accountant.epsilon(1e-6, threat_model="communication", method="basic") == pytest.approx(1.5)
    report = accountant.report(1e-6)
    assert "communication only" in report and "model threat" in report


def test_budget_enforced_and_nothing_recorded_on_failure():
    accountant = PrivacyAccountant(budget=PrivacyGuarantee(1.0, 1e-6))
    event = GuaranteeEvent(PrivacyGuarantee(0.4, 1e-8))
    accountant.compose(event)
    accountant.compose(event)
    with pytest.raises(BudgetExceededError, match="over the budget"):
        accountant.compose(event, count=5)
    assert len(accountant.entries) == 2


def test_pure_budget():
    accountant = PrivacyAccountant(budget=PrivacyGuarantee(1.0, 0.0))
    accountant.compose(GuaranteeEvent(PrivacyGuarantee(0.6)))
    with pytest.raises(BudgetExceededError):
        accountant.compose(GuaranteeEvent(PrivacyGuarantee(0.6)))
    with pytest.raises(BudgetExceededError):
        accountant.compose(GuaranteeEvent(PrivacyGuarantee(0.1, 1e-9)))


def test_relation_mismatch_raises():
    accountant = PrivacyAccountant(neighbouring="add-remove")
    with pytest.raises(InvalidParameterError, match="'event'"):
        accountant.compose(GuaranteeEvent(PrivacyGuarantee(1.0)))


def test_parallel_and_composed_events():
    part = ProfileEvent.at_delta(randomized_response_profile(1.0), 0.0)
    touching_two = ParallelEvent((part, part, part), parts_per_user=2)
    twice = ComposedEvent(part, 2)
    assert touching_two.pld().epsilon(1e-6) == pytest.approx(twice.pld().epsilon(1e-6))
    assert touching_two.guarantee.epsilon == pytest.approx(2.0)


def test_profile_event_rejects_headline_it_cannot_back():
    profile = randomized_response_profile(1.0)
    with pytest.raises(InvalidParameterError, match="met by the profile"):
        ProfileEvent(profile, PrivacyGuarantee(0.5, 1e-6))


def test_empty_accountant_and_bad_arguments():
    accountant = PrivacyAccountant()
    assert accountant.epsilon(1e-6) == 0.0 and accountant.delta(1.0) == 0.0
    with pytest.raises(InvalidParameterError, match="'method'"):
        PrivacyAccountant(method="magic")
    with pytest.raises(InvalidParameterError, match="'count'"):
        accountant.compose(GuaranteeEvent(PrivacyGuarantee(1.0)), count=0)
    with pytest.raises(InvalidParameterError, match="'delta'"):
        accountant.epsilon(math.nan)


def test_an_event_without_privacy_makes_the_total_infinite():
    accountant = PrivacyAccountant()
    accountant.compose(GuaranteeEvent(PrivacyGuarantee(1.0)))
    accountant.compose(GuaranteeEvent(PrivacyGuarantee(math.inf)), visible_to_model=False)
    assert accountant.epsilon(1e-6) == math.inf and accountant.delta(10.0) == 1.0
    assert accountant.epsilon(1e-6, threat_model="model") == pytest.approx(1.0, abs=1e-3)


def test_discrete_gaussian_event_composes_by_its_exact_pld():
    from privsum.accounting import DiscreteGaussianEvent

    event = DiscreteGaussianEvent(20.0, PrivacyGuarantee(0.3, 1e-6))
    composed = ComposedEvent(event, 64).pld().epsilon(1e-6)
    generic = ComposedEvent(GuaranteeEvent(event.guarantee), 64).pld().epsilon(1e-6)
    assert composed < generic  # the Gaussian's own PLD beats composing its headline
    event.check_headline()
    with pytest.raises(InvalidParameterError, match="met by the mechanism"):
        DiscreteGaussianEvent(1.0, PrivacyGuarantee(0.1, 1e-9)).check_headline()


@pytest.mark.parametrize("events", [None, 3, (), ("event",)])
def test_parallel_event_refuses_anything_but_events_naming_them(events):
    with pytest.raises(InvalidParameterError, match="'events'"):
        ParallelEvent(events)
