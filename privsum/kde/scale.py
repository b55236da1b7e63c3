"""Does the data's scale suit the kernel? A local check that warns before a model trains to chance.

The Gaussian kernel ``exp(-||x - y||^2 / h^2)`` is informative only where typical distances
between points are of the order of the bandwidth ``h``: far beyond it every density is close to
0 away from the training points (unscaled scikit-learn digits, row norms near 77, train to chance
accuracy with ``h = 1``); far below it every density is close to 1 and the classes differ by
less than the privacy noise. The other kernels need no check: the inner-product families refuse
points of norm above their bound, and the angular (LSH) kernel does not depend on the scale.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from privsum.exceptions import KernelScaleWarning
from privsum.lsq import LSQFamily, RandomFourierFeatures
from privsum.lsq.rff import apply_projection

__all__ = ["FAR_ABOVE", "FAR_BELOW", "SAMPLE_SIZE", "ScaleMeasurement", "measure_scale", "warn_if_degenerate_scale"]

#: Points used for the check: an evenly spaced sample (no randomness drawn, so results do not change).
SAMPLE_SIZE = 256
#: Median nearest-neighbour distance over bandwidth above which the kernel between a point and
#: its nearest sampled neighbour is typically below e^-9 (1.2e-4): the densities vanish.
FAR_ABOVE = 3.0
#: Median pairwise distance over bandwidth below which the kernel between typical points is
#: above 0.9975: the densities are flat.
FAR_BELOW = 0.05


@dataclass(frozen=True)
class ScaleMeasurement:
    """Distances over an evenly spaced sample of the rows: medians of pairwise and nearest-neighbour distances and of norms."""

    pairwise: float
    nearest: float
    norm: float
    sample: int


def measure_scale(points: np.ndarray, sample_size: int = SAMPLE_SIZE) -> ScaleMeasurement:
    """The `ScaleMeasurement` of at most ``sample_size`` evenly spaced rows of ``points`` (at least two rows)."""
    rows = points[np.unique(np.linspace(0, points.shape[0] - 1, min(sample_size, points.shape[0])).astype(np.int64))]
    squared = np.einsum("ij,ij->i", rows, rows)
    distances = np.sqrt(np.maximum(squared[:, None] + squared[None, :] - 2.0 * rows @ rows.T, 0.0))
    upper = np.triu_indices(rows.shape[0], k=1)
    np.fill_diagonal(distances, np.inf)
    return ScaleMeasurement(
        pairwise=float(np.median(distances[upper])),
        nearest=float(np.median(distances.min(axis=1))),
        norm=float(np.median(np.sqrt(squared))),
        sample=rows.shape[0],
    )


def warn_if_degenerate_scale(family: LSQFamily, points: Any, owner: str, *, stacklevel: int = 3) -> None:
    """Warn with `KernelScaleWarning` when ``points`` make the family's Gaussian kernel degenerate.

    Only random Fourier features (the Gaussian kernel) are checked, and only in-memory arrays
    of at least two finite rows (streamed chunks are not read twice). On an evenly spaced sample
    of at most `SAMPLE_SIZE` rows, in the space the kernel sees (after the family's projection,
    if any), it warns when even the nearest sampled neighbours are typically more than
    `FAR_ABOVE` bandwidths apart, or when typical pairs are less than `FAR_BELOW` bandwidths
    apart (not when most sampled points coincide). The nearest-neighbour distance within a
    sample overstates the full data's, so a large data set close to the upper threshold may
    warn needlessly.

    Privacy:
        A local diagnostic for whoever holds the points passed in (in privsum's simulation, the
        data owner running ``fit`` or ``run``), computed before any randomizer runs: it is not
        differentially private. Its message states statistics of the raw data (median distances
        and a median norm): do not forward it to the analyzer or publish it. In a deployment
        each user holds one point, nobody holds them all, and the check runs only on data a
        party already holds (for instance public or synthetic data of the same kind, to choose
        the bandwidth and the scaling before collection).
    """
    if not isinstance(family, RandomFourierFeatures) or not isinstance(points, np.ndarray):
        return
    if points.dtype.kind not in "iuf":  # not points: the caller's validation refuses them
        return
    if points.ndim != 2 or points.shape[0] < 2 or not np.isfinite(points).all():
        return
    scale = measure_scale(np.asarray(apply_projection(family.projection, points), dtype=float))
    bandwidth = family.bandwidth
    if scale.pairwise == 0.0:  # most sampled points coincide: no scale to compare
        return
    if scale.pairwise / bandwidth < FAR_BELOW:
        kernel = math.exp(-((scale.pairwise / bandwidth) ** 2))
        effect = (
            f"the kernel between typical points is 1 - {1 - kernel:.2g}: the densities barely differ between "
            "classes and the privacy noise hides the difference"
        )
        fix, suggested = "scale the points up (e.g. unit row norms)", scale.pairwise
    elif scale.nearest / bandwidth > FAR_ABOVE:
        ratio = scale.nearest / bandwidth
        effect = (
            f"the kernel between a point and its nearest sampled neighbour is typically exp(-{ratio**2:.3g}) = "
            f"{math.exp(-(ratio**2)):.2g}: every class density is close to 0 away from the training points and the "
            "model predicts at chance"
        )
        fix, suggested = "normalise the points (e.g. scikit-learn's Normalizer: unit row norms)", scale.pairwise
    else:
        return
    measured = (
        f"median distance between points {scale.pairwise:.3g} (to the nearest sampled neighbour {scale.nearest:.3g}; "
        f"median row norm {scale.norm:.3g}; {scale.sample} points sampled) against the Gaussian kernel's bandwidth "
        f"{bandwidth:g}"
    )
    warnings.warn(
        f"{owner}: {measured}; {effect}. Fix: {fix}, or set the bandwidth to about {suggested:.2g}. "
        "(This local diagnostic reveals statistics of the data: do not publish it.)",
        KernelScaleWarning,
        stacklevel=stacklevel,
    )
