"""Real, integer and vector summation in the shuffle model.

* `BlanketRealSum`: single-message real sum with the privacy blanket (BBGN19), analytic or tight.
* `CorrelatedNoiseSum`: correlated-noise integer sum (GKMPS21), with a numerical privacy check.
* `MultiMessageSum`: additive shares plus discrete Laplace noise (BBGN20), the low-message baseline.
* `ShuffledVectorSum`: vector sum with ``t`` sampled coordinates (Scott, Cormode & Maple; Scott, Cormode & Maple (BICOD 2021)).
* `SkellamVectorSum`: vector sum with L2 accounting: conditional rounding, divisible Skellam noise and
  split-and-mix shares (Agarwal, Kairouz & Liu, NeurIPS 2021; Balle, Bell, Gascón & Nissim, CCS 2020).
* `CentralGaussianVectorSum`, `ExactVectorSum`: the central Gaussian mechanism with L2 sensitivity
  (Balle & Wang's exact calibration) and the exact sum, references for the shuffled vector sums.

The instance-optimal clipped sums of Dong, Luo, Fanti, Shi & Yi (CCS 2024) moved to
`privsum.clipping`; their old paths here (``privsum.sums.ClippedSum``, ``privsum.sums.clipped``, ...)
still work for one release, with a `DeprecationWarning`.

References:
    Scott, Cormode & Maple, "Applying the Shuffle Model of Differential Privacy to Vector
    Aggregation", BICOD 2021.
    The clipped sums' reference (Dong, Luo, Fanti, Shi & Yi, CCS 2024) is on `privsum.clipping`.
"""

from privsum._deprecation import install_moved_modules, moved_attribute_getter
from privsum.sums.blanket import (
    BlanketRealSum,
    analytic_blanket_epsilon,
    analytic_blanket_probability,
    blanket_profile,
    blanket_variance_bound,
)
from privsum.sums.central_vector import CentralGaussianVectorSum, ExactVectorSum
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
    "CentralGaussianVectorSum",
    "CorrelatedNoiseSum",
    "ExactVectorSum",
    "MultiMessageSum",
    "ShuffledVectorSum",
    "SkellamVectorSum",
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

#: Names that moved to `privsum.clipping` (deprecated here; removed in the next release).
_MOVED_NAMES = {
    "CentralClippedSum": "privsum.clipping",
    "ClippedSum": "privsum.clipping",
    "ClippedVectorSum": "privsum.clipping",
    "PrivateCentralClippedSum": "privsum.clipping",
    "SparseVectorAggregation": "privsum.clipping",
}
#: Modules that moved: old path -> {name: its new module} (deprecated; removed in the next release).
MOVED_MODULES = {
    "privsum.sums.clipped": {
        "CENTRAL_SAMPLERS": "privsum.clipping.central",
        "CLIPPED_RELATIONS": "privsum.clipping.instances",
        "CentralClippedSum": "privsum.clipping.central",
        "ClippedSum": "privsum.clipping.scalar",
        "ClippedSumResult": "privsum.clipping.scalar",
        "INSTANCE_METHODS": "privsum.clipping.instances",
        "NoisySums": "privsum.clipping.instances",
        "PrivateCentralClippedSum": "privsum.clipping.central",
        "choose_instance": "privsum.clipping.instances",
        "default_rounding_levels": "privsum.clipping.scalar",
        "full_domain_correlated_sum": "privsum.clipping.scalar",
        "full_domain_multi_message_sum": "privsum.clipping.scalar",
        "sub_domain_index": "privsum.clipping.instances",
        "touched_parts": "privsum.clipping.instances",
        "upper_tail_threshold": "privsum.clipping.instances",
    },
    "privsum.sums.clipped_shares": {
        "SPARSE_MAX_MODULUS": "privsum.sums.sparse_shares",
        "SparseMultiMessageSum": "privsum.sums.sparse_shares",
        "residue_sums": "privsum.sums.sparse_shares",
        "residue_view": "privsum.sums.sparse_shares",
    },
    "privsum.sums.clipped_vector": {
        "COMPOSITIONS": "privsum.accounting.budget",
        "CentralClippedVectorSum": "privsum.clipping.central",
        "CentralSparseAggregation": "privsum.clipping.central",
        "ClippedVectorSum": "privsum.clipping.vector",
        "CompositionEvent": "privsum.accounting.budget:ComposedEventWithHeadline",
        "SparseVectorAggregation": "privsum.clipping.sparse",
        "compose_like_budget": "privsum.accounting.budget",
        "composition_backs": "privsum.accounting.budget",
        "per_mechanism_budget": "privsum.accounting.budget",
    },
}

__getattr__ = moved_attribute_getter(__name__, _MOVED_NAMES)
install_moved_modules(MOVED_MODULES)
