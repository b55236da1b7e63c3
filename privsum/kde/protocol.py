"""The shuffled-DP KDE protocol: any LSQ family over any bit-sum protocol (Algorithm 1 of Wagner (ICLR 2025)).

References:
    Wagner, "Learning from End User Data with Shuffled Differential Privacy over Kernel
    Densities", ICLR 2025.
"""

from __future__ import annotations

import functools
import inspect
import math
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from privsum._random import RNGLike, as_generator
from privsum._validation import check_choice, check_delta, check_epsilon, check_integer, invalid
from privsum.accounting.budget import composed_guarantee, fit_composition
from privsum.accounting.cache import cached_calibration
from privsum.accounting.events import ComposedEvent, PrivacyEvent
from privsum.accounting.guarantee import PrivacyGuarantee
from privsum.bitsum import bitsum_protocol
from privsum.bitsum.base import BitSumProtocol
from privsum.exceptions import PrivacyLeakWarning
from privsum.kde._parties import KDEPartyHooks
from privsum.kde._scale import warn_if_degenerate_scale
from privsum.kde.function import KDEFunction
from privsum.kde.theory import seed_composition_epsilon, seed_per_instance_epsilon, sup_rmse_bound
from privsum.lsq.base import LSQFamily
from privsum.lsq.rff import RandomFourierFeatures, apply_projection, fourier_features_block, fourier_features_of_turns
from privsum.shuffle.histogram import MessageHistogram
from privsum.shuffle.messages import MessageBatch
from privsum.shuffle.protocol import EXECUTION_PATHS, ShuffleProtocol
from privsum.shuffle.streaming import PartialView, is_chunk_stream

__all__ = ["ACCOUNTING_METHODS", "FEATURE_PRECISIONS", "ShuffledKDE"]

ACCOUNTING_METHODS = ("tight", "seed")
#: Floating-point precision of random Fourier features in the rounding step.
FEATURE_PRECISIONS = ("float64", "float32", "exact")
#: Largest difference between the probability that a bit of ``precision="float64"`` is 1 and the
#: exact ``(1 + f/R)/2`` of `RandomFourierFeatures`: the float32 probability ``p`` (within
#: ``FLOAT64_PROBABILITY_ERROR - 2^-24`` of it, tested over phases of up to ``10**4`` turns) compared
#: with a float32 uniform, which gives ``ceil(p 2^24) / 2^24``.
FLOAT64_PROBABILITY_ERROR = 5e-7


# Entries (users x repetitions x coordinates) rounded at once: bounds the working memory.
_BLOCK_ENTRIES = 1 << 21
# Entries that the elementwise passes of the Fourier rounding process at once: their working set
# (about 25 bytes an entry) stays in a core's L2 cache, so only the matmul's output goes through memory.
_CACHE_BLOCK_ENTRIES = 1 << 15


@dataclass(frozen=True, kw_only=True)
class ShuffledKDE(KDEPartyHooks, ShuffleProtocol):
    """Shuffled-DP kernel density estimation from bit sums (Algorithm 1 of Wagner (ICLR 2025)).

    Public: ``I`` draws ``(f_i, g_i)`` of an LSQ ``family`` and ``I*Q`` independent instances of a
    calibrated ``bitsum`` protocol. A user with point ``x`` rounds each coordinate to a bit
    ``b_ij ~ Bern((1 + f_i(x)_j / R) / 2)`` and runs instance ``(i, j)``'s randomizer on it (messages
    tagged with instance id ``i*Q + j``); the analyzer estimates each bit sum ``B_ij`` and
    publishes ``F_ij = (2 B_ij - n) R``, from which a `KDEFunction` answers any number of queries.

    Args:
        family: the LSQ family (public randomness from its seed).
        bitsum: the per-instance bit-sum protocol, calibrated for ``n_users``.
        delta: the overall delta the guarantee is reported at, in ``[0, 1)``.
        accounting: ``"tight"`` (numerical PLD composition of the bit sum's per-instance event)
            or ``"seed"`` (Theorem 3.2's advanced composition with ``delta' = delta/2``; pure
            composition for a pure bit sum).
        chunk_size: users processed at once. Working memory is ``O(chunk_size * I * Q)`` numbers
            at most, and repetitions are processed in blocks when ``chunk_size * I * Q`` is large.
        precision: ``"float64"`` (default): for `RandomFourierFeatures` the matmul and the phase
            are in float64 (the angle of ``family.f``, in turns), the phase is reduced exactly to
            one turn in float64, and only the cosine of the reduced angle is evaluated in float32,
            directly as the rounding probability ``cos^2(angle/2) = (1 + f/R)/2``, and compared
            with a float32 uniform; each bit is 1 with a probability within
            ``FLOAT64_PROBABILITY_ERROR = 5e-7`` of the exact one.
            ``"exact"`` rounds exactly the values ``family.f`` returns (bit for bit, slower).
            ``"float32"`` computes `RandomFourierFeatures` (the projection, the matmul and the
            cosine) in single precision, 2 to 2.5 times faster at ``d = 768``; the bits are then
            unbiased for features within about ``1e-5`` of the float64 ones (a bias far below the
            bit-sum noise). Privacy does not depend on the precision: the privacy of each instance
            comes from its bit sum, whose guarantee holds whatever the input bits' probabilities
            (see Privacy), so a rounding probability off by a floating-point error changes only
            the utility, by a bias far below the bit-sum noise. Other families always use their own ``f``.

    Privacy:
        Replace-one neighbours, communication threat (the adversary sees every message; the
        released function is post-processing). Changing one user's point from ``x`` to ``x'``
        changes the bit distribution only of coordinates where ``f_i(x)`` or ``f_i(x')`` is
        non-zero, so of at most ``min(Q, 2S)`` coordinates per repetition (Theorem 3.2 counts
        ``S``, the add/remove count). The bit of a touched coordinate is ``Bern(p)`` versus
        ``Bern(p')``; instance ``(i, j)``'s output is then the mixture ``p M(1) + (1-p) M(0)``
        versus ``p' M(1) + (1-p') M(0)``, whose hockey-stick divergence is at most that between
        ``M(1)`` and ``M(0)`` (joint convexity), i.e. the bit-sum event. The other users' random
        bits are a mixture over fixed bits, which the bit-sum event already covers. Instances use
        independent randomness, so the guarantee composes ``I * min(Q, 2S)`` bit-sum events.

        Participation: with fewer users than the bit sums are calibrated for, each instance hides
        a user in less noise. `run` and `sample_view` warn once with `PrivacyLeakWarning`;
        `event_for_participants` and `guarantee_for_participants` compose the bit sum's
        `~privsum.bitsum.BitSumProtocol.event_for_participants` instead, and the released
        `KDEFunction` carries that achieved guarantee (and the actual number of users). More
        users never weaken a bit sum's guarantee, hence not this one.

        Streaming: users may come as an array, an iterable of arrays, or a Dask array
        (`run_streamed`); the per-chunk histograms add up, so memory is bounded by
        ``chunk_size`` and the result is the same in distribution.

    Utility:
        ``E[F_ij] = sum_u f_i(x_u)_j`` when the bit sum is unbiased, so the estimate is unbiased
        for the LSQ estimate given the draws, and for the exact KDE when ``beta = 0``. Theorem 3.2
        bounds its supRMSE by ``sqrt(4 beta^2 + 16 R^4 S (S + (E/n)^2) / I)`` (`sup_rmse_bound`).

    Robustness:
        Every instance is a bit sum, with the bit sum's `per_sender_message_cap`. ``k`` malicious
        senders shift every published coefficient ``F_ij = (2 B_ij - n) R`` by at most ``2 R``
        times the bit sum's shift, plus ``R k`` downwards when the analyzer counts them among the
        ``n`` participants (`manipulation_bound`), and the density at a query ``y`` by at most
        that times ``sum_ij |g_i(y)_j| / (n I)``.

    References:
        Wagner, *Learning from End User Data with Shuffled Differential Privacy over Kernel
        Densities* (ICLR 2025), Algorithm 1, Theorems 3.2-3.3.

    Examples:
        >>> from privsum.bitsum import ThreeNBBitSum
        >>> from privsum.lsq import RandomFourierFeatures
        >>> family = RandomFourierFeatures(dimension=2, n_repetitions=16, seed=0)
        >>> kde = ShuffledKDE.from_privacy(family=family, protocol=ThreeNBBitSum, epsilon=4.0, delta=1e-6, n_users=500)
        >>> kde.guarantee.epsilon <= 4.0, kde.guarantee.neighbouring.value
        (True, 'replace-one')
        >>> density = kde.run(np.zeros((500, 2)), rng=0)
        >>> density(np.zeros((3, 2))).shape
        (3,)
    """

    streams_chunks: ClassVar[bool] = True

    family: LSQFamily
    bitsum: BitSumProtocol
    delta: float = 0.0
    accounting: str = "tight"
    chunk_size: int = 4096
    precision: str = "float64"

    def __post_init__(self) -> None:
        owner = "ShuffledKDE"
        if not isinstance(self.family, LSQFamily):
            raise invalid("family", owner, "an LSQFamily", type(self.family).__name__)
        if not isinstance(self.bitsum, BitSumProtocol):
            raise invalid("bitsum", owner, "a BitSumProtocol", type(self.bitsum).__name__)
        object.__setattr__(self, "delta", check_delta(self.delta, owner))
        check_choice(self.accounting, "accounting", owner, ACCOUNTING_METHODS)
        object.__setattr__(self, "chunk_size", check_integer(self.chunk_size, "chunk_size", owner, low=1))
        check_choice(self.precision, "precision", owner, FEATURE_PRECISIONS)

    # ----- public description -------------------------------------------------------------

    @property
    def n_users(self) -> int:
        """Users the bit sums are calibrated for."""
        return self.bitsum.n_users

    @property
    def n_instances(self) -> int:
        """``I * Q`` bit-sum instances."""
        return self.family.n_repetitions * self.family.n_coordinates

    @property
    def touched_per_repetition(self) -> int:
        """Instances per repetition whose input a replace-one change can alter: ``min(Q, 2S)``."""
        return touched_per_repetition(self.family)

    @property
    def touched_instances(self) -> int:
        """``I * min(Q, 2S)``: the bit-sum events one user's change composes."""
        return self.family.n_repetitions * self.touched_per_repetition

    @property
    def alphabet(self) -> tuple[int, ...]:
        return self.bitsum.alphabet

    @property
    def expected_messages_per_user(self) -> float:
        """Expected messages per user over all ``I * Q`` instances."""
        return self.bitsum.expected_messages_per_user * self.n_instances

    def bits_per_message(self, n_instances: int | None = None) -> int:
        """Bits of one message: the ``(i, j)`` tag (``ceil(log2(I Q))`` bits) plus the bit-sum value."""
        return self.bitsum.bits_per_message(self.n_instances if n_instances is None else n_instances)

    @property
    def event(self) -> PrivacyEvent:
        """The ``I * min(Q, 2S)`` touched instances as one composed event (for an accountant)."""
        return ComposedEvent(self.bitsum.event, self.touched_instances)

    @functools.cached_property
    def guarantee(self) -> PrivacyGuarantee:
        """The overall guarantee by the configured accounting, with its neighbouring relation.

        ``"tight"``: ``epsilon`` at ``delta`` of the PLD composition (basic composition when
        ``delta = 0``); ``"seed"``: Theorem 3.2. No privacy (an infinite per-instance epsilon)
        gives ``epsilon = inf``. Cached by its parameters (`~privsum.accounting.cache`), so KDEs
        sharing a calibrated bit sum, accounting and number of touched instances share it.
        """
        return cached_calibration(_kde_guarantee, self.bitsum, None, *self._accounting_parameters())

    def event_for_participants(self, n_participants: int) -> PrivacyEvent:
        """The touched instances' events when ``n_participants`` users take part, composed (for an accountant)."""
        n_participants = check_integer(n_participants, "n_participants", "ShuffledKDE", low=1)
        return ComposedEvent(self.bitsum.event_for_participants(n_participants), self.touched_instances)

    def guarantee_for_participants(self, n_participants: int) -> PrivacyGuarantee:
        """The overall guarantee actually achieved when ``n_participants`` users take part.

        `guarantee` for ``n_users`` or more; fewer: the same accounting over the bit sum's
        `~privsum.bitsum.BitSumProtocol.event_for_participants` (computed for the smaller crowd).
        """
        n_participants = check_integer(n_participants, "n_participants", "ShuffledKDE", low=1)
        if n_participants >= self.n_users:
            return self.guarantee
        return cached_calibration(_kde_guarantee, self.bitsum, n_participants, *self._accounting_parameters())

    def _accounting_parameters(self) -> tuple[int, int, str, float]:
        """Everything besides the bit sum that the guarantee depends on (the cache key)."""
        return self.touched_per_repetition, self.family.n_repetitions, self.accounting, self.delta

    def _guarantee_of(self, instance_event: PrivacyEvent) -> PrivacyGuarantee:
        return _guarantee_of_event(instance_event, *self._accounting_parameters())

    def sup_rmse_bound(self) -> float:
        """Theorem 3.2's bound on the supRMSE of the released estimate (the bit sum's worst-case RMSE as ``E``)."""
        return sup_rmse_bound(
            bias=self.family.bias,
            bound=self.family.bound,
            sparsity=self.family.sparsity,
            n_repetitions=self.family.n_repetitions,
            instance_rmse=float(np.max(self.bitsum.rmse())),
            n_users=self.n_users,
        )

    # ----- roles ---------------------------------------------------------------------------

    def round_to_bits(self, points: np.ndarray, rng: np.random.Generator, repetitions: slice | None = None) -> np.ndarray:
        """Each user's bits ``b_ij ~ Bern((1 + f_i(x)_j / R) / 2)``, shape ``(m, |repetitions| * Q)`` (int8).

        ``b = 1`` exactly when ``R (2U - 1) < f_i(x)_j`` for ``U ~ U[0, 1)`` (float64), which has
        probability ``(1 + f/R)/2`` up to the 2^-53 grid of the uniforms. With ``precision="exact"``
        the features are the family's own values (for `RandomFourierFeatures` computed in place by the
        same operations, bit for bit), so the rounding is unbiased for exactly what ``family.f``
        returns; ``"float32"``: see the class docstring. ``"float64"`` with `RandomFourierFeatures`:
        ``b = 1`` exactly when ``U < p`` for the float32 probability ``p`` of the class docstring
        and a float32 uniform ``U`` (half the random bits of a float64 one; the probability is
        ``ceil(p 2^24) / 2^24``, within ``2^-24`` of ``p``).
        """
        return _round_to_bits(self.family, points, rng, repetitions, _Workspace(), self.precision)

    def randomize(self, x: Any, *, rng: RNGLike = None) -> MessageBatch:
        """Every user's tagged messages (the faithful path: memory grows with ``n * I * Q``)."""
        return self._randomize_counted(x, as_generator(rng, "ShuffledKDE"))[0]

    def _randomize_counted(self, x: Any, generator: np.random.Generator) -> tuple[MessageBatch, int]:
        bits = [self.round_to_bits(chunk, generator) for chunk in self._chunks(x)]
        n_seen = sum(part.shape[0] for part in bits)
        if n_seen == 0:
            raise invalid("x", "ShuffledKDE", "at least one user", "no users")
        if self.bitsum.curated:  # the curator's noise is added once
            return self.bitsum.randomize(np.concatenate(bits), rng=generator), n_seen
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)  # each chunk is part of one run
            batches = [self.bitsum.randomize(part, rng=generator) for part in bits]
        self.bitsum.warn_if_fewer(n_seen)
        return MessageBatch.concatenate(batches), n_seen

    def sample_view(self, x: Any, *, rng: RNGLike = None) -> MessageHistogram:
        """The analyzer's histogram, streamed over users (memory independent of ``n``).

        ``x``: an array of points or an iterable of arrays. For shuffle bit sums, users randomize
        independently, so the histograms of disjoint chunks of users (each from the bit sum's
        exact fast path) merge by addition. A curated baseline adds its noise once, to the total
        count of ones.
        """
        generator = as_generator(rng, "ShuffledKDE")
        return self.complete_view(self._partial(x, generator, "fast"), rng=generator)

    def partial_view(self, chunk: Any, *, rng: RNGLike = None, path: str = "fast") -> PartialView:
        """One chunk of users' histogram (processed ``chunk_size`` users at a time), without once-per-run noise."""
        path = check_choice(path, "path", "ShuffledKDE", EXECUTION_PATHS)
        return self._partial(chunk, as_generator(rng, "ShuffledKDE"), path)

    def complete_view(self, partial: PartialView, *, rng: RNGLike = None) -> MessageHistogram:
        """Once per run: the bit sum's participant check (one warning) and a curated baseline's noise."""
        if not isinstance(partial, PartialView):
            raise invalid("partial", "ShuffledKDE", "a PartialView", type(partial).__name__)
        if partial.n_users == 0:
            raise invalid("x", "ShuffledKDE", "at least one user", "no users")
        return self.bitsum.complete_view(partial, rng=as_generator(rng, "ShuffledKDE"))

    def _partial(self, x: Any, generator: np.random.Generator, path: str) -> PartialView:
        curated = self.bitsum.curated
        counts = np.zeros((self.n_instances, len(self.alphabet)), dtype=np.int64)
        ones = np.zeros(self.n_instances, dtype=np.int64)
        n_seen = 0
        width = self.family.n_coordinates
        workspace = _Workspace()  # buffers reused by every block: the bits never leave this loop
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)  # each chunk is part of one run
            for chunk in self._chunks(x):
                n_seen += chunk.shape[0]
                for block in self._repetition_blocks(chunk.shape[0]):
                    columns = slice(block.start * width, block.stop * width)
                    bits = _round_to_bits(self.family, chunk, generator, block, workspace, self.precision)
                    if curated:
                        ones[columns] += bits.sum(axis=0, dtype=np.int64)
                    elif path == "faithful":
                        counts[columns] += self.bitsum._faithful_view_of_bits(bits, generator).counts
                    else:
                        counts[columns] += self.bitsum._view_of_bits(bits, generator).counts
        if curated:  # noise-free counts: the curator's noise is added once, by complete_view
            counts = np.stack([np.zeros_like(ones), n_seen - ones, ones], axis=1)
        return PartialView(MessageHistogram(counts, self.alphabet), n_seen)

    def run(self, x: Any, *, rng: RNGLike = None, path: str = "fast") -> KDEFunction:
        """Run the protocol on the users' points and release the KDE function.

        Args:
            x: ``(n, d)`` points, an iterable of such arrays, or a Dask array.
            rng: randomness for the rounding, the randomizers and the shuffler.
            path: ``"fast"`` (streamed exact histograms) or ``"faithful"`` (every message).

        The estimate and its guarantee use the number of users who actually took part (a
        `PrivacyLeakWarning` says when it is below the calibration's ``n_users``). A
        `KernelScaleWarning` says when the points' scale makes the Gaussian kernel degenerate for
        its bandwidth (a local diagnostic of the data, not private: see
        `privsum.kde._scale.warn_if_degenerate_scale`).
        """
        path = check_choice(path, "path", "ShuffledKDE", EXECUTION_PATHS)
        generator = as_generator(rng, "ShuffledKDE")
        warn_if_degenerate_scale(self.family, x, "ShuffledKDE")  # a KernelScaleWarning when the data's scale defeats the kernel
        if is_chunk_stream(x) and not isinstance(x, Iterator):
            return self.run_streamed(x, rng=generator, path=path)
        if path == "faithful":
            messages, n_seen = self._randomize_counted(x, generator)
            return self.analyze(self.view(self.shuffle(messages, rng=generator)), n_participants=n_seen)
        partial = self._partial(x, generator, path)
        return self.analyze(self.complete_view(partial, rng=generator), n_participants=partial.n_users)

    def _message_cap(self, tail_probability: float) -> int:
        """The bit sum's cap (every instance is one of its instances)."""
        return self.bitsum.per_sender_message_cap(tail_probability)

    def manipulation_bound(self, n_malicious: int, *, cap: int | None = None) -> float:
        """The largest shift of one published coefficient ``F_ij = (2 B_ij - n) R``.

        ``max(2 R up, 2 R down + R k)`` with ``up`` and ``down`` the bit sum's largest increase
        (`manipulation_bound`) and decrease (`largest_decrease`): the ``R k`` is for an analyzer
        that counts the ``k`` malicious senders among the ``n`` participants (as a deployment's
        analyzer does), which pulls every coefficient down.
        """
        up = self.bitsum.manipulation_bound(n_malicious, cap=cap)
        down = self.bitsum.largest_decrease(n_malicious, cap=cap)
        bound = self.family.bound
        return max(2.0 * bound * up, 2.0 * bound * down + bound * n_malicious)

    def analyze(self, view: MessageHistogram | MessageBatch, *, n_participants: int | None = None) -> KDEFunction:
        """The released KDE function ``F_ij = (2 B_ij - n) R`` from the shuffled messages.

        Args:
            view: the shuffled messages or their histogram.
            n_participants: ``n``, the users who took part (default ``n_users``); fewer than
                ``n_users`` gives the function the weaker `guarantee_for_participants`.
        """
        histogram = self.view(view)
        if histogram.n_instances != self.n_instances:
            raise invalid("view", "ShuffledKDE", f"a view of {self.n_instances} instances", histogram.n_instances)
        n = self.n_users if n_participants is None else check_integer(n_participants, "n_participants", "ShuffledKDE", low=1)
        bit_sums = np.asarray(self.bitsum.analyze(histogram), dtype=float)
        coefficients = (2.0 * bit_sums - n) * self.family.bound
        shape = (self.family.n_repetitions, self.family.n_coordinates)
        return KDEFunction._released(self.family, coefficients.reshape(shape), n, self.guarantee_for_participants(n))

    def analyze_participants(self, view: MessageHistogram, n_participants: int) -> KDEFunction:
        """`analyze` with the number of users who took part."""
        return self.analyze(view, n_participants=n_participants)

    def _chunks(self, x: Any) -> Iterator[np.ndarray]:
        """Validated ``(m, d)`` chunks of users from an array or an iterable of arrays."""
        parts = [x] if isinstance(x, np.ndarray) or not isinstance(x, Iterable) or _is_nested_list(x) else x
        for part in parts:
            points = self.family.check_points(part, "x")
            for start in range(0, points.shape[0], self.chunk_size):
                yield points[start : start + self.chunk_size]

    def _repetition_blocks(self, n_points: int) -> Iterator[slice]:
        step = max(1, _BLOCK_ENTRIES // max(1, n_points * self.family.n_coordinates))
        for start in range(0, self.family.n_repetitions, step):
            yield slice(start, min(start + step, self.family.n_repetitions))

    # ----- calibration ---------------------------------------------------------------------

    @classmethod
    def from_privacy(
        cls,
        *,
        family: LSQFamily,
        protocol: type[BitSumProtocol] | str,
        epsilon: float,
        delta: float,
        n_users: int,
        accounting: str = "tight",
        calibration: str = "tight",
        chunk_size: int = 4096,
        precision: str = "float64",
        protocol_options: Mapping[str, Any] | None = None,
    ) -> ShuffledKDE:
        """Calibrate the per-instance bit sum so the overall guarantee meets ``(epsilon, delta)``.

        With ``k = I * min(Q, 2S)`` touched instances, each instance gets
        ``delta0 = delta / (2k)`` (``0`` when ``delta = 0``) and:

        * ``accounting="seed"``: ``epsilon0`` from Theorem 3.2 with ``delta' = delta/2``
          (``epsilon / k`` by pure composition when ``delta = 0``);
        * ``accounting="tight"``: the largest ``epsilon0`` (the composed epsilon within
          0.2% of the target) whose bit-sum event, composed ``k`` times by PLD, meets ``(epsilon, delta)``.
          The search first solves the composition of the worst ``(epsilon0, delta0)`` mechanism
          (cheap, and a valid starting point since it dominates every such event), and only then
          refines with the protocol's own event when that is sharper than its headline.

        The result is checked: its `guarantee` never exceeds the target. Results are cached in
        memory by all these arguments (`~privsum.accounting.cache`): a repeated call (another
        class, another fit) returns the identical, immutable protocol.

        Args:
            family: the LSQ family.
            protocol: a `BitSumProtocol` class with ``from_privacy(epsilon=, delta=, n_users=, calibration=)``,
                or its short name as the classifier takes it (``"rr"``, ``"3nb"``, ``"pure"``, ... :
                `privsum.bitsum.PROTOCOLS`).
            epsilon: target overall epsilon.
            delta: target overall delta in ``[0, 1)``.
            n_users: users taking part.
            accounting: ``"tight"`` or ``"seed"``.
            calibration: passed to ``protocol.from_privacy`` (``"tight"`` or ``"analytic"``).
            chunk_size: users processed at once.
            precision: ``"float64"``, ``"float32"`` or ``"exact"`` features in the rounding step (see the class).
            protocol_options: extra keyword arguments for ``protocol.from_privacy`` (e.g. ``noise_source``).
                Without ``flooding``, 3NB (tight calibration and accounting) takes ``flooding="communication"``
                with ``variance_factor=KDE_FLOODING_VARIANCE_FACTOR`` (4) wherever its per-instance RMSE is
                within 1% of the paper flooding's (the composition buys the variance back), else the paper's.

        Raises:
            InvalidParameterError: a parameter is out of range or the target cannot be met.
        """
        owner = "ShuffledKDE.from_privacy"
        if not isinstance(family, LSQFamily):
            raise invalid("family", owner, "an LSQFamily", type(family).__name__)
        protocol = bitsum_protocol(protocol, owner)
        epsilon = check_epsilon(epsilon, owner)
        delta = check_delta(delta, owner)
        n_users = check_integer(n_users, "n_users", owner, low=1)
        accounting = check_choice(accounting, "accounting", owner, ACCOUNTING_METHODS)
        if not (
            protocol_options is None
            or (isinstance(protocol_options, Mapping) and all(isinstance(k, str) for k in protocol_options))
        ):
            raise invalid("protocol_options", owner, "None or a mapping of keyword names to values", protocol_options)
        _check_protocol_options(protocol, protocol_options or {}, owner)
        options = dict(protocol_options or {})

        def calibrated(chosen: dict[str, Any]) -> ShuffledKDE:
            settings = (epsilon, delta, n_users, accounting, calibration, chunk_size, precision, tuple(sorted(chosen.items())))
            return cached_calibration(cls._calibrated, family, protocol, *settings)

        paper = calibrated(options)
        if not _floods_for_communication_by_default(protocol, calibration, accounting, delta, options):
            return paper
        communication = calibrated(options | {"flooding": "communication", "variance_factor": KDE_FLOODING_VARIANCE_FACTOR})
        as_accurate = math.sqrt(communication.bitsum.variance()) <= (1 + FLOODING_RMSE_TOLERANCE) * math.sqrt(
            paper.bitsum.variance()
        )
        return communication if as_accurate else paper

    @classmethod
    def _calibrated(
        cls,
        family: LSQFamily,
        protocol: type[BitSumProtocol],
        epsilon: float,
        delta: float,
        n_users: int,
        accounting: str,
        calibration: str,
        chunk_size: int,
        precision: str,
        protocol_options: tuple[tuple[str, Any], ...],
    ) -> ShuffledKDE:
        """`from_privacy` after validation (cached by all its arguments)."""
        owner = "ShuffledKDE.from_privacy"
        options = dict(protocol_options)
        touched = touched_per_repetition(family)
        count = touched * family.n_repetitions
        delta0 = delta / (2 * count)

        @functools.cache
        def build(epsilon0: float) -> ShuffledKDE:
            bitsum = cached_calibration(
                protocol.from_privacy, epsilon=epsilon0, delta=delta0, n_users=n_users, calibration=calibration, **options
            )
            return make(bitsum)

        def make(bitsum: BitSumProtocol) -> ShuffledKDE:
            return cls(
                family=family, bitsum=bitsum, delta=delta, accounting=accounting, chunk_size=chunk_size, precision=precision
            )

        if delta == 0.0:
            result = build(epsilon / count)
        elif accounting == "seed":
            result = build(seed_per_instance_epsilon(epsilon, touched, family.n_repetitions, delta / 2))
            if result.bitsum.guarantee.is_pure:  # Theorem 3.2's pure case: pure composition
                result = build(epsilon / count)
        else:  # the bit sum's own search for k compositions, else the generic one
            own = protocol.calibrate_for_compositions(
                epsilon=epsilon,
                delta=delta,
                n_users=n_users,
                compositions=count,
                instance_delta=delta0,
                calibration=calibration,
                caller=(owner, "epsilon"),
                **options,
            )
            if own is not None:
                result = make(own)
            else:
                epsilon0 = fit_composition(
                    lambda e0: build(e0).bitsum.event,
                    epsilon=epsilon,
                    delta=delta,
                    delta0=delta0,
                    count=count,
                    start=seed_per_instance_epsilon(epsilon, 1, count, delta / 2),
                    caller=(owner, "epsilon"),
                )
                result = build(epsilon0)
        achieved = result.guarantee
        if not (achieved.epsilon <= epsilon * (1 + 1e-9) and achieved.delta <= delta * (1 + 1e-9)):
            raise invalid("epsilon", owner, f"met by the calibrated protocol (it achieves {achieved})", epsilon)
        return result


class _Workspace:
    """Flat buffers grown on demand and reused across blocks, so that rounding allocates (and
    page-faults in) its working memory once per run rather than once per block; and arrays
    derived from a family's public draws, computed once per run."""

    def __init__(self) -> None:
        self._buffers: dict[str, np.ndarray] = {}
        self._derived: dict[tuple[Any, ...], tuple[object, np.ndarray]] = {}

    def take(self, name: str, shape: tuple[int, int], dtype: type) -> np.ndarray:
        size = shape[0] * shape[1]
        buffer = self._buffers.get(name)
        if buffer is None or buffer.size < size or buffer.dtype != dtype:
            buffer = self._buffers[name] = np.empty(size, dtype=dtype)
        return buffer[:size].reshape(shape)

    def derived(self, name: str, source: object, selected: slice, compute: Callable[[], np.ndarray]) -> np.ndarray:
        """``compute()`` for ``source`` (a family) and its ``selected`` repetitions, kept while ``source`` is the same object."""
        key = (name, id(source), selected.start, selected.stop, selected.step)
        cached = self._derived.get(key)
        if cached is None or cached[0] is not source:
            cached = self._derived[key] = (source, compute())
        return cached[1]


def _round_to_bits(
    family: LSQFamily,
    points: np.ndarray,
    rng: np.random.Generator,
    repetitions: slice | None,
    workspace: _Workspace,
    precision: str = "float64",
) -> np.ndarray:
    """`ShuffledKDE.round_to_bits` writing into ``workspace`` (the result is a view of its buffer)."""
    if type(family) is RandomFourierFeatures and precision == "float64":
        return _round_fourier(family, points, rng, repetitions, workspace)
    if type(family) is RandomFourierFeatures and precision == "exact":
        return _round_fourier_exactly(family, points, rng, repetitions, workspace)
    values = _features(family, points, repetitions, workspace, precision)
    threshold = rng.random(out=workspace.take("uniforms", values.shape, np.float64))
    threshold *= 2.0 * family.bound
    threshold -= family.bound
    return np.less(threshold, values, out=workspace.take("bits", values.shape, np.bool_)).view(np.int8)


def _row_blocks(n_rows: int, width: int) -> Iterator[slice]:
    """Consecutive blocks of rows of a ``(n_rows, width)`` array, about ``_CACHE_BLOCK_ENTRIES`` entries each."""
    step = max(1, _CACHE_BLOCK_ENTRIES // max(1, width))
    for start in range(0, n_rows, step):
        yield slice(start, min(start + step, n_rows))


def _features(
    family: LSQFamily, points: np.ndarray, repetitions: slice | None, workspace: _Workspace, precision: str = "float64"
) -> np.ndarray:
    """``family.f(points)`` flattened to ``(m, |repetitions| * Q)``.

    Random Fourier features are computed into a reused buffer: in ``"float64"`` (and ``"exact"``)
    by the same operations as `RandomFourierFeatures.f` (a test checks the values are bit-for-bit
    equal); in ``"float32"`` as ``sqrt(2) cos(w^T x + b)`` in single precision. Other families use
    their own ``f``.
    """
    if type(family) is not RandomFourierFeatures:
        values = family.f(points, repetitions=repetitions)
        return values.reshape(values.shape[0], -1)
    if precision != "float32":
        turns, phase_turns = _fourier_turns(family, points, repetitions, workspace)
        return fourier_features_of_turns(turns, phase_turns, out=turns)
    selected = slice(None) if repetitions is None else repetitions
    frequencies = family.frequencies[selected].astype(np.float32)
    phases = family.phases[selected].astype(np.float32)
    working = apply_projection(family.projection, points.astype(np.float32, copy=False))
    values = workspace.take("features-float32", (working.shape[0], frequencies.shape[0]), np.float32)
    np.matmul(working.astype(np.float32, copy=False), frequencies.T, out=values)
    values += phases
    np.cos(values, out=values)
    values *= np.float32(math.sqrt(2.0))
    return values


def _round_fourier_exactly(
    family: RandomFourierFeatures, points: np.ndarray, rng: np.random.Generator, repetitions: slice | None, workspace: _Workspace
) -> np.ndarray:
    """Bits for exactly the values `RandomFourierFeatures.f` returns, in cache-sized blocks of rows.

    After the family's matmul, the features (`fourier_features_block`, elementwise: the values of
    `_features`), the uniforms (drawn in the order of the whole array) and the comparison run on
    blocks of rows that stay in cache.
    """
    turns, phase_turns = _fourier_turns(family, points, repetitions, workspace)
    bits = workspace.take("bits", turns.shape, np.bool_)
    for rows in _row_blocks(*turns.shape):
        shape = turns[rows].shape
        values = workspace.take("block-values", shape, np.float64)
        scratch = workspace.take("block-turns", shape, np.float64), workspace.take("block-whole-turns", shape, np.float64)
        fourier_features_block(turns[rows], phase_turns, values, *scratch)
        threshold = rng.random(out=workspace.take("block-uniforms", shape, np.float64))
        threshold *= 2.0 * family.bound
        threshold -= family.bound
        np.less(threshold, values, out=bits[rows])
    return bits.view(np.int8)


def _round_fourier(
    family: RandomFourierFeatures, points: np.ndarray, rng: np.random.Generator, repetitions: slice | None, workspace: _Workspace
) -> np.ndarray:
    """``precision="float64"`` bits: ``U < p`` for `_fourier_probabilities`' ``p`` and float32 uniforms ``U``.

    In cache-sized blocks of rows: the same probabilities and the same uniforms (drawn in the
    order of the whole array) as comparing the whole arrays at once; only the working set is smaller.
    """
    turns, phase_turns = _fourier_turns(family, points, repetitions, workspace)
    bits = workspace.take("bits", turns.shape, np.bool_)
    scratch = _BlockScratch(turns.shape, workspace)
    for rows, (reduced, whole, probabilities, uniforms) in scratch.blocks():
        _probabilities_of_turns(turns[rows], phase_turns, probabilities, reduced, whole)
        rng.random(out=uniforms, dtype=np.float32)
        np.less(uniforms, probabilities, bits[rows])
    return bits.view(np.int8)


def _fourier_probabilities(
    family: RandomFourierFeatures, points: np.ndarray, repetitions: slice | None, workspace: _Workspace
) -> np.ndarray:
    """Rounding probabilities ``(1 + f/R)/2 = cos^2(theta/2)`` of random Fourier features, float32, ``(m, I)``.

    ``theta = w^T x + b`` is computed in turns, ``t = (w/2pi)^T x + b/2pi``, in float64 (matmul and
    phase: the float64 angle of `RandomFourierFeatures.f`); ``t - rint(t)`` is the exact reduction
    to ``[-1/2, 1/2]`` turns (a float64 subtraction of an integer, exact); only then is the angle
    rounded to float32 and ``cos^2(pi (t - rint t))`` evaluated in float32. Errors: the float32
    angle (the reduced turn, pi and their product rounded: below ``1.6e-7``), the float32 cosine
    and square (a few units in ``2^-24``): together below ``FLOAT64_PROBABILITY_ERROR - 2^-24``.
    """
    turns, phase_turns = _fourier_turns(family, points, repetitions, workspace)
    probabilities = workspace.take("probabilities", turns.shape, np.float32)
    for rows, (reduced, whole, _, _) in _BlockScratch(turns.shape, workspace).blocks():
        _probabilities_of_turns(turns[rows], phase_turns, probabilities[rows], reduced, whole)
    return probabilities


class _BlockScratch:
    """Scratch arrays for the blocks of rows of an ``(m, I)`` rounding, taken from the workspace once."""

    def __init__(self, shape: tuple[int, int], workspace: _Workspace) -> None:
        self.n_rows, width = shape
        self.step = max(1, _CACHE_BLOCK_ENTRIES // max(1, width))
        block = (min(self.step, self.n_rows), width)
        self.arrays = (
            workspace.take("block-turns", block, np.float64),
            workspace.take("block-whole-turns", block, np.float64),
            workspace.take("block-probabilities", block, np.float32),
            workspace.take("block-uniforms32", block, np.float32),
        )

    def blocks(self) -> Iterator[tuple[slice, tuple[np.ndarray, ...]]]:
        """Each block's rows and its scratch arrays (reduced turns, whole turns, probabilities, uniforms)."""
        for start in range(0, self.n_rows, self.step):
            stop = min(start + self.step, self.n_rows)
            arrays = self.arrays if stop - start == self.arrays[0].shape[0] else tuple(a[: stop - start] for a in self.arrays)
            yield slice(start, stop), arrays


def _fourier_turns(
    family: RandomFourierFeatures, points: np.ndarray, repetitions: slice | None, workspace: _Workspace
) -> tuple[np.ndarray, np.ndarray]:
    """``(w_i/2pi)^T x`` for every point and repetition, ``(m, I)`` float64 (as `RandomFourierFeatures.f`); phases in turns."""
    selected = slice(None) if repetitions is None else repetitions
    turn_frequencies = workspace.derived("turn-frequencies", family, selected, lambda: family.turn_frequencies(selected))
    working = apply_projection(family.projection, points.astype(np.float64, copy=False))
    turns = workspace.take("turns", (working.shape[0], turn_frequencies.shape[0]), np.float64)
    np.matmul(working, turn_frequencies.T, out=turns)
    return turns, family.turn_phases(selected)


def _probabilities_of_turns(
    turns: np.ndarray, phase_turns: np.ndarray, out: np.ndarray, reduced: np.ndarray, whole: np.ndarray
) -> None:
    """``cos^2(pi (t - rint t))`` of ``t = turns + phase_turns`` into the float32 ``out`` (a block that fits in cache)."""
    np.add(turns, phase_turns, reduced)
    np.rint(reduced, whole)
    np.subtract(reduced, whole, reduced)  # in [-1/2, 1/2], exactly
    np.multiply(reduced, _PI32, out, dtype=np.float32)  # half the angle, float32
    np.cos(out, out)
    np.square(out, out)


_PI32 = np.float32(math.pi)


#: 3NB's default flooding inside the KDE: "communication" with this factor where its RMSE is within 1% (`from_privacy`).
KDE_FLOODING_VARIANCE_FACTOR = 4.0
FLOODING_RMSE_TOLERANCE = 0.01


def _floods_for_communication_by_default(
    protocol: type[BitSumProtocol], calibration: str, accounting: str, delta: float, options: Mapping[str, Any]
) -> bool:
    names = calibration_option_names(protocol) or ()
    offered = "flooding" in names and "variance_factor" in names
    return offered and "flooding" not in options and calibration == "tight" and accounting == "tight" and delta > 0


# Keywords of a bit sum's ``from_privacy`` that the KDE's calibration sets itself.
_CALIBRATION_KEYWORDS = frozenset({"epsilon", "delta", "n_users", "calibration"})


def calibration_option_names(protocol: type[BitSumProtocol]) -> tuple[str, ...] | None:
    """The keywords of ``protocol.from_privacy`` a caller may pass through ``protocol_options``.

    Every keyword-only argument except those the KDE's calibration sets itself (``epsilon``,
    ``delta``, ``n_users``, ``calibration``); ``None`` when ``from_privacy`` takes ``**kwargs``
    (the protocol then checks its own keywords).
    """
    parameters = inspect.signature(protocol.from_privacy).parameters.values()
    if any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters):
        return None
    return tuple(p.name for p in parameters if p.kind is p.KEYWORD_ONLY and p.name not in _CALIBRATION_KEYWORDS)


def _check_protocol_options(protocol: type[BitSumProtocol], options: Mapping[str, Any], owner: str) -> None:
    """Every option names a keyword of ``protocol.from_privacy`` that the calibration does not set."""
    accepted = calibration_option_names(protocol)
    unknown = [] if accepted is None else sorted(set(options) - set(accepted))
    if unknown:
        expected = f"keywords {protocol.__name__}.from_privacy takes besides those the KDE sets: {list(accepted)}"
        raise invalid("protocol_options", owner, expected, unknown)


def _kde_guarantee(
    bitsum: BitSumProtocol, n_participants: int | None, touched: int, repetitions: int, accounting: str, delta: float
) -> PrivacyGuarantee:
    """The KDE's guarantee from its bit sum (for ``n_participants``, or its own ``n_users`` when ``None``)."""
    event = bitsum.event if n_participants is None else bitsum.event_for_participants(n_participants)
    return _guarantee_of_event(event, touched, repetitions, accounting, delta)


def _guarantee_of_event(
    instance_event: PrivacyEvent, touched: int, repetitions: int, accounting: str, delta: float
) -> PrivacyGuarantee:
    instance = instance_event.guarantee
    if not instance.is_finite:
        return PrivacyGuarantee(math.inf, 0.0, instance.neighbouring)
    if accounting == "seed":
        return _seed_guarantee(instance, touched, repetitions, delta)
    event = ComposedEvent(instance_event, repetitions * touched)
    if delta == 0.0:
        return event.guarantee
    return composed_guarantee(event, delta)


def _seed_guarantee(instance: PrivacyGuarantee, touched: int, repetitions: int, delta: float) -> PrivacyGuarantee:
    if instance.is_pure:
        return PrivacyGuarantee(instance.epsilon * touched * repetitions, 0.0, instance.neighbouring)
    if delta == 0.0:
        raise invalid("delta", "ShuffledKDE", "positive for seed accounting of an approximate-DP bit sum", delta)
    slack = delta / 2
    epsilon = seed_composition_epsilon(instance.epsilon, touched, repetitions, slack)
    total_delta = repetitions * touched * instance.delta + slack
    if not total_delta < 1.0:
        raise invalid("delta", "ShuffledKDE", "large enough to cover the instances' deltas", delta)
    return PrivacyGuarantee(epsilon, total_delta, instance.neighbouring)


def touched_per_repetition(family: LSQFamily) -> int:
    """``min(Q, 2S)``: coordinates of one repetition a replace-one change can alter."""
    if not isinstance(family, LSQFamily):
        raise invalid("family", "touched_per_repetition", "an LSQFamily", type(family).__name__)
    return min(family.n_coordinates, 2 * family.sparsity)


def _is_nested_list(x: Any) -> bool:
    """A list of points (rather than an iterable of chunks): its items are scalars' sequences."""
    return isinstance(x, (list, tuple)) and len(x) > 0 and not isinstance(x[0], np.ndarray) and np.ndim(x[0]) == 1
