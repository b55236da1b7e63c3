"""Heavy hitters with a stated recall: a finding round (count sketch) then a counting round (histogram of the candidates).

Round one is a `~privsum.histograms.ShuffledCountSketch`: the analyzer keeps the candidates with at
least ``candidate_rows`` row estimates reaching a fraction of the reporting threshold
(`CANDIDATE_FRACTION`); fewer rows than a majority make a heavy item much harder to drop than the
median would, for a few more (cheap) false candidates. Round two is a shuffled
histogram with Poisson noise messages (`~privsum.histograms.PoissonNoiseBitSum` bins) over those
candidates plus one bin for every other item: each user sends its item's bin. The counting round
has no hash collisions, so its error is the exactly known noise, and an item is reported when its
count estimate reaches ``min_count - margin``, the margin being the noise's lower quantile.

An item of count at least ``min_count`` is missed only if round one drops it (bounded from the
sketch's parameters alone, `TwoRoundHeavyHitters.candidate_miss_probability`) or round two's noise
falls below ``-margin`` (exact): the sum is the stated per-item failure probability.

This follows the two-phase structure of private heavy-hitter algorithms (find candidates, then
count them with fresh noise), e.g. Bassily, Nissim, Stemmer & Thakurta ("Practical locally private
heavy hitters", NeurIPS 2017) in the local model and Ghazi, Golowich, Kumar, Pagh & Velingker ("On
the power of multiple anonymous messages: frequency estimation and selection", EUROCRYPT 2021) in
the shuffle model, with the fake-message counters of Balcer & Cheu ("Separating local & shuffled
differential privacy via histograms", ITC 2020).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from privsum._random import RNGLike, as_generator
from privsum._validation import check_integer, check_real, invalid
from privsum.accounting.events import PrivacyEvent
from privsum.accounting.guarantee import Neighbouring, PrivacyGuarantee
from privsum.histograms._checks import check_delta_field, check_sketch_request
from privsum.histograms._hashing import item_ids
from privsum.histograms.categories import MAX_CATEGORIES, Categories
from privsum.histograms.events import (
    MAX_NOISE_MEAN,
    BinsEvent,
    PoissonCounterEvent,
    RoundsEvent,
    calibrated_noise_mean,
    least_noise_mean,
)
from privsum.histograms.poisson_bins import PoissonNoiseBitSum
from privsum.histograms.protocol import ShuffledHistogram
from privsum.histograms.sketch import MAX_SKETCH_CELLS, ReleasedCountSketch, ShuffledCountSketch

__all__ = ["CANDIDATE_FRACTION", "MAX_CANDIDATE_LIST", "HeavyHitterRelease", "TwoRoundHeavyHitters"]

#: Round one keeps the candidates with ``candidate_rows`` row estimates at this fraction of ``min_count`` or more.
CANDIDATE_FRACTION = 0.3
#: Longest candidate list `TwoRoundHeavyHitters.run` accepts (its work and memory grow with the list).
MAX_CANDIDATE_LIST = 1 << 24
# Candidates estimated at a time (bounded memory).
_CHUNK = 1 << 20
# Thresholds tried for the big/small split of the colliding items in the round-one bound.
_SPLITS = np.geomspace(1e-3, 1e3, 601)


@dataclass(frozen=True, kw_only=True)
class TwoRoundHeavyHitters:
    """Heavy hitters from a candidate list with a stated per-item recall (see the module docstring).

    Args:
        finder: round one, the `ShuffledCountSketch` every user sends its item to.
        counter_noise_mean: ``lambda_2``, the Poisson noise messages per bin of round two.
        candidate_rows: ``k``, the rows whose estimate must reach ``CANDIDATE_FRACTION * min_count``
            for a candidate to be counted (between 1 and ``R``).
        max_candidates: the most candidates round two counts (its bins are these plus "other").
        delta: the delta of the headline guarantee (both rounds).

    Privacy:
        Replace-one, on the shuffled messages of both rounds (trusted shuffler; an adversary
        knowing every other user's item). Round one changes at most ``2 R`` sketch cells by one
        message; round two moves the user's message between two of its bins, whose counters hold
        ``Pois(lambda_2)`` noise: the `BinsEvent` of two `PoissonCounterEvent` counters, whatever
        the candidates (chosen from round one's output only) are. The guarantee is the two events'
        privacy-loss distributions composed numerically (`~privsum.histograms.RoundsEvent`):
        ``epsilon`` is the total of the call.

    Utility:
        `run` reports the candidates whose round-two estimate reaches ``min_count - margin``. An
        item whose count is at least ``min_count`` is missed with probability at most
        ``failure_probability`` (over the noise and the public hash, modelled as a random function
        chosen without looking at the data), when every one of the ``n_users`` takes part and
        round one's candidates fit ``max_candidates`` (`HeavyHitterRelease.candidates_truncated`
        says otherwise). Items whose count is below ``min_count`` by less than about twice the
        margin may be reported too; nothing further below is, except with the noise's upper tail.
        Messages per user: round one's ``R + 2 R W lambda_1 / n`` plus at most
        ``1 + (max_candidates + 1) lambda_2 / n``.

    References:
        Charikar, Chen & Farach-Colton, "Finding frequent items in data streams", ICALP 2002
        (the count sketch). Balcer & Cheu, "Separating local & shuffled differential privacy via
        histograms", ITC 2020 (fake messages). Ghazi, Golowich, Kumar, Pagh & Velingker, "On the
        power of multiple anonymous messages: frequency estimation and selection", EUROCRYPT 2021.

    Examples:
        >>> finder = TwoRoundHeavyHitters.from_privacy(epsilon=1.0, delta=1e-6, n_users=20000, max_messages_per_user=60)
        >>> items = np.concatenate([np.full(3000, 7), np.full(1000, 11), np.arange(16000)])
        >>> bool(finder.candidate_miss_probability(1000) < 0.01)
        True
        >>> release = finder.run(items, candidates=np.arange(20000), min_count=1000, failure_probability=0.01, rng=0)
        >>> [item for item, _ in release.items]
        [7, 11]
    """

    finder: ShuffledCountSketch
    counter_noise_mean: float
    candidate_rows: int = 2
    max_candidates: int = 1024
    delta: float

    def __post_init__(self) -> None:
        owner = type(self).__name__
        if not isinstance(self.finder, ShuffledCountSketch):
            raise invalid("finder", owner, "a ShuffledCountSketch", self.finder)
        object.__setattr__(
            self,
            "counter_noise_mean",
            check_real(self.counter_noise_mean, "counter_noise_mean", owner, low=0.0, high=MAX_NOISE_MEAN, low_open=True),
        )
        object.__setattr__(
            self, "candidate_rows", check_integer(self.candidate_rows, "candidate_rows", owner, low=1, high=self.finder.rows)
        )
        object.__setattr__(
            self, "max_candidates", check_integer(self.max_candidates, "max_candidates", owner, low=1, high=MAX_CATEGORIES - 1)
        )
        check_delta_field(self, owner)

    @classmethod
    def from_privacy(
        cls,
        *,
        epsilon: float,
        delta: float,
        n_users: int,
        rows: int = 5,
        candidate_rows: int = 2,
        counting_share: float = 0.75,
        max_candidates: int = 1024,
        max_messages_per_user: float = 100.0,
        seed: int = 0,
    ) -> TwoRoundHeavyHitters:
        """Both rounds meeting (epsilon, delta) together, round one as wide as the message budget allows.

        Round two's noise is the least meeting ``(counting_share * epsilon, delta / 2)`` alone;
        round one's is then the least whose composition with it meets ``(epsilon, delta)``
        (searched on the composed privacy-loss distribution), and its width the largest whose
        messages, with round two's at most ``max_candidates`` bins, fit ``max_messages_per_user``.
        A larger ``counting_share`` gives round two less noise (a smaller margin, fewer items
        just below ``min_count`` reported) and round one more (a narrower sketch, a larger
        candidate miss probability). A smaller ``candidate_rows`` lowers the miss probability
        (``R - k + 1`` rows must fail) and admits more false candidates (each costs round two a
        bin: ``lambda_2 / n`` messages per user), up to ``max_candidates``.

        Raises:
            InvalidParameterError: a parameter out of range, or the message budget cannot hold one
                bucket per row.
        """
        owner = cls.__name__
        epsilon, delta, n_users, rows, budget = check_sketch_request(epsilon, delta, n_users, rows, max_messages_per_user, owner)
        candidate_rows = check_integer(candidate_rows, "candidate_rows", owner, low=1, high=rows)
        share = check_real(counting_share, "counting_share", owner, low=0.0, high=1.0, low_open=True, high_open=True)
        max_candidates = check_integer(max_candidates, "max_candidates", owner, low=1, high=MAX_CATEGORIES - 1)
        seed = check_integer(seed, "seed", owner, low=0)
        counter_mean = calibrated_noise_mean(share * epsilon, delta / 2, 2, owner)
        counting_messages = 1 + (max_candidates + 1) * counter_mean / n_users
        if not budget > rows + counting_messages:
            raise invalid("max_messages_per_user", owner, f"more than {rows + counting_messages:.4g} (the item messages)", budget)
        counter_pld = _counter_event(counter_mean, delta).pld()

        def composed_delta(finder_mean: float) -> float:
            return _finder_event(finder_mean, rows, delta).pld().compose(counter_pld).delta(epsilon)

        finder_mean = least_noise_mean(composed_delta, epsilon, delta, owner)
        width = math.floor((budget - rows - counting_messages) * n_users / (2 * rows * finder_mean))
        if width < 1:
            needed = rows + counting_messages + 2 * rows * finder_mean / n_users
            raise invalid("max_messages_per_user", owner, f"at least {needed:.4g} for one bucket per row", budget)
        finder = ShuffledCountSketch(
            n_users=n_users,
            rows=rows,
            width=min(width, MAX_SKETCH_CELLS // (2 * rows)),
            noise_mean=finder_mean,
            delta=delta,
            seed=seed,
        )
        protocol = cls(
            finder=finder,
            counter_noise_mean=counter_mean,
            candidate_rows=candidate_rows,
            max_candidates=max_candidates,
            delta=delta,
        )
        if not protocol.guarantee.epsilon <= epsilon:
            raise invalid("epsilon", owner, f"met by the calibrated noise (got {protocol.guarantee.epsilon:.6g})", epsilon)
        return protocol

    # ----------------------------------------------------------------- description
    @property
    def n_users(self) -> int:
        return self.finder.n_users

    @functools.cached_property
    def event(self) -> PrivacyEvent:
        """`RoundsEvent` of round one's `BinsEvent` (``2 R`` cells) and round two's (two bins)."""
        return RoundsEvent((self.finder.event, self.counter(0).event), self.delta)

    @property
    def guarantee(self) -> PrivacyGuarantee:
        return self.event.guarantee

    @property
    def expected_messages_per_user(self) -> float:
        """Round one's messages plus round two's with ``max_candidates`` candidates (fewer candidates, fewer messages)."""
        return self.finder.expected_messages_per_user + 1 + (self.max_candidates + 1) * self.counter_noise_mean / self.n_users

    def bits_per_message(self) -> int:
        """The larger of the two rounds' messages: a sketch cell, or a bin among ``max_candidates + 1``."""
        return max(self.finder.bits_per_message(), max(1, math.ceil(math.log2(self.max_candidates + 1))))

    def candidate_miss_probability(self, min_count: float, n_participants: int | None = None) -> float:
        """A bound on the probability that round one drops an item of count at least ``min_count``.

        The item is dropped when fewer than ``k = candidate_rows`` of its row estimates reach
        ``t_1 = CANDIDATE_FRACTION * min_count``, hence only if at least ``R - k + 1`` rows err by
        more than ``t = min_count - t_1`` downwards. Split the other items at a count ``tau``: at most ``m / tau`` of them are
        big (``m`` participants), and the small ones' squared counts sum to at most ``tau m``.
        A row errs so only if a big item shares the item's bucket with a negative product of
        signs (probability at most ``m / (2 tau W)``: the signs are symmetric) or the noise plus
        the small items' collisions, of mean 0 and variance at most ``v = 2 lambda_1 + tau m / W``
        (``lambda_1`` scaled by ``m / n`` when more than ``n`` users take part),
        fall below ``-t`` (Cantelli: at most ``v / (v + t^2)``). Rows are independent, so the
        bound is the binomial tail at the per-row bound ``p``, minimised over ``tau``. It uses no
        property of the data beyond ``m``.
        """
        owner = f"{type(self).__name__}.candidate_miss_probability"
        min_count = check_real(min_count, "min_count", owner, low=1.0)
        m = self.n_users if n_participants is None else check_integer(n_participants, "n_participants", owner, low=1)
        sketch = self.finder
        gap = (1.0 - CANDIDATE_FRACTION) * min_count
        noise = 2.0 * sketch.noise_mean * max(1.0, m / sketch.n_users)
        users_per_bucket = m / sketch.width / gap  # in units of the gap, as everything below (no overflow)
        relative_variance = noise / gap / gap + _SPLITS * users_per_bucket  # v / t^2 at tau = gap * _SPLITS
        per_row = float(np.min(users_per_bucket / (2.0 * _SPLITS) + relative_variance / (relative_variance + 1.0)))
        if per_row >= 1.0:
            return 1.0
        return float(stats.binom.sf(sketch.rows - self.candidate_rows, sketch.rows, per_row))

    def counting_margin(self, failure_probability: float) -> float:
        """The least ``h`` with ``P(Pois(lambda_2) - lambda_2 < -h) <= failure_probability`` (exact)."""
        owner = f"{type(self).__name__}.counting_margin"
        beta = check_real(failure_probability, "failure_probability", owner, low=0.0, high=1.0, low_open=True, high_open=True)
        return float(self.counter_noise_mean - stats.poisson.ppf(beta, self.counter_noise_mean))

    def counter(self, n_candidates: int) -> ShuffledHistogram:
        """Round two over ``n_candidates`` candidates: bins ``0 .. n_candidates - 1``, then "other"."""
        n_candidates = check_integer(n_candidates, "n_candidates", type(self).__name__, low=0, high=self.max_candidates)
        bins = PoissonNoiseBitSum(n_users=self.n_users, noise_mean=self.counter_noise_mean, delta=self.delta)
        return ShuffledHistogram(categories=Categories(range(n_candidates + 1)), bin_protocol=bins, delta=self.delta)

    # ----------------------------------------------------------------- run
    def run(
        self, items: Any, *, candidates: Any, min_count: float, failure_probability: float = 1e-3, rng: RNGLike = None
    ) -> HeavyHitterRelease:
        """Both rounds on ``items`` (one per user): the candidates whose count reaches ``min_count``, with their estimates.

        Args:
            items: one item per user (non-negative integers, strings or bytes).
            candidates: the public list of items that may be reported (distinct, at most
                `MAX_CANDIDATE_LIST`; without a list, `PrefixHeavyHitters`).
            min_count: ``T``, the count to find every item at or above (at least 1).
            failure_probability: the per-item probability of missing an item of count at least
                ``T``: round one's bound (`candidate_miss_probability`) plus round two's noise
                tail, whose margin (`counting_margin`) takes the rest.
            rng: the users' and the shuffler's randomness.

        Raises:
            InvalidParameterError: bad items or candidates (repeated candidates included), or a
                ``failure_probability`` at or below round one's bound (the message gives it).
        """
        owner = type(self).__name__
        ids = item_ids(items, owner)
        sized = hasattr(candidates, "__len__") and not isinstance(candidates, (str, bytes))
        if sized and len(candidates) > MAX_CANDIDATE_LIST:
            limit = f"at most {MAX_CANDIDATE_LIST} items (beyond: PrefixHeavyHitters)"
            raise invalid("candidates", owner, limit, len(candidates))
        candidate_ids = item_ids(candidates, owner, "candidates")
        ordered = np.sort(candidate_ids)
        repeats = int(np.count_nonzero(ordered[1:] == ordered[:-1]))
        if repeats:
            raise invalid("candidates", owner, "distinct items", f"{repeats} repeated")
        min_count = check_real(min_count, "min_count", owner, low=1.0)
        beta = check_real(failure_probability, "failure_probability", owner, low=0.0, high=1.0, low_open=True, high_open=True)
        finder_miss = self.candidate_miss_probability(min_count, ids.size)
        if not finder_miss < beta:
            raise invalid("failure_probability", owner, f"above round one's miss bound {finder_miss:.3g} at this min_count", beta)
        generator = as_generator(rng, owner)
        self.finder.check_participants(ids.size)
        sketch = self.finder.analyze(self.finder.view_of_ids(ids, ids.size, generator))
        kth_largest = sketch.rows - self.candidate_rows  # its index among the sorted row estimates
        estimates = np.concatenate(
            [
                np.partition(sketch._row_estimates_of(candidate_ids[start : start + _CHUNK]), kth_largest, axis=0)[kth_largest]
                for start in range(0, candidate_ids.size, _CHUNK)
            ]
        )
        reaching = np.flatnonzero(estimates >= CANDIDATE_FRACTION * min_count)
        chosen = reaching[np.argsort(-estimates[reaching], kind="stable")][: self.max_candidates]
        bins = np.full(ids.size, chosen.size, dtype=np.int64)
        order = np.argsort(candidate_ids[chosen])
        position = np.searchsorted(candidate_ids[chosen][order], ids)
        found = position < chosen.size
        found[found] = candidate_ids[chosen][order][position[found]] == ids[found]
        bins[found] = order[position[found]]
        counts = self.counter(chosen.size).run(bins, rng=generator)[: chosen.size]
        margin = self.counting_margin(beta - finder_miss)
        reported = np.flatnonzero(counts >= min_count - margin)
        reported = reported[np.argsort(-counts[reported], kind="stable")]
        listed = candidates if isinstance(candidates, np.ndarray) else list(candidates)
        labels = [listed[i] for i in chosen.tolist()]
        labels = [label.item() if isinstance(label, np.generic) else label for label in labels]
        return HeavyHitterRelease(
            items=tuple((labels[i], float(counts[i])) for i in reported.tolist()),
            candidates=tuple(labels),
            candidate_counts=counts,
            min_count=min_count,
            margin=margin,
            failure_probability=beta,
            candidates_truncated=bool(reaching.size > self.max_candidates),
            sketch=sketch,
            guarantee=self.guarantee,
        )


@dataclass(frozen=True, eq=False)
class HeavyHitterRelease:
    """What `TwoRoundHeavyHitters.run` releases (everything here is post-processing of the two views).

    Two releases do not merge (each counting round has its own candidates); their round-one
    sketches do (`~privsum.histograms.ReleasedCountSketch.merge`, users of disjoint groups).

    Attributes:
        items: ``(item, estimated count)`` of the reported items, largest first.
        candidates: round one's candidates, the bins of round two, in order.
        candidate_counts: round two's estimate of each candidate's count.
        min_count: the count every item at or above was to be found.
        margin: items were reported from ``min_count - margin``.
        failure_probability: the per-item probability of missing an item of count ``min_count`` or more.
        candidates_truncated: more candidates reached round one's threshold than round two counts
            (the recall statement then does not cover the items cut).
        sketch: round one's released sketch (point queries, `~ReleasedCountSketch.to_bytes`).
        guarantee: both rounds' guarantee.
    """

    items: tuple[tuple[Any, float], ...]
    candidates: tuple[Any, ...]
    candidate_counts: np.ndarray
    min_count: float
    margin: float
    failure_probability: float
    candidates_truncated: bool
    sketch: ReleasedCountSketch
    guarantee: PrivacyGuarantee


def _finder_event(noise_mean: float, rows: int, delta: float) -> BinsEvent:
    return BinsEvent(PoissonCounterEvent(noise_mean=noise_mean, delta=delta), 2 * rows, Neighbouring.REPLACE_ONE, delta)


def _counter_event(noise_mean: float, delta: float) -> BinsEvent:
    return BinsEvent(PoissonCounterEvent(noise_mean=noise_mean, delta=delta), 2, Neighbouring.REPLACE_ONE, delta)
