"""Release files: bounded work before any refusal, and integrity (checksum) versus authenticity (signature).

A crafted file (valid checksum, hostile header) must be refused after at most 16 MiB of
allocation and without drawing any public randomness: the work is bounded by the file's own
size, not by the sizes its header declares. With a key, only bytes signed with that key load.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from privsum._serialisation import pack
from privsum.accounting import PrivacyGuarantee
from privsum.exceptions import InvalidParameterError
from privsum.kde import KDEFunction
from privsum.kde import function as kde_function_module
from privsum.lsq import L2LSH, RandomFourierFeatures, SignedRandomProjection
from privsum.sketches import RACE, ReleasedRACE
from privsum.sketches import race as race_module

MAX_ALLOCATION = 16 * 2**20
KEY = b"0123456789abcdef-secret"


def kde_function() -> KDEFunction:
    family = RandomFourierFeatures(dimension=3, n_repetitions=5, bandwidth=0.7, seed=4)
    return KDEFunction._released(family, np.ones((5, 1)), 40, PrivacyGuarantee(1.0, 1e-6))


def raw_race() -> RACE:
    family = L2LSH(dimension=2, n_repetitions=4, bucket_width=1.0, n_buckets=8, seed=3)
    return RACE(family).update(np.random.default_rng(1).normal(size=(30, 2)))


def released_race() -> ReleasedRACE:
    return raw_race().release(1.0, noise_source="numpy", rng=2)


MAKERS: dict[str, tuple[Callable[[], Any], Callable[..., Any]]] = {
    "KDEFunction": (kde_function, KDEFunction.from_bytes),
    "RACE": (raw_race, RACE.from_bytes),
    "ReleasedRACE": (released_race, ReleasedRACE.from_bytes),
}


# --------------------------------------------------------------------------- signatures
@pytest.mark.parametrize("name", sorted(MAKERS))
def test_signed_bytes_round_trip_with_the_key(name):
    make, load = MAKERS[name]
    released = make()
    for loaded in (load(released.to_bytes(key=KEY), key=KEY), load(released.to_bytes(key=KEY))):  # no key: corruption only
        assert type(loaded) is type(released) and loaded.family == released.family
        assert np.array_equal(getattr(loaded, "counts", None), getattr(released, "counts", None))
        assert np.array_equal(getattr(loaded, "coefficients", None), getattr(released, "coefficients", None))


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_a_key_refuses_unsigned_and_mis_signed_bytes(name):
    make, load = MAKERS[name]
    released = make()
    with pytest.raises(InvalidParameterError, match="'data' parameter .* signed with the given key. Got 'unsigned bytes'"):
        load(released.to_bytes(), key=KEY)
    with pytest.raises(InvalidParameterError, match="signature that does not match"):
        load(released.to_bytes(key=b"another secret of 16 bytes"), key=KEY)


@pytest.mark.parametrize("name", sorted(MAKERS))
@pytest.mark.parametrize("key", ["a str secret of many chars", b"short", 12345, bytearray(3)])
def test_keys_must_be_bytes_of_at_least_128_bits(name, key):
    make, load = MAKERS[name]
    with pytest.raises(InvalidParameterError, match="'key' parameter of .*to_bytes"):
        make().to_bytes(key=key)
    with pytest.raises(InvalidParameterError, match="'key' parameter of .*from_bytes"):
        load(make().to_bytes(), key=key)


def _resigned_with_checksum(envelope, kind: int, header: dict[str, Any], payload: np.ndarray, dtype: str) -> bytes:
    header = {key: value for key, value in header.items() if key != "shape"}
    return pack(envelope, kind, header, payload, dtype)


def test_an_edited_header_with_a_recomputed_checksum_is_caught_only_by_the_signature():
    """The checksum detects corruption, not edits: an edited epsilon loads without a key, never with one."""
    released = kde_function()
    edited = kde_function_module._ENVELOPE, kde_function_module._KIND
    header = {
        "family": kde_function_module._family_spec(released.family),
        "n_users": released.n_users,
        "guarantee": {"epsilon": 0.01, "delta": 1e-6, "neighbouring": "replace-one"},
    }
    forged = pack(*edited, header, released.coefficients, "<f8")
    assert KDEFunction.from_bytes(forged).guarantee.epsilon == 0.01  # integrity only: documented
    with pytest.raises(InvalidParameterError, match="unsigned bytes"):
        KDEFunction.from_bytes(forged, key=KEY)
    signed = bytearray(released.to_bytes(key=KEY))
    signed[signed.index(b'"epsilon": 1.0') + 11 : signed.index(b'"epsilon": 1.0') + 14] = b"0.1"  # same length edit
    with pytest.raises(InvalidParameterError, match="checksum"):
        KDEFunction.from_bytes(bytes(signed), key=KEY)


# --------------------------------------------------------------------------- bounded work before refusal
def _lsh_spec(**overrides: Any) -> dict[str, Any]:
    spec = {"family": "L2LSH", "dimension": 2, "n_repetitions": 4, "seed": 3, "projection": None}
    spec.update({"bucket_width": 1.0, "n_buckets": 8})
    spec.update(overrides)
    return spec


HOSTILE_LSH_SPECS = {
    "huge n_repetitions": _lsh_spec(n_repetitions=2**26),
    "huge dimension": _lsh_spec(dimension=2**26, n_repetitions=4),
    "huge n_bits": {
        "family": "SignedRandomProjection",
        "dimension": 2**10,
        "n_repetitions": 4,
        "n_bits": 2**20,
        "seed": 0,
        "projection": None,
    },
    "huge projection": _lsh_spec(dimension=2**25, projection={"output_dimension": 2**24, "seed": 0}),
    "overflowing sizes": _lsh_spec(dimension=2**70),
    "bool size": _lsh_spec(dimension=True),
    "float size": _lsh_spec(dimension=2.0),
}


def _crafted_race(spec: dict[str, Any], kind: int, rows: int = 4) -> bytes:
    header = {"family": spec, "fingerprint": "0" * 32, "n_updates": 0}
    if kind == race_module._KIND_RELEASED:
        header = {"family": spec, "fingerprint": "0" * 32, "epsilon": 1.0, "neighbouring": "replace-one", "noise_scale": 1.0}
    return pack(race_module._ENVELOPE, kind, header, np.zeros((rows, 8), dtype=np.int64), "<i8")


def _crafted_kde(spec: dict[str, Any], rows: int = 4) -> bytes:
    header = {"family": spec, "n_users": 10, "guarantee": None}
    return pack(kde_function_module._ENVELOPE, kde_function_module._KIND, header, np.zeros((rows, 1)), "<f8")


def _refused_cheaply(load: Callable[[bytes], Any], data: bytes, monkeypatch: pytest.MonkeyPatch) -> str:
    """Load ``data``: it must be refused, drawing no public randomness and allocating at most 16 MiB."""
    draws = []
    real = np.random.default_rng
    monkeypatch.setattr(np.random, "default_rng", lambda *a, **k: draws.append(a) or real(*a, **k))
    tracemalloc.start()
    try:
        with pytest.raises(InvalidParameterError, match="'data' parameter") as caught:
            load(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= MAX_ALLOCATION, f"{peak / 2**20:.1f} MiB allocated before the refusal"
    assert not draws, "public randomness was drawn before the header was checked"
    return str(caught.value)


@pytest.mark.parametrize("case", sorted(HOSTILE_LSH_SPECS))
@pytest.mark.parametrize("kind", [race_module._KIND_RAW, race_module._KIND_RELEASED])
def test_crafted_race_files_are_refused_before_drawing(case, kind, monkeypatch):
    load = RACE.from_bytes if kind == race_module._KIND_RAW else ReleasedRACE.from_bytes
    _refused_cheaply(load, _crafted_race(HOSTILE_LSH_SPECS[case], kind), monkeypatch)


@pytest.mark.parametrize("case", sorted(HOSTILE_LSH_SPECS))
def test_crafted_kde_files_with_lsh_families_are_refused_before_drawing(case, monkeypatch):
    spec = HOSTILE_LSH_SPECS[case]
    parameters = {key: value for key, value in spec.items() if key != "family"}
    _refused_cheaply(KDEFunction.from_bytes, _crafted_kde({"class": spec["family"], "parameters": spec}), monkeypatch)
    _refused_cheaply(
        KDEFunction.from_bytes, _crafted_kde({"class": "RandomFourierFeatures", "parameters": parameters}), monkeypatch
    )


def test_kde_file_with_rows_that_do_not_match_the_family_is_refused_before_drawing(monkeypatch):
    spec = {"class": "RandomFourierFeatures", "parameters": {"dimension": 2, "n_repetitions": 5000, "seed": 0}}
    message = _refused_cheaply(KDEFunction.from_bytes, _crafted_kde(spec, rows=4), monkeypatch)
    assert "4 repetitions" in message


@pytest.mark.parametrize("n_users", [10**400, 2**63, 0, -1, True, 1.5])
def test_kde_file_n_users_is_bounded(n_users, monkeypatch):
    header = {"family": {"class": "RandomFourierFeatures", "parameters": {"dimension": 2, "n_repetitions": 4, "seed": 0}}}
    header.update({"n_users": n_users, "guarantee": None})
    data = pack(kde_function_module._ENVELOPE, kde_function_module._KIND, header, np.zeros((4, 1)), "<f8")
    _refused_cheaply(KDEFunction.from_bytes, data, monkeypatch)


def test_a_trusted_large_family_loads_with_a_larger_max_public_draws():
    family = RandomFourierFeatures(dimension=2**11, n_repetitions=2**10, seed=0)  # 2^21 draws: above the default
    data = KDEFunction(family, np.zeros((2**10, 1)), n_users=3).to_bytes()
    with pytest.raises(InvalidParameterError, match="max_public_draws"):
        KDEFunction.from_bytes(data)
    assert KDEFunction.from_bytes(data, max_public_draws=2**22).family == family
    with pytest.raises(InvalidParameterError, match="'max_public_draws' parameter of KDEFunction.from_bytes"):
        KDEFunction.from_bytes(data, max_public_draws=2**40)


def test_signed_random_projection_counts_n_bits_in_the_public_draw_cap():
    with pytest.raises(InvalidParameterError, match="'n_bits' parameter of SignedRandomProjection"):
        SignedRandomProjection(dimension=2**12, n_repetitions=2**11, n_bits=20)
    assert SignedRandomProjection(dimension=4, n_repetitions=8, n_bits=20).n_buckets == 2**20


@pytest.mark.parametrize("n_users", [10**400, 2**63, 0])
def test_kde_function_n_users_is_bounded(n_users):
    family = RandomFourierFeatures(dimension=2, n_repetitions=2, seed=0)
    with pytest.raises(InvalidParameterError, match="'n_users' parameter of KDEFunction"):
        KDEFunction(family, np.zeros((2, 1)), n_users=n_users)
