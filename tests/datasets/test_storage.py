"""The int8 direction codes and string blobs used by the bundled data files."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from privsum.datasets._storage import decode_strings, decode_unit_rows, encode_strings, encode_unit_rows


def test_unit_rows_round_trip_keeps_directions_of_embedding_like_vectors():
    rows = np.random.default_rng(7).standard_normal((500, 384))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    codes = encode_unit_rows(rows)
    decoded = decode_unit_rows(codes)
    assert codes.dtype == np.int8 and decoded.dtype == np.float32
    assert np.allclose(np.linalg.norm(decoded, axis=1), 1.0, atol=1e-6)
    assert np.min(np.sum(decoded * rows, axis=1)) > 0.9999


@given(arrays(np.float64, st.integers(1, 40), elements=st.floats(-1e3, 1e3)).filter(lambda row: np.max(np.abs(row)) > 1e-3))
def test_unit_rows_round_trip_error_is_bounded_for_any_row(row):
    # Each coordinate moves by at most half a step (max|x| / 254), so the relative error of the
    # vector is at most sqrt(d) / 254 and the cosine at least sqrt(1 - (sqrt(d) / 254) ** 2).
    decoded = decode_unit_rows(encode_unit_rows(row[None, :]))[0]
    cosine = float(decoded @ row) / float(np.linalg.norm(row))
    relative_error = math.sqrt(row.size) / 254
    assert cosine >= math.sqrt(1 - relative_error**2) - 1e-6


def test_all_zero_row_cannot_be_encoded():
    with pytest.raises(ValueError, match="all-zero"):
        encode_unit_rows(np.zeros((2, 3)))


def test_strings_round_trip_including_empty_and_non_ascii():
    strings = ("a dog", "", "café au lait", "x; y (z)")
    blob = encode_strings(strings)
    assert blob.dtype == np.uint8
    assert decode_strings(blob, len(strings)) == strings
    assert decode_strings(encode_strings(()), 0) == ()


def test_strings_with_the_separator_are_refused_and_counts_are_checked():
    with pytest.raises(ValueError, match="newline"):
        encode_strings(["two\nlines"])
    with pytest.raises(ValueError, match="expected 3"):
        decode_strings(encode_strings(["a", "b"]), 3)
