"""The (epsilon, delta) guarantee value, its neighbouring relation and the threat models."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from privsum._validation import check_delta, check_epsilon, invalid

__all__ = ["Neighbouring", "PrivacyGuarantee", "ThreatModel"]


class Neighbouring(str, enum.Enum):
    """Which datasets count as neighbours.

    ``REPLACE_ONE``: one user's value changes (the papers' default).
    ``ADD_REMOVE``: one user is added or removed.
    ``ZERO_OUT``: one user's value is replaced by the protocol's null input (``0`` for sums, the
    zero vector, the empty set); the number of users and who takes part stay fixed. Every
    zero-out pair is a replace-one pair, so a replace-one guarantee holds under zero-out
    (`implies`); a zero-out ``(epsilon, delta)`` guarantee gives replace-one
    ``(2 epsilon, (1 + e^epsilon) delta)`` by group privacy (`zero_out_to_replace_one`).

    Examples:
        >>> Neighbouring.REPLACE_ONE.implies(Neighbouring.ZERO_OUT)
        True
        >>> Neighbouring.ZERO_OUT.implies(Neighbouring.REPLACE_ONE)
        False
    """

    REPLACE_ONE = "replace-one"
    ADD_REMOVE = "add-remove"
    ZERO_OUT = "zero-out"

    @classmethod
    def parse(cls, value: object, owner: str = "this function", allowed: tuple[Neighbouring, ...] | None = None) -> Neighbouring:
        """Return the relation named by ``value`` (an instance or its string value), one of ``allowed`` (default: all).

        The canonical names are ``"replace-one"``, ``"add-remove"`` and ``"zero-out"``; the
        spellings with underscores or spaces (``"add_remove"``, ``"replace one"``) and any case are
        accepted as aliases.

        Examples:
            >>> Neighbouring.parse("add_remove")
            <Neighbouring.ADD_REMOVE: 'add-remove'>
        """
        allowed = tuple(cls) if allowed is None else allowed
        expected = " or ".join(repr(relation.value) for relation in allowed)
        if isinstance(value, str) and not isinstance(value, cls):
            value = value.strip().lower().replace("_", "-").replace(" ", "-")  # "add_remove" names "add-remove"
        try:
            relation = cls(value)
        except ValueError:
            raise invalid("neighbouring", owner, expected, value) from None
        if relation not in allowed:
            raise invalid("neighbouring", owner, expected, value)
        return relation

    def implies(self, other: Neighbouring) -> bool:
        """Whether a guarantee under ``self`` holds under ``other`` (every ``other`` pair is a ``self`` pair)."""
        return self == other or (self, other) == (Neighbouring.REPLACE_ONE, Neighbouring.ZERO_OUT)


class ThreatModel(str, enum.Enum):
    """What the adversary observes (Wagner, Learning from End User Data with Shuffled Differential
    Privacy over Kernel Densities, ICLR 2025, section 3.1).

    ``COMMUNICATION``: every message the analyzer receives (and everything released).
    ``MODEL``: only the released model.
    """

    COMMUNICATION = "communication"
    MODEL = "model"

    @classmethod
    def parse(cls, value: object, owner: str = "this function") -> ThreatModel:
        """Return the threat model named by ``value`` (an instance or its string value)."""
        try:
            return cls(value)
        except ValueError:
            raise invalid("threat_model", owner, "'communication' or 'model'", value) from None


@dataclass(frozen=True)
class PrivacyGuarantee:
    """An (epsilon, delta)-DP guarantee under a stated neighbouring relation.

    Attributes:
        epsilon: privacy-loss bound, ``>= 0`` (``0`` where genuinely achieved, e.g. a mechanism
            whose output does not depend on the data up to ``delta``; ``inf`` means no guarantee).
        delta: failure probability in ``[0, 1)``; ``0`` is pure DP.
        neighbouring: the relation the guarantee is stated for.

    Examples:
        >>> PrivacyGuarantee(1.0, 1e-6)
        PrivacyGuarantee(epsilon=1.0, delta=1e-06, neighbouring='replace-one')
        >>> PrivacyGuarantee(0.5, 0.0).is_pure
        True
    """

    epsilon: float
    delta: float = 0.0
    neighbouring: Neighbouring = Neighbouring.REPLACE_ONE

    def __post_init__(self) -> None:
        owner = type(self).__name__
        object.__setattr__(
            self, "epsilon", check_epsilon(self.epsilon, owner, allow_infinite=True, allow_zero=True, high=math.inf)
        )
        object.__setattr__(self, "delta", check_delta(self.delta, owner))
        object.__setattr__(self, "neighbouring", Neighbouring.parse(self.neighbouring, owner))

    @property
    def is_pure(self) -> bool:
        """Whether delta is exactly zero."""
        return self.delta == 0.0

    @property
    def is_finite(self) -> bool:
        """Whether epsilon is finite."""
        return math.isfinite(self.epsilon)

    def under(self, neighbouring: Neighbouring | str) -> PrivacyGuarantee:
        """The same guarantee stated under ``neighbouring``, which this guarantee's relation must imply.

        Examples:
            >>> PrivacyGuarantee(1.0, 1e-6).under("zero-out")
            PrivacyGuarantee(epsilon=1.0, delta=1e-06, neighbouring='zero-out')
        """
        relation = Neighbouring.parse(neighbouring, "PrivacyGuarantee.under")
        if not self.neighbouring.implies(relation):
            raise invalid(
                "neighbouring", "PrivacyGuarantee.under", f"a relation that {self.neighbouring.value!r} implies", relation.value
            )
        return PrivacyGuarantee(self.epsilon, self.delta, relation)

    def __repr__(self) -> str:
        return f"PrivacyGuarantee(epsilon={self.epsilon!r}, delta={self.delta!r}, neighbouring={self.neighbouring.value!r})"

    def __str__(self) -> str:
        return f"({self.epsilon:.6g}, {self.delta:.3g})-DP, {self.neighbouring.value}"
