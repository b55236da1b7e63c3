"""Means and variances, on top of the shuffled sums and the clipped sums.

* `ShuffledMean`, `ShuffledMeanVariance` (`privsum.means.bounded`): reals in a public
  ``[low, high]``, randomly rounded and summed by BBGN20 additive shares; RMSE within about 1% of
  the central Laplace mean's.
* `ClippedMean` (`privsum.means.clipped`): reals with only a loose public bound; the clipping
  threshold is chosen from the data privately (Dong, Luo, Fanti, Shi & Yi, CCS 2024), so the error
  follows the data rather than the bound.
"""

from privsum.means.bounded import MAX_LEVELS, MeanAndVariance, ShuffledMean, ShuffledMeanVariance
from privsum.means.clipped import ClippedMean

__all__ = ["MAX_LEVELS", "ClippedMean", "MeanAndVariance", "ShuffledMean", "ShuffledMeanVariance"]
