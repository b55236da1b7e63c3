"""The shuffled-DP KDE protocol: any LSQ family over any bit-sum protocol (Algorithm 1 of Wagner (ICLR 2025)).

References:
    Wagner, "Learning from End User Data with Shuffled Differential Privacy over Kernel
    Densities", ICLR 2025.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from privsum._deprecation import moved_attribute_getter
from privsum._random import RNGLike, as_generator
from privsum._validation import check_choice, check_delta, check_integer, invalid
from privsum.bitsum.base import BitSumProtocol
from privsum.exceptions import PrivacyLeakWarning
from privsum.kde._accounting import ComposedInstancesAccounting
from privsum.kde._parties import KDEPartyHooks
from privsum.kde._rounding import FLOAT64_PROBABILITY_ERROR as FLOAT64_PROBABILITY_ERROR  # documented here
from privsum.kde._rounding import Workspace, round_to_bits
from privsum.kde.calibration import ACCOUNTING_METHODS, calibrated_kde
from privsum.kde.calibration import calibration_option_names as calibration_option_names  # its former home
from privsum.kde.calibration import touched_per_repetition as touched_per_repetition  # its former home
from privsum.kde.function import KDEFunction
from privsum.kde.scale import warn_if_degenerate_scale
from privsum.kde.theory import sup_rmse_bound
from privsum.lsq.base import LSQFamily, check_family
from privsum.shuffle.histogram import MessageHistogram
from privsum.shuffle.messages import MessageBatch
from privsum.shuffle.protocol import EXECUTION_PATHS, ShuffleProtocol
from privsum.shuffle.streaming import PartialView, is_chunk_stream

__all__ = ["ACCOUNTING_METHODS", "FEATURE_PRECISIONS", "ShuffledKDE"]

#: Floating-point precision of random Fourier features in the rounding step.
FEATURE_PRECISIONS = ("float64", "float32", "exact")


# Entries (users x repetitions x coordinates) rounded at once: bounds the working memory.
_BLOCK_ENTRIES = 1 << 21


@dataclass(frozen=True, kw_only=True)
class ShuffledKDE(KDEPartyHooks, ComposedInstancesAccounting, ShuffleProtocol):
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
        check_family(self.family, owner)
        if not isinstance(self.bitsum, BitSumProtocol):
            raise invalid("bitsum", owner, "a BitSumProtocol", type(self.bitsum).__name__)
        object.__setattr__(self, "delta", check_delta(self.delta, owner))
        check_choice(self.accounting, "accounting", owner, ACCOUNTING_METHODS)
        object.__setattr__(self, "chunk_size", check_integer(self.chunk_size, "chunk_size", owner, low=1))
        check_choice(self.precision, "precision", owner, FEATURE_PRECISIONS)

    # ----- public description -------------------------------------------------------------

    @property
    def n_instances(self) -> int:
        """``I * Q`` bit-sum instances."""
        return self.family.n_repetitions * self.family.n_coordinates

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
        return round_to_bits(self.family, points, rng, repetitions, Workspace(), self.precision)

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
        workspace = Workspace()  # buffers reused by every block: the bits never leave this loop
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)  # each chunk is part of one run
            for chunk in self._chunks(x):
                n_seen += chunk.shape[0]
                for block in self._repetition_blocks(chunk.shape[0]):
                    columns = slice(block.start * width, block.stop * width)
                    bits = round_to_bits(self.family, chunk, generator, block, workspace, self.precision)
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
        `privsum.kde.scale.warn_if_degenerate_scale`).
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
          refines with the protocol's own event when that is sharper than its headline. A bit sum
          with a search of its own is asked first
          (`~privsum.bitsum.BitSumProtocol.calibrate_for_compositions`: RR's flip probability,
          3NB's flooding), and this generic search (`privsum.bitsum.base.fit_for_compositions`)
          runs only where it has none (`privsum.kde.calibration`).

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
                with ``variance_factor=4`` wherever its per-instance RMSE is within 1% of the paper
                flooding's (the composition buys the variance back), else the paper's
                (`~privsum.bitsum.ThreeNBBitSum.calibrate_for_compositions`).

        Raises:
            InvalidParameterError: a parameter is out of range or the target cannot be met.
        """
        return calibrated_kde(
            cls,
            family=family,
            protocol=protocol,
            epsilon=epsilon,
            delta=delta,
            n_users=n_users,
            accounting=accounting,
            calibration=calibration,
            chunk_size=chunk_size,
            precision=precision,
            protocol_options=protocol_options,
        )


def _is_nested_list(x: Any) -> bool:
    """A list of points (rather than an iterable of chunks): its items are scalars' sequences."""
    return isinstance(x, (list, tuple)) and len(x) > 0 and not isinstance(x[0], np.ndarray) and np.ndim(x[0]) == 1


#: The KDE's 3NB flooding constants moved to `privsum.bitsum.noise` (deprecated here; removed in the next release).
__getattr__ = moved_attribute_getter(
    __name__,
    {
        "KDE_FLOODING_VARIANCE_FACTOR": "privsum.bitsum.noise:COMPOSITION_VARIANCE_FACTOR",
        "FLOODING_RMSE_TOLERANCE": "privsum.bitsum.noise:COMPOSITION_RMSE_TOLERANCE",
    },
)
