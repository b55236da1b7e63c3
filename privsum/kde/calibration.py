"""Calibrating the shuffled-DP KDE: the per-instance bit sum whose composition over the touched instances meets a target.

`~privsum.kde.protocol.ShuffledKDE.from_privacy` delegates here. The KDE knows only the bit-sum
interface: for tight accounting it asks the class for its own search
(`~privsum.bitsum.BitSumProtocol.calibrate_for_compositions`: RR's flip search, 3NB's choice of
flooding) and otherwise fits a per-instance epsilon by the generic search
(`privsum.bitsum.base.fit_for_compositions`, on `privsum.accounting.budget.fit_composition`).

References:
    Wagner, "Learning from End User Data with Shuffled Differential Privacy over Kernel
    Densities", ICLR 2025.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from privsum._validation import check_choice, check_delta, check_epsilon, check_integer, invalid
from privsum.accounting.cache import cached_calibration
from privsum.bitsum import bitsum_protocol
from privsum.bitsum.base import BitSumProtocol, fit_for_compositions
from privsum.kde.theory import seed_per_instance_epsilon
from privsum.lsq.base import LSQFamily, check_family

if TYPE_CHECKING:
    from privsum.kde.protocol import ShuffledKDE

__all__ = ["ACCOUNTING_METHODS", "calibrated_kde", "calibration_option_names", "touched_per_repetition"]

ACCOUNTING_METHODS = ("tight", "seed")

# Keywords of a bit sum's ``from_privacy`` that the KDE's calibration sets itself.
_CALIBRATION_KEYWORDS = frozenset({"epsilon", "delta", "n_users", "calibration"})


def calibrated_kde(cls: type[ShuffledKDE], **request: Any) -> ShuffledKDE:
    """`ShuffledKDE.from_privacy <privsum.kde.protocol.ShuffledKDE.from_privacy>`: validation, then the cached calibration.

    ``request`` holds ``from_privacy``'s keyword arguments, every one of them given.
    """
    owner = "ShuffledKDE.from_privacy"
    family, protocol_options = request["family"], request["protocol_options"]
    check_family(family, owner)
    protocol = bitsum_protocol(request["protocol"], owner)
    epsilon = check_epsilon(request["epsilon"], owner)
    delta = check_delta(request["delta"], owner)
    n_users = check_integer(request["n_users"], "n_users", owner, low=1)
    accounting = check_choice(request["accounting"], "accounting", owner, ACCOUNTING_METHODS)
    if not (
        protocol_options is None or (isinstance(protocol_options, Mapping) and all(isinstance(k, str) for k in protocol_options))
    ):
        raise invalid("protocol_options", owner, "None or a mapping of keyword names to values", protocol_options)
    _check_protocol_options(protocol, protocol_options or {}, owner)
    options = tuple(sorted((protocol_options or {}).items()))
    settings = (epsilon, delta, n_users, accounting, request["calibration"], request["chunk_size"], request["precision"], options)
    return cached_calibration(_calibrated, cls, family, protocol, *settings)


def _calibrated(
    cls: type[ShuffledKDE],
    family: LSQFamily,
    protocol: type[BitSumProtocol],
    epsilon: float,
    delta: float,
    n_users: int,
    accounting: str,
    calibration: str,
    chunk_size: int,
    precision: str,
    protocol_options: tuple[tuple[str, Any], ...],
) -> ShuffledKDE:
    """`calibrated_kde` after validation (cached by all its arguments)."""
    owner = "ShuffledKDE.from_privacy"
    options = dict(protocol_options)
    touched = touched_per_repetition(family)
    count = touched * family.n_repetitions
    delta0 = delta / (2 * count)

    @functools.cache
    def build(epsilon0: float) -> ShuffledKDE:
        bitsum = cached_calibration(
            protocol.from_privacy, epsilon=epsilon0, delta=delta0, n_users=n_users, calibration=calibration, **options
        )
        return make(bitsum)

    def make(bitsum: BitSumProtocol) -> ShuffledKDE:
        return cls(family=family, bitsum=bitsum, delta=delta, accounting=accounting, chunk_size=chunk_size, precision=precision)

    if delta == 0.0:
        result = build(epsilon / count)
    elif accounting == "seed":
        result = build(seed_per_instance_epsilon(epsilon, touched, family.n_repetitions, delta / 2))
        if result.bitsum.guarantee.is_pure:  # Theorem 3.2's pure case: pure composition
            result = build(epsilon / count)
    else:  # the bit sum's own search for k compositions, else the generic one
        request = {
            "epsilon": epsilon,
            "delta": delta,
            "n_users": n_users,
            "compositions": count,
            "instance_delta": delta0,
            "calibration": calibration,
            "caller": (owner, "epsilon"),
            "start": seed_per_instance_epsilon(epsilon, 1, count, delta / 2),
        }
        own = protocol.calibrate_for_compositions(**request, **options)
        result = make(fit_for_compositions(protocol, **request, **options) if own is None else own)
    achieved = result.guarantee
    if not (achieved.epsilon <= epsilon * (1 + 1e-9) and achieved.delta <= delta * (1 + 1e-9)):
        raise invalid("epsilon", owner, f"met by the calibrated protocol (it achieves {achieved})", epsilon)
    return result


def calibration_option_names(protocol: type[BitSumProtocol]) -> tuple[str, ...] | None:
    """The keywords of ``protocol.from_privacy`` a caller may pass through ``protocol_options``.

    Every keyword-only argument except those the KDE's calibration sets itself (``epsilon``,
    ``delta``, ``n_users``, ``calibration``); ``None`` when ``from_privacy`` takes ``**kwargs``
    (the protocol then checks its own keywords).
    """
    parameters = inspect.signature(protocol.from_privacy).parameters.values()
    if any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters):
        return None
    return tuple(p.name for p in parameters if p.kind is p.KEYWORD_ONLY and p.name not in _CALIBRATION_KEYWORDS)


def _check_protocol_options(protocol: type[BitSumProtocol], options: Mapping[str, Any], owner: str) -> None:
    """Every option names a keyword of ``protocol.from_privacy`` that the calibration does not set."""
    accepted = calibration_option_names(protocol)
    unknown = [] if accepted is None else sorted(set(options) - set(accepted))
    if unknown:
        expected = f"keywords {protocol.__name__}.from_privacy takes besides those the KDE sets: {list(accepted)}"
        raise invalid("protocol_options", owner, expected, unknown)


def touched_per_repetition(family: LSQFamily) -> int:
    """``min(Q, 2S)``: coordinates of one repetition a replace-one change can alter."""
    check_family(family, "touched_per_repetition")
    return min(family.n_coordinates, 2 * family.sparsity)
