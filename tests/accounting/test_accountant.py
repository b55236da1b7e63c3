import math

import pytest

from privsum import BudgetExceededError, InvalidParameterError
from privsum.accounting import (
    ComposedEvent,
    GuaranteeEvent,
    Neighbouring,
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
    optimal = accountant.epsilon(1e-6, method="optimal")
    assert optimal <= accountant.epsilon(1e-6, method="pld")  # exact, where the PLD is pessimistic
    assert accountant.epsilon(1e-6) == min(optimal, accountant.epsilon(1e-6, method="pld"))


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


# --- a newcomer's first hour: delta floor, PrivacyGuarantee in compose, repr, spellings ---


def test_delta_below_the_composed_floor_warns_and_names_it():
    import warnings as _warnings

    from privsum.exceptions import DeltaFloorWarning

    accountant = PrivacyAccountant()
    accountant.compose(PrivacyGuarantee(1.0, 1e-6), count=11)
    assert accountant.min_delta(method="basic") == pytest.approx(1.1e-5, rel=1e-12)
    floor = accountant.min_delta()
    assert 1e-5 < floor <= 1.1e-5  # PLD: 1 - (1 - 1e-6)^11
    with pytest.warns(DeltaFloorWarning, match=r"floor of 1\.09999e-05.*min_delta"):
        assert accountant.epsilon(1e-6) == math.inf
    with _warnings.catch_warnings():
        _warnings.simplefilter("error", DeltaFloorWarning)
        assert math.isfinite(accountant.epsilon(1.2e-5))  # above the floor: finite, no warning
        assert accountant.epsilon(1.2e-5, method="basic") == pytest.approx(11.0)


def test_min_delta_of_pure_and_empty_ledgers():
    accountant = PrivacyAccountant()
    assert accountant.min_delta() == 0.0
    accountant.compose(PrivacyGuarantee(0.5, 0.0), count=3)
    assert accountant.min_delta() == 0.0
    accountant.compose(PrivacyGuarantee(math.inf, 0.0))
    assert accountant.min_delta() == 1.0


def test_compose_accepts_a_guarantee_and_refuses_other_things():
    accountant = PrivacyAccountant()
    entry = accountant.compose(PrivacyGuarantee(0.5, 1e-7), count=2)
    assert entry.event == GuaranteeEvent(PrivacyGuarantee(0.5, 1e-7))
    assert accountant.epsilon(1e-5, method="basic") == pytest.approx(1.0)
    with pytest.raises(InvalidParameterError, match="'event'.*PrivacyGuarantee"):
        accountant.compose((0.5, 1e-7))
    with pytest.raises(InvalidParameterError, match="'event'"):
        accountant.compose(PrivacyGuarantee(0.5, 1e-7, "add-remove"))


def test_accountant_repr_is_informative():
    accountant = PrivacyAccountant(budget=PrivacyGuarantee(3.0, 1e-6))
    accountant.compose(PrivacyGuarantee(0.1, 0.0), count=4)
    text = repr(accountant)
    assert "neighbouring='replace-one'" in text and "entries=1" in text and "releases=4" in text and "(3, 1e-06)" in text


def test_neighbouring_spellings_are_aliases():
    assert PrivacyAccountant(neighboring="add_remove").neighbouring is Neighbouring.ADD_REMOVE
    assert PrivacyAccountant(neighbouring="Replace_One").neighbouring is Neighbouring.REPLACE_ONE
    assert PrivacyGuarantee(1.0, 0.0, "zero_out").neighbouring is Neighbouring.ZERO_OUT
    with pytest.raises(InvalidParameterError, match="'neighboring'"):
        PrivacyAccountant(neighbouring="add-remove", neighboring="zero-out")
    with pytest.raises(InvalidParameterError, match="'neighbouring'"):
        Neighbouring.parse("add-or-remove")
