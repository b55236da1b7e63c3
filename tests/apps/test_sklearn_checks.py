"""scikit-learn's estimator checks on the private classifier (the privacy warning of ``classes=None`` filtered).

The checks build estimators with ``classes=None`` (they cannot know the label set), so every fit
warns with `PrivacyLeakWarning`; that warning is the point of the parameter and is filtered here.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from privsum.apps import ShuffledKDEClassifier
from privsum.apps._estimator import NotFittedError, _MinimalEstimator
from privsum.exceptions import InvalidParameterError, PrivacyLeakWarning

pytest.importorskip("sklearn")
from sklearn.base import clone
from sklearn.utils.estimator_checks import parametrize_with_checks

PRIVACY_WARNING = "ignore::privsum.exceptions.PrivacyLeakWarning"


@pytest.mark.filterwarnings(PRIVACY_WARNING)
@parametrize_with_checks([ShuffledKDEClassifier(protocol="exact", label_privacy="clear", n_repetitions=32, random_state=0)])
def test_non_private_estimator_passes_sklearn_checks(estimator, check):
    check(estimator)


@pytest.mark.slow
@pytest.mark.filterwarnings(PRIVACY_WARNING)
@parametrize_with_checks(
    [
        ShuffledKDEClassifier(protocol="3nb", epsilon=16.0, n_repetitions=32, random_state=0),
        # The "ip" kernel takes points of norm at most 1 only, which the generic checks' data are not.
        ShuffledKDEClassifier(protocol="rr", epsilon=16.0, n_repetitions=32, random_state=0),
    ]
)
def test_private_estimators_pass_sklearn_checks(estimator, check):
    check(estimator)


def test_clone_keeps_the_public_label_set():
    model = ShuffledKDEClassifier(classes=["a", "b"], protocol="rr", epsilon=3.0, random_state=1)
    assert clone(model).get_params() == model.get_params()


def test_unfitted_use_raises_not_fitted():
    with pytest.raises(NotFittedError, match="not fitted"):
        ShuffledKDEClassifier(classes=[0, 1]).predict(np.zeros((2, 2)))


def test_inferring_the_label_set_is_never_silent():
    X = np.random.default_rng(0).normal(size=(40, 2))
    model = ShuffledKDEClassifier(protocol="exact", n_repetitions=8, random_state=0)
    with pytest.warns(PrivacyLeakWarning, match="reveals"):
        model.fit(X, np.repeat([0, 1], 20))


def test_continuous_target_is_refused():
    X = np.random.default_rng(0).normal(size=(40, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(InvalidParameterError, match="'y'.*continuous"):
            ShuffledKDEClassifier(protocol="exact", n_repetitions=8).fit(X, X[:, 0])


class _Toy(_MinimalEstimator):
    """The fallback base without scikit-learn: parameters from the signature."""

    def __init__(self, *, alpha: float = 1.0, beta: str = "x") -> None:
        self.alpha = alpha
        self.beta = beta

    def predict(self, X):
        return np.zeros(len(X), dtype=int)


def test_fallback_base_reads_and_sets_parameters():
    toy = _Toy(alpha=2.0)
    assert toy.get_params() == {"alpha": 2.0, "beta": "x"}
    assert toy.set_params(beta="y").beta == "y"
    assert toy.score(np.zeros((4, 1)), [0, 0, 1, 1]) == 0.5
    with pytest.raises(InvalidParameterError, match="'gamma'"):
        toy.set_params(gamma=1)


def test_classifier_works_without_sklearn():
    """The base install has no scikit-learn: the fallback base keeps the same conventions."""
    import subprocess
    import sys

    script = (
        "import sys; sys.modules['sklearn'] = None\n"
        "import numpy as np\n"
        "from privsum.apps import ShuffledKDEClassifier\n"
        "from privsum.apps._estimator import sklearn_available, NotFittedError\n"
        "assert not sklearn_available()\n"
        "X = np.vstack([np.full((20, 2), 2.0), np.full((20, 2), -2.0)])\n"
        "y = np.repeat([0, 1], 20)\n"
        "model = ShuffledKDEClassifier(classes=[0, 1], protocol='exact', label_privacy='clear',\n"
        "                              n_repetitions=16, random_state=0)\n"
        "assert model.get_params()['protocol'] == 'exact'\n"
        "assert model.fit(X, y).score(X, y) == 1.0\n"
        "assert issubclass(NotFittedError, AttributeError)\n"
    )
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
