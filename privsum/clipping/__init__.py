"""Instance-optimal clipped sums in one shuffle round (Dong, Luo, Fanti, Shi & Yi, CCS 2024).

* `ClippedSum` (`privsum.clipping.scalar`): integers in ``{0..U}``; one summation instance per
  sub-domain, the clipping threshold picked by the analyzer from the noisy sub-domain sums.
* `ClippedVectorSum` (`privsum.clipping.vector`): real vectors under an L2 bound; a public random
  rotation, one `ClippedSum` per rotated coordinate and sign, composed over coordinates.
* `SparseVectorAggregation` (`privsum.clipping.sparse`): binary vectors (user-level frequency
  estimation), users partitioned by sparsity level.
* Central-DP references (`privsum.clipping.central`): `CentralClippedSum`,
  `PrivateCentralClippedSum`, `CentralClippedVectorSum`, `CentralSparseAggregation`.

What the protocols share (choosing and sampling one instance, tail thresholds, views) is in
`privsum.clipping.instances`; the threshold rule in `privsum.clipping.threshold_rule`; how a budget
is spent over the instances in `privsum.clipping.calibration` (the per-coordinate budget split is
`privsum.accounting.budget`); `ClippedSum`'s sub-domain columns in `privsum.clipping.sub_domains`.

References:
    Dong, Luo, Fanti, Shi & Yi, "(Almost) Instance-optimal Clipping for Summation Problems in
    the Shuffle Model of Differential Privacy", CCS 2024.
"""

from privsum.clipping.central import (
    CentralClippedSum,
    CentralClippedVectorSum,
    CentralSparseAggregation,
    PrivateCentralClippedSum,
)
from privsum.clipping.instances import choose_instance, sub_domain_index, upper_tail_threshold
from privsum.clipping.scalar import (
    ClippedSum,
    ClippedSumResult,
    default_rounding_levels,
    full_domain_correlated_sum,
    full_domain_multi_message_sum,
)
from privsum.clipping.sparse import SparseVectorAggregation
from privsum.clipping.vector import ClippedVectorSum

__all__ = [
    "CentralClippedSum",
    "CentralClippedVectorSum",
    "CentralSparseAggregation",
    "ClippedSum",
    "ClippedSumResult",
    "ClippedVectorSum",
    "PrivateCentralClippedSum",
    "SparseVectorAggregation",
    "choose_instance",
    "default_rounding_levels",
    "full_domain_correlated_sum",
    "full_domain_multi_message_sum",
    "sub_domain_index",
    "upper_tail_threshold",
]
