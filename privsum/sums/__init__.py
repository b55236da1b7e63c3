"""Real, integer and vector summation in the shuffle model.

* `BlanketRealSum`: single-message real sum with the privacy blanket (BBGN19), analytic or tight.
* `CorrelatedNoiseSum`: correlated-noise integer sum (GKMPS21), with a numerical privacy check.
* `MultiMessageSum`: additive shares plus discrete Laplace noise (BBGN20), the low-message baseline.
* `ShuffledVectorSum`: vector sum with ``t`` sampled coordinates (Scott, Cormode & Maple; Scott, Cormode & Maple (BICOD 2021)).
* `SkellamVectorSum`: vector sum with L2 accounting: conditional rounding, divisible Skellam noise and
  split-and-mix shares (Agarwal, Kairouz & Liu, NeurIPS 2021; Balle, Bell, Gascón & Nissim, CCS 2020).
* `CentralGaussianVectorSum`, `ExactVectorSum`: the central Gaussian mechanism with L2 sensitivity
  (Balle & Wang's exact calibration) and the exact sum, references for the shuffled vector sums.
* `ClippedSum`, `ClippedVectorSum`, `SparseVectorAggregation`: instance-optimal clipped sums in one
  round (Dong et al. (CCS 2024)), with the central references `PrivateCentralClippedSum` and `CentralClippedSum`.

References:
    Scott, Cormode & Maple, "Applying the Shuffle Model of Differential Privacy to Vector
    Aggregation", BICOD 2021.
    Dong, Luo, Fanti, Shi & Yi, "(Almost) Instance-optimal Clipping for Summation Problems in
    the Shuffle Model of Differential Privacy", CCS 2024.
"""

from privsum.sums.blanket import (
    BlanketRealSum,
    analytic_blanket_epsilon,
    analytic_blanket_probability,
    blanket_profile,
    blanket_variance_bound,
)
from privsum.sums.central_vector import CentralGaussianVectorSum, ExactVectorSum
from privsum.sums.clipped import CentralClippedSum, ClippedSum, PrivateCentralClippedSum
from privsum.sums.clipped_vector import ClippedVectorSum, SparseVectorAggregation
from privsum.sums.correlated import CorrelatedNoiseSum, gkmps_parameters
from privsum.sums.multi_message import (
    MAX_MODULUS,
    MultiMessageSum,
    default_share_count,
    divisible_laplace_epsilon,
    supported_security_bits,
)
from privsum.sums.skellam import (
    SkellamVectorSum,
    conditional_rounding_l2_bound,
    conditional_rounding_squared_bound,
    skellam_tail,
)
from privsum.sums.vector import ShuffledVectorSum

__all__ = [
    "MAX_MODULUS",
    "BlanketRealSum",
    "CentralClippedSum",
    "CentralGaussianVectorSum",
    "ClippedSum",
    "ClippedVectorSum",
    "CorrelatedNoiseSum",
    "ExactVectorSum",
    "MultiMessageSum",
    "PrivateCentralClippedSum",
    "ShuffledVectorSum",
    "SkellamVectorSum",
    "SparseVectorAggregation",
    "analytic_blanket_epsilon",
    "analytic_blanket_probability",
    "blanket_profile",
    "blanket_variance_bound",
    "conditional_rounding_l2_bound",
    "conditional_rounding_squared_bound",
    "default_share_count",
    "divisible_laplace_epsilon",
    "gkmps_parameters",
    "skellam_tail",
    "supported_security_bits",
]
