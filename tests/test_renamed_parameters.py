"""Renamed parameters keep working with a DeprecationWarning: ``sampler`` is now ``noise_source``."""

from __future__ import annotations

import numpy as np
import pytest

from privsum import InvalidParameterError
from privsum.clipping import CentralClippedSum
from privsum.lsq import L2LSH
from privsum.sketches import RACE, RACEClassifier, RACELinearRegression

FAMILY = L2LSH(dimension=2, n_repetitions=8, bucket_width=0.7, n_buckets=64, seed=1)
POINTS = np.random.default_rng(0).normal(size=(40, 2))
LABELS = np.array(["a", "b"] * 20)
SMALL = np.clip(POINTS, -0.5, 0.5)  # rows (x, 1, y) inside the regression's data bound


def test_race_release_sampler_is_a_deprecated_alias():
    sketch = RACE(FAMILY).update(POINTS)
    with pytest.warns(DeprecationWarning, match=r"'sampler' parameter of RACE.release is deprecated.*noise_source='numpy'"):
        old = sketch.release(1.0, sampler="numpy", rng=3)
    new = sketch.release(1.0, noise_source="numpy", rng=3)
    assert np.array_equal(old.counts, new.counts)
    with pytest.raises(InvalidParameterError, match="'sampler'"):
        sketch.release(1.0, sampler="opendp", noise_source="numpy", rng=3)


@pytest.mark.parametrize(
    ("estimator", "fit_args"),
    [
        (lambda **kw: RACEClassifier(family=FAMILY, classes=["a", "b"], epsilon=1.0, random_state=1, **kw), (POINTS, LABELS)),
        (lambda **kw: RACELinearRegression(n_rows=16, epsilon=1.0, random_state=1, **kw), (SMALL, SMALL[:, 0])),
    ],
    ids=["classifier", "regression"],
)
def test_estimators_accept_the_old_name_with_a_warning(estimator, fit_args):
    new = estimator(noise_source="numpy").fit(*fit_args)
    with pytest.warns(DeprecationWarning, match="use noise_source='numpy'"):
        old = estimator(sampler="numpy").fit(*fit_args)
    assert np.array_equal(old.predict(fit_args[0]), new.predict(fit_args[0]))
    assert new.noise_source == "numpy" and new.sampler == "deprecated"


def test_central_clipped_sum_accepts_the_old_name_with_a_warning():
    with pytest.warns(DeprecationWarning, match="'sampler' parameter of CentralClippedSum"):
        old = CentralClippedSum(epsilon=1.0, clipping_bound=4, sampler="numpy")
    assert old == CentralClippedSum(epsilon=1.0, clipping_bound=4, noise_source="numpy")
    assert old.release(np.arange(5), rng=2) == CentralClippedSum(epsilon=1.0, clipping_bound=4, noise_source="numpy").release(
        np.arange(5), rng=2
    )
