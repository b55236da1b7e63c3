"""The Dask engine of `privsum.distributed`: chunks on workers, histograms reduced by addition."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from privsum._random import RNGLike, as_generator, generator_from_seed, is_secure
from privsum._validation import check_choice, check_integer, invalid
from privsum.lsq.lsh import LSHFamily
from privsum.shuffle.protocol import EXECUTION_PATHS, ShuffleProtocol
from privsum.shuffle.streaming import PartialView, is_dask_array
from privsum.sketches.race import RACE

__all__ = ["build_race", "partial_view", "run", "sample_view", "spawn_seeds"]


def _dask() -> Any:
    """Import Dask, or explain how to install it."""
    try:
        import dask
        import dask.array
    except ImportError as error:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "privsum.distributed needs Dask: install the optional extra with `pip install 'privsum[dask]'`."
        ) from error
    return dask


_ROOT_WORDS = 4  # 4 x 64 = 256 bits of entropy drawn from rng
_POOL_WORDS = 8  # 8 x 32 = 256-bit SeedSequence pool (numpy's default is 128 bits)
MAX_SEEDS = 2**20  # seed sequences one call may spawn (chunks of one streamed run, plus the driver)


def spawn_seeds(rng: RNGLike, count: int) -> list[np.random.SeedSequence]:
    """``count`` independent seed sequences: ``SeedSequence.spawn`` of one root drawn from ``rng``.

    A `numpy.random.SeedSequence` is the root itself; anything else seeds a generator (Scientific
    Python SPEC 7) whose draws make the root's entropy, so an int seed gives reproducible streams.
    The root holds 256 bits of entropy in a 256-bit pool (``pool_size=8``), and its children
    inherit the pool: a secure run keys every worker's ChaCha20 with 256 bits, as
    `~privsum._random.secure_generator` does (a 128-bit pool would cap the key at 128 bits).
    A `~numpy.random.SeedSequence` passed in is used as given (its own pool size and entropy).

    Examples:
        >>> first, second = spawn_seeds(7, 2)
        >>> first.pool_size * 32
        256
        >>> first.spawn_key, second.spawn_key
        ((0,), (1,))
        >>> bool(np.random.default_rng(first).random() != np.random.default_rng(second).random())
        True

    Raises:
        InvalidParameterError: ``count`` not an integer in ``[1, MAX_SEEDS]`` (``2^20``: each seed
            sequence costs microseconds, and a run streams at most that many chunks).
    """
    count = check_integer(count, "count", "spawn_seeds", low=1, high=MAX_SEEDS)
    if isinstance(rng, np.random.SeedSequence):
        root = rng
    else:
        words = as_generator(rng, "spawn_seeds").integers(0, 2**64, size=_ROOT_WORDS, dtype=np.uint64)
        root = np.random.SeedSequence([int(word) for word in words], pool_size=_POOL_WORDS)
    return root.spawn(count)


def _chunks(users: Any) -> list[Any]:
    """One task input per chunk: the row blocks of a Dask array, or the elements of a sequence."""
    dask = _dask()
    if is_dask_array(users):
        if users.ndim == 0:
            raise invalid("users", "privsum.distributed", "a Dask array with a first axis over users", users.shape)
        whole_rows = users.rechunk({axis: -1 for axis in range(1, users.ndim)}) if users.ndim > 1 else users
        return list(whole_rows.to_delayed().ravel())
    if isinstance(users, np.ndarray) or not isinstance(users, Sequence) or isinstance(users, (str, bytes)):
        raise invalid("users", "privsum.distributed", "a Dask array or a sequence of chunks (arrays or Delayed)", type(users))
    if len(users) == 0:
        raise invalid("users", "privsum.distributed", "at least one chunk of users", "an empty sequence")
    return [chunk if dask.is_dask_collection(chunk) else dask.delayed(chunk) for chunk in users]


def _chunk_partial(protocol: ShuffleProtocol, chunk: Any, seed: np.random.SeedSequence, path: str, secure: bool) -> PartialView:
    """Worker task: one chunk's randomizers on the chunk's own stream (ChaCha20 when the run is secure)."""
    return protocol.partial_view(np.asarray(chunk), rng=generator_from_seed(seed, secure=secure), path=path)


def _tree_reduce(dask: Any, parts: list[Any], combine: Any = operator.add) -> Any:
    """Pairwise ``combine`` (a balanced tree: no single task receives every histogram)."""
    while len(parts) > 1:
        pairs = [dask.delayed(combine)(parts[i], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]
        parts = pairs + ([parts[-1]] if len(parts) % 2 else [])
    return parts[0]


def _check_protocol(protocol: Any, owner: str) -> ShuffleProtocol:
    if not isinstance(protocol, ShuffleProtocol):
        raise invalid("protocol", owner, "a ShuffleProtocol", type(protocol).__name__)
    if not protocol.streams_chunks:
        raise invalid("protocol", owner, "a protocol that streams chunks of users (streams_chunks)", type(protocol).__name__)
    return protocol


def partial_view(
    protocol: ShuffleProtocol, users: Any, *, seeds: Sequence[np.random.SeedSequence], path: str = "fast", secure: bool = False
) -> Any:
    """The lazy (``Delayed``) sum of every chunk's `~privsum.shuffle.ShuffleProtocol.partial_view`.

    Several runs can be computed together with ``dask.compute``; `run` and `sample_view` do the
    rest on the driver.

    Args:
        protocol: a protocol with ``streams_chunks`` (every bit sum, sum and the KDE).
        users: a Dask array (row blocks are the chunks) or a sequence of arrays / ``Delayed`` chunks.
        seeds: one `numpy.random.SeedSequence` per chunk (see `spawn_seeds`).
        path: ``"fast"`` or ``"faithful"`` on each worker.
        secure: draw each chunk's stream from ChaCha20 keyed by its seed (``privsum[secure]``).
    """
    owner = "privsum.distributed.partial_view"
    protocol = _check_protocol(protocol, owner)
    path = check_choice(path, "path", owner, EXECUTION_PATHS)
    dask = _dask()
    chunks = _chunks(users)
    if not (isinstance(seeds, Sequence) and all(isinstance(seed, np.random.SeedSequence) for seed in seeds)):
        raise invalid("seeds", owner, "a sequence of numpy.random.SeedSequence (see spawn_seeds)", type(seeds).__name__)
    if not isinstance(secure, (bool, np.bool_)):
        raise invalid("secure", owner, "True or False", secure)
    if len(seeds) != len(chunks):
        raise invalid("seeds", owner, f"one seed sequence per chunk ({len(chunks)})", len(seeds))
    shared = dask.delayed(protocol, pure=True)  # shipped once per worker, not once per task
    parts = [
        dask.delayed(_chunk_partial, pure=False)(shared, chunk, seed, path, bool(secure))
        for chunk, seed in zip(chunks, seeds, strict=True)
    ]
    return _tree_reduce(dask, parts)


def _check_client(client: Any, owner: str) -> None:
    """``None`` or an object with ``compute`` (a ``distributed.Client``), checked before any graph is built."""
    if client is not None and not callable(getattr(client, "compute", None)):
        raise invalid("client", owner, "None or a distributed.Client", type(client).__name__)


def _compute(dask: Any, lazy: Any, client: Any) -> Any:
    if client is not None:
        return client.compute(lazy).result()
    return dask.compute(lazy)[0]


def _partial_and_driver_stream(protocol: ShuffleProtocol, users: Any, rng: RNGLike, path: str, client: Any, owner: str):
    _check_client(client, owner)
    dask = _dask()
    chunks = _chunks(users)
    secure = is_secure(rng)  # a secure root keeps every worker's stream secure
    seeds = spawn_seeds(rng, len(chunks) + 1)  # the last stream is the driver's (once-per-run noise)
    lazy = partial_view(_check_protocol(protocol, owner), users, seeds=seeds[:-1], path=path, secure=secure)
    return _compute(dask, lazy, client), generator_from_seed(seeds[-1], secure=secure)


def sample_view(protocol: ShuffleProtocol, users: Any, *, rng: RNGLike = None, path: str = "fast", client: Any = None) -> Any:
    """The analyzer's histogram of a distributed run (workers randomize, the driver completes).

    Args:
        protocol: a protocol with ``streams_chunks``.
        users: a Dask array or a sequence of arrays / ``Delayed`` chunks.
        rng: the root of every stream (`spawn_seeds`).
        path: ``"fast"`` or ``"faithful"`` on each worker.
        client: a ``distributed.Client`` (default: Dask's current scheduler).
    """
    owner = "privsum.distributed.sample_view"
    partial, driver = _partial_and_driver_stream(protocol, users, rng, path, client, owner)
    return protocol.complete_view(partial, rng=driver)


def run(protocol: ShuffleProtocol, users: Any, *, rng: RNGLike = None, path: str = "fast", client: Any = None) -> Any:
    """`~privsum.shuffle.ShuffleProtocol.run` with the randomizers on Dask workers.

    Args:
        protocol: a protocol with ``streams_chunks`` (every bit sum, sum and the KDE).
        users: a Dask array (its row blocks are the chunks) or a sequence of arrays / ``Delayed`` chunks.
        rng: the root of every stream: chunk ``i`` gets the ``i``-th ``SeedSequence.spawn`` child.
        path: ``"fast"`` or ``"faithful"`` on each worker.
        client: a ``distributed.Client`` (default: Dask's current scheduler).

    Returns:
        What the protocol's analyzer returns, computed on the driver with the number of users
        who took part (checked once, as in a streamed run).

    Examples:
        >>> import dask.array as da
        >>> from privsum.bitsum import RRBitSum
        >>> protocol = RRBitSum(n_users=1_000, flip_probability=0.1, delta=1e-6)
        >>> bits = da.ones((1_000, 3), chunks=(250, 3), dtype="int8")
        >>> run(protocol, bits, rng=0).shape
        (3,)
    """
    owner = "privsum.distributed.run"
    partial, driver = _partial_and_driver_stream(protocol, users, rng, path, client, owner)
    return protocol.analyze_participants(protocol.complete_view(partial, rng=driver), partial.n_users)


def _race_of(family: LSHFamily, chunk: Any) -> RACE:
    return RACE(family).update(np.asarray(chunk))


def build_race(family: LSHFamily, points: Any, *, client: Any = None) -> RACE:
    """A `~privsum.sketches.RACE` sketch of ``points`` built block by block on Dask workers and merged.

    Args:
        family: the LSH family (public: hash functions from its seed).
        points: a Dask array of ``(n, d)`` points or a sequence of arrays / ``Delayed`` chunks.
        client: a ``distributed.Client`` (default: Dask's current scheduler).

    Returns:
        The merged raw sketch (equal to `RACE.update` on all points: hashing is deterministic).
    """
    if not isinstance(family, LSHFamily):
        raise invalid("family", "privsum.distributed.build_race", "an LSHFamily", type(family).__name__)
    _check_client(client, "privsum.distributed.build_race")
    dask = _dask()
    shared = dask.delayed(family, pure=True)
    parts = [dask.delayed(_race_of, pure=True)(shared, chunk) for chunk in _chunks(points)]
    return _compute(dask, _tree_reduce(dask, parts, RACE.merge), client)
