"""Per-sender message caps: exact tail quantiles, checked against closed forms and honest users' counts."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from privsum.bitsum import ThreeNBBitSum
from privsum.shuffle.noise import sample_negative_binomial
from privsum.shuffle.robustness import _chernoff_excess, _exact_excess, weighted_negative_binomial_cap
from privsum.sums import CorrelatedNoiseSum
from privsum.testing.stats import FALSE_ALARM_RATE


@pytest.mark.parametrize("tail", [0.3, 1e-3, 1e-9, 1e-15])
def test_geometric_cap_matches_the_closed_form(tail):
    """NB(1, 1/2) is geometric: ``P(X > c) = 2^-(c+1)``, so the cap is ``ceil(log2(1/tail)) - 1``."""
    expected = max(0, int(np.ceil(np.log2(1 / tail) - 1e-12)) - 1)
    assert weighted_negative_binomial_cap([(1.0, 0.5, 1)], 0, tail) == expected


def three_nb_tail(protocol: ThreeNBBitSum, t: int) -> float:
    """``P(1 + NB(2r/n, p) + 2 NB(r'/n, p') > t)``, summed over the first count (an independent formula)."""
    n = protocol.n_users
    first = np.arange(t + 1)
    head = stats.nbinom.pmf(first - 1, 2 * protocol.noise_shape / n, 1 - protocol.noise_ratio)
    pairs = stats.nbinom.sf((t - first) // 2, protocol.flooding_shape / n, 1 - protocol.flooding_ratio)
    return float(np.sum(head * pairs) + stats.nbinom.sf(t - 1, 2 * protocol.noise_shape / n, 1 - protocol.noise_ratio))


@pytest.mark.parametrize(("epsilon", "n_users"), [(1.0, 1000), (2.0, 40_000)])
@pytest.mark.parametrize("tail", [1e-6, 1e-12])
def test_three_nb_cap_is_the_exact_quantile(epsilon, n_users, tail):
    protocol = ThreeNBBitSum.from_privacy(epsilon=epsilon, delta=1e-6, n_users=n_users)
    cap = protocol.per_sender_message_cap(tail)
    assert three_nb_tail(protocol, cap) <= tail < three_nb_tail(protocol, cap - 1)


def test_chernoff_fallback_never_undercuts_the_exact_quantile():
    rng = np.random.default_rng(0)
    for _ in range(20):
        components = [(float(rng.uniform(1e-4, 2)), float(rng.uniform(0.05, 0.95)), int(rng.integers(1, 4))) for _ in range(3)]
        tail = float(10 ** rng.uniform(-14, -2))
        chernoff = _chernoff_excess(components, tail)
        assert _exact_excess(components, tail, chernoff) <= chernoff


def honest_exceedances(counts: np.ndarray, cap: int, tail: float) -> None:
    """Honest users exceed the cap no more often than a Binomial(size, tail) allows at the false-alarm rate."""
    allowed = stats.binom.isf(FALSE_ALARM_RATE, counts.size, tail)
    assert np.count_nonzero(counts > cap) <= allowed


def test_honest_three_nb_users_rarely_exceed_the_cap():
    protocol = ThreeNBBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=200)
    tail = 1e-3
    plus, minus = protocol.user_message_counts(np.ones((200, 500), dtype=int), rng=5)
    cap = protocol.per_sender_message_cap(tail)
    honest_exceedances(plus + minus, cap, tail)
    # a tight cap: one less is exceeded with probability above 1e-3, so none in 10^5 draws has probability below e^-100
    assert np.count_nonzero(plus + minus > cap - 1) > 0


def test_honest_correlated_users_rarely_exceed_the_cap():
    protocol = CorrelatedNoiseSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=50, domain=2)
    tail = 1e-3
    values = np.full((50, 400), 2)
    batch = protocol.randomize(values, rng=6)
    # messages are listed per kind, not per user: replay the randomizer's draws to count per user
    counts = _per_user_counts(protocol, values, seed=6)
    assert counts.sum() == batch.n_messages
    honest_exceedances(counts, protocol.per_sender_message_cap(tail), tail)


def _per_user_counts(protocol: CorrelatedNoiseSum, values: np.ndarray, seed: int) -> np.ndarray:
    """Each user's messages per instance, replaying `randomize`'s draws (one NB count per kind, in order)."""
    generator = np.random.default_rng(seed)
    counts = (values != 0).astype(np.int64)
    for shape, ratio, kind_values in protocol._kinds:
        copies = sample_negative_binomial(generator, shape / protocol.n_users, ratio, values.shape)
        counts += len(kind_values) * copies
    return counts
