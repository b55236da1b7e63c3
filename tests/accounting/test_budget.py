"""The k-fold budget fit: `per_mechanism_budget`'s tight split is `fit_composition` on the worst pair's PLD."""

import pytest

from privsum.accounting import GuaranteeEvent, PrivacyGuarantee
from privsum.accounting.budget import ComposedEventWithHeadline, fit_composition, optimal_composed_epsilon, per_mechanism_budget
from privsum.accounting.pld import PLDPair


@pytest.mark.parametrize("epsilon, delta, count", [(0.1, 1e-6, 2), (0.5, 1e-8, 64), (1.0, 1e-5, 256), (4.0, 1e-6, 16)])
def test_tight_budget_is_backed_and_at_least_basic_composition(epsilon, delta, count):
    epsilon0, delta0, headline = per_mechanism_budget(epsilon, delta, count, "tight")
    assert delta0 == delta / 2 / count and headline.delta == delta
    assert epsilon / count <= epsilon0 and headline.epsilon <= epsilon  # never below basic composition, never overshoots
    single = PrivacyGuarantee(epsilon0, delta0)
    assert PLDPair.from_guarantee(single).self_compose(count).delta(headline.epsilon) <= delta * (1 + 1e-9)
    assert optimal_composed_epsilon(single, count, delta) <= headline.epsilon * (1 + 1e-9)  # the exact composition agrees
    assert ComposedEventWithHeadline(GuaranteeEvent(single), count, headline).guarantee == headline


def test_numerical_fit_composes_by_the_pld_and_exact_fit_by_optimal_composition():
    family = lambda epsilon0: GuaranteeEvent(PrivacyGuarantee(epsilon0, 1e-9))  # noqa: E731
    options = {"epsilon": 0.5, "delta": 1e-6, "delta0": 1e-9, "count": 256, "start": 0.5 / 256}
    exact = fit_composition(family, **options)
    numerical = fit_composition(family, **options, rtol=1e-4, numerical=True)
    assert optimal_composed_epsilon(PrivacyGuarantee(exact, 1e-9), 256, 1e-6) <= 0.5
    assert PLDPair.from_guarantee(PrivacyGuarantee(numerical, 1e-9)).self_compose(256).epsilon(1e-6) <= 0.5
    assert numerical <= exact  # the PLD's grid is pessimistic: the exact composition admits at least as much
