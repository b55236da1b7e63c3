"""The protocol base: randomizer, shuffler and analyzer as separate roles."""

from __future__ import annotations

import abc
import dataclasses
import math
import sys
import warnings
from typing import Any, ClassVar

import numpy as np
from tqdm import tqdm

from privsum._delegation import delegated
from privsum._random import RNGLike, as_generator
from privsum._validation import check_choice, check_integer, invalid
from privsum.accounting.events import PrivacyEvent
from privsum.accounting.guarantee import PrivacyGuarantee
from privsum.exceptions import PrivacyLeakWarning
from privsum.shuffle.histogram import MessageHistogram
from privsum.shuffle.messages import MessageBatch
from privsum.shuffle.robustness import DEFAULT_CAP_TAIL_PROBABILITY, check_malicious, check_tail_probability
from privsum.shuffle.shuffler import shuffle_messages
from privsum.shuffle.streaming import PartialView, is_chunk_stream, iter_user_chunks

__all__ = ["DEFAULT_CAP_TAIL_PROBABILITY", "EXECUTION_PATHS", "SenderCap", "ShuffleProtocol"]

EXECUTION_PATHS = ("fast", "faithful")


@dataclasses.dataclass(frozen=True)
class SenderCap:
    """The most messages one sender may send, and how often an honest randomizer would exceed it.

    Attributes:
        per_instance: the most messages one sender sends to one instance.
        total: the most messages of one sender's upload (all instances).
        exceed_probability: an upper bound on the probability that one honest user's randomizer
            draws more than the cap (0 where the number of messages is fixed). Clients redraw such
            a user's messages, so every user's output is within total variation
            ``exceed_probability`` of the analysed randomizer: `privsum.parties` adds
            ``(1 + e^epsilon) n exceed_probability`` to delta for ``n`` participants.
    """

    per_instance: int
    total: int
    exceed_probability: float = 0.0

    @classmethod
    def fixed(cls, per_instance: int, n_instances: int) -> SenderCap:
        """A fixed count: ``per_instance`` messages to each of ``n_instances`` instances."""
        return cls(per_instance, per_instance * n_instances, 0.0)


class ShuffleProtocol(abc.ABC):
    """A shuffle-model protocol: ``run = analyze . shuffle . randomize``.

    Subclasses are frozen, keyword-only dataclasses of public parameters and implement
    `randomize` (each user's device, vectorised over users and instances), `analyze` (the
    analyzer, on the histogram view) and the cost and privacy properties. `sample_view` may be
    overridden by a *fast path* that samples the analyzer's histogram directly, when that is
    exact in distribution; the *faithful path* materialises and permutes every message.

    **Streaming.** `run` also accepts users in chunks (an iterator of arrays, a
    `~privsum.shuffle.streaming.UserChunks` list or a Dask array; `run_streamed` and
    `sample_view_streamed` take any iterable of arrays). Protocols that set `streams_chunks`
    implement `partial_view` (one chunk's histogram, with only per-user randomness) and, where
    something happens once per run, `complete_view`; the per-chunk histograms add up, so memory
    is bounded by one chunk and the result has the same distribution as one run over all users.
    Other protocols receive the chunks concatenated (correct, but not memory-bounded).

    **Participation.** A protocol calibrated for ``n_users`` may see fewer (dropouts) or more.
    `check_participants` runs once per run on the total (the default does nothing);
    `event_for_participants` reports the guarantee actually achieved (the default: `event`, for
    protocols whose guarantee does not depend on the number of participants).

    Privacy:
        Guarantees are on the shuffler's output (the multiset of messages) against an adversary
        who also knows every other user's input; the analyzer is post-processing. The shuffler is
        trusted.

    Robustness:
        `per_sender_message_cap` is the most messages an honest sender sends per instance (a
        shuffler refuses uploads over it); `manipulation_bound` is the largest absolute shift of
        one instance's estimate that ``k`` malicious senders cause with well-formed messages (in
        the alphabet, within the cap). The default is ``k * cap * largest_message_effect`` for
        analyzers that add a fixed amount per message (`privsum.shuffle.robustness`).
    """

    #: Whether `partial_view` handles one chunk of users (so that streamed runs are memory-bounded).
    streams_chunks: ClassVar[bool] = False
    #: Messages each user sends to each instance, where that number is fixed (the default `sender_cap`).
    messages_per_instance: ClassVar[int | None] = None
    #: The protocol's name in wire headers, at most 20 characters (default: the class name).
    wire_name: ClassVar[str | None] = None

    @property
    @abc.abstractmethod
    def alphabet(self) -> tuple[int, ...]:
        """Sorted message values the randomizer can send."""

    @property
    @abc.abstractmethod
    def event(self) -> PrivacyEvent:
        """What the accountant consumes for one run."""

    @property
    @abc.abstractmethod
    def expected_messages_per_user(self) -> float:
        """Expected number of messages each user sends, per instance."""

    @abc.abstractmethod
    def randomize(self, x: Any, *, rng: RNGLike = None) -> MessageBatch:
        """Every user's messages, tagged with instance ids (the local randomizers)."""

    @abc.abstractmethod
    def analyze(self, view: MessageHistogram | MessageBatch) -> np.ndarray:
        """The estimate(s) computed from the shuffled messages."""

    guarantee = delegated("event.guarantee", "The headline guarantee of one run.")
    neighbouring = delegated("event.neighbouring", "The neighbouring relation of the guarantee.")

    def bits_per_message(self, n_instances: int = 1) -> int:
        """Bits of one message: the instance tag plus the value."""
        n_instances = check_integer(n_instances, "n_instances", type(self).__name__, low=1)
        tag_bits = math.ceil(math.log2(n_instances)) if n_instances > 1 else 0
        value_bits = max(1, math.ceil(math.log2(len(self.alphabet))))
        return tag_bits + value_bits

    def shuffle(self, messages: MessageBatch, *, rng: RNGLike = None) -> MessageBatch:
        """The trusted shuffler: a uniformly random permutation of all messages."""
        return shuffle_messages(messages, rng=as_generator(rng, type(self).__name__))

    def view(self, messages: MessageHistogram | MessageBatch) -> MessageHistogram:
        """The histogram view of a batch of messages (a histogram is returned unchanged)."""
        if isinstance(messages, MessageHistogram):
            if messages.alphabet != self.alphabet:
                raise invalid("view", type(self).__name__, f"a histogram over {self.alphabet}", messages.alphabet)
            return messages
        if isinstance(messages, MessageBatch):
            return _count_messages(messages, self.alphabet)
        raise invalid("view", type(self).__name__, "a MessageHistogram or MessageBatch", type(messages).__name__)

    def sample_view(self, x: Any, *, rng: RNGLike = None) -> MessageHistogram:
        """The analyzer's histogram; the default materialises every message."""
        return self.view(self.randomize(x, rng=as_generator(rng, type(self).__name__)))

    def run(self, x: Any, *, rng: RNGLike = None, path: str = "fast") -> Any:
        """Run the whole protocol on the users' inputs ``x``.

        Args:
            x: the users' inputs, first axis over users; or a stream of chunks of users (an
                iterator of arrays, a `~privsum.shuffle.streaming.UserChunks` or a Dask array),
                which goes to `run_streamed`.
            rng: randomness for the randomizers and the shuffler.
            path: ``"faithful"`` materialises and permutes every message; ``"fast"`` samples
                the analyzer's histogram directly where the protocol provides an exact sampler.
        """
        owner = type(self).__name__
        path = check_choice(path, "path", owner, EXECUTION_PATHS)
        generator = as_generator(rng, owner)
        if is_chunk_stream(x):
            return self.run_streamed(x, rng=generator, path=path)
        if path == "faithful":
            messages = self.randomize(x, rng=generator)
            return self.analyze(self.view(self.shuffle(messages, rng=generator)))
        return self._run_fast(x, generator)

    def _run_fast(self, x: Any, generator: np.random.Generator) -> Any:
        """`run`'s fast path: the analyzer on the directly sampled view; a protocol with a shorter exact sampler overrides it."""
        return self.analyze(self.sample_view(x, rng=generator))

    # ----------------------------------------------------------------- robustness
    def per_sender_message_cap(self, tail_probability: float = DEFAULT_CAP_TAIL_PROBABILITY) -> int:
        """The most messages one honest sender sends in one instance of one run.

        A shuffler refuses an upload holding more messages than this in any instance. Protocols
        with a fixed message count return it (``tail_probability`` is then unused); protocols
        with a random count return a ``c`` that an honest user exceeds in one instance with
        probability at most ``tail_probability`` (the cost of refusing, added to delta, is in
        `privsum.shuffle.robustness`).

        Args:
            tail_probability: per user and instance, in ``(0, 1)``.

        Examples:
            >>> from privsum.bitsum import RRBitSum, ThreeNBBitSum
            >>> RRBitSum(n_users=1000, flip_probability=0.1, delta=1e-6).per_sender_message_cap()
            1
            >>> three_nb = ThreeNBBitSum(n_users=1000, noise_ratio=0.5, flooding_shape=0.0, flooding_ratio=0.0, delta=1e-6)
            >>> three_nb.per_sender_message_cap(1e-6)  # a user holding 1: 1 + NB(2/1000, 1/2) messages
            9
        """
        tail_probability = check_tail_probability(tail_probability, f"{type(self).__name__}.per_sender_message_cap")
        return self._message_cap(tail_probability)

    def _message_cap(self, tail_probability: float) -> int:
        """`per_sender_message_cap` after validation; protocols override it."""
        raise NotImplementedError(f"{type(self).__name__} states no per-sender message cap")

    @property
    def largest_message_effect(self) -> float:
        """The largest absolute change of one instance's estimate when one message is added to its view.

        Defined by protocols whose analyzer adds a fixed amount per message (a linear analyzer);
        others override `manipulation_bound` instead.
        """
        raise NotImplementedError(f"{type(self).__name__}'s analyzer is not linear in its messages")

    def manipulation_bound(self, n_malicious: int, *, cap: int | None = None) -> float:
        """The largest absolute shift of one instance's estimate that ``n_malicious`` senders can cause.

        The malicious senders send well-formed messages only (values in `alphabet`, at most
        ``cap`` per instance), chosen with knowledge of everything else; the shift compares the
        analyzer's output with and without their messages, the honest messages fixed.
        ``math.inf`` where no finite bound exists. The default, for linear analyzers:
        ``n_malicious * cap * largest_message_effect``, attained by every malicious sender
        sending ``cap`` copies of the most effective message.

        Args:
            n_malicious: the number of malicious senders, at least 0.
            cap: the messages per sender and instance the shuffler enforces (a deployment's
                cap); ``None``: `per_sender_message_cap` at its default tail probability.

        Examples:
            >>> from privsum.bitsum import RRBitSum
            >>> RRBitSum(n_users=1000, flip_probability=0.1, delta=1e-6).manipulation_bound(5)  # 5 (1 - q)/(1 - 2q)
            5.625
        """
        owner = f"{type(self).__name__}.manipulation_bound"
        n_malicious = check_malicious(n_malicious, owner)
        return float(n_malicious * self._enforced_cap(cap, owner) * self.largest_message_effect)

    def _enforced_cap(self, cap: int | None, owner: str) -> int:
        """``cap`` validated (at least 1), or `per_sender_message_cap` at its default tail probability when ``None``."""
        if cap is None:
            return self.per_sender_message_cap()
        return check_integer(cap, "cap", owner, low=1)

    # ----------------------------------------------------------------- participation
    def check_participants(self, n_participants: int) -> None:  # noqa: B027 - a hook, empty by default
        """Once per run, on the total number of users: warn (or raise) where the calibration needs it.

        The default accepts any number; protocols calibrated for ``n_users`` warn with
        `~privsum.exceptions.PrivacyLeakWarning` when fewer take part and raise where more
        would break an assumption of the analyzer.
        """

    def event_for_participants(self, n_participants: int) -> PrivacyEvent:
        """The guarantee actually achieved when ``n_participants`` users take part (default: `event`)."""
        check_integer(n_participants, "n_participants", type(self).__name__, low=1)
        return self.event

    def guarantee_for_participants(self, n_participants: int) -> PrivacyGuarantee:
        """The headline guarantee when ``n_participants`` users take part (default: that of `event_for_participants`)."""
        return self.event_for_participants(n_participants).guarantee

    # ----------------------------------------------------------------- streaming
    def partial_view(self, chunk: Any, *, rng: RNGLike = None, path: str = "fast") -> PartialView:
        """One chunk of users' histogram (only their own randomness) and their number.

        Called for each chunk of a streamed run, with no participant check and nothing that is
        added once per run; `complete_view` does both on the sum. Protocols that stream set
        `streams_chunks` and override this.
        """
        raise NotImplementedError(f"{type(self).__name__} does not stream chunks of users")

    def complete_view(self, partial: PartialView, *, rng: RNGLike = None) -> MessageHistogram:
        """The analyzer's histogram from the sum of every chunk's `partial_view` (once per run).

        The default checks the participants (`check_participants`) and returns the summed
        histogram; a protocol with once-per-run noise adds it here.
        """
        if not isinstance(partial, PartialView):
            raise invalid("partial", type(self).__name__, "a PartialView", type(partial).__name__)
        if partial.n_users < 1:
            raise invalid("x", type(self).__name__, "at least one user", "no users")
        self.check_participants(partial.n_users)
        return partial.histogram

    def stream_partial(self, chunks: Any, *, rng: RNGLike = None, path: str = "fast", progress: bool = False) -> PartialView:
        """The summed `partial_view` of every chunk in ``chunks`` (an iterable of arrays or a Dask array).

        ``progress=True`` shows a progress bar over the chunks (tqdm, on standard error).
        """
        owner = type(self).__name__
        path = check_choice(path, "path", owner, EXECUTION_PATHS)
        generator = as_generator(rng, owner)
        parts = iter_user_chunks(chunks if is_chunk_stream(chunks) else _as_stream(chunks, owner), owner)
        if not isinstance(progress, (bool, np.bool_)):
            raise invalid("progress", owner, "True or False", progress)
        parts = tqdm(parts, desc=owner, unit="chunk", file=sys.stderr, disable=not progress, leave=False)
        if not self.streams_chunks:  # concatenate: correct, not memory-bounded
            users = np.concatenate([np.asarray(part) for part in parts])
            if path == "faithful":
                view = self.view(self.shuffle(self.randomize(users, rng=generator), rng=generator))
            else:
                view = self.sample_view(users, rng=generator)
            return PartialView(view, users.shape[0])
        total: PartialView | None = None
        for part in parts:
            partial = self.partial_view(part, rng=generator, path=path)
            total = partial if total is None else total + partial
        return total  # type: ignore[return-value]  # iter_user_chunks yields at least one chunk

    def sample_view_streamed(
        self, chunks: Any, *, rng: RNGLike = None, path: str = "fast", progress: bool = False
    ) -> MessageHistogram:
        """The analyzer's histogram of users given in chunks, memory bounded by one chunk.

        The result has the same distribution as `sample_view` on all users at once (the
        ``"faithful"`` path: as the histogram of the shuffled messages).

        Args:
            chunks: an iterable of arrays (each with the first axis over users) or a Dask array.
            rng: randomness for every chunk, drawn in order.
            path: ``"fast"`` or ``"faithful"`` for each chunk.
            progress: show a progress bar over the chunks (tqdm, on standard error).
        """
        return self._streamed_view(chunks, rng=rng, path=path, progress=progress)[0]

    def run_streamed(self, chunks: Any, *, rng: RNGLike = None, path: str = "fast", progress: bool = False) -> Any:
        """`run` over users given in chunks: per-chunk histograms reduced by addition, then analyzed once.

        Takes the arguments of `sample_view_streamed`.
        """
        view, n_participants = self._streamed_view(chunks, rng=rng, path=path, progress=progress)
        return self.analyze_participants(view, n_participants)

    def _streamed_view(self, chunks: Any, *, rng: RNGLike, path: str, progress: bool) -> tuple[MessageHistogram, int]:
        """The analyzer's histogram of the chunked users, and how many users the chunks held."""
        generator = as_generator(rng, type(self).__name__)
        partial = self.stream_partial(chunks, rng=generator, path=path, progress=progress)
        view = self.complete_view(partial, rng=generator) if self.streams_chunks else partial.histogram
        return view, partial.n_users

    def analyze_participants(self, view: MessageHistogram, n_participants: int) -> Any:
        """`analyze` when the number of participants is known (the default ignores it)."""
        return self.analyze(view)

    # ----------------------------------------------------------------- parties (privsum.parties)
    def public_parameters(self) -> dict[str, Any]:
        """The calibrated public parameters a deployment fingerprints: every init field of the dataclass.

        A field holding another dataclass (a nested protocol, an LSQ family) is written as
        ``{"class": its class name, "parameters": its init fields}``, recursively, so that
        `privsum.parties` rebuilds the protocol from a protocol file.
        """
        return _init_fields(self)

    def wire_instances(self, n_instances: int | None = None) -> int:
        """Instance tags on the wire when users' inputs have ``n_instances`` columns (default: that number)."""
        if n_instances is None:
            raise invalid("n_instances", type(self).__name__, "the number of instances of the deployment", None)
        return check_integer(n_instances, "n_instances", type(self).__name__, low=1)

    def sender_cap(self, n_instances: int, exceed_probability: float) -> SenderCap:
        """The per-sender message cap of a deployment with ``n_instances`` wire instances.

        ``exceed_probability`` is the largest probability with which one honest user's randomizer
        may exceed the cap (used by protocols whose message counts are random). The default: a
        fixed count of `messages_per_instance` per instance; without one it refuses (a protocol
        states its cap to be deployable by `privsum.parties`).
        """
        if self.messages_per_instance is not None:
            return SenderCap.fixed(self.messages_per_instance, n_instances)
        raise invalid("protocol", "privsum.parties", "a protocol that states its per-sender cap", type(self).__name__)

    def encode_users(self, x: Any, *, rng: RNGLike = None) -> tuple[MessageBatch, np.ndarray]:
        """Each user's messages, listed user by user, and the number of messages of each user.

        The default runs `randomize` on all users (no participant warning: a client sees one user)
        and splits its messages evenly, which is right for protocols whose `randomize` lists
        messages user by user and whose `sender_cap` is a fixed count; others override.
        """
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            batch = self.randomize(x, rng=rng)
        n_users = int(np.shape(x)[0])
        per_user, remainder = divmod(batch.n_messages, n_users)
        if remainder:
            raise invalid("x", type(self).__name__, "inputs whose users send equally many messages", batch.n_messages)
        return batch, np.full(n_users, per_user, dtype=np.int64)


def _init_fields(instance: Any) -> dict[str, Any]:
    """A dataclass's init fields, nested dataclasses as ``{"class", "parameters"}``, tuples as lists."""

    def plain(value: Any) -> Any:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {"class": type(value).__name__, "parameters": _init_fields(value)}
        if isinstance(value, (tuple, list)):
            return [plain(item) for item in value]
        return value

    return {field.name: plain(getattr(instance, field.name)) for field in dataclasses.fields(instance) if field.init}


def _as_stream(chunks: Any, owner: str) -> Any:
    """An explicit iterable of chunks (a list of arrays, say) as a stream; one array stays one chunk."""
    if isinstance(chunks, np.ndarray):
        return iter([chunks])
    if isinstance(chunks, (str, bytes)) or not hasattr(chunks, "__iter__"):
        raise invalid("chunks", owner, "an iterable of arrays or a Dask array", type(chunks).__name__)
    return iter(chunks)


def _count_messages(batch: MessageBatch, alphabet: tuple[int, ...]) -> MessageHistogram:
    """`MessageHistogram.from_messages`, by one ``bincount`` when the alphabet is a range of integers."""
    low, width = alphabet[0], len(alphabet)
    if alphabet[-1] - low + 1 != width or batch.n_messages == 0:
        return MessageHistogram.from_messages(batch, alphabet=alphabet)
    columns = batch.values - low
    if not (columns.min() >= 0 and columns.max() < width):
        return MessageHistogram.from_messages(batch, alphabet=alphabet)  # raises, naming the stray value
    counts = np.bincount(batch.instances * width + columns, minlength=batch.n_instances * width)
    return MessageHistogram(counts.reshape(batch.n_instances, width), alphabet)
