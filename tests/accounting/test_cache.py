"""The calibration cache: identical results for identical parameters, distinct keys otherwise."""


import numpy as np
import pytest

from privsum.accounting import cache
from privsum.accounting.cache import cached_calibration, calibration_cache_info, clear_calibration_cache
from privsum.apps import ShuffledKDEClassifier
from privsum.bitsum import RRBitSum, ThreeNBBitSum
from privsum.exceptions import InvalidParameterError
from privsum.kde import ShuffledKDE
from privsum.kde import _accounting as accounting_module
from privsum.lsq import RandomFourierFeatures

BASE = {
    "family": RandomFourierFeatures(dimension=3, n_repetitions=8, seed=0),
    "protocol": ThreeNBBitSum,
    "epsilon": 2.0,
    "delta": 1e-6,
    "n_users": 400,
}


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_calibration_cache()
    yield
    clear_calibration_cache()


def test_repeated_calibration_returns_the_identical_protocol():
    first = ShuffledKDE.from_privacy(**BASE)
    misses = calibration_cache_info().misses
    second = ShuffledKDE.from_privacy(**BASE)
    assert second is first
    assert calibration_cache_info().misses == misses and calibration_cache_info().hits >= 1


@pytest.mark.parametrize(
    "change",
    [
        {"epsilon": 2.5},
        {"delta": 1e-7},
        {"n_users": 401},
        {"family": RandomFourierFeatures(dimension=3, n_repetitions=8, seed=1)},
        {"family": RandomFourierFeatures(dimension=3, n_repetitions=9, seed=0)},
        {"protocol": RRBitSum},
        {"accounting": "seed"},
        {"calibration": "analytic"},
        {"chunk_size": 17},
        {"precision": "float32"},
    ],
)
def test_every_parameter_is_part_of_the_key(change):
    first = ShuffledKDE.from_privacy(**BASE)
    other = ShuffledKDE.from_privacy(**{**BASE, **change})
    assert other is not first
    assert other == ShuffledKDE.from_privacy(**{**BASE, **change})
    for name, value in change.items():
        attribute = {"protocol": None, "epsilon": None, "delta": "delta", "calibration": None}.get(name, name)
        if attribute == "n_users":
            assert other.n_users == value
        elif attribute is not None and hasattr(other, attribute):
            assert getattr(other, attribute) == value


def test_cached_result_equals_a_fresh_computation():
    cached = ShuffledKDE.from_privacy(**BASE)
    clear_calibration_cache()
    fresh = ShuffledKDE.from_privacy(**BASE)
    assert fresh is not cached and fresh == cached and fresh.guarantee == cached.guarantee
    direct = accounting_module.guarantee_of_event(cached.bitsum.event, *cached._accounting_parameters())
    assert cached.guarantee == direct
    assert cached.guarantee_for_participants(300) == accounting_module.guarantee_of_event(
        cached.bitsum.event_for_participants(300), *cached._accounting_parameters()
    )


def test_types_are_part_of_the_key_and_unhashable_arguments_bypass_the_cache():
    calls = []

    def record(value, extra=None):
        calls.append(value)
        return [value]

    results = [cached_calibration(record, v) for v in (1, 1.0, True, 1, 1.0)]
    assert len(calls) == 3 and results[3] is results[0] and results[4] is results[1]
    cached_calibration(record, (("option", True),))
    cached_calibration(record, (("option", 1),))
    assert len(calls) == 5
    cached_calibration(record, 1, extra=[1])
    cached_calibration(record, 1, extra=[1])
    assert len(calls) == 7


def test_errors_are_not_cached():
    with pytest.raises(InvalidParameterError):
        ShuffledKDE.from_privacy(**{**BASE, "precision": "half"})
    assert calibration_cache_info().size == 0 or all(not isinstance(v, BaseException) for v in cache._entries.values())
    with pytest.raises(InvalidParameterError):
        ShuffledKDE.from_privacy(**{**BASE, "precision": "half"})


def test_cache_is_bounded_least_recently_used_first(monkeypatch):
    monkeypatch.setattr(cache, "MAX_ENTRIES", 5)

    def square(value):
        return value * value

    for value in range(5):
        cached_calibration(square, value)
    cached_calibration(square, 0)  # refresh the oldest
    cached_calibration(square, 99)  # evicts 1, the least recently used
    assert calibration_cache_info().size == 5
    keys = [key[1][0][1] for key in cache._entries]
    assert keys == [2, 3, 4, 0, 99]


def test_classifier_reuses_calibration_across_fits():
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(center, 0.3, size=(200, 2)) for center in (-1.0, 1.0)])
    y = np.repeat(["a", "b"], 200)
    options = {"classes": ["a", "b"], "protocol": "pure", "epsilon": 3.0, "label_privacy": "clear", "n_repetitions": 16}
    ShuffledKDEClassifier(**options, random_state=0).fit(X, y)
    misses = calibration_cache_info().misses
    ShuffledKDEClassifier(**options, random_state=0).fit(X, y)
    assert calibration_cache_info().misses == misses  # every calibration and guarantee came from the cache
    ShuffledKDEClassifier(**options, random_state=1).fit(X, y)
    # another random_state draws another family: only the KDE-level entry is new; the bit sums'
    # calibrations and the per-class guarantees (which do not depend on the draws) are reused
    assert calibration_cache_info().misses == misses + 1
