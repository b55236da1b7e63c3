"""Shuffled-DP kernel density estimation (Algorithm 1 of Wagner (ICLR 2025)), and the KDE over vector sums.

`VectorSumKDE` releases the same function from one private vector sum of the users' features (L2
accounting, no 1-bit rounding), and `JointClassKDE` every class's KDE and size from one joint sum.
`ShuffledKDE` runs ``I * Q`` bit-sum instances over any LSQ family (random Fourier features,
random signs, LSH for a shuffled RACE) and any bit-sum protocol (RR, 3NB, Pure, local RR; central
and non-private baselines); its analyzer releases a `KDEFunction`, queryable any number of times
and serialisable. `privsum.kde.theory` holds the closed forms of Theorems 3.2 and 3.3.

References:
    Wagner, "Learning from End User Data with Shuffled Differential Privacy over Kernel
    Densities", ICLR 2025.
"""

from privsum._deprecation import moved_attribute_getter
from privsum.kde.calibration import ACCOUNTING_METHODS, touched_per_repetition
from privsum.kde.function import KDEFunction
from privsum.kde.joint import JointClassKDE
from privsum.kde.protocol import FEATURE_PRECISIONS, ShuffledKDE
from privsum.kde.theory import (
    GaussianKDEParameters,
    gaussian_kde_parameters,
    seed_composition_epsilon,
    seed_per_instance_epsilon,
    sup_rmse_bound,
)
from privsum.kde.vector import VectorSumKDE, feature_norm_bound

__all__ = [
    "ACCOUNTING_METHODS",
    "FEATURE_PRECISIONS",
    "GaussianKDEParameters",
    "JointClassKDE",
    "KDEFunction",
    "ShuffledKDE",
    "VectorSumKDE",
    "feature_norm_bound",
    "gaussian_kde_parameters",
    "seed_composition_epsilon",
    "seed_per_instance_epsilon",
    "sup_rmse_bound",
    "touched_per_repetition",
]

#: ``CURATED_BITSUMS`` moved to `privsum.bitsum.central` (deprecated here; removed in the next release).
__getattr__ = moved_attribute_getter(__name__, {"CURATED_BITSUMS": "privsum.bitsum.central"})
