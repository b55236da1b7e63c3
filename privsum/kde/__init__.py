"""Shuffled-DP kernel density estimation (Algorithm 1 of Wagner (ICLR 2025)).

`ShuffledKDE` runs ``I * Q`` bit-sum instances over any LSQ family (random Fourier features,
random signs, LSH for a shuffled RACE) and any bit-sum protocol (RR, 3NB, Pure, local RR; central
and non-private baselines); its analyzer releases a `KDEFunction`, queryable any number of times
and serialisable. `privsum.kde.theory` holds the closed forms of Theorems 3.2 and 3.3.

References:
    Wagner, "Learning from End User Data with Shuffled Differential Privacy over Kernel
    Densities", ICLR 2025.
"""

from privsum.kde.function import KDEFunction
from privsum.kde.protocol import ACCOUNTING_METHODS, CURATED_BITSUMS, FEATURE_PRECISIONS, ShuffledKDE, touched_per_repetition
from privsum.kde.theory import (
    GaussianKDEParameters,
    gaussian_kde_parameters,
    seed_composition_epsilon,
    seed_per_instance_epsilon,
    sup_rmse_bound,
)

__all__ = [
    "ACCOUNTING_METHODS",
    "CURATED_BITSUMS",
    "FEATURE_PRECISIONS",
    "GaussianKDEParameters",
    "KDEFunction",
    "ShuffledKDE",
    "gaussian_kde_parameters",
    "seed_composition_epsilon",
    "seed_per_instance_epsilon",
    "sup_rmse_bound",
    "touched_per_repetition",
]
