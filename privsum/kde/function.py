"""The released, queryable KDE function of the shuffled-DP KDE protocol."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from privsum._validation import check_integer, invalid
from privsum.accounting.guarantee import Neighbouring, PrivacyGuarantee
from privsum.lsq.base import LSQFamily

__all__ = ["KDEFunction"]

_FORMAT = "privsum.kde.KDEFunction"
_VERSION = 1
# Query points x repetitions x coordinates evaluated at once.
_QUERY_ENTRIES = 1 << 21
_DIGEST_SIZE = 32


@dataclass(frozen=True, eq=False)
class KDEFunction:
    """A private kernel density estimate ``K(y) = (1/(n I)) sum_i sum_j F_ij g_i(y)_j``.

    Attributes:
        family: the public LSQ draws ``(f_i, g_i)``.
        coefficients: the published ``F_ij = (2 B_ij - n) R``, shape ``(I, Q)``.
        n_users: ``n``, the number of users whose data the estimate covers.
        guarantee: the overall guarantee of the release (communication threat), or ``None`` for
            a non-private estimate.

    Privacy:
        Querying is post-processing of the published coefficients: any number of queries costs
        nothing beyond `guarantee` (whose neighbouring relation is `neighbouring`).

    Examples:
        >>> from privsum.lsq import RandomFourierFeatures
        >>> family = RandomFourierFeatures(dimension=2, n_repetitions=2, seed=0)
        >>> estimate = KDEFunction(family, np.zeros((2, 1)), n_users=5)
        >>> estimate(np.zeros((4, 2))).tolist()
        [0.0, 0.0, 0.0, 0.0]
    """

    family: LSQFamily
    coefficients: np.ndarray
    n_users: int
    guarantee: PrivacyGuarantee | None = None

    def __post_init__(self) -> None:
        owner = "KDEFunction"
        if not isinstance(self.family, LSQFamily):
            raise invalid("family", owner, "an LSQFamily", type(self.family).__name__)
        if not (self.guarantee is None or isinstance(self.guarantee, PrivacyGuarantee)):
            raise invalid("guarantee", owner, "a PrivacyGuarantee or None", self.guarantee)
        coefficients = np.asarray(self.coefficients, dtype=float)
        expected = (self.family.n_repetitions, self.family.n_coordinates)
        if coefficients.shape != expected:
            raise invalid("coefficients", owner, f"an array of shape {expected}", f"shape {coefficients.shape}")
        if not np.all(np.isfinite(coefficients)):
            raise invalid("coefficients", owner, "finite", "non-finite entries")
        object.__setattr__(self, "coefficients", coefficients)
        object.__setattr__(self, "n_users", check_integer(self.n_users, "n_users", owner, low=1))

    def __call__(self, queries: Any, *, chunk_size: int | None = None) -> np.ndarray:
        """The estimated density at each query point, shape ``(m,)``.

        Args:
            queries: ``(m, d)`` points (or one ``(d,)`` point).
            chunk_size: query points evaluated at once (default: about two million
                ``points x I x Q`` entries).
        """
        points = self.family.check_points(queries, "queries")
        width = self.family.n_repetitions * self.family.n_coordinates
        if chunk_size is None:
            chunk_size = max(1, _QUERY_ENTRIES // width)
        chunk_size = check_integer(chunk_size, "chunk_size", "KDEFunction", low=1)
        scale = 1.0 / (self.n_users * self.family.n_repetitions)
        flat = self.coefficients.ravel() * scale
        values = [
            self.family.g(points[start : start + chunk_size]).reshape(-1, width) @ flat
            for start in range(0, points.shape[0], chunk_size)
        ]
        return np.concatenate(values) if values else np.zeros(0)

    def __eq__(self, other: object) -> bool:
        """Equal when the family, the coefficients, ``n_users`` and the guarantee are all equal."""
        if not isinstance(other, KDEFunction):
            return NotImplemented
        return (
            self.family == other.family
            and self.n_users == other.n_users
            and self.guarantee == other.guarantee
            and np.array_equal(self.coefficients, other.coefficients)
        )

    __hash__ = None  # type: ignore[assignment]

    @property
    def neighbouring(self) -> Neighbouring | None:
        """The neighbouring relation of `guarantee` (``None`` without a guarantee)."""
        return None if self.guarantee is None else self.guarantee.neighbouring

    def to_bytes(self) -> bytes:
        """Versioned serialisation: a JSON header, the ``.npy`` coefficients and a SHA-256 checksum.

        Nothing is pickled; `from_bytes` rebuilds the family from its public parameters (its seed).

        Examples:
            >>> from privsum.lsq import RandomFourierFeatures
            >>> family = RandomFourierFeatures(dimension=2, n_repetitions=3, seed=1)
            >>> released = KDEFunction(family, np.ones((3, 1)), n_users=10, guarantee=PrivacyGuarantee(1.0, 1e-6))
            >>> KDEFunction.from_bytes(released.to_bytes()) == released
            True
        """
        header = {
            "format": _FORMAT,
            "version": _VERSION,
            "family": _family_spec(self.family),
            "n_users": self.n_users,
            "guarantee": None
            if self.guarantee is None
            else [self.guarantee.epsilon, self.guarantee.delta, self.guarantee.neighbouring.value],
        }
        buffer = io.BytesIO()
        np.save(buffer, self.coefficients, allow_pickle=False)
        encoded = json.dumps(header, sort_keys=True).encode()
        body = len(encoded).to_bytes(4, "big") + encoded + buffer.getvalue()
        return body + hashlib.sha256(body).digest()

    @classmethod
    def from_bytes(cls, data: bytes) -> KDEFunction:
        """Inverse of `to_bytes`; refuses corrupted bytes, unknown formats or versions and foreign families.

        Raises:
            InvalidParameterError: naming ``data``, for any bytes `to_bytes` did not write.
        """
        owner = "KDEFunction.from_bytes"
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise invalid("data", owner, "bytes", type(data).__name__)
        data = bytes(data)
        body, digest = data[:-_DIGEST_SIZE], data[-_DIGEST_SIZE:]
        if len(data) <= _DIGEST_SIZE + 4 or hashlib.sha256(body).digest() != digest:
            raise invalid("data", owner, "bytes written by KDEFunction.to_bytes (checksum)", "corrupted or truncated bytes")
        try:
            length = int.from_bytes(body[:4], "big")
            header = json.loads(body[4 : 4 + length].decode())
            coefficients = np.load(io.BytesIO(body[4 + length :]), allow_pickle=False)
        except Exception as error:
            raise invalid("data", owner, "bytes written by KDEFunction.to_bytes", "undecodable bytes") from error
        if not (isinstance(header, dict) and header.get("format") == _FORMAT and header.get("version") == _VERSION):
            found = (header.get("format"), header.get("version")) if isinstance(header, dict) else header
            raise invalid("data", owner, f"format {_FORMAT!r} version {_VERSION}", found)
        try:
            raw = header["guarantee"]
            guarantee = None if raw is None else PrivacyGuarantee(float(raw[0]), float(raw[1]), raw[2])
            return cls(_family_from_spec(header["family"]), coefficients, header["n_users"], guarantee)
        except (KeyError, IndexError, TypeError, ValueError) as error:
            raise invalid("data", owner, "a well-formed KDEFunction header", str(error)) from error


def _family_spec(family: LSQFamily) -> dict[str, Any]:
    if not dataclasses.is_dataclass(family):
        raise invalid("family", "KDEFunction.to_bytes", "a dataclass LSQ family", type(family).__name__)
    fields = {f.name: getattr(family, f.name) for f in dataclasses.fields(family) if f.init}
    for name, value in fields.items():
        if not (value is None or isinstance(value, (bool, int, float, str))):
            raise invalid(
                "family", "KDEFunction.to_bytes", f"a family whose parameters are scalars ({name!r} is not)", type(value).__name__
            )
    return {"class": f"{type(family).__module__}.{type(family).__qualname__}", "parameters": fields}


def _family_from_spec(spec: dict[str, Any]) -> LSQFamily:
    owner = "KDEFunction.from_bytes"
    module_name, _, class_name = str(spec.get("class", "")).rpartition(".")
    if not module_name.startswith("privsum.lsq"):
        raise invalid("data", owner, "a family from privsum.lsq", spec.get("class"))
    import importlib

    try:
        family_class = getattr(importlib.import_module(module_name), class_name, None)
    except ImportError:
        family_class = None
    if not (isinstance(family_class, type) and issubclass(family_class, LSQFamily)):
        raise invalid("data", owner, "a known LSQ family class", spec.get("class"))
    parameters = spec.get("parameters")
    if not isinstance(parameters, dict):
        raise invalid("data", owner, "family parameters as a mapping", parameters)
    return family_class(**parameters)
