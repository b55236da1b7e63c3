"""Random-number-generator normalisation (Scientific Python SPEC 7) and a secure option.

Public entry points take a keyword-only ``rng`` and normalise it once with `as_generator`;
inner code receives a `numpy.random.Generator`. There is no global random state.

``rng="secure"`` (accepted wherever ``rng`` is) draws from `secure_generator`: numpy's samplers
over a ChaCha20 bit stream keyed with 256 bits from the operating system's CSPRNG (`secrets`).
It needs the optional extra ``privsum[secure]`` (the ``randomgen`` package). The default stays
numpy's fast PCG64.

Floating-point caveat: a cryptographically secure *bit stream* does not make a sampler exact. The
samplers that turn bits into noise (numpy's negative-binomial, geometric, uniform-float and
Gaussian samplers, randomized rounding against a float) use floating-point arithmetic, so the
distributions they produce are correct only up to rounding; such errors can in principle be
exploited (Mironov, "On significance of the least significant bits for differential privacy",
CCS 2012). The secure stream protects against an adversary who could predict or reconstruct a
seeded pseudo-random stream; it does not remove the floating-point gap. Where exactness matters,
use an exact sampler (for example `privsum.sketches.RACE.release` with ``noise_source="opendp"``).
"""

from __future__ import annotations

import secrets
from typing import Literal

import numpy as np

from privsum._validation import invalid

__all__ = [
    "SECURE",
    "RNGLike",
    "as_generator",
    "check_csprng_rng",
    "generator_from_seed",
    "is_secure",
    "secure_generator",
    "spawn",
]

#: The value of ``rng`` that asks for `secure_generator`.
SECURE = "secure"

RNGLike = int | np.integer | np.random.SeedSequence | np.random.BitGenerator | np.random.Generator | Literal["secure"] | None

_EXPECTED = "None, 'secure', an int seed, a SeedSequence, a BitGenerator or a Generator"
_KEY_BYTES = 32  # ChaCha20's 256-bit key


def secure_generator(seed: int | None = None) -> np.random.Generator:
    """A `numpy.random.Generator` over a ChaCha20 stream keyed from the OS CSPRNG (opt-in).

    Args:
        seed: ``None`` (deployment): 256 bits from `secrets.token_bytes` key the stream. A
            non-negative int gives a reproducible stream for tests; it is only as secret as
            the seed.

    Returns:
        A Generator whose bit generator is ``randomgen.ChaCha`` (20 rounds). The key material
        goes through a 256-bit `numpy.random.SeedSequence` (``pool_size=8``), so `spawn` gives
        independent ChaCha children, e.g. for distributed runs.

    Raises:
        ImportError: ``randomgen`` is missing; install the extra ``privsum[secure]``.
        InvalidParameterError: ``seed`` is neither ``None`` nor a non-negative int.

    Privacy:
        A secure stream removes one risk of seeded simulation-grade generators: an adversary
        who learns or reconstructs the stream can subtract the noise. It does not make
        floating-point samplers exact (see the module docstring).

    Examples:
        >>> generator = secure_generator(seed=7)
        >>> type(generator.bit_generator).__name__
        'ChaCha'
    """
    owner = "secure_generator"
    if seed is None:
        entropy = int.from_bytes(secrets.token_bytes(_KEY_BYTES), "little")
    elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and int(seed) >= 0:
        entropy = int(seed)
    else:
        raise invalid("seed", owner, "None or a non-negative int", seed)
    chacha = _chacha_class()
    return np.random.Generator(chacha(seed=np.random.SeedSequence(entropy, pool_size=_KEY_BYTES // 4), rounds=20))


def _chacha_class() -> type:
    try:
        from randomgen import ChaCha
    except ImportError as error:
        raise ImportError(
            "rng='secure' needs the optional 'randomgen' package: install it with pip install 'privsum[secure]'."
        ) from error
    return ChaCha


def as_generator(rng: RNGLike, owner: str = "this function") -> np.random.Generator:
    """Return a `numpy.random.Generator` for ``rng``.

    A Generator is used as is (so a caller can thread one stream through several calls); ``None``
    draws fresh OS entropy; an int, SeedSequence or BitGenerator seeds a new Generator; the
    string ``"secure"`` returns a fresh `secure_generator` (needs ``privsum[secure]``).
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, str):
        if rng == SECURE:
            return secure_generator()
        raise invalid("rng", owner, _EXPECTED, rng)
    if isinstance(rng, bool):
        raise invalid("rng", owner, _EXPECTED, rng)
    if rng is None or isinstance(rng, (int, np.integer, np.random.SeedSequence, np.random.BitGenerator)):
        try:
            return np.random.default_rng(rng)
        except (ValueError, TypeError) as error:
            raise invalid("rng", owner, "a non-negative int seed or a seed object", rng) from error
    raise invalid("rng", owner, _EXPECTED, rng)


def is_secure(rng: RNGLike) -> bool:
    """Whether ``rng`` asks for (``"secure"``) or already is a ChaCha-based secure generator."""
    if isinstance(rng, str):
        return rng == SECURE
    return isinstance(rng, np.random.Generator) and type(rng.bit_generator).__name__ == "ChaCha"


def generator_from_seed(seed: np.random.SeedSequence, *, secure: bool) -> np.random.Generator:
    """A generator for one spawned stream: ChaCha20 when the root stream was secure, numpy's default otherwise."""
    if secure:
        return np.random.Generator(_chacha_class()(seed=seed, rounds=20))
    return np.random.default_rng(seed)


def spawn(rng: np.random.Generator, count: int) -> list[np.random.Generator]:
    """Return ``count`` statistically independent child generators of ``rng``."""
    return list(rng.spawn(count))


def check_csprng_rng(rng: RNGLike, owner: str) -> None:
    """Refuse a seed where the noise comes from OpenDP's own CSPRNG (one rule for every exact sampler).

    OpenDP's exact samplers draw from the operating system's CSPRNG and cannot be seeded, so an
    int seed, a `~numpy.random.SeedSequence` or a `~numpy.random.BitGenerator` (each a promise of
    reproducibility) is refused with a clear error rather than silently ignored. ``None``,
    ``"secure"`` and a `~numpy.random.Generator` (a stream threaded through several calls; it
    still drives any non-noise randomness, never OpenDP's noise) are accepted. For reproducible
    noise choose the numpy sampler.
    """
    if rng is None or isinstance(rng, np.random.Generator) or (isinstance(rng, str) and rng == SECURE):
        return
    raise invalid(
        "rng",
        owner,
        "None, 'secure' or a Generator with OpenDP's exact sampler (it draws from the OS CSPRNG and cannot be seeded; "
        "choose the numpy sampler for reproducible noise)",
        rng,
    )
