"""Histograms over a known domain, frequency sketches for huge domains, heavy hitters and means.

* `ShuffledHistogram`: one shuffled bit sum per category (3NB, RR or Poisson noise messages), accounted by parallel
  composition: a replace-one change touches two bins, whatever the number of categories.
* `CentralHistogram`: the central references (discrete Laplace with L1 sensitivity, analytic
  Gaussian with L2 sensitivity).
* `ShuffledCountSketch`: a count sketch whose cells are counted by the shuffler with Poisson noise
  messages, for domains too large to list (point queries, heavy hitters from candidates).
* `PrefixHeavyHitters`: heavy hitters without a candidate list (a prefix tree of sketches).
* `TwoRoundHeavyHitters`: heavy hitters from a candidate list with a stated per-item recall (a
  finding sketch, then a counting histogram of the candidates).
* Post-processing (`nonnegative`, `consistent_with_total`, `top_k`): free of privacy cost.
"""

from privsum.histograms.categories import MAX_CATEGORIES, Categories
from privsum.histograms.central import CENTRAL_MECHANISMS, CentralHistogram
from privsum.histograms.events import HISTOGRAM_RELATIONS, BinsEvent, PoissonCounterEvent, RoundsEvent
from privsum.histograms.heavy_hitters import PrefixHeavyHitters, ReleasedPrefixTree
from privsum.histograms.poisson_bins import PoissonNoiseBitSum
from privsum.histograms.postprocess import consistent_with_total, nonnegative, top_k
from privsum.histograms.protocol import HistogramCandidate, ShuffledHistogram
from privsum.histograms.sketch import ReleasedCountSketch, ShuffledCountSketch, count_sketch_table
from privsum.histograms.two_round import CANDIDATE_FRACTION, HeavyHitterRelease, TwoRoundHeavyHitters

__all__ = [
    "CANDIDATE_FRACTION",
    "CENTRAL_MECHANISMS",
    "HISTOGRAM_RELATIONS",
    "MAX_CATEGORIES",
    "BinsEvent",
    "Categories",
    "CentralHistogram",
    "HeavyHitterRelease",
    "HistogramCandidate",
    "PoissonCounterEvent",
    "PoissonNoiseBitSum",
    "PrefixHeavyHitters",
    "ReleasedCountSketch",
    "ReleasedPrefixTree",
    "RoundsEvent",
    "ShuffledCountSketch",
    "ShuffledHistogram",
    "TwoRoundHeavyHitters",
    "consistent_with_total",
    "count_sketch_table",
    "nonnegative",
    "top_k",
]
