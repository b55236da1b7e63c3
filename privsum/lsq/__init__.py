"""Locality-sensitive quantization (LSQ) families: random Fourier features, random signs, LSH.

Every family is public randomness fixed by a stored ``seed``; ``f`` and ``g`` map ``(n, d)``
points to ``(n, I, Q)`` arrays (Definition 2.1 of Wagner (ICLR 2025)).

References:
    Wagner, "Learning from End User Data with Shuffled Differential Privacy over Kernel
    Densities", ICLR 2025.
"""

from privsum.lsq.base import LSQFamily
from privsum.lsq.hadamard import FastJLT, RandomizedHadamard, fast_walsh_hadamard, next_power_of_two
from privsum.lsq.inner_product import IdentityFeatures, RandomSigns
from privsum.lsq.lsh import (
    L2LSH,
    LSHFamily,
    SignedRandomProjection,
    family_from_spec,
    l2_lsh_collision_probability,
    srp_collision_probability,
)
from privsum.lsq.rff import RandomFourierFeatures

__all__ = [
    "L2LSH",
    "FastJLT",
    "IdentityFeatures",
    "LSHFamily",
    "LSQFamily",
    "RandomFourierFeatures",
    "RandomSigns",
    "RandomizedHadamard",
    "SignedRandomProjection",
    "family_from_spec",
    "fast_walsh_hadamard",
    "l2_lsh_collision_probability",
    "next_power_of_two",
    "srp_collision_probability",
]
