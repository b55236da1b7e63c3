"""Mergeable LSH sketches and their private release: RACE (Coleman & Shrivastava (CCS 2021)) and its applications.

Public randomness (hash functions) comes from the family's stored ``seed``; private noise comes
from the release call and is never stored. A released sketch is its own type, so noise is added
exactly once.

References:
    Coleman & Shrivastava, "A One-Pass Distributed and Private Sketch for Kernel Sums with
    Applications to Machine Learning at Scale", CCS 2021.
"""

from privsum.sketches.applications import RACEClassifier, RACELinearRegression, anomaly_score
from privsum.sketches.race import RACE, ReleasedRACE, SketchShape, noise_scale

__all__ = ["RACE", "RACEClassifier", "RACELinearRegression", "ReleasedRACE", "SketchShape", "anomaly_score", "noise_scale"]
