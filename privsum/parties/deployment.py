"""A deployment: one protocol, its calibrated public parameters, and the wire configuration they fix.

The client, the shuffler and the analyzer of a deployment share one `Deployment`; its
fingerprint (SHA-256 of the canonical encoding of `Deployment.description`) is in every
message, so parties of different configurations refuse each other's bytes. A deployment is
written to and read from a *protocol file* (JSON), which is what the services start from.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from privsum._validation import check_integer, check_real, invalid
from privsum.exceptions import InvalidParameterError
from privsum.shuffle.protocol import SenderCap, ShuffleProtocol
from privsum.wire.fingerprint import canonical_encoding, fingerprint
from privsum.wire.format import VERSION, WireSpec

__all__ = ["DEFAULT_EXCEED_PROBABILITY", "Deployment", "protocol_classes", "register_protocol"]

#: Default bound on the probability that one honest user's random message count exceeds the cap.
DEFAULT_EXCEED_PROBABILITY = 1e-15
_FILE_FORMAT = "privsum-protocol-file"
_REGISTRY: dict[str, type[ShuffleProtocol]] = {}


def register_protocol(cls: type[ShuffleProtocol]) -> type[ShuffleProtocol]:
    """Make ``cls`` loadable from protocol files under its class name (usable as a decorator)."""
    if not (isinstance(cls, type) and issubclass(cls, ShuffleProtocol)):
        raise invalid("cls", "register_protocol", "a ShuffleProtocol subclass", cls)
    _REGISTRY[_wire_name(cls)] = cls
    return cls


def _wire_name(cls: type[ShuffleProtocol]) -> str:
    """A protocol class's name in wire headers: its ``wire_name``, else its class name."""
    return cls.wire_name or cls.__name__


def protocol_classes() -> dict[str, type[ShuffleProtocol]]:
    """The protocols the parties carry, by wire name (the bundled ones and any registered)."""
    from privsum.bitsum import LocalRRBitSum, PureBitSum, RRBitSum, ThreeNBBitSum
    from privsum.clipping import ClippedSum, ClippedVectorSum, SparseVectorAggregation
    from privsum.kde import ShuffledKDE
    from privsum.parties.classifier import LabelRound
    from privsum.parties.kde_joint import JointClassKDEProtocol
    from privsum.parties.kde_vector import VectorSumKDEProtocol
    from privsum.sums import BlanketRealSum, CorrelatedNoiseSum, MultiMessageSum, ShuffledVectorSum, SkellamVectorSum

    bundled = (RRBitSum, LocalRRBitSum, ThreeNBBitSum, PureBitSum, BlanketRealSum, CorrelatedNoiseSum, MultiMessageSum,
               ShuffledVectorSum, SkellamVectorSum, ShuffledKDE, ClippedSum,
               ClippedVectorSum, SparseVectorAggregation, VectorSumKDEProtocol, LabelRound, JointClassKDEProtocol)
    return {_wire_name(cls): cls for cls in bundled} | _REGISTRY


def _component_classes() -> dict[str, type]:
    """Classes a protocol's parameters may nest (bit sums inside the KDE, LSQ families, projections)."""
    from privsum.accounting import PrivacyGuarantee
    from privsum.lsq import L2LSH, FastJLT, IdentityFeatures, RandomFourierFeatures, RandomSigns, SignedRandomProjection
    from privsum.sums.sparse_shares import SparseMultiMessageSum

    components = (L2LSH, FastJLT, IdentityFeatures, RandomFourierFeatures, RandomSigns, SignedRandomProjection,
                  SparseMultiMessageSum, PrivacyGuarantee)
    return {cls.__name__: cls for cls in components} | protocol_classes()


#: Deepest nesting of objects and arrays in a protocol file's parameters (deeper is refused, not a RecursionError).
_MAX_PARAMETER_DEPTH = 32


def _rebuild(value: Any, owner: str, depth: int = 0) -> Any:
    """Parameters from a protocol file with nested ``{"class", "parameters"}`` objects built again."""
    if depth > _MAX_PARAMETER_DEPTH:
        raise invalid("parameters", owner, f"nested at most {_MAX_PARAMETER_DEPTH} levels deep", "deeper")
    if isinstance(value, Mapping) and set(value) == {"class", "parameters"}:
        classes = _component_classes()
        name, parameters = value["class"], value["parameters"]
        if not (isinstance(name, str) and name in classes and isinstance(parameters, Mapping)):
            raise invalid("parameters", owner, f"nested objects of the classes {sorted(classes)}", name)
        return _construct(classes[name], _rebuild(parameters, owner, depth + 1), owner)
    if isinstance(value, Mapping):
        return {key: _rebuild(item, owner, depth + 1) for key, item in value.items()}
    if isinstance(value, list):  # JSON arrays: tuples of the dataclasses
        return tuple(_rebuild(item, owner, depth + 1) for item in value)
    return value


def _construct(cls: type, parameters: Mapping[str, Any], owner: str) -> Any:
    """``cls(**parameters)``, a missing or unknown name refused as an `InvalidParameterError`."""
    try:
        return cls(**parameters)
    except TypeError as error:  # unknown or missing names (InvalidParameterError is raised as it is)
        if isinstance(error, InvalidParameterError):
            raise
        raise invalid("parameters", owner, f"the parameters of {cls.__name__}", sorted(parameters)) from None


@dataclass(frozen=True)
class Deployment:
    """One protocol as deployed: wire instances, per-sender cap, minimum batch, fingerprint.

    Args:
        protocol: a calibrated shuffle protocol (its public parameters are fingerprinted).
        n_instances: the number of instances, where the protocol's inputs have a column per
            instance (bit sums; vector sums fix it themselves).
        min_senders: the fewest senders a shuffler releases a batch for; default the
            protocol's ``n_users`` (the crowd its guarantee is calibrated for), else 1.
        exceed_probability: for random message counts, the largest probability that one honest
            user's randomizer draws more than the cap (clients redraw; the analyzer adds
            ``(1 + e^epsilon) n exceed_probability`` to delta).

    Examples:
        >>> from privsum.bitsum import RRBitSum
        >>> deployment = Deployment(RRBitSum(n_users=100, flip_probability=0.1, delta=1e-6), n_instances=3)
        >>> deployment.cap, deployment.spec.field_bits
        (SenderCap(per_instance=1, total=3, exceed_probability=0.0), 3)
    """

    protocol: ShuffleProtocol
    n_instances: int | None = None
    min_senders: int | None = None
    exceed_probability: float = DEFAULT_EXCEED_PROBABILITY
    cap: SenderCap = field(init=False)
    spec: WireSpec = field(init=False, repr=False)

    def __post_init__(self) -> None:
        owner = "Deployment"
        if not isinstance(self.protocol, ShuffleProtocol):
            raise invalid("protocol", owner, "a ShuffleProtocol", type(self.protocol).__name__)
        object.__setattr__(self, "n_instances", self.protocol.wire_instances(self.n_instances))
        default_senders = getattr(self.protocol, "n_users", 1)
        senders = default_senders if self.min_senders is None else self.min_senders
        object.__setattr__(self, "min_senders", check_integer(senders, "min_senders", owner, low=1, high=2**32 - 1))
        exceed = check_real(self.exceed_probability, "exceed_probability", owner, low=0.0, high=1.0, low_open=True)
        object.__setattr__(self, "exceed_probability", exceed)
        object.__setattr__(self, "cap", self.protocol.sender_cap(self.n_instances, exceed))
        alphabet = self.protocol.alphabet
        positional = self.cap.per_instance if self.positional else 0
        spec = WireSpec(self.wire_name, fingerprint(self.description), self.n_instances, len(alphabet), self.cap.total,
                        positional=positional)
        object.__setattr__(self, "spec", spec)

    @property
    def largest_batch(self) -> int | None:
        """The most senders one batch may have, where the protocol has a bound (else None).

        Split-and-mix sums size their modulus for their ``n_users``: their ``check_participants``
        refuses a larger crowd, and a larger batch would leave the analyzer without a guarantee
        for the whole collection. Shufflers and analyzers refuse batches beyond it.
        """
        n_users = getattr(self.protocol, "n_users", None)
        if not isinstance(n_users, int):
            return None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.protocol.check_participants(n_users + 1)
        except InvalidParameterError:
            return n_users
        return None

    @property
    def positional(self) -> bool:
        """Whether uploads and batches use the positional layout (no instance tag on the wire).

        Where every sender sends exactly ``c`` messages to each instance and the protocol's own
        `bits_per_message` counts no instance tag (its cost assumes each instance is shuffled on
        its own, as for the split-and-mix shares of `~privsum.sums.SkellamVectorSum`), the
        instance is implied by the position and the shuffler permutes each instance's messages
        separately. Otherwise every message carries its tag. With one instance both layouts are
        the same bytes.
        """
        cap, n_instances = self.cap, self.n_instances
        if cap.exceed_probability != 0.0 or cap.total != cap.per_instance * n_instances:
            return False
        value_bits = max(1, math.ceil(math.log2(len(self.protocol.alphabet))))
        return n_instances == 1 or self.protocol.bits_per_message(n_instances) == value_bits

    @property
    def wire_name(self) -> str:
        """The protocol's name on the wire (its ``wire_name``, else its class name)."""
        return _wire_name(type(self.protocol))

    @property
    def alphabet_description(self) -> dict[str, Any]:
        """``first``, ``size`` and, unless the alphabet is the integers ``first .. first + size - 1``, the ``values``."""
        alphabet = self.protocol.alphabet
        first, size = int(alphabet[0]), len(alphabet)
        contiguous = int(alphabet[-1]) - first + 1 == size
        return {"first": first, "size": size, "values": None if contiguous else [int(v) for v in alphabet]}

    @property
    def description(self) -> dict[str, Any]:
        """What the fingerprint commits to (its canonical encoding is hashed)."""
        return {
            "format": VERSION,
            "protocol": self.wire_name,
            "parameters": self.protocol.public_parameters(),
            "instances": self.n_instances,
            "layout": "positional" if self.positional else "tagged",
            "alphabet": self.alphabet_description,
            # the target, not the bound reached: the integers and the target do not depend on the platform's rounding
            "cap": {"per_instance": self.cap.per_instance, "total": self.cap.total,
                    "exceed_probability": self.exceed_probability},
            "min_senders": self.min_senders,
        }

    @property
    def canonical_bytes(self) -> bytes:
        """The canonical encoding of `description`."""
        return canonical_encoding(self.description)

    @property
    def fingerprint(self) -> bytes:
        """SHA-256 of `canonical_bytes`."""
        return self.spec.fingerprint

    # ------------------------------------------------------------------ values <-> indices
    def value_indices(self, values: np.ndarray) -> np.ndarray:
        """Each message value's position in the alphabet (values produced by the protocol's randomizer)."""
        alphabet = self.alphabet_description
        if alphabet["values"] is None:
            return np.asarray(values) - alphabet["first"] if alphabet["first"] else np.asarray(values)
        return np.searchsorted(np.asarray(alphabet["values"], dtype=np.int64), values)

    def values_of(self, indices: np.ndarray) -> np.ndarray:
        """The message values of alphabet positions."""
        alphabet = self.alphabet_description
        if alphabet["values"] is None:
            return np.asarray(indices, dtype=np.int64) + alphabet["first"]
        return np.asarray(alphabet["values"], dtype=np.int64)[indices]

    # ------------------------------------------------------------------ protocol files
    def to_file_dict(self) -> dict[str, Any]:
        """The protocol file's content: parameters in plain JSON, and the fingerprint to check on loading."""
        return {
            "format": _FILE_FORMAT,
            "version": VERSION,
            "protocol": self.wire_name,
            "parameters": _plain(self.protocol.public_parameters()),
            "n_instances": self.n_instances,
            "min_senders": self.min_senders,
            "exceed_probability": self.exceed_probability,
            **self._derived,
            "fingerprint": self.fingerprint.hex(),
        }

    @property
    def _derived(self) -> dict[str, Any]:
        """What the protocol's mathematics fixes and the fingerprint commits to: layout, alphabet, cap."""
        description = self.description
        return {"layout": description["layout"], "alphabet": description["alphabet"],
                "cap": {key: description["cap"][key] for key in ("per_instance", "total")}}

    def save(self, path: str | Path) -> None:
        """Write the protocol file (JSON)."""
        Path(path).write_text(json.dumps(self.to_file_dict(), indent=2) + "\n")

    @classmethod
    def from_file_dict(cls, content: Mapping[str, Any]) -> Deployment:
        """Rebuild a deployment from a protocol file's content; refuse unknown protocols and a fingerprint that differs."""
        owner = "Deployment.from_file_dict"
        if not (isinstance(content, Mapping) and content.get("format") == _FILE_FORMAT and content.get("version") == VERSION):
            raise invalid("content", owner, f"a {_FILE_FORMAT} of version {VERSION}", content)
        classes = protocol_classes()
        name = content.get("protocol")
        if not (isinstance(name, str) and name in classes):
            raise invalid("protocol", owner, f"one of {sorted(classes)}", name)
        parameters = content.get("parameters")
        if not isinstance(parameters, Mapping):
            raise invalid("parameters", owner, "a JSON object of the protocol's parameters", parameters)
        protocol = _construct(classes[name], _rebuild(parameters, owner), owner)
        deployment = cls(
            protocol,
            n_instances=content.get("n_instances"),
            min_senders=content.get("min_senders"),
            exceed_probability=content.get("exceed_probability", DEFAULT_EXCEED_PROBABILITY),
        )
        for key, computed in deployment._derived.items():
            if content.get(key) != computed:
                raise invalid(key, owner, f"{computed!r} (what these parameters fix)", content.get(key))
        stated = content.get("fingerprint")
        if stated != deployment.fingerprint.hex():
            raise invalid("fingerprint", owner, f"the fingerprint of these parameters, {deployment.fingerprint.hex()}", stated)
        return deployment

    @classmethod
    def load(cls, path: str | Path) -> Deployment:
        """Read a protocol file."""
        try:
            content = json.loads(Path(path).read_text())
        except (OSError, ValueError, RecursionError) as error:  # unreadable, not JSON, or nested past the parser's depth
            failure = f"{path}: {type(error).__name__}"
            raise invalid("path", "Deployment.load", "a readable protocol file of JSON", failure) from None
        return cls.from_file_dict(content)

    def delta_for_cap(self, epsilon: float, n_participants: int) -> float:
        """Delta added by redrawing counts above the cap: ``(1 + e^epsilon) n exceed_probability`` (0 for fixed counts)."""
        if self.cap.exceed_probability == 0.0:
            return 0.0
        return min(1.0, (1.0 + math.exp(min(epsilon, 700.0))) * n_participants * self.cap.exceed_probability)


def _plain(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """Parameters as plain JSON values (numpy scalars to Python, tuples to lists)."""
    def convert(value: Any) -> Any:
        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, (tuple, list)):
            return [convert(item) for item in value]
        return value

    return {key: convert(value) for key, value in parameters.items()}
