"""Fuzzing with an oracle: invalid input must raise the library's error, valid input must not.

`test_public_api` checks that nothing but documented errors escapes; this module also knows the
right answer, so it catches **silent acceptance** (invalid input quietly cast, clipped or
dropped) and **valid input that crashes**:

- a dtype grid: the same valid users' inputs stored in every signed and unsigned integer width,
  float16/32/64 and bool (wherever the values are exactly representable) must give the same
  output as the canonical int64/float64 input with the same seed: finite and of the documented
  shape; the same values as an ``object`` array are refused;
- huge and tiny magnitudes (``1e308``, ``1e-308``, ``10**400`` as a Python int, ``±inf``, ``NaN``)
  in users' inputs: refused unless inside the protocol's input domain;
- every numeric constructor and calibration parameter replaced by ``NaN``, ``±inf`` or
  ``10**400``: refused (none of them is a valid value of any parameter), and an integer
  parameter given ``2.5``: refused, never rounded.
"""

from __future__ import annotations

import inspect
import math
import warnings
from typing import Any

import numpy as np
import pytest

from privsum.exceptions import InvalidParameterError
from tests.fuzz.functions import SEEDS
from tests.fuzz.instances import CONSTRUCTORS, FROM_PRIVACY_ARGUMENTS, N, valid_instances

INSTANCES = valid_instances()

ALL_DTYPES = [
    *(f"int{bits}" for bits in (8, 16, 32, 64)),
    *(f"uint{bits}" for bits in (8, 16, 32, 64)),
    "float16",
    "float32",
    "float64",
    "bool",
]

_BITS = np.tile(np.arange(N) % 2, (3, 1)).T  # (N, 3) zeros and ones
_UNIT = (np.arange(N) % 5) / 4.0  # reals in [0, 1]: 0, 0.25, ..., 1 (exact in float16)
_SMALL_INTEGERS = np.arange(N) % 3  # in every clipped or integer domain used below
_VECTORS = np.tile([[0.5, -0.5]], (N, 1)) * (np.arange(N) % 2)[:, None]  # norm <= 1, exact in float16

#: ``instance name: (valid users' input, output shape or None when the output is a released object)``.
USER_INPUTS: dict[str, np.ndarray] = {
    **{
        name: _BITS
        for name in (
            "RRBitSum",
            "LocalRRBitSum",
            "ThreeNBBitSum",
            "PureBitSum",
            "CentralLaplaceBitSum",
            "CentralGaussianBitSum",
            "ExactBitSum",
            "RRBitSum.from_privacy",
            "ThreeNBBitSum.from_privacy",
            "PureBitSum.from_privacy",
            "PoissonNoiseBitSum",
        )
    },
    "BlanketRealSum": _UNIT,
    "BlanketRealSum.from_privacy": _UNIT,
    "CorrelatedNoiseSum": _SMALL_INTEGERS,
    "LabelRound": _SMALL_INTEGERS,  # class indices of 3 classes
    "CorrelatedNoiseSum.communication": _SMALL_INTEGERS,
    "MultiMessageSum": _SMALL_INTEGERS,
    "ClippedSum": _SMALL_INTEGERS,
    "ShuffledVectorSum": np.abs(_VECTORS),  # coordinates in [0, 1]
    "ClippedVectorSum": _VECTORS,
    "CentralGaussianVectorSum": _VECTORS,
    "ExactVectorSum": _VECTORS,
    "SkellamVectorSum": _VECTORS,
    "SkellamVectorSum.from_privacy": _VECTORS,
    "SparseVectorAggregation": np.tile([[1, 0, 0, 1]], (N, 1)) * (np.arange(N) % 2)[:, None],
}
USER_INPUTS = {name: value for name, value in USER_INPUTS.items() if name in INSTANCES}


def _exactly(values: np.ndarray, dtype: str) -> np.ndarray | None:
    """``values`` as ``dtype`` when every value is represented exactly, else None."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cast = values.astype(dtype)
        if dtype == "bool" and not np.all((values == 0) | (values == 1)):
            return None
        if not np.array_equal(cast.astype(values.dtype), values):
            return None
    return cast


def _run(instance: Any, values: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return instance.run(values, rng=0)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("name", sorted(USER_INPUTS))
def test_every_exact_dtype_gives_the_canonical_run(name, dtype):
    """Valid input in any numeric dtype must not raise, and is read exactly (same output as int64/float64)."""
    instance, values = INSTANCES[name], USER_INPUTS[name]
    canonical = values.astype(np.int64) if np.all(values == np.round(values)) else values.astype(np.float64)
    reference = np.asarray(_run(instance, canonical))
    cast = _exactly(values, dtype)
    if cast is None:
        pytest.skip(f"the values are not exact in {dtype}")
    output = np.asarray(_run(instance, cast))
    assert output.shape == reference.shape
    assert np.all(np.isfinite(output.astype(float)))
    np.testing.assert_array_equal(output, reference)


@pytest.mark.parametrize("name", sorted(USER_INPUTS))
def test_object_arrays_are_refused(name):
    values = USER_INPUTS[name].astype(object)
    with pytest.raises(InvalidParameterError):
        _run(INSTANCES[name], values)


MAGNITUDES = [1e308, -1e308, 1e-308, math.inf, -math.inf, math.nan, 10**400]


@pytest.mark.parametrize("magnitude", MAGNITUDES, ids=repr)
@pytest.mark.parametrize("name", sorted(USER_INPUTS))
def test_extreme_user_values_are_refused_unless_in_the_domain(name, magnitude):
    instance, values = INSTANCES[name], USER_INPUTS[name]
    changed = values.astype(object if isinstance(magnitude, int) else float).copy()
    changed.flat[1] = magnitude
    real_valued = name.startswith("BlanketRealSum") or ("Vector" in name and name != "SparseVectorAggregation")
    in_domain = real_valued and magnitude == 1e-308  # a tiny real is inside [0, 1] and inside the unit ball
    if in_domain:
        assert np.all(np.isfinite(np.asarray(_run(instance, changed), dtype=float)))
    else:
        with pytest.raises(InvalidParameterError):
            _run(instance, changed)


# --------------------------------------------------------------------------- parameters
NEVER_VALID = [math.nan, math.inf, -math.inf, 10**400]


def _numeric_parameters(valid: dict[str, Any]) -> list[str]:
    return [name for name, value in valid.items() if isinstance(value, (int, float)) and not isinstance(value, bool)]


def _parameter_cases(table: dict[str, tuple[type, dict[str, Any]]]) -> list[tuple[str, str]]:
    return [(name, parameter) for name, (_, valid) in sorted(table.items()) for parameter in _numeric_parameters(valid)]


def _refuses(call: Any, **kwargs: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(InvalidParameterError):
            call(**kwargs)


#: scikit-learn estimators validate their parameters in ``fit`` (the estimator convention), not in ``__init__``.
ESTIMATORS = {"RACEClassifier", "RACELinearRegression", "ShuffledKDEClassifier"}
_POINTS = np.random.default_rng(0).normal(size=(N, 2)) / 3
_TARGETS = {"RACEClassifier": np.arange(N) % 2, "RACELinearRegression": _POINTS[:, 0], "ShuffledKDEClassifier": np.arange(N) % 2}


def _fitted(cls: type, **kwargs: Any) -> Any:
    estimator = cls(**kwargs)
    name = cls.__name__
    return estimator.fit(_POINTS if name != "ShuffledKDEClassifier" else np.clip(_POINTS, -1, 1), _TARGETS[name])


@pytest.mark.parametrize("value", [*NEVER_VALID, 2.5], ids=repr)
@pytest.mark.parametrize(
    ("name", "parameter"), [(name, parameter) for name, parameter in _parameter_cases(CONSTRUCTORS) if name in ESTIMATORS]
)
def test_estimator_parameters_are_refused_at_fit(name, parameter, value):
    cls, valid = CONSTRUCTORS[name]
    if value == 2.5 and not isinstance(valid[parameter], int):
        pytest.skip("2.5 is a valid real value")
    if parameter == "random_state" and value == 10**400:
        pytest.skip("numpy seeds accept integers of any size (a SeedSequence's entropy)")
    _refuses(_fitted, cls=cls, **{**valid, parameter: value})


@pytest.mark.parametrize("value", NEVER_VALID, ids=repr)
@pytest.mark.parametrize(
    ("name", "parameter"), [(name, parameter) for name, parameter in _parameter_cases(CONSTRUCTORS) if name not in ESTIMATORS]
)
def test_constructor_parameters_refuse_non_finite_and_huge_values(name, parameter, value):
    cls, valid = CONSTRUCTORS[name]
    if value == math.inf and parameter in _INFINITY_ALLOWED.get(name, ()):
        pytest.skip("inf is a documented value here")
    if parameter in SEEDS and value == 10**400:
        pytest.skip("numpy seeds accept integers of any size (a SeedSequence's entropy)")
    _refuses(cls, **{**valid, parameter: value})


@pytest.mark.parametrize("value", NEVER_VALID, ids=repr)
@pytest.mark.parametrize(("name", "parameter"), _parameter_cases(FROM_PRIVACY_ARGUMENTS))
def test_calibration_parameters_refuse_non_finite_and_huge_values(name, parameter, value):
    cls, valid = FROM_PRIVACY_ARGUMENTS[name]
    if value == math.inf and parameter in _INFINITY_ALLOWED.get(f"{name}.from_privacy", ()):
        pytest.skip("inf is a documented value here")
    _refuses(cls.from_privacy, **{**valid, parameter: value})


def _integer_parameters(table: dict[str, tuple[type, dict[str, Any]]]) -> list[tuple[str, str]]:
    return [
        (name, parameter)
        for name, (_, valid) in sorted(table.items())
        for parameter, value in valid.items()
        if isinstance(value, int) and not isinstance(value, bool)
    ]


@pytest.mark.parametrize(
    ("name", "parameter"), [(name, parameter) for name, parameter in _integer_parameters(CONSTRUCTORS) if name not in ESTIMATORS]
)
def test_integer_constructor_parameters_are_never_rounded(name, parameter):
    cls, valid = CONSTRUCTORS[name]
    _refuses(cls, **{**valid, parameter: valid[parameter] + 0.5})


@pytest.mark.parametrize(("name", "parameter"), _integer_parameters(FROM_PRIVACY_ARGUMENTS))
def test_integer_calibration_parameters_are_never_rounded(name, parameter):
    cls, valid = FROM_PRIVACY_ARGUMENTS[name]
    _refuses(cls.from_privacy, **{**valid, parameter: valid[parameter] + 0.5})


#: Parameters documented to accept ``inf`` ("no privacy" or "no bound").
_INFINITY_ALLOWED: dict[str, tuple[str, ...]] = {
    "PrivacyGuarantee": ("epsilon",),
    "ExactVectorSum.from_privacy": ("epsilon",),
    "LabelRound": ("label_epsilon",),  # labels in the clear (the classifier's label_privacy="clear")
}


def test_the_oracle_covers_every_protocol_with_users_inputs():
    """Every fuzzed protocol instance that runs on users' inputs has a valid input in the grid."""
    runnable = {
        name
        for name, instance in INSTANCES.items()
        if callable(getattr(instance, "run", None))
        and "n_users" in inspect.signature(type(instance)).parameters
        and not name.endswith(".from_privacy")
    }
    missing = runnable - set(USER_INPUTS) - _NOT_GRIDDED
    assert not missing, f"protocols without a valid input in the dtype grid: {sorted(missing)}"


#: Protocols whose users' inputs are not one array of numbers (KDE: points and a family; the count
#: sketch: item identifiers, integers or strings, so object arrays are valid and floats are not items).
_NOT_GRIDDED = {"ShuffledKDE", "ShuffledCountSketch"}
