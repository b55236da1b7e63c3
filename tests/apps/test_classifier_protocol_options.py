"""The classifier's ``protocol_options``: 3NB's communication flooding per class, validated by name."""

import math

import numpy as np
import pytest

from privsum import InvalidParameterError
from privsum.accounting import parallel_composition
from privsum.apps import ShuffledKDEClassifier
from privsum.apps.classifier import protocol_option_names
from privsum.bitsum.exact import signed_count_profile_grid


def _blobs(rng, per_class):
    centres = np.array([[2.0, 0.0], [-2.0, 0.0], [0.0, 2.0]])
    X = np.vstack([rng.normal(c, 0.3, (per_class, 2)) for c in centres])
    return X, np.repeat(["a", "b", "c"], per_class)


def _model(**options):
    return ShuffledKDEClassifier(
        classes=["a", "b", "c"],
        protocol="3nb",
        epsilon=6.0,
        delta=1e-6,
        label_budget_fraction=0.5,
        n_repetitions=8,
        random_state=0,
        **options,
    )


def test_communication_flooding_reaches_every_class_with_fewer_messages_and_the_same_kind_of_guarantee():
    X, y = _blobs(np.random.default_rng(1), 300)
    paper = _model().fit(X, y)
    options = {"flooding": "communication", "variance_factor": 4.0}
    cheap = _model(protocol_options=options).fit(X, y)
    assert cheap.get_params()["protocol_options"] == options  # stored as given
    for kde, paper_kde in zip(cheap.protocols_, paper.protocols_, strict=True):
        bitsum = kde.bitsum
        assert bitsum.flooding_ratio != paper_kde.bitsum.flooding_ratio  # the option reached this class's bit sum
        exact = signed_count_profile_grid(1.0, bitsum.noise_ratio, bitsum.flooding_shape, bitsum.flooding_ratio, tail_mass=1e-16)
        instance = bitsum.guarantee
        assert exact.delta(instance.epsilon) <= instance.delta * (1 + 1e-9)
    messages = cheap.communication_["expected_messages_per_user"]
    assert messages < paper.communication_["expected_messages_per_user"] / 3
    # the composed guarantee is unchanged in kind: classes in parallel, then the label round
    guarantees = [density.guarantee for density in cheap.densities_]
    assert all(g.epsilon <= 3.0 * (1 + 1e-9) and g.delta <= 1e-6 for g in guarantees)
    assert cheap.kde_guarantee_ == parallel_composition(guarantees)
    total = cheap.guarantees_["communication"]
    assert math.isclose(total.epsilon, cheap.kde_guarantee_.epsilon + 3.0, rel_tol=1e-9)
    assert cheap.score(X, y) > 0.8


def test_option_names_come_from_the_protocol():
    assert protocol_option_names("3nb") == ("flooding", "variance_factor")
    assert protocol_option_names("rr") == ("composition",)
    assert protocol_option_names("exact") == () and protocol_option_names("vector") == ()


@pytest.mark.parametrize(
    ("protocol", "options"),
    [
        ("3nb", {"flooding_shape": 3.0}),  # not an option of ThreeNBBitSum.from_privacy
        ("3nb", {"epsilon": 1.0}),  # set by the classifier itself
        ("3nb", ["flooding"]),  # not a mapping
        ("3nb", {1: "communication"}),
        ("rr", {"flooding": "communication"}),  # an option of another protocol
        ("vector", {"flooding": "communication"}),
        ("exact", {"flooding": "communication"}),
    ],
)
def test_unknown_options_are_refused_before_any_calibration(protocol, options):
    X, y = _blobs(np.random.default_rng(2), 20)
    model = ShuffledKDEClassifier(classes=["a", "b", "c"], protocol=protocol, n_repetitions=4, protocol_options=options)
    with pytest.raises(InvalidParameterError, match="'protocol_options' parameter of ShuffledKDEClassifier"):
        model.fit(X, y)


@pytest.mark.parametrize("options", [{"flooding": "none"}, {"flooding": "communication", "variance_factor": 0.5}])
def test_bad_option_values_are_refused_under_the_callers_name(options):
    X, y = _blobs(np.random.default_rng(3), 20)
    with pytest.raises(InvalidParameterError, match="'protocol_options' parameter of ShuffledKDEClassifier"):
        _model(protocol_options=options).fit(X, y)
