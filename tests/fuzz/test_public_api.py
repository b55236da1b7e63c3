"""Hypothesis fuzzing of privsum's public entry points: only the library's documented errors escape.

Every public class named in ``privsum.__all__`` and the subpackages' ``__all__`` (found by
walking the package, `tests.fuzz.functions.public_names`; the public functions are fuzzed in
`tests.fuzz.test_functions`) is reached through one of three doors: its constructor (each field
of a valid instance replaced, a few at a time, by an arbitrary value), its ``from_privacy``
classmethod (likewise from valid arguments), and its entry points (``run``, ``randomize``,
``analyze``, ``estimate``, ``fit``, ``predict``, ... called with arbitrary arguments). Arbitrary
values include NaN, infinities, negative, huge (``1e308``, ``10**400``) and tiny (``1e-308``)
numbers, wrong shapes, every integer, unsigned, float, bool, complex and object dtype (zero-one
arrays of every numeric dtype among them), empty arrays, strings and None. Any exception other
than `ALLOWED` fails the test (no bare IndexError, ZeroDivisionError, OverflowError, numpy errors,
RecursionError), and every call must finish within `CALL_LIMIT_S`.
"""

from __future__ import annotations

import importlib.util
import inspect
import math
import signal
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from privsum.exceptions import BudgetExceededError, IncompatibleSketchError, InvalidParameterError, NotFittedError
from tests.fuzz.functions import public_names
from tests.fuzz.instances import CONSTRUCTORS, ENTRY_POINTS, FROM_PRIVACY_ARGUMENTS, valid_instances

#: The documented errors (privsum.exceptions). InvalidParameterError is what `_validation.invalid` returns.
ALLOWED = (InvalidParameterError, IncompatibleSketchError, BudgetExceededError, NotFittedError)
#: Entry points documented to refuse every call with TypeError (a released sketch is final).
REFUSING = {"ReleasedRACE.update", "ReleasedRACE.release"}
CALL_LIMIT_S = 20  # a call running longer counts as a hang

FAST = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
SLOW = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)

# --------------------------------------------------------------------------- arbitrary values
_numbers = st.one_of(
    st.integers(min_value=-(10**4), max_value=10**4),  # sizes large enough to matter, small enough to allocate
    st.sampled_from([0, 1, -1, 2, 3, 2**31, 2**63, 2**70, -(2**70), 10**400, -(10**400)]),  # too large for any array
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0, 1e-300, 1e300, 1e308, -1e308, 1e-308, 5e-324, 0.5, 1.0, -0.5]),
    st.booleans(),
    st.complex_numbers(max_magnitude=10),
)
_arrays = hnp.arrays(
    dtype=st.one_of(
        hnp.floating_dtypes(),
        hnp.integer_dtypes(),
        hnp.unsigned_integer_dtypes(),
        hnp.boolean_dtypes(),
        hnp.complex_number_dtypes(),
        st.just(np.dtype("U3")),
        st.just(np.dtype(object)),
    ),
    shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
)
_zero_one_arrays = hnp.arrays(
    dtype=st.one_of(hnp.integer_dtypes(), hnp.unsigned_integer_dtypes(), hnp.floating_dtypes(), hnp.boolean_dtypes()),
    shape=hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=4),
    elements=st.sampled_from([0, 1]),
)
ARBITRARY = st.one_of(
    st.none(),
    _numbers,
    _zero_one_arrays,
    st.text(max_size=5),
    st.binary(max_size=16),
    _arrays,
    st.lists(_numbers, max_size=4),
    st.lists(st.lists(_numbers, min_size=1, max_size=3), max_size=3),
    st.tuples(_numbers, _numbers),
    st.dictionaries(st.text(max_size=3), _numbers, max_size=2),
)


# --------------------------------------------------------------------------- the checker
class _HangError(Exception):
    pass


def _alarm(*_: Any) -> None:
    raise _HangError


def call_only_documented_errors(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``function``; fail on an undocumented exception or a hang; return its result or None."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CALL_LIMIT_S)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return function(*args, **kwargs)
    except ALLOWED:
        return None
    except _HangError:
        pytest.fail(f"{getattr(function, '__qualname__', function)} did not finish in {CALL_LIMIT_S} s with {args!r} {kwargs!r}")
    except Exception as error:
        if isinstance(error, TypeError) and getattr(function, "__qualname__", "") in REFUSING:
            return None
        pytest.fail(
            f"{getattr(function, '__qualname__', function)}(*{args!r}, **{kwargs!r}) raised "
            f"{type(error).__module__}.{type(error).__name__}: {error}"
        )
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# --------------------------------------------------------------------------- what is public
# Every public name: ``privsum.__all__`` and each subpackage's ``__all__``, found by walking the
# package (`tests.fuzz.functions.public_names`); the public functions are fuzzed in test_functions.


INSTANCES = valid_instances()
CONSTRUCTED = sorted(CONSTRUCTORS)
CALIBRATED = sorted(FROM_PRIVACY_ARGUMENTS)
ENTRIES = sorted(
    (name, method)
    for name, instance in INSTANCES.items()
    for method in ENTRY_POINTS
    if callable(getattr(instance, method, None)) and not inspect.isclass(getattr(instance, method))
)


#: Public classes that are results handed to the user (or a pytest base), not entry points.
RESULT_RECORDS = {
    "PLDPair",
    "GaussianKDEParameters",
    "SketchShape",
    "AuditResult",
    "ProtocolConformance",
    "LedgerEntry",
    "ConfidenceInterval",
    "ClippedSumResult",
    "LabelledEmbeddings",
    "Vocabulary",
    "HistogramCandidate",
    "HeavyHitterRelease",
    "MeanAndVariance",
    "DecodedBatch",
}


def test_every_public_class_with_a_door_is_fuzzed():
    """Each public class is instantiated here, or is abstract, an enum, an exception or a result record."""
    covered = {type(instance) for instance in INSTANCES.values()}
    skipped = []
    for name, value in public_names().items():
        if not inspect.isclass(value) or inspect.isabstract(value) or issubclass(value, (BaseException, Warning)):
            continue
        if value.__name__ in RESULT_RECORDS or issubclass(value, (str, int)) or value in covered:
            continue
        skipped.append(name)
    assert not skipped, f"public classes without a fuzz instance: {skipped}"
    callables = [v for v in public_names().values() if callable(v) and hasattr(v, "from_privacy")]
    assert {v.__name__ for v in callables} <= {name.split(".")[-1] for name in CALIBRATED} | {"ShuffleProtocol"}


def _perturbed(cls: Any, valid: dict[str, Any], data: st.DataObject) -> dict[str, Any]:
    """``valid`` with one to three of ``cls``'s parameters replaced by arbitrary values."""
    parameters = [
        name
        for name, p in inspect.signature(cls).parameters.items()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and name != "self"
    ]
    kwargs = dict(valid)
    for name in data.draw(st.lists(st.sampled_from(parameters), min_size=1, max_size=3, unique=True), label="parameters"):
        kwargs[name] = data.draw(ARBITRARY, label=name)
    return kwargs


#: Constructors whose default randomness is the CSPRNG of privsum[secure].
SECURE_BY_DEFAULT = ("Client", "Shuffler")


@pytest.mark.parametrize("name", CONSTRUCTED)
@FAST
@given(data=st.data())
def test_constructors_raise_only_documented_errors(name, data):
    cls, valid = CONSTRUCTORS[name]
    if name in SECURE_BY_DEFAULT and importlib.util.find_spec("randomgen") is None:
        pytest.skip("its default CSPRNG needs the optional extra privsum[secure]")
    call_only_documented_errors(cls, **_perturbed(cls, valid, data))


@pytest.mark.parametrize("name", CALIBRATED)
@FAST
@given(data=st.data())
def test_from_privacy_raises_only_documented_errors(name, data):
    cls, valid = FROM_PRIVACY_ARGUMENTS[name]
    call_only_documented_errors(cls.from_privacy, **_perturbed(cls.from_privacy, valid, data))


@pytest.mark.parametrize(("name", "method"), ENTRIES)
@FAST
@given(data=st.data())
def test_entry_points_raise_only_documented_errors(name, method, data):
    bound = getattr(INSTANCES[name], method)
    parameters = [p for p in inspect.signature(bound).parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    args = [data.draw(ARBITRARY, label=p.name) for p in positional if p.default is p.empty or data.draw(st.booleans())]
    kwargs = {}
    for p in parameters:
        if p.kind == p.KEYWORD_ONLY and (p.default is p.empty or data.draw(st.booleans(), label=f"set {p.name}")):
            kwargs[p.name] = data.draw(st.one_of(ARBITRARY, st.just(0)) if p.name == "rng" else ARBITRARY, label=p.name)
    call_only_documented_errors(bound, *args, **kwargs)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "method"), ENTRIES)
@SLOW
@given(data=st.data())
def test_entry_points_raise_only_documented_errors_longer(name, method, data):
    test_entry_points_raise_only_documented_errors.hypothesis.inner_test(name, method, data)


@pytest.mark.slow
@pytest.mark.parametrize("name", CONSTRUCTED)
@SLOW
@given(data=st.data())
def test_constructors_raise_only_documented_errors_longer(name, data):
    test_constructors_raise_only_documented_errors.hypothesis.inner_test(name, data)


@pytest.mark.slow
@pytest.mark.parametrize("name", CALIBRATED)
@SLOW
@given(data=st.data())
def test_from_privacy_raises_only_documented_errors_longer(name, data):
    test_from_privacy_raises_only_documented_errors.hypothesis.inner_test(name, data)
