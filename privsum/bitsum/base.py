"""The bit-sum interface: many independent instances of summing one bit per user."""

from __future__ import annotations

import abc
import math
import warnings
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from scipy import stats

from privsum._random import RNGLike, as_generator
from privsum._validation import check_array, check_choice, check_integer, check_real, invalid
from privsum.accounting.budget import fit_composition
from privsum.accounting.cache import cached_calibration
from privsum.accounting.events import PrivacyEvent
from privsum.exceptions import PrivacyLeakWarning
from privsum.shuffle.histogram import MessageHistogram
from privsum.shuffle.messages import MessageBatch
from privsum.shuffle.protocol import EXECUTION_PATHS, ShuffleProtocol
from privsum.shuffle.streaming import PartialView

__all__ = ["CALIBRATIONS", "BitSumProtocol", "ConfidenceInterval"]

CALIBRATIONS = ("tight", "analytic")
EXACT = "exact"
NORMAL_APPROXIMATION = "normal approximation"


@dataclass(frozen=True)
class ConfidenceInterval:
    """A confidence interval ``[low, high]`` for the true sum of each instance.

    Attributes:
        low: lower end (a float for one estimate, an array for many).
        high: upper end, same shape.
        level: the nominal coverage, e.g. ``0.95``.
        method: ``"exact"`` (coverage at least ``level``, from the exact noise distribution) or
            ``"normal approximation"`` (coverage close to ``level`` when the error is close to
            normal, e.g. many users).

    Examples:
        >>> interval = ConfidenceInterval(low=9.5, high=12.5, level=0.95, method="exact")
        >>> low, high = interval
        >>> print(interval)
        [9.5, 12.5] (95% confidence, exact)
    """

    low: np.ndarray | float
    high: np.ndarray | float
    level: float
    method: str

    def __iter__(self):
        return iter((self.low, self.high))

    def __str__(self) -> str:
        if np.ndim(self.low) == 0:
            ends = f"[{self.low:.6g}, {self.high:.6g}]"
        else:
            formatter = {"float_kind": lambda value: f"{value:.6g}"}
            low, high = (np.array2string(np.asarray(end), formatter=formatter, separator=", ") for end in (self.low, self.high))
            ends = f"low {low}, high {high}"
        return f"{ends} ({100 * self.level:.4g}% confidence, {self.method})"


class BitSumProtocol(ShuffleProtocol):
    """A protocol estimating ``S = sum_i b_i`` for bits ``b_i``, in many instances at once.

    Inputs are bits of shape ``(n_users, n_instances)`` (a 1-D array is one instance); the
    estimate has shape ``(n_instances,)``, one independent, unbiased estimate per column.
    Subclasses carry ``n_users``, the number of users the randomizer is calibrated for.

    Privacy:
        `event` is the guarantee of **one instance** for one user's bit under replace-one
        neighbours (unless a subclass states otherwise). A user taking part in ``m`` instances
        is accounted by composing the event ``m`` times.

        The guarantee assumes at least ``n_users`` users take part. With fewer, shuffled
        protocols hide each user among fewer others (or among less noise): `randomize` and
        `sample_view` then warn with `PrivacyLeakWarning`, and `event_for_participants` reports
        what is actually achieved. More users than ``n_users`` never weakens the guarantee: the
        extra users' messages are independent of the target's bit given their own inputs, so
        the view is a post-processing of the calibrated one.

        Streamed runs (`run` on chunks of users, `run_streamed`) check the participants once,
        on the total, so chunks smaller than ``n_users`` do not warn by themselves.
    """

    streams_chunks: ClassVar[bool] = True
    #: Whether a curator adds the noise once to each total (the central baselines): not divisible over users.
    curated: ClassVar[bool] = False
    n_users: int

    @classmethod
    def calibrate_for_compositions(
        cls,
        *,
        epsilon: float,
        delta: float,
        n_users: int,
        compositions: int,
        instance_delta: float,
        calibration: str = "tight",
        caller: tuple[str, str] | None = None,
        start: float | None = None,
        **options: Any,
    ) -> BitSumProtocol | None:
        """An instance whose event, composed ``compositions`` times, meets ``(epsilon, delta)``; ``None``: no search of its own.

        A caller that composes one user's bit over many instances (the KDE: ``compositions`` =
        touched instances) asks the class first; ``None`` (this default) means it has no
        search of its own, and the caller fits a per-instance epsilon (`fit_for_compositions`,
        by `privsum.accounting.budget.fit_composition`) over ``from_privacy(epsilon=epsilon0,
        delta=instance_delta, n_users=n_users, calibration=calibration, **options)``. A
        subclass whose composed guarantee depends on one parameter more directly (RR's flip
        probability) overrides this with a search over that parameter; one whose options trade
        communication for accuracy may choose them for the composition (3NB's flooding). The
        returned instance's ``compositions``-fold composition at ``delta`` must not exceed
        ``epsilon``; the caller checks it. ``caller`` is ``(owner, parameter)`` a refusal names;
        ``start`` is a per-instance epsilon from which a search over it may start (the caller's
        closed-form guess; ``None``: ``epsilon / compositions``).
        """
        return None

    @abc.abstractmethod
    def variance(self, true_sum: Any = None) -> np.ndarray | float:
        """Variance of one instance's estimate (given the true sum where it matters)."""

    def rmse(self, true_sum: Any = None) -> np.ndarray | float:
        """Root-mean-square error of one instance's estimate."""
        return np.sqrt(self.variance(true_sum))

    def confidence_interval(self, estimate: Any, level: float = 0.95) -> ConfidenceInterval:
        """A confidence interval for the true sum from an estimate of this protocol (`run` or `analyze`).

        ``estimate +- h``, the same half-width ``h`` for every instance, with ``n_users`` users
        taking part (as calibrated). How ``h`` is found, in the returned ``method``:

        * ``"exact"`` where the error is noise independent of the data (central Laplace and
          Gaussian, 3NB, the exact sum): the smallest ``h`` with ``P(|noise| <= h) >= level``,
          from the noise's exact distribution, so the coverage is at least ``level``.
        * ``"normal approximation"`` otherwise (RR, local RR, Pure): ``h = z * sqrt(variance()) +
          step / 2``, with ``z`` the two-sided standard-normal quantile, the worst-case variance
          (for Pure, all users holding 1) and a continuity correction of half the spacing
          ``step`` between the estimate's possible values. Not guaranteed: checked exactly for
          RR at 300 to 100,000 users with 30 to 160 expected flipped reports, where the coverage
          is between ``level`` and ``level + 0.03`` for levels 0.9, 0.95 and 0.99; with only a
          handful of flipped or dropped reports it can fall below ``level``.

        The interval is a post-processing of the released estimate and the public parameters:
        it costs no privacy.

        Args:
            estimate: the estimate(s) of the true sum, a number or a 1-D array (one per instance).
            level: the coverage, in ``(0, 1)``.

        Returns:
            A `ConfidenceInterval` (unpacks as ``low, high``).

        Examples:
            >>> from privsum.bitsum import CentralLaplaceBitSum
            >>> protocol = CentralLaplaceBitSum.from_privacy(epsilon=1.0, n_users=1000)
            >>> print(protocol.confidence_interval(412.0, level=0.95))
            [409, 415] (95% confidence, exact)
        """
        owner = f"{type(self).__name__}.confidence_interval"
        level = check_real(level, "level", owner, low=0.0, high=1.0, low_open=True, high_open=True)
        values = check_array(estimate, "estimate", owner, ndim=(0, 1)).astype(float)
        half_width, method = self._error_half_width(level)
        low, high = values - half_width, values + half_width
        if values.ndim == 0:
            return ConfidenceInterval(float(low), float(high), level, method)
        return ConfidenceInterval(low, high, level, method)

    def _error_half_width(self, level: float) -> tuple[float, str]:
        """``(h, method)``: the normal approximation with the worst-case variance; exact subclasses override.

        ``h = z sd + step/2``: the continuity correction for an estimate on a lattice of spacing
        ``step`` (`_lattice_step`).
        """
        z = float(stats.norm.isf((1.0 - level) / 2.0))
        return z * math.sqrt(float(np.max(self.variance()))) + 0.5 * self._lattice_step(), NORMAL_APPROXIMATION

    def _lattice_step(self) -> float:
        """The spacing of the values the estimate takes (one count, rescaled by the debiasing)."""
        return 1.0

    def largest_decrease(self, n_malicious: int, *, cap: int | None = None) -> float:
        """The largest decrease of an estimate that ``n_malicious`` senders cause (`manipulation_bound` bounds both ways).

        Protocols whose messages push one way harder than the other (RR, the curated baselines)
        override it; the shuffled KDE, whose analyzer subtracts the number of participants,
        needs the two directions apart.
        """
        return self.manipulation_bound(n_malicious, cap=cap)

    def check_bits(self, bits: Any) -> np.ndarray:
        """Validate bits and return them as an integer array of shape ``(n_users, n_instances)``.

        An integer numpy array is checked in one pass, without a copy; anything else (and an
        array that fails that check, for the error message) goes through the general check.
        """
        if type(bits) is np.ndarray and bits.dtype == bool:
            bits = bits.view(np.int8)  # False/True are the bytes 0/1: the same values, no copy
        if _integer_bits_in_one_pass(bits):
            array = _as_signed(bits)
        else:
            array = check_array(bits, "bits", type(self).__name__, ndim=(1, 2), low=0, high=1, integer=True)
        if array.shape[0] == 0 or array.size == 0:
            raise invalid(
                "bits", type(self).__name__, "a non-empty array (at least one user and one instance)", f"shape {array.shape}"
            )
        return array.reshape(array.shape[0], -1)  # signed integer dtype (int8 inputs stay small)

    def event_for_participants(self, n_participants: int) -> PrivacyEvent:
        """The guarantee actually achieved when ``n_participants`` users take part.

        At least ``n_users`` participants: `event` (more users never hurt). Fewer: recomputed
        by the subclass for the smaller crowd (the same parameters, less hiding).
        """
        n_participants = check_integer(n_participants, "n_participants", type(self).__name__, low=1)
        if n_participants >= self.n_users:
            return self.event
        return self._event_for_fewer(n_participants)

    def _event_for_fewer(self, n_participants: int) -> PrivacyEvent:
        """The event for fewer participants than calibrated; local and central protocols do not depend on it."""
        return self.event

    @property
    def depends_on_participants(self) -> bool:
        """Whether the guarantee weakens when fewer than ``n_users`` users take part."""
        return True

    def check_participants(self, n_participants: int) -> None:
        """Warn when fewer than ``n_users`` took part (`warn_if_fewer`); more never hurts."""
        self.warn_if_fewer(n_participants)

    def partial_view(self, chunk: Any, *, rng: RNGLike = None, path: str = "fast") -> PartialView:
        """One chunk of users' histogram: each user's randomizer, with its share of the noise.

        The per-user noise shares are calibrated for ``n_users`` users, so the chunks' histograms
        add up to the histogram of one run over all of them.
        """
        owner = type(self).__name__
        path = check_choice(path, "path", owner, EXECUTION_PATHS)
        bits = self.check_bits(chunk)
        generator = as_generator(rng, owner)
        view_of_bits = self._faithful_view_of_bits if path == "faithful" else self._view_of_bits
        histogram = view_of_bits(bits, generator)
        return PartialView(histogram, bits.shape[0])

    def _faithful_view_of_bits(self, bits: np.ndarray, generator: np.random.Generator) -> MessageHistogram:
        """The histogram of every user's randomized messages (validated bits, no participant check).

        The default materialises the messages (`_messages_of_bits`) and counts them; a subclass
        may count while randomizing, as long as every user's randomizer is still run.
        """
        return self.view(self._messages_of_bits(bits, generator))

    def _messages_of_bits(self, bits: np.ndarray, generator: np.random.Generator) -> MessageBatch:
        """`randomize` on validated bits, without the participant check."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            return self.randomize(bits, rng=generator)

    def _view_of_bits(self, bits: np.ndarray, generator: np.random.Generator) -> MessageHistogram:
        """`sample_view` on validated bits, without the participant check."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            return self.sample_view(bits, rng=generator)

    def warn_if_fewer(self, n_seen: int) -> None:
        """Warn with `PrivacyLeakWarning` when fewer users take part than the calibration assumed."""
        if self.depends_on_participants and n_seen < self.n_users:
            warnings.warn(
                f"{type(self).__name__} was calibrated for n_users={self.n_users} but {n_seen} users took part; "
                f"the guarantee is weaker: see event_for_participants({n_seen}).",
                PrivacyLeakWarning,
                stacklevel=3,
            )


def _integer_bits_in_one_pass(bits: Any) -> bool:
    """Whether ``bits`` is a non-empty 1-D or 2-D integer numpy array of zeros and ones (one pass, no copy).

    Read as unsigned integers of the same width, negative entries become large, so one
    maximum at most 1 proves every entry is 0 or 1.
    """
    if type(bits) is not np.ndarray or bits.ndim not in (1, 2) or bits.size == 0:
        return False
    if bits.dtype.kind not in "iu":
        return False
    unsigned = bits.view(np.dtype(bits.dtype.str.replace("i", "u")))  # same width and byte order
    return bool(unsigned.max() <= 1)


def _as_signed(bits: np.ndarray) -> np.ndarray:
    """Checked 0/1 bits of an unsigned dtype viewed as the signed dtype of the same width (no copy).

    Counts and differences of unsigned arrays stay unsigned in numpy (``n - ones`` wraps, a
    ``uint64`` sum does not cast to ``int64``), so every protocol receives signed bits.
    """
    if bits.dtype.kind == "u":
        return bits.view(np.dtype(bits.dtype.str.replace("u", "i")))
    return bits


def instance_ids(n_users: int, n_instances: int) -> np.ndarray:
    """Instance id of each entry of a ``(n_users, n_instances)`` array, flattened in C order."""
    return np.tile(np.arange(n_instances, dtype=np.int64), n_users)


def signed_messages(plus: np.ndarray, minus: np.ndarray) -> MessageBatch:
    """Materialise ``plus[u, j]`` messages ``+1`` and ``minus[u, j]`` messages ``-1`` per user and instance.

    Messages are listed user by user (they are shuffled afterwards).
    """
    n_users, n_instances = plus.shape
    ids = instance_ids(n_users, n_instances)
    per_entry = np.stack([plus.ravel(), minus.ravel()], axis=1)  # (entries, 2)
    instances = np.repeat(np.repeat(ids, 2), per_entry.ravel())
    values = np.repeat(np.tile(np.array([1, -1], dtype=np.int64), ids.size), per_entry.ravel())
    return MessageBatch(instances, values, n_instances)


def signed_histogram(plus: np.ndarray, minus: np.ndarray) -> MessageHistogram:
    """The view ``(#(-1), #(+1))`` per instance from count vectors."""
    return MessageHistogram(np.stack([minus, plus], axis=1).astype(np.int64), (-1, 1))


def check_calibration(calibration: Any, owner: str) -> str:
    """Validate the calibration method name."""
    return check_choice(calibration, "calibration", owner, CALIBRATIONS)


def symmetric_noise_half_width(pmf: np.ndarray, level: float) -> int:
    """The smallest integer ``h`` with ``P(|Z| <= h) >= level`` for ``Z`` with pmf ``pmf`` on ``-K..K`` (centred).

    Mass missing from ``pmf`` (a truncated tail) counts as outside every interval, so ``h`` is
    conservative.
    """
    centre = (pmf.size - 1) // 2
    inside = np.cumsum(pmf[centre:] + np.concatenate([[0.0], pmf[centre - 1 :: -1]]) if centre else pmf[centre:])
    reached = np.flatnonzero(inside >= level)
    if reached.size == 0:
        raise ValueError("the truncated noise distribution does not reach the requested level")
    return int(reached[0])


def fit_for_compositions(
    protocol: type[BitSumProtocol],
    *,
    epsilon: float,
    delta: float,
    compositions: int,
    instance_delta: float,
    start: float | None = None,
    caller: tuple[str, str] | None = None,
    **from_privacy: Any,
) -> BitSumProtocol:
    """The generic search for `BitSumProtocol.calibrate_for_compositions`: the largest per-instance epsilon that composes.

    ``protocol.from_privacy(epsilon=epsilon0, delta=instance_delta, **from_privacy)`` (``n_users``,
    ``calibration`` and the protocol's options) for the largest ``epsilon0`` whose event, composed
    ``compositions`` times, meets ``(epsilon, delta)`` (`privsum.accounting.budget.fit_composition`,
    from ``start``, else ``epsilon / compositions``); each calibration is cached
    (`~privsum.accounting.cache`).

    Examples:
        >>> from privsum.bitsum import PureBitSum
        >>> bitsum = fit_for_compositions(PureBitSum, epsilon=2.0, delta=1e-6, n_users=1000, compositions=20, instance_delta=0.0)
        >>> 2.0 / 20 <= bitsum.guarantee.epsilon
        True
    """

    def calibrated(epsilon0: float) -> BitSumProtocol:
        return cached_calibration(protocol.from_privacy, epsilon=epsilon0, delta=instance_delta, **from_privacy)

    epsilon0 = fit_composition(
        lambda epsilon0: calibrated(epsilon0).event,
        epsilon=epsilon,
        delta=delta,
        delta0=instance_delta,
        count=compositions,
        start=epsilon / compositions if start is None else start,
        caller=caller or (f"{protocol.__name__}.calibrate_for_compositions", "epsilon"),
    )
    return calibrated(epsilon0)
