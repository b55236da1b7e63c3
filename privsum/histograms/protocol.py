"""Shuffled histograms over a known domain: one bit sum per category, accounted by parallel composition.

User ``i`` holds a category ``v_i`` from a public list of ``k``; its one-hot vector has a 1 in bin
``v_i`` and 0 elsewhere, and each bin runs an independent instance of a shuffled bit-sum protocol
(RR or 3NB) on the column of bits. The analyzer's view is the product of the per-bin views (the
messages carry their bin), so the estimate of each bin is that bin protocol's estimate.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from privsum._random import RNGLike, as_generator
from privsum._validation import check_array, check_choice, check_real, invalid
from privsum.accounting.budget import largest_feasible
from privsum.accounting.events import PrivacyEvent
from privsum.accounting.guarantee import Neighbouring
from privsum.bitsum import BitSumProtocol, ConfidenceInterval, RRBitSum, ThreeNBBitSum
from privsum.exceptions import InvalidParameterError, PrivacyLeakWarning
from privsum.histograms._checks import check_delta_field, check_privacy_target
from privsum.histograms.categories import Categories
from privsum.histograms.events import HISTOGRAM_RELATIONS, BinsEvent
from privsum.histograms.poisson_bins import PoissonNoiseBitSum
from privsum.shuffle.histogram import MessageHistogram
from privsum.shuffle.messages import MessageBatch
from privsum.shuffle.protocol import EXECUTION_PATHS, ShuffleProtocol
from privsum.shuffle.streaming import PartialView

__all__ = ["HistogramCandidate", "ShuffledHistogram"]

# Users one-hot encoded at a time (bounded memory: about 2^20 one-byte entries).
_CHUNK_ENTRIES = 1 << 20


@dataclass(frozen=True)
class HistogramCandidate:
    """One protocol `ShuffledHistogram.from_privacy` considered: its name, per-bin variance and messages per user."""

    name: str
    variance: float
    expected_messages_per_user: float
    fits_budget: bool


@dataclass(frozen=True, kw_only=True)
class ShuffledHistogram(ShuffleProtocol):
    """Counts of users per category, each bin an independent shuffled bit sum.

    Args:
        categories: the public list of categories (`Categories` or a sequence of labels).
        bin_protocol: the bit-sum protocol every bin runs (an `~privsum.bitsum.RRBitSum`,
            `~privsum.bitsum.ThreeNBBitSum` or `PoissonNoiseBitSum` instance, calibrated for ``n_users``).
        neighbouring: ``"replace-one"`` (a user's category changes: two bins) or ``"zero-out"``
            (a user's category is replaced by "none": one bin).
        delta: the delta of the headline guarantee.
        chosen: the name of the candidate `from_privacy` chose (``None`` when built by hand).
        candidates: every candidate `from_privacy` calibrated, with its variance and messages.

    Privacy:
        Under ``neighbouring``, on the shuffled messages of all bins (trusted shuffler, an
        adversary knowing every other user's category). A replace-one change ``a -> b`` changes
        bin ``a``'s bit 1 -> 0 and bin ``b``'s 0 -> 1 and leaves the user's bits in the other
        ``k - 2`` bins, hence the distribution of their views, unchanged: the guarantee is the
        per-bin event composed **twice** (`BinsEvent`), whatever ``k`` is, not ``k`` times.
        Under zero-out one bin changes. Add/remove is not offered: an added user also sends its
        0-bits' messages (RR reports, 3NB noise) to every other bin, so all ``k`` bins would
        change; use replace-one (or the central reference `CentralHistogram`, where add/remove
        changes one count).

    Utility:
        Each bin's estimate is its bit-sum estimate: unbiased, with the bin protocol's variance
        (`variance`); bins are independent. Messages per user: a user's own bin as a holder of 1,
        the ``k - 1`` others as a holder of 0 (`expected_messages_per_user`); each message carries
        ``ceil(log2 k)`` bits of bin tag plus the value (`bits_per_message`).

    Examples:
        >>> histogram = ShuffledHistogram.from_privacy(
        ...     epsilon=1.0, delta=1e-6, n_users=2000, categories=["red", "green", "blue"])
        >>> values = ["red"] * 1000 + ["green"] * 700 + ["blue"] * 300
        >>> estimate = histogram.run(values, rng=1)
        >>> estimate.shape
        (3,)
        >>> bool(histogram.guarantee.epsilon <= 1.0)
        True
    """

    categories: Categories
    bin_protocol: BitSumProtocol
    neighbouring: Neighbouring = Neighbouring.REPLACE_ONE
    delta: float
    chosen: str | None = field(default=None, compare=False)
    candidates: tuple[HistogramCandidate, ...] = field(default=(), compare=False, repr=False)

    streams_chunks: ClassVar[bool] = True

    def __post_init__(self) -> None:
        owner = type(self).__name__
        if not isinstance(self.categories, Categories):
            object.__setattr__(self, "categories", Categories(self.categories))
        if not isinstance(self.bin_protocol, BitSumProtocol):
            raise invalid("bin_protocol", owner, "a BitSumProtocol instance", self.bin_protocol)
        relation = Neighbouring.parse(self.neighbouring, owner, allowed=tuple(HISTOGRAM_RELATIONS))
        object.__setattr__(self, "neighbouring", relation)
        check_delta_field(self, owner)

    # ----------------------------------------------------------------- calibration
    @classmethod
    def from_privacy(
        cls,
        *,
        epsilon: float,
        delta: float,
        n_users: int,
        categories: Any,
        neighbouring: str = "replace-one",
        max_messages_per_user: float | None = None,
        protocol: str = "auto",
    ) -> ShuffledHistogram:
        """The histogram protocol with the least per-bin variance meeting (epsilon, delta) in total.

        Candidates: 3NB with the paper's flooding, 3NB with the communication-saving flooding
        (variance allowance 1.1, 2 and 4), RR (one message per bin) and Poisson noise messages
        (`PoissonNoiseBitSum`: the fewest messages for many categories). Each is calibrated so that
        its `BinsEvent` (the per-bin event composed twice under replace-one, once under zero-out)
        meets the target: per-bin delta ``delta/b`` and the largest per-bin epsilon whose
        numerically composed guarantee meets ``epsilon`` at ``delta``, searched from the basic
        split ``epsilon/b`` by `privsum.accounting.budget.largest_feasible` (to a relative 0.2%;
        the result is a point the search evaluated and is checked again). The vector sums are not
        candidates. Centrally, the analytic Gaussian with L2 sensitivity sqrt(2) has a larger
        variance than the discrete Laplace with L1 sensitivity 2 (which 3NB nearly matches) for
        every epsilon from 0.1 to 8 at delta = 1e-6, and at delta = 1e-3 from epsilon = 0.5 (compare
        `CentralHistogram` with ``mechanism="auto"``, which picks the smaller); it wins only at
        large delta and small epsilon (e.g. ``(0.1, 1e-3)``). Even there
        `~privsum.sums.SkellamVectorSum` would not: it accounts a replace-one change as an L2
        shift of ``2 Delta_2`` (any two vectors of norm ``Delta_2``), not the one-hot vectors'
        sqrt(2).

        Args:
            epsilon: total epsilon of one run (all bins).
            delta: total delta, in ``(0, 1)``.
            n_users: users taking part.
            categories: the public category list.
            neighbouring: ``"replace-one"`` or ``"zero-out"``.
            max_messages_per_user: the most expected messages a user may send (all bins), or
                ``None`` for no limit.
            protocol: ``"auto"`` (the least variance within the budget), ``"3nb"``, ``"rr"`` or
                ``"poisson"``.

        Raises:
            InvalidParameterError: a parameter out of range, or no candidate fits the budget
                (the message names the fewest messages available).
        """
        owner = cls.__name__
        epsilon, delta, n_users = check_privacy_target(epsilon, delta, n_users, owner)
        categories = categories if isinstance(categories, Categories) else Categories(categories)
        relation = Neighbouring.parse(neighbouring, owner, allowed=tuple(HISTOGRAM_RELATIONS))
        protocol = check_choice(protocol, "protocol", owner, ("auto", "3nb", "rr", "poisson"))
        if max_messages_per_user is not None:
            max_messages_per_user = check_real(max_messages_per_user, "max_messages_per_user", owner, low=0.0, low_open=True)
        bins_per_change = HISTOGRAM_RELATIONS[relation]

        def fits(histogram: ShuffledHistogram) -> bool:
            return max_messages_per_user is None or histogram.expected_messages_per_user <= max_messages_per_user

        built, fitting = [], []
        for name, make_bin in _candidate_bins(protocol, n_users):
            if name == "rr" and max_messages_per_user is not None and len(categories) > max_messages_per_user:
                continue  # one message per bin
            if name.startswith("3nb-") and any(n == "3nb" for n, _ in fitting):
                continue  # the communication floodings trade variance for messages: never less variance
            least = min((h.variance() for _, h in fitting), default=math.inf)
            if _variance_floor(name, make_bin, epsilon, delta / bins_per_change) >= least:
                continue  # even the whole epsilon in one bin would not beat a fitting candidate
            bins = _calibrated_bins(name, make_bin, epsilon, delta, bins_per_change)
            if bins is not None:
                histogram = cls(categories=categories, bin_protocol=bins, neighbouring=relation, delta=delta)
                built.append((name, histogram))
                if fits(histogram):
                    fitting.append((name, histogram))
        if not fitting:
            fewest = min((h.expected_messages_per_user for _, h in built), default=math.inf)
            raise invalid(
                "max_messages_per_user", owner, f"at least {fewest:.4g} (the fewest any candidate sends)", max_messages_per_user
            )
        name, best = min(fitting, key=lambda pair: pair[1].variance())
        candidates = tuple(
            HistogramCandidate(n, h.variance(), h.expected_messages_per_user, any(n == m for m, _ in fitting)) for n, h in built
        )
        return dataclasses.replace(best, chosen=name, candidates=candidates)

    # ----------------------------------------------------------------- description
    @property
    def n_users(self) -> int:
        """Users the bins are calibrated for."""
        return self.bin_protocol.n_users

    @property
    def n_categories(self) -> int:
        return len(self.categories)

    @property
    def alphabet(self) -> tuple[int, ...]:
        return self.bin_protocol.alphabet

    @functools.cached_property
    def event(self) -> PrivacyEvent:
        """`BinsEvent`: the per-bin event composed over the bins one change touches."""
        return BinsEvent(self.bin_protocol.event, HISTOGRAM_RELATIONS[self.neighbouring], self.neighbouring, self.delta)

    @property
    def expected_messages_per_user(self) -> float:
        """Expected messages of one user over all bins: its own bin holding 1, the others 0."""
        per_bin = getattr(self.bin_protocol, "expected_messages", None)
        if per_bin is None:  # one message per bin whatever the bit (RR)
            return self.n_categories * self.bin_protocol.expected_messages_per_user
        return per_bin(1.0) + (self.n_categories - 1) * per_bin(0.0)

    def _message_cap(self, tail_probability: float) -> int:
        """Per bin, the bin protocol's cap (a user sends to each bin what that bin's protocol sends)."""
        return self.bin_protocol.per_sender_message_cap(tail_probability)

    @property
    def largest_message_effect(self) -> float:
        """One message's largest effect on one bin's estimate: the bin protocol's."""
        return self.bin_protocol.largest_message_effect

    def bits_per_message(self, n_instances: int | None = None) -> int:
        """Bits of one message: the bin tag (``ceil(log2 k)``) plus the value."""
        return self.bin_protocol.bits_per_message(self.n_categories if n_instances is None else n_instances)

    def variance(self) -> float:
        """Variance of each bin's estimate (the worst case over true counts)."""
        return float(np.max(self.bin_protocol.variance()))

    def rmse(self) -> float:
        return math.sqrt(self.variance())

    def confidence_interval(self, estimate: Any, level: float = 0.95, *, simultaneous: bool = False) -> ConfidenceInterval:
        """Per-bin intervals from an estimate (the bin protocol's `confidence_interval`).

        With ``simultaneous=True`` each bin's level is ``1 - (1 - level)/k`` (Bonferroni), so that
        all ``k`` intervals hold at once with probability at least ``level`` where the per-bin
        intervals are exact (3NB) and approximately otherwise (RR). Post-processing: costs no privacy.
        """
        owner = f"{type(self).__name__}.confidence_interval"
        level = check_real(level, "level", owner, low=0.0, high=1.0, low_open=True, high_open=True)
        if not isinstance(simultaneous, (bool, np.bool_)):
            raise invalid("simultaneous", owner, "True or False", simultaneous)
        values = self._estimate_array(estimate, owner)
        per_bin = 1.0 - (1.0 - level) / self.n_categories if simultaneous else level
        interval = self.bin_protocol.confidence_interval(values, per_bin)
        return ConfidenceInterval(
            interval.low, interval.high, level, interval.method + (", simultaneous" if simultaneous else "")
        )

    def as_dict(self, estimate: Any) -> dict:
        """``{category: estimate}`` in the order of the categories."""
        values = self._estimate_array(estimate, f"{type(self).__name__}.as_dict")
        return dict(zip(self.categories.labels, values.tolist(), strict=True))

    def _estimate_array(self, estimate: Any, owner: str) -> np.ndarray:
        """A released estimate as a float array of shape ``(n_categories,)``, or raise naming ``estimate``."""
        values = check_array(estimate, "estimate", owner, ndim=1).astype(float)
        if values.shape != (self.n_categories,):
            raise invalid("estimate", owner, f"an array of shape ({self.n_categories},)", f"shape {values.shape}")
        return values

    # ----------------------------------------------------------------- roles
    def randomize(self, x: Any, *, rng: RNGLike = None) -> MessageBatch:
        """Every user's messages for every bin (instance ``j`` is category ``j``), users one-hot encoded in chunks."""
        owner = type(self).__name__
        bins = self.categories.index(x, owner)
        generator = as_generator(rng, owner)
        self.check_participants(bins.size)
        rows = max(1, _CHUNK_ENTRIES // self.n_categories)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)  # checked once above, on all users
            batches = [
                self.bin_protocol.randomize(self.categories.one_hot(bins[start : start + rows]), rng=generator)
                for start in range(0, bins.size, rows)
            ]
        return MessageBatch.concatenate(batches)

    def sample_view(self, x: Any, *, rng: RNGLike = None) -> MessageHistogram:
        """The per-bin views of all users, sampled by the bin protocol's exact fast path in chunks of users."""
        generator = as_generator(rng, type(self).__name__)
        partial = self.partial_view(x, rng=generator)
        return self.complete_view(partial, rng=generator)

    def partial_view(self, chunk: Any, *, rng: RNGLike = None, path: str = "fast") -> PartialView:
        owner = type(self).__name__
        path = check_choice(path, "path", owner, EXECUTION_PATHS)
        bins = self.categories.index(chunk, owner)
        generator = as_generator(rng, owner)
        rows = max(1, _CHUNK_ENTRIES // self.n_categories)
        total: PartialView | None = None
        for start in range(0, bins.size, rows):
            bits = self.categories.one_hot(bins[start : start + rows])
            part = self.bin_protocol.partial_view(bits, rng=generator, path=path)
            total = part if total is None else total + part
        return total  # type: ignore[return-value]  # at least one user (index refuses empty input)

    def check_participants(self, n_participants: int) -> None:
        self.bin_protocol.check_participants(n_participants)

    def event_for_participants(self, n_participants: int) -> PrivacyEvent:
        """`BinsEvent` over the bin protocol's event for ``n_participants`` users."""
        bin_event = self.bin_protocol.event_for_participants(n_participants)
        return BinsEvent(bin_event, HISTOGRAM_RELATIONS[self.neighbouring], self.neighbouring, self.delta)

    def analyze(self, view: MessageHistogram | MessageBatch) -> np.ndarray:
        """Each bin's unbiased count estimate, shape ``(n_categories,)``."""
        histogram = self.view(view)
        if histogram.counts.shape[0] != self.n_categories:
            raise invalid("view", type(self).__name__, f"a view of {self.n_categories} bins", f"{histogram.counts.shape[0]} bins")
        return np.asarray(self.bin_protocol.analyze(histogram), dtype=float)


def _candidate_bins(protocol: str, n_users: int) -> list[tuple[str, Any]]:
    """``(name, make)`` pairs: ``make(epsilon, delta)`` calibrates one bin."""
    three_nb = [("3nb", lambda e, d: ThreeNBBitSum.from_privacy(epsilon=e, delta=d, n_users=n_users))]
    for factor in (1.1, 2.0, 4.0):
        three_nb.append(
            (
                f"3nb-communication-{factor:g}",
                lambda e, d, f=factor: ThreeNBBitSum.from_privacy(
                    epsilon=e, delta=d, n_users=n_users, flooding="communication", variance_factor=f
                ),
            )
        )
    rr = [("rr", lambda e, d: RRBitSum.from_privacy(epsilon=e, delta=d, n_users=n_users))]
    poisson = [("poisson", lambda e, d, b: PoissonNoiseBitSum.from_privacy(epsilon=e, delta=d, n_users=n_users, changed_bins=b))]
    return {"auto": three_nb + rr + poisson, "3nb": three_nb, "rr": rr, "poisson": poisson}[protocol]


def _variance_floor(name: str, make: Any, epsilon: float, per_bin_delta: float) -> float:
    """A per-bin variance no calibration of the candidate goes below, cheaply.

    Split candidates: the variance with the whole epsilon in each bin (every calibration of
    `_calibrated_bins` has a per-bin epsilon at most ``epsilon`` at the same per-bin delta, and
    the bit sums' variance falls as their epsilon grows). Poisson bins: ``log(1/delta)``, since
    the output where a changed counter reads 0 has probability ``e^-lambda`` on one side and 0 on
    the other, so ``delta >= e^-lambda`` and the variance ``lambda >= log(1/delta)``.
    """
    if name == "poisson":
        return math.log(1.0 / per_bin_delta)
    try:
        return float(np.max(make(epsilon, per_bin_delta).variance()))
    except InvalidParameterError:
        return math.inf


def _calibrated_bins(name: str, make: Any, epsilon: float, delta: float, bins_per_change: int) -> BitSumProtocol | None:
    """The bin protocol with the largest per-bin epsilon whose `BinsEvent` meets (epsilon, delta); ``None`` if none.

    Poisson bins are calibrated directly for the `BinsEvent` (`PoissonNoiseBitSum.from_privacy`
    with ``changed_bins``).
    """
    if name == "poisson":
        try:
            return make(epsilon, delta, bins_per_change)
        except InvalidParameterError:
            return None

    relation = Neighbouring.REPLACE_ONE if bins_per_change == 2 else Neighbouring.ZERO_OUT
    per_bin_delta = delta / bins_per_change

    def composed(epsilon0: float) -> float:
        try:
            candidate = make(epsilon0, per_bin_delta)
        except InvalidParameterError:
            return math.inf
        return BinsEvent(candidate.event, bins_per_change, relation, delta).guarantee.epsilon

    try:
        epsilon0, _ = largest_feasible(
            composed, epsilon, epsilon / bins_per_change, epsilon, centred=True, caller=("ShuffledHistogram", "epsilon")
        )
    except InvalidParameterError:
        return None
    best = make(epsilon0, per_bin_delta)  # the feasible point the search evaluated (calibration is deterministic)
    return best if composed(epsilon0) <= epsilon else None
