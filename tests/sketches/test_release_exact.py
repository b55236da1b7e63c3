"""Exact privacy check of the RACE release's noise scale (issue 4), with the R/(N epsilon) negative control.

The release adds discrete Laplace noise ``DLap(a)``, ``a = exp(-1/scale)``, pmf ``(1-a)/(1+a) a^|k|``
(`privsum.sketches._noise.add_discrete_laplace`), independently to every counter. One user moves
one counter per row by 1 (add/remove: ``R`` counters) or two counters per row by 1 each
(replace-one: ``2R`` counters). Every other counter has the same law under both datasets, so the
exact privacy of the release is that of the changed counters, each a pair ``(DLap, DLap + 1)``.

Nothing here is random: the profiles are computed from the pmf, no statistical test is involved.
"""

import math

import numpy as np
import pytest
from scipy import stats

from privsum.accounting import PrivacyProfile
from privsum.lsq import L2LSH
from privsum.shuffle.noise import discrete_laplace_pmf
from privsum.sketches import RACE

ROWS, N_POINTS = 50, 2000
FAMILY = L2LSH(dimension=2, n_repetitions=ROWS, bucket_width=1.0, n_buckets=64, seed=7)
POINTS = np.random.default_rng(11).normal(size=(N_POINTS, 2))
SKETCH = RACE(FAMILY).update(POINTS)
RELATIONS = [("add-remove", 1), ("replace-one", 2)]  # (relation, counters changed per row)


def one_counter_profile(scale: float, tail_mass: float = 1e-13) -> PrivacyProfile:
    """Exact profile of one counter released with the release's pmf, neighbouring counts ``c`` and ``c + 1``.

    The support is a window ``[-K, K + 1]`` holding all but ``tail_mass`` of each law; the mass
    outside is counted as infinite loss (so the profile can only overstate the loss).
    """
    ratio = math.exp(-1.0 / scale)
    half_width = math.ceil(math.log(tail_mass * (1 + ratio) / 2) / math.log(ratio))  # P(|DLap| > K) <= tail_mass
    support = np.arange(-half_width, half_width + 2)
    p, q = discrete_laplace_pmf(support, ratio), discrete_laplace_pmf(support - 1, ratio)
    return PrivacyProfile(p, q, p_tail=max(0.0, 1.0 - p.sum()), q_tail=max(0.0, 1.0 - q.sum()))


def changed_counters_profile(scale: float, n_changed: int) -> PrivacyProfile:
    """Exact profile of ``n_changed`` independent counters, each ``(DLap, DLap + 1)``, jointly.

    For one counter, ``log p(k)/q(k) = (|k - 1| - |k|)/scale`` is ``+1/scale`` on ``k <= 0``
    (mass ``1/(1+a)`` under ``p``, ``a/(1+a)`` under ``q``) and ``-1/scale`` on ``k >= 1``. The
    joint log-likelihood ratio is the sum, so the joint pair is equivalent (same profile) to the
    pair of binomial laws of ``J`` = number of counters with ``k <= 0``: ``Bin(n, 1/(1+a))``
    against ``Bin(n, a/(1+a))``, with loss ``(2J - n)/scale``.
    """
    ratio = math.exp(-1.0 / scale)
    outcomes = np.arange(n_changed + 1)
    p = stats.binom.pmf(outcomes, n_changed, 1.0 / (1.0 + ratio))
    q = stats.binom.pmf(outcomes, n_changed, ratio / (1.0 + ratio))
    return PrivacyProfile(p, q)


def counters_changed_by_one_user(relation: str) -> int:
    """Counters that differ between the sketches of two neighbouring datasets (a worst case over a few users)."""
    changed = 0
    for index in range(20):
        if relation == "add-remove":
            neighbour = RACE(FAMILY).update(np.delete(POINTS, index, axis=0))
        else:
            neighbour = RACE(FAMILY).update(np.vstack([np.delete(POINTS, index, axis=0), POINTS[index] + 3.0]))
        difference = SKETCH.counts - neighbour.counts
        assert np.abs(difference).max() <= 1  # per-counter sensitivity 1
        changed = max(changed, int(np.count_nonzero(difference)))
    return changed


@pytest.mark.parametrize(("relation", "per_row"), RELATIONS)
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_one_counter_spends_exactly_its_share_of_epsilon(relation, per_row, epsilon):
    scale = SKETCH.release(epsilon, neighbouring=relation, noise_source="numpy", rng=0).noise_scale
    share = epsilon / (per_row * ROWS)  # the per-counter budget the scale implies: R (or 2R) counters change
    profile = one_counter_profile(scale)
    assert profile.delta(share) <= 1e-12  # only the truncated tails, counted as infinite loss
    assert profile.delta(0.98 * share) > 1e-6  # and no less: the bound is tight (far above the tails)
    assert profile.epsilon(1e-12) == pytest.approx(share, rel=1e-6)


@pytest.mark.parametrize(("relation", "per_row"), RELATIONS)
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_the_whole_release_is_epsilon_dp_and_no_better(relation, per_row, epsilon):
    scale = SKETCH.release(epsilon, neighbouring=relation, noise_source="numpy", rng=0).noise_scale
    sensitivity = per_row * ROWS  # counters a user can change, each by at most 1
    n_changed = counters_changed_by_one_user(relation)
    assert n_changed <= sensitivity  # replace-one: two counters per row unless the two points collide in that row
    assert relation == "replace-one" or n_changed == sensitivity
    profile = changed_counters_profile(scale, sensitivity)
    assert profile.delta(epsilon * (1 + 1e-9)) == 0.0  # pure epsilon-DP, exactly
    assert profile.delta(0.99 * epsilon) > 0.0  # and the epsilon is tight (all counters shift up)


@pytest.mark.parametrize(("relation", "per_row"), RELATIONS)
def test_negative_control_the_public_codes_scale_fails(relation, per_row):
    """Seed 002's public code adds noise of scale ``R/(N epsilon)`` to the raw counts: N times too little."""
    epsilon = 1.0
    wrong_scale = per_row * ROWS / (N_POINTS * epsilon)
    share = epsilon / (per_row * ROWS)
    one_counter = one_counter_profile(wrong_scale)
    assert one_counter.epsilon(1e-12) == pytest.approx(N_POINTS * share, rel=1e-6)  # N times the per-counter budget
    assert one_counter.delta(share) > 0.5
    whole = changed_counters_profile(wrong_scale, per_row * ROWS)
    assert whole.delta(epsilon) > 0.99  # not (epsilon, delta)-DP for any useful delta
    assert whole.epsilon(1e-6) > 100 * epsilon


@pytest.mark.parametrize(("first_epsilon", "second_epsilon"), [(1.0, 1.0), (0.5, 3.0)])
def test_merged_release_is_backed_by_its_parallel_composition(first_epsilon, second_epsilon):
    """Exact: a merged counter holds both releases' noise; one user's +1 in either part moves it by 1.

    The merged counter's pmf is the convolution of the two discrete Laplace laws; its largest
    privacy loss for a shift of 1, times the ``R`` counters a user moves, must not exceed the
    reported epsilon, the larger of the two (parallel composition over disjoint users).
    """
    first = SKETCH.release(first_epsilon, noise_source="numpy", rng=1)
    second = RACE(FAMILY).update(POINTS[:10]).release(second_epsilon, noise_source="numpy", rng=2)
    merged = first.merge(second, disjoint_users=True)
    assert merged.guarantee.epsilon == max(first_epsilon, second_epsilon)
    half_width = 4000
    support = np.arange(-half_width, half_width + 1)
    laws = [discrete_laplace_pmf(support, math.exp(-1.0 / scale)) for scale in merged.noise_scales]
    merged_pmf = np.convolve(laws[0], laws[1])[half_width : 3 * half_width + 1]  # support -K..K again
    central = slice(half_width - 1000, half_width + 1001)  # far from the window's truncated edges
    losses = np.abs(np.log(merged_pmf[central][1:]) - np.log(merged_pmf[central][:-1]))
    assert ROWS * losses.max() <= merged.guarantee.epsilon * (1 + 1e-9)
