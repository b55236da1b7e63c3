"""Tests of the released KDE function: queries, equality, serialisation and corrupted-bytes rejection."""

from __future__ import annotations

import hashlib
import json
import struct

import numpy as np
import pytest

from privsum.accounting.guarantee import Neighbouring, PrivacyGuarantee
from privsum.exceptions import InvalidParameterError
from privsum.kde import KDEFunction
from privsum.lsq import L2LSH, FastJLT, RandomFourierFeatures, RandomSigns

DEFAULT_GUARANTEE = PrivacyGuarantee(1.5, 1e-6)


def released(family=None, guarantee=DEFAULT_GUARANTEE) -> KDEFunction:
    family = family or RandomFourierFeatures(dimension=3, n_repetitions=5, bandwidth=0.7, seed=4)
    coefficients = np.random.default_rng(0).normal(size=(family.n_repetitions, family.n_coordinates))
    return KDEFunction._released(family, coefficients, 40, guarantee)


@pytest.mark.parametrize(
    "family",
    [
        RandomFourierFeatures(dimension=3, n_repetitions=5, bandwidth=0.7, seed=4),
        RandomSigns(dimension=3, n_repetitions=4, seed=2),
        L2LSH(dimension=3, n_repetitions=3, n_buckets=8, bucket_width=0.5, seed=1),
    ],
)
@pytest.mark.parametrize("guarantee", [PrivacyGuarantee(1.5, 1e-6, "add-remove"), None])
def test_round_trip(family, guarantee) -> None:
    original = released(family, guarantee)
    restored = KDEFunction.from_bytes(original.to_bytes())
    assert restored == original
    assert restored.guarantee == guarantee
    queries = np.random.default_rng(1).normal(size=(7, 3)) * 0.3
    np.testing.assert_array_equal(restored(queries), original(queries))


def test_query_matches_formula_and_chunking() -> None:
    estimate = released()
    queries = np.random.default_rng(2).normal(size=(9, 3))
    formula = np.einsum("miq,iq->m", estimate.family.g(queries), estimate.coefficients) / (40 * 5)
    np.testing.assert_allclose(estimate(queries), formula, rtol=1e-12)
    np.testing.assert_allclose(estimate(queries, chunk_size=2), formula, rtol=1e-12)
    assert estimate(queries[0]).shape == (1,)


@pytest.mark.parametrize("position", [10, 60, -40, -1])
def test_any_flipped_byte_is_rejected(position: int) -> None:
    data = bytearray(released().to_bytes())
    data[position] ^= 0x01
    with pytest.raises(InvalidParameterError, match="'data'"):
        KDEFunction.from_bytes(bytes(data))


@pytest.mark.parametrize("data", [b"", b"abc", b"\x00" * 40, "text"])
def test_garbage_is_rejected(data) -> None:
    with pytest.raises(InvalidParameterError, match="'data'"):
        KDEFunction.from_bytes(data)


def test_truncated_bytes_are_rejected() -> None:
    with pytest.raises(InvalidParameterError, match="'data'"):
        KDEFunction.from_bytes(released().to_bytes()[:-5])


def forge(header_change: dict) -> bytes:
    """Bytes with a valid checksum but an edited header (what a hostile writer could send)."""
    data = released().to_bytes()
    prefix = struct.Struct("<6sHBI")
    magic, version, kind, length = prefix.unpack_from(data)
    header = json.loads(data[prefix.size : prefix.size + length])
    header.update(header_change)
    encoded = json.dumps(header).encode()
    body = prefix.pack(magic, version, kind, len(encoded)) + encoded + data[prefix.size + length : -32]
    return body + hashlib.sha256(body).digest()


@pytest.mark.parametrize(
    "change",
    [
        {"family": {"class": "os.system", "parameters": {}}},
        {"family": {"class": "privsum.lsq.rff.apply_projection", "parameters": {}}},
        {"family": {"class": "LSQFamily", "parameters": {}}},
        {"family": {"class": "RandomFourierFeatures", "parameters": {"dimension": 3}}},
        {"family": {"class": "RandomFourierFeatures", "parameters": {"dimension": 3, "n_repetitions": 5, "evil": 1}}},
        {"family": ["RandomFourierFeatures"]},
        {"n_users": 0},
        {"n_users": True},
        {"n_users": 40.0},
        {"guarantee": [1.0]},
        {"guarantee": {"epsilon": -1.0, "delta": 0.0, "neighbouring": "replace-one"}},
        {"guarantee": {"epsilon": 1.0, "delta": 0.0, "neighbouring": "nobody"}},
        {"guarantee": {"epsilon": "1.0", "delta": 0.0, "neighbouring": "replace-one"}},
        {"shape": [5, 2]},
        {"shape": [5, -1]},
        {"shape": [True, 1]},
        {"shape": "5,1"},
    ],
)
def test_well_checksummed_but_invalid_headers_are_rejected(change: dict) -> None:
    with pytest.raises(InvalidParameterError, match="'data'"):
        KDEFunction.from_bytes(forge(change))


def test_family_with_non_scalar_parameters_cannot_be_serialised() -> None:
    projection = FastJLT(input_dimension=3, output_dimension=2, seed=0)
    family = RandomFourierFeatures(dimension=3, n_repetitions=2, seed=0, projection=projection)
    with pytest.raises(InvalidParameterError, match="'family'"):
        KDEFunction(family, np.zeros((2, 1)), n_users=3).to_bytes()


def test_validation_names_the_parameter() -> None:
    family = RandomFourierFeatures(dimension=3, n_repetitions=2, seed=0)
    with pytest.raises(InvalidParameterError, match="'coefficients'"):
        KDEFunction(family, np.zeros((3, 1)), n_users=3)
    with pytest.raises(InvalidParameterError, match="'coefficients'"):
        KDEFunction(family, np.array([[np.nan], [0.0]]), n_users=3)
    with pytest.raises(InvalidParameterError, match="'n_users'"):
        KDEFunction(family, np.zeros((2, 1)), n_users=0)
    with pytest.raises(InvalidParameterError, match="'family'"):
        KDEFunction("rff", np.zeros((2, 1)), n_users=1)
    with pytest.raises(InvalidParameterError, match="'guarantee'"):
        KDEFunction(family, np.zeros((2, 1)), n_users=1, guarantee=(1.0, 0.0))
    with pytest.raises(InvalidParameterError, match="'queries'"):
        KDEFunction(family, np.zeros((2, 1)), n_users=1)(np.zeros((2, 4)))


def test_equality_and_neighbouring() -> None:
    first = released()
    assert first == released() and first.neighbouring is Neighbouring.REPLACE_ONE
    other = KDEFunction._released(first.family, first.coefficients + 1, 40, first.guarantee)
    assert first != other


@pytest.mark.parametrize("coefficients", [[[0.0], [0.0, 1.0]], [["a"], ["b"]], np.full((2, 1), np.nan), np.zeros((2, 1)) * 1j])
def test_malformed_coefficients_are_refused_naming_them(coefficients) -> None:
    family = RandomFourierFeatures(dimension=3, n_repetitions=2, seed=0)
    with pytest.raises(InvalidParameterError, match="'coefficients'"):
        KDEFunction(family, coefficients, n_users=3)


def test_gaussian_queries_equal_the_radian_formula_within_the_feature_tolerance() -> None:
    """Random Fourier features are evaluated in turns (`privsum.lsq.rff.fourier_features_of_turns`): each
    density is within ``sum_i |F_i| / (n I)`` times the features' stated tolerance (the float64 rounding
    of the angle, plus ``FEATURE_ERROR``) and the rounding of the sums, of the estimate with
    ``sqrt(2) cos(w^T y + b)`` by ``np.cos``."""
    from privsum.lsq.rff import FEATURE_ERROR

    family = RandomFourierFeatures(dimension=64, n_repetitions=200, bandwidth=1.3, seed=8)
    coefficients = np.random.default_rng(3).normal(0.0, 50.0, size=(200, 1))
    estimate = KDEFunction._released(family, coefficients, 40, DEFAULT_GUARANTEE)
    queries = np.random.default_rng(4).normal(size=(500, 64)) * 0.5
    radians = np.sqrt(2.0) * np.cos(queries @ family.frequencies.T + family.phases)
    formula = radians @ coefficients[:, 0] / (40 * 200)
    magnitude = np.abs(queries) @ np.abs(family.frequencies).T + family.phases
    feature_tolerance = np.sqrt(2.0) * 2 * (64 + 3) * 2.0**-53 * magnitude + FEATURE_ERROR + 2.0**-51
    summation = 2 * (200 + 1) * 2.0**-53 * np.sqrt(2.0)  # the two sums over repetitions, in any order
    tolerance = (feature_tolerance + summation) @ np.abs(coefficients[:, 0]) / (40 * 200)
    assert np.all(np.abs(estimate(queries) - formula) <= tolerance)
