"""KernelScaleWarning: the Gaussian kernel's bandwidth against the data's scale (issue 30)."""

import warnings

import numpy as np
import pytest

from privsum import KernelScaleWarning
from privsum.apps import ShuffledKDEClassifier
from privsum.bitsum import ExactBitSum
from privsum.kde import ShuffledKDE
from privsum.kde.scale import FAR_ABOVE, FAR_BELOW, measure_scale
from privsum.lsq import RandomFourierFeatures, RandomSigns


def _points(scale: float, n: int = 300, d: int = 16) -> np.ndarray:
    rng = np.random.default_rng(0)
    directions = rng.normal(size=(n, d))
    return scale * directions / np.linalg.norm(directions, axis=1, keepdims=True)  # every row norm equals scale


def _no_scale_warning(action) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", KernelScaleWarning)
        action()


def test_the_median_distance_of_unit_vectors_in_many_dimensions_is_near_sqrt_2():
    scale = measure_scale(_points(1.0, d=256))
    assert abs(scale.pairwise - np.sqrt(2)) < 0.05 and scale.nearest < scale.pairwise
    assert scale.norm == pytest.approx(1.0) and scale.sample == 256


@pytest.mark.parametrize(
    ("scale", "words"), [(77.0, ["close to 0", "Normalizer", "bandwidth to about"]), (0.01, ["barely differ"])]
)
def test_shuffled_kde_warns_with_the_measured_numbers_and_the_fix(scale, words):
    points = _points(scale)
    kde = ShuffledKDE(family=RandomFourierFeatures(dimension=16, n_repetitions=4, seed=0), bitsum=ExactBitSum(n_users=300))
    with pytest.warns(KernelScaleWarning) as record:
        kde.run(points, rng=0)
    message = str(record[0].message)
    scale = measure_scale(points)
    assert f"{scale.pairwise:.3g}" in message and f"{scale.nearest:.3g}" in message and "bandwidth 1;" in message
    assert all(word in message for word in words) and "do not publish" in message
    assert scale.nearest > FAR_ABOVE or scale.pairwise < FAR_BELOW


def test_no_warning_at_a_matching_scale_or_for_other_kernels():
    unit = _points(1.0)
    family = RandomFourierFeatures(dimension=16, n_repetitions=4, seed=0)
    _no_scale_warning(lambda: ShuffledKDE(family=family, bitsum=ExactBitSum(n_users=300)).run(unit, rng=0))
    wide = RandomFourierFeatures(dimension=16, n_repetitions=4, bandwidth=80.0, seed=0)  # the bandwidth matches the data
    _no_scale_warning(lambda: ShuffledKDE(family=wide, bitsum=ExactBitSum(n_users=300)).run(_points(77.0), rng=0))
    signs = RandomSigns(dimension=16, n_repetitions=4, seed=0)  # the inner-product kernel: no bandwidth
    _no_scale_warning(lambda: ShuffledKDE(family=signs, bitsum=ExactBitSum(n_users=300)).run(_points(0.01), rng=0))


def test_well_separated_tight_clusters_do_not_warn():
    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal(centre, 0.3, (100, 2)) for centre in ([3, 0], [-3, 0], [0, 3])])  # median pair 4 apart
    model = ShuffledKDEClassifier(classes=["a", "b", "c"], protocol="exact", label_privacy="clear", n_repetitions=8)
    _no_scale_warning(lambda: model.fit(X, np.repeat(["a", "b", "c"], 100)))


def test_the_classifier_warns_once_per_fit_not_once_per_class():
    X = _points(77.0)
    y = np.repeat(["a", "b", "c"], 100)
    model = ShuffledKDEClassifier(classes=["a", "b", "c"], protocol="exact", label_privacy="clear", n_repetitions=8)
    with pytest.warns(KernelScaleWarning) as record:
        model.fit(X, y)
    assert sum(issubclass(w.category, KernelScaleWarning) for w in record) == 1
    assert str(record[0].message).startswith("ShuffledKDEClassifier:")
    _no_scale_warning(lambda: model.fit(X / 77.0, y))
