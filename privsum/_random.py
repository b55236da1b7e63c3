"""Random-number-generator normalisation (Scientific Python SPEC 7).

Public entry points take a keyword-only ``rng`` and normalise it once with `as_generator`;
inner code receives a `numpy.random.Generator`. There is no global random state.
"""

from __future__ import annotations

import numpy as np

from privsum._validation import invalid

__all__ = ["RNGLike", "as_generator", "spawn"]

RNGLike = int | np.integer | np.random.SeedSequence | np.random.BitGenerator | np.random.Generator | None


def as_generator(rng: RNGLike, owner: str = "this function") -> np.random.Generator:
    """Return a `numpy.random.Generator` for ``rng``.

    A Generator is used as is (so a caller can thread one stream through several calls); ``None``
    draws fresh OS entropy; an int, SeedSequence or BitGenerator seeds a new Generator.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, bool):
        raise invalid("rng", owner, "None, an int seed, a SeedSequence, a BitGenerator or a Generator", rng)
    if rng is None or isinstance(rng, (int, np.integer, np.random.SeedSequence, np.random.BitGenerator)):
        try:
            return np.random.default_rng(rng)
        except (ValueError, TypeError) as error:
            raise invalid("rng", owner, "a non-negative int seed or a seed object", rng) from error
    raise invalid("rng", owner, "None, an int seed, a SeedSequence, a BitGenerator or a Generator", rng)


def spawn(rng: np.random.Generator, count: int) -> list[np.random.Generator]:
    """Return ``count`` statistically independent child generators of ``rng``."""
    return list(rng.spawn(count))
