"""The released, queryable KDE function of the shuffled-DP KDE protocol."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from privsum._serialisation import Envelope, check_key, header_field, pack, unpack
from privsum._validation import MAX_INT64, check_array, check_integer, invalid
from privsum.accounting.guarantee import Neighbouring, PrivacyGuarantee
from privsum.exceptions import InvalidParameterError
from privsum.lsq.base import LOADER_PUBLIC_DRAWS, LSQFamily, check_family, check_loader_draws
from privsum.lsq.lsh import LSHFamily, family_from_spec

__all__ = ["KDEFunction"]

#: Serialised form: version 2 added the magic prefix and the raw float64 payload (version 1 stored ``.npy``).
_ENVELOPE = Envelope(magic=b"PSKDEF", version=2, name="privsum KDEFunction")
_KIND = 0
_DTYPE = "<f8"
# Query points x repetitions x coordinates evaluated at once.
_QUERY_ENTRIES = 1 << 21


@dataclass(frozen=True, eq=False)
class KDEFunction:
    """A private kernel density estimate ``K(y) = (1/(n I)) sum_i sum_j F_ij g_i(y)_j``.

    Attributes:
        family: the public LSQ draws ``(f_i, g_i)``.
        coefficients: the published ``F_ij = (2 B_ij - n) R``, shape ``(I, Q)``.
        n_users: ``n``, the number of users whose data the estimate covers.
        guarantee: the overall guarantee of the release (communication threat), or ``None`` for
            a non-private estimate. Only a protocol's run (`privsum.kde.ShuffledKDE.run` and the
            other KDE protocols) or `from_bytes` attach a guarantee: constructing a KDEFunction
            directly gives ``guarantee=None``, so no estimate carries a claim its making does not
            back. A loaded guarantee is as trustworthy as the file: sign files that travel.

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
        check_family(self.family, owner)
        if self.guarantee is not None:  # a guarantee is never attached to arbitrary coefficients
            raise invalid(
                "guarantee",
                owner,
                "None (a private KDEFunction comes only from a protocol's run or from_bytes, which attach the guarantee)",
                self.guarantee,
            )
        coefficients = check_array(self.coefficients, "coefficients", owner).astype(float)
        expected = (self.family.n_repetitions, self.family.n_coordinates)
        if coefficients.shape != expected:
            raise invalid("coefficients", owner, f"an array of shape {expected}", f"shape {coefficients.shape}")
        object.__setattr__(self, "coefficients", coefficients)
        object.__setattr__(self, "n_users", check_integer(self.n_users, "n_users", owner, low=1))

    @classmethod
    def _released(cls, family: LSQFamily, coefficients: Any, n_users: int, guarantee: PrivacyGuarantee | None) -> KDEFunction:
        """Internal: a protocol's release (or a checked load) with the guarantee its protocol computed."""
        released = cls(family, coefficients, n_users)
        if not (guarantee is None or isinstance(guarantee, PrivacyGuarantee)):
            raise invalid("guarantee", "KDEFunction", "a PrivacyGuarantee or None", guarantee)
        object.__setattr__(released, "guarantee", guarantee)
        return released

    def __call__(self, queries: Any, *, chunk_size: int | None = None, debias: bool = False) -> np.ndarray:
        """The estimated density at each query point, shape ``(m,)``.

        With an LSH family the estimate is unbiased for ``mean_u (k + (1 - k) c)``, ``c`` the
        family's `~privsum.lsq.LSHFamily.collision_floor` (``1/Q`` for folded L2-LSH codes), not
        for the kernel density ``mean_u k``. ``debias=True`` returns
        ``(estimate - c) / (1 - c)``, unbiased for ``mean_u k`` (as a RACE sketch's estimate is),
        with a standard deviation larger by ``1 / (1 - c)`` and possibly negative values; families
        without a floor (``c = 0``, and every non-LSH family, whose estimate already targets ``k``)
        are unchanged. Post-processing either way.

        Args:
            queries: ``(m, d)`` points (or one ``(d,)`` point).
            chunk_size: query points evaluated at once (default: about two million
                ``points x I x Q`` entries).
            debias: remove the LSH collision floor (see above).
        """
        if not isinstance(debias, bool):
            raise invalid("debias", "KDEFunction", "a bool", debias)
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
        estimates = np.concatenate(values) if values else np.zeros(0)
        if debias and isinstance(self.family, LSHFamily):
            return self.family.remove_floor(estimates)
        return estimates

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

    def to_bytes(self, *, key: bytes | None = None) -> bytes:
        """Versioned serialisation: magic, version, a JSON header, the float64 coefficients and a SHA-256 checksum.

        Nothing is pickled; `from_bytes` rebuilds the family from its public parameters (its seed).

        Args:
            key: optional secret (at least 16 bytes) to sign the bytes with HMAC-SHA256. The
                checksum alone only detects corruption: anyone can edit a header and recompute
                it. A signature lets the holder of ``key`` detect any edit (`from_bytes` with the
                same ``key``).

        Examples:
            >>> from privsum.lsq import RandomFourierFeatures
            >>> family = RandomFourierFeatures(dimension=2, n_repetitions=3, seed=1)
            >>> released = KDEFunction._released(family, np.ones((3, 1)), 10, PrivacyGuarantee(1.0, 1e-6))
            >>> KDEFunction.from_bytes(released.to_bytes()) == released
            True
            >>> secret = b"a secret of 16+ bytes"
            >>> KDEFunction.from_bytes(released.to_bytes(key=secret), key=secret) == released
            True
        """
        key = check_key(key, "KDEFunction.to_bytes")
        header = {"family": _family_spec(self.family), "n_users": self.n_users, "guarantee": _guarantee_spec(self.guarantee)}
        return pack(_ENVELOPE, _KIND, header, self.coefficients, _DTYPE, key=key)

    @classmethod
    def from_bytes(cls, data: bytes, *, key: bytes | None = None, max_public_draws: int = LOADER_PUBLIC_DRAWS) -> KDEFunction:
        """Inverse of `to_bytes`; refuses corrupted bytes, unknown formats or versions and foreign families.

        Nothing is unpickled: the header is JSON and the coefficients raw little-endian float64.
        Every header field is checked, and the family's size (public draws, repetitions) against
        the payload and ``max_public_draws``, before the family's public randomness is drawn.

        Args:
            data: `to_bytes` output.
            key: the secret the bytes were signed with; when given, unsigned or mis-signed bytes
                are refused. Without it the checksum only detects corruption, not edits.
            max_public_draws: most numbers the rebuilt family may draw (default 2^20, 8 MiB);
                raise it (up to 2^27) to load a larger family from a trusted source.

        Raises:
            InvalidParameterError: naming ``data``, for any bytes `to_bytes` did not write (or
                not signed with ``key``).
        """
        owner = "KDEFunction.from_bytes"
        key = check_key(key, owner)
        header, coefficients = unpack(data, _ENVELOPE, _KIND, "a KDEFunction", _DTYPE, owner, key=key)
        n_users = header_field(header, "n_users", int, owner)
        if not 1 <= n_users <= MAX_INT64:
            raise invalid("data", owner, "a header 'n_users' in [1, 2^63 - 1]", n_users)
        spec = header_field(header, "family", dict, owner)
        guarantee = _guarantee_from_spec(header.get("guarantee"), owner)
        family = _family_from_spec(spec, max_public_draws, coefficients.shape)
        try:
            return cls._released(family, coefficients, n_users, guarantee)
        except InvalidParameterError as error:
            raise invalid("data", owner, "a consistent KDEFunction", str(error)) from None


def _guarantee_spec(guarantee: PrivacyGuarantee | None) -> dict[str, Any] | None:
    if guarantee is None:
        return None
    epsilon = guarantee.epsilon if math.isfinite(guarantee.epsilon) else "inf"
    return {"epsilon": epsilon, "delta": guarantee.delta, "neighbouring": guarantee.neighbouring.value}


def _guarantee_from_spec(spec: Any, owner: str) -> PrivacyGuarantee | None:
    if spec is None:
        return None
    if not (isinstance(spec, dict) and set(spec) == {"epsilon", "delta", "neighbouring"}):
        raise invalid("data", owner, "a guarantee header with epsilon, delta and neighbouring", spec)
    epsilon = math.inf if spec["epsilon"] == "inf" else spec["epsilon"]
    try:
        return PrivacyGuarantee(epsilon, spec["delta"], spec["neighbouring"])
    except InvalidParameterError as error:
        raise invalid("data", owner, "a valid guarantee header", str(error)) from None


def _family_spec(family: LSQFamily) -> dict[str, Any]:
    """``{"class": name, "parameters": {...}}`` for a family of `privsum.lsq` with scalar parameters."""
    owner = "KDEFunction.to_bytes"
    name = type(family).__name__
    if _FAMILIES.get(name) is not type(family) or not dataclasses.is_dataclass(family):
        raise invalid("family", owner, f"one of the privsum.lsq families {sorted(_FAMILIES)}", name)
    if isinstance(family, LSHFamily):
        return {"class": name, "parameters": family.spec()}
    fields = {f.name: getattr(family, f.name) for f in dataclasses.fields(family) if f.init}
    for field_name, value in fields.items():
        if not (value is None or isinstance(value, (bool, int, float, str))):
            raise invalid("family", owner, f"a family whose parameters are scalars ({field_name!r} is not)", type(value).__name__)
    return {"class": name, "parameters": fields}


def _family_from_spec(spec: dict[str, Any], max_public_draws: int, payload_shape: tuple[int, ...]) -> LSQFamily:
    owner = "KDEFunction.from_bytes"
    family_class = _FAMILIES.get(spec.get("class"))  # type: ignore[arg-type]
    parameters = spec.get("parameters")
    if family_class is None or not isinstance(parameters, dict) or set(spec) != {"class", "parameters"}:
        raise invalid("data", owner, f"a family header naming one of {sorted(_FAMILIES)}", spec.get("class"))
    rows = payload_shape[0] if len(payload_shape) == 2 else None
    if rows is None:
        raise invalid("data", owner, "a 2-D coefficient payload", f"shape {payload_shape}")
    check_loader_draws(parameters, max_public_draws, owner, n_repetitions=rows)  # before any public draw
    try:
        if issubclass(family_class, LSHFamily):
            return family_from_spec(parameters)
        return family_class(**parameters)
    except (InvalidParameterError, TypeError) as error:
        raise invalid("data", owner, "valid family parameters", str(error)) from None


def _concrete_families() -> dict[str, type]:
    """The concrete LSQ families `privsum.lsq` exports: the only classes `from_bytes` will build."""
    import inspect

    import privsum.lsq

    return {
        name: value
        for name in privsum.lsq.__all__
        if inspect.isclass(value := getattr(privsum.lsq, name)) and issubclass(value, LSQFamily) and not inspect.isabstract(value)
    }


_FAMILIES = _concrete_families()
