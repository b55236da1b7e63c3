"""Per-class calibration: each class's bit sums are calibrated for its own reported (noisy) size."""

import math

import numpy as np

from privsum.accounting import parallel_composition
from privsum.apps import ShuffledKDEClassifier
from privsum.bitsum.exact import rr_worst_case_delta


def _uneven_blobs(rng):
    sizes = (60, 240, 700)
    centres = np.array([[2.0, 0.0], [-2.0, 0.0], [0.0, 2.0]])
    X = np.vstack([rng.normal(c, 0.3, (size, 2)) for c, size in zip(centres, sizes, strict=True)])
    return X, np.repeat(["a", "b", "c"], sizes)


def test_each_class_is_calibrated_for_its_own_reported_size_and_composes_in_parallel():
    X, y = _uneven_blobs(np.random.default_rng(5))
    model = ShuffledKDEClassifier(
        classes=["a", "b", "c"], protocol="rr", epsilon=5.0, label_budget_fraction=0.6, n_repetitions=8, random_state=0
    ).fit(X, y)
    reported = [density.n_users for density in model.densities_]  # the reported (noisy) counts, every user once
    assert sum(reported) == X.shape[0]
    sizes = [p.n_users for p in model.protocols_]  # calibrated for each count rounded down to 2 significant digits
    for calibrated, size in zip(sizes, reported, strict=True):
        assert 0.9 * size < calibrated <= size and len(str(calibrated).rstrip("0")) <= 2
    flips = [p.bitsum.flip_probability for p in model.protocols_]
    assert flips[0] > flips[1] > flips[2]  # larger classes need less noise for the same guarantee
    guarantees = [density.guarantee for density in model.densities_]
    for protocol, guarantee in zip(model.protocols_, guarantees, strict=True):
        assert guarantee.epsilon <= 2.0 * (1 + 1e-9) and guarantee.delta <= 1e-6
        instance = protocol.bitsum.guarantee  # checked against the all-k brute force at its own size
        worst = rr_worst_case_delta(protocol.n_users, protocol.bitsum.flip_probability, instance.epsilon)[0]
        assert worst <= instance.delta * (1 + 1e-9) + 1e-13
    # one part per user: the KDE part is the parallel composition (the largest class guarantee)
    assert model.kde_guarantee_ == parallel_composition(guarantees)
    total = model.guarantees_["communication"]  # label round (3.0) then the class KDEs
    assert math.isclose(total.epsilon, model.kde_guarantee_.epsilon + 3.0, rel_tol=1e-9)
    assert model.score(X, y) > 0.8
