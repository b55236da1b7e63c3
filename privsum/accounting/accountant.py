"""The privacy accountant: a ledger of events with totals for both threat models.

References:
    Wagner, "Learning from End User Data with Shuffled Differential Privacy over Kernel
    Densities", ICLR 2025.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

from privsum._validation import check_choice, check_delta, check_integer, check_real, invalid
from privsum.accounting.composition import drift_term, exact_weighted_sum
from privsum.accounting.events import ComposedEvent, GuaranteeEvent, PrivacyEvent, RelationEvent
from privsum.accounting.gaussian import GaussianEvent, gaussian_delta, gaussian_epsilon
from privsum.accounting.guarantee import Neighbouring, PrivacyGuarantee, ThreatModel
from privsum.accounting.homogeneous import optimal_composition, optimal_composition_delta, optimal_composition_floor
from privsum.accounting.pld import DEFAULT_DISCRETIZATION, PLDPair
from privsum.exceptions import BudgetExceededError, DeltaFloorWarning, InvalidParameterError

__all__ = ["COMPOSITION_METHODS", "LedgerEntry", "PrivacyAccountant"]

COMPOSITION_METHODS = ("best", "pld", "optimal", "advanced", "basic")
# Relative margin on the Gaussian closed form's delta (its float evaluation: log_ndtr, expm1).
_CLOSED_FORM_MARGIN = 1e-9


@dataclass(frozen=True)
class LedgerEntry:
    """One composed event: ``count`` runs of ``event``, and who can observe it."""

    event: PrivacyEvent
    count: int
    visible_to_model: bool
    label: str

    @property
    def composed(self) -> PrivacyEvent:
        """The entry as a single event."""
        return self.event if self.count == 1 else ComposedEvent(self.event, self.count)

    def observed_under(self, threat_model: ThreatModel) -> bool:
        """Whether an adversary of this threat model sees the entry's output."""
        return threat_model is ThreatModel.COMMUNICATION or self.visible_to_model


class PrivacyAccountant:
    """Composes privacy events and reports the total guarantee.

    Args:
        neighbouring: the relation every composed event must be stated under (``"replace-one"``,
            ``"add-remove"`` or ``"zero-out"``; underscores are accepted too). ``neighboring=`` is
            accepted as an alias of this (British) canonical spelling.
        budget: optional cap; `compose` raises `BudgetExceededError` (and records nothing) when
            the communication-threat total at ``budget.delta`` would exceed ``budget.epsilon``.
        method: default composition method: ``"best"`` (the minimum over the certified upper
            bounds below, each of which holds at every count: a method that cannot certify an
            answer declines, and basic composition always answers), ``"pld"`` (numerical,
            pessimistic, with its floating-point error bounded and added to delta; ``inf`` where
            that error leaves no certified answer), ``"optimal"`` (the exact composition of as many
            ``(epsilon0, delta0)``-DP mechanisms, with the largest headline epsilon and delta of
            the events: Kairouz, Oh & Viswanath, ICML 2015), ``"advanced"`` (heterogeneous
            Dwork-Rothblum-Vadhan) or ``"basic"``. When every event is a `GaussianEvent`,
            ``"best"`` also considers their exact composition: one Gaussian mechanism with
            ``1/sigma^2 = sum_j count_j Delta_j^2 / sigma_j^2`` (Balle & Wang's formula).
        discretization: PLD loss discretisation interval.

    Privacy:
        Two totals are kept. Under the **communication** threat the adversary sees every
        message the analyzer receives, so every entry counts. Under the **model** threat it sees
        only the released model, so entries composed with ``visible_to_model=False`` (e.g. raw
        per-user reports that the model does not reveal) are left out.

    Examples:
        >>> from privsum.accounting import GuaranteeEvent, PrivacyGuarantee
        >>> accountant = PrivacyAccountant()
        >>> _ = accountant.compose(GuaranteeEvent(PrivacyGuarantee(0.1, 1e-8)), count=10)
        >>> accountant.epsilon(1e-6, method="basic")
        1.0
        >>> accountant.epsilon(1e-6) < 1.0
        True
        >>> accountant
        PrivacyAccountant(neighbouring='replace-one', method='best', entries=1, releases=10, budget=None)

        When the requested delta is below the composed deltas (here ``10 x 1e-8``), no finite
        epsilon holds: `epsilon` returns ``inf`` with a `DeltaFloorWarning` naming the floor,
        which `min_delta` reports.

        >>> f"{accountant.min_delta():.3g}"
        '1e-07'
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     accountant.epsilon(1e-8)
        inf
        >>> caught[0].category.__name__
        'DeltaFloorWarning'
    """

    def __init__(
        self,
        *,
        neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
        budget: PrivacyGuarantee | None = None,
        method: str = "best",
        discretization: float = DEFAULT_DISCRETIZATION,
        neighboring: Neighbouring | str | None = None,
    ) -> None:
        owner = "PrivacyAccountant"
        self.neighbouring = Neighbouring.parse(neighbouring, owner)  # parsed first: no comparison of unchecked input
        if neighboring is not None:
            try:
                alias = Neighbouring.parse(neighboring, owner)
            except InvalidParameterError:
                raise invalid("neighboring", owner, "'replace-one' or 'add-remove' or 'zero-out'", neighboring) from None
            if self.neighbouring != Neighbouring.REPLACE_ONE and self.neighbouring != alias:
                expected = f"the same relation as neighbouring={self.neighbouring.value!r} (or omitted)"
                raise invalid("neighboring", owner, expected, neighboring)
            self.neighbouring = alias
        if budget is not None and not (isinstance(budget, PrivacyGuarantee) and budget.neighbouring == self.neighbouring):
            raise invalid("budget", owner, f"None or a PrivacyGuarantee under {self.neighbouring.value!r}", budget)
        self.budget = budget
        self.method = check_choice(method, "method", owner, COMPOSITION_METHODS)
        self.discretization = check_real(discretization, "discretization", owner, low=0.0, low_open=True)
        self._entries: list[LedgerEntry] = []

    def __repr__(self) -> str:
        releases = sum(entry.count for entry in self._entries)
        budget = "None" if self.budget is None else str(self.budget)
        return (
            f"PrivacyAccountant(neighbouring={self.neighbouring.value!r}, method={self.method!r}, "
            f"entries={len(self._entries)}, releases={releases}, budget={budget})"
        )

    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        """The ledger, in composition order."""
        return tuple(self._entries)

    def compose(
        self, event: PrivacyEvent | PrivacyGuarantee, count: int = 1, *, visible_to_model: bool = True, label: str = ""
    ) -> LedgerEntry:
        """Record ``count`` runs of ``event`` and return the ledger entry.

        Args:
            event: a `PrivacyEvent` (e.g. a protocol's ``event``), or a bare `PrivacyGuarantee`,
                which is composed as a `GuaranteeEvent` (only its ``(epsilon, delta)`` is known, so
                numerical composition treats it as the worst mechanism with that guarantee).
            count: how many times it runs.
            visible_to_model: whether the released model reveals its output (see the class).
            label: a name for the ledger.

        Raises:
            InvalidParameterError: the event is not a `PrivacyEvent` or `PrivacyGuarantee`, or uses another relation.
            BudgetExceededError: the budget would be exceeded; nothing is recorded.
        """
        owner = "PrivacyAccountant.compose"
        if isinstance(event, PrivacyGuarantee):
            event = GuaranteeEvent(event)
        if not isinstance(event, PrivacyEvent):
            raise invalid("event", owner, "a PrivacyEvent or a PrivacyGuarantee", event)
        if event.neighbouring != self.neighbouring:
            raise invalid("event", owner, f"an event under {self.neighbouring.value!r}", event.neighbouring.value)
        count = check_integer(count, "count", owner, low=1)
        entry = LedgerEntry(event, count, bool(visible_to_model), str(label))
        self._entries.append(entry)
        if self.budget is not None:
            spent = (
                self._epsilon(self.budget.delta, ThreatModel.COMMUNICATION, None)
                if self.budget.delta > 0
                else self._pure_epsilon(ThreatModel.COMMUNICATION)
            )
            if not spent <= self.budget.epsilon:
                self._entries.pop()
                raise BudgetExceededError(
                    f"Composing {label or type(event).__name__} x{count} would spend epsilon={spent:.6g} "
                    f"at delta={self.budget.delta:.3g}, over the budget epsilon={self.budget.epsilon:.6g}."
                )
        return entry

    def epsilon(
        self, delta: float, *, threat_model: ThreatModel | str = ThreatModel.COMMUNICATION, method: str | None = None
    ) -> float:
        """Total epsilon at ``delta`` for the given threat model.

        ``inf`` if unattainable: with a `DeltaFloorWarning` when ``delta`` is below the composed
        events' delta floor (`min_delta`), the usual reason.
        """
        delta = check_delta(delta, "PrivacyAccountant.epsilon")
        total = self._epsilon(delta, threat_model, method)
        if math.isinf(total):
            floor = self.min_delta(threat_model=threat_model, method=method)
            if delta < floor < 1.0:
                warnings.warn(
                    f"No finite epsilon at delta={delta:.3g}: the composed events' deltas add up to a floor of "
                    f"{floor:.6g} (each (epsilon, delta) guarantee keeps its delta under composition; a numerical "
                    "composition adds its certified rounding error); epsilon is inf. "
                    f"Ask for a delta above {floor:.6g} (min_delta()), or compose events with exact privacy profiles.",
                    DeltaFloorWarning,
                    stacklevel=2,
                )
        return total

    def min_delta(self, *, threat_model: ThreatModel | str = ThreatModel.COMMUNICATION, method: str | None = None) -> float:
        """The delta floor: below it `epsilon` is ``inf`` (1.0 when some event has no finite guarantee).

        Basic and advanced composition need ``delta`` above the sum of the events' deltas;
        numerical (PLD) composition needs it above the composed loss distribution's mass at
        infinite loss plus its certified numerical error. With ``method="best"`` the floor is the
        smallest of the methods' floors (0 when the events are Gaussian: their exact composition
        has no floor).
        """
        entries = self._observed(threat_model)
        if not entries:
            return 0.0
        if any(not entry.event.guarantee.is_finite for entry in entries):
            return 1.0
        floors = []
        for name in self._methods(method, entries):
            if name in ("basic", "advanced"):
                floors.append(min(1.0, _advanced_terms(entries)[2]))
            elif name == "optimal":
                floors.append(_optimal_floor(entries))
            elif name == "gaussian":
                floors.append(0.0)
            else:
                pld = self._pld_or_none(entries, required=method == "pld")
                if pld is not None:
                    floors.append(pld.delta_floor)
        return min(floors)

    def _best_of_methods(
        self,
        threat_model: ThreatModel | str,
        method: str | None,
        *,
        if_empty: float,
        if_unbounded: float,
        closed_forms: dict[str, Callable[[list[LedgerEntry]], float]],
        from_pld: Callable[[PLDPair], float],
    ) -> float:
        r"""The smallest value the applicable ``method``\ s give (each closed form, else the PLD's ``from_pld``)."""
        entries = self._observed(threat_model)
        if not entries:
            return if_empty
        if any(not entry.event.guarantee.is_finite for entry in entries):
            return if_unbounded
        candidates = []
        for name in self._methods(method, entries):
            if name in closed_forms:
                candidates.append(closed_forms[name](entries))
            else:
                pld = self._pld_or_none(entries, required=self._method(method) == "pld")
                if pld is not None:
                    candidates.append(from_pld(pld))
        return min(candidates)

    def _epsilon(self, delta: float, threat_model: ThreatModel | str, method: str | None) -> float:
        closed_forms = {
            "basic": lambda entries: _basic_epsilon(entries, delta),
            "advanced": lambda entries: _advanced_epsilon(entries, delta),
            "optimal": lambda entries: _optimal_epsilon(entries, delta),
            "gaussian": lambda entries: _gaussian_epsilon(entries, delta),
        }
        return self._best_of_methods(
            threat_model, method, if_empty=0.0, if_unbounded=math.inf, closed_forms=closed_forms,
            from_pld=lambda pld: pld.epsilon(delta),
        )

    def delta(
        self, epsilon: float, *, threat_model: ThreatModel | str = ThreatModel.COMMUNICATION, method: str | None = None
    ) -> float:
        """Total delta at ``epsilon`` for the given threat model (1.0 if unattainable)."""
        epsilon = check_real(epsilon, "epsilon", "PrivacyAccountant.delta", low=0.0)
        closed_forms = {
            "basic": lambda entries: _basic_delta(entries) if _basic_sum(entries, "epsilon") <= epsilon else 1.0,
            "advanced": lambda entries: _advanced_delta(entries, epsilon),
            "optimal": lambda entries: optimal_composition_delta(*_homogeneous(entries), epsilon),
            "gaussian": lambda entries: min(
                1.0, gaussian_delta(epsilon, sigma=_gaussian_ratio(entries), sensitivity=1.0) * (1.0 + _CLOSED_FORM_MARGIN)
            ),
        }
        return self._best_of_methods(
            threat_model, method, if_empty=0.0, if_unbounded=1.0, closed_forms=closed_forms,
            from_pld=lambda pld: pld.delta(epsilon),
        )

    def guarantee(
        self, delta: float, *, threat_model: ThreatModel | str = ThreatModel.COMMUNICATION, method: str | None = None
    ) -> PrivacyGuarantee:
        """The total guarantee ``(epsilon(delta), delta)`` under the accountant's relation."""
        return PrivacyGuarantee(self.epsilon(delta, threat_model=threat_model, method=method), delta, self.neighbouring)

    def report(self, delta: float) -> str:
        """A plain-text ledger with the totals under both threat models."""
        lines = [f"Privacy ledger ({self.neighbouring.value})"]
        for index, entry in enumerate(self._entries, 1):
            seen = "communication+model" if entry.visible_to_model else "communication only"
            lines.append(
                f"  {index}. {entry.label or type(entry.event).__name__} x{entry.count}: {entry.event.guarantee} [{seen}]"
            )
        for threat in ThreatModel:
            lines.append(f"  total, {threat.value} threat: {self.guarantee(delta, threat_model=threat)}")
        return "\n".join(lines)

    def _observed(self, threat_model: ThreatModel | str) -> list[LedgerEntry]:
        threat = ThreatModel.parse(threat_model, "PrivacyAccountant")
        return [entry for entry in self._entries if entry.observed_under(threat)]

    def _method(self, method: str | None) -> str:
        return self.method if method is None else check_choice(method, "method", "PrivacyAccountant", COMPOSITION_METHODS)

    def _methods(self, method: str | None, entries: list[LedgerEntry]) -> tuple[str, ...]:
        """The methods to evaluate: the one asked for, or under ``"best"`` every certified one that may be smallest.

        Under ``"best"`` an exact closed form replaces the PLD (which, certified, is never below
        the exact value): the Gaussian composition when every event is a `GaussianEvent`, and
        the optimal composition when every event is one and the same `GuaranteeEvent` headline
        (its worst case is exactly what the PLD of a guarantee composes).
        """
        chosen = self._method(method)
        if chosen != "best":
            return (chosen,)
        if _gaussian_ratio(entries) is not None:
            return ("basic", "advanced", "optimal", "gaussian")
        if _same_guarantee_events(entries):
            return ("basic", "advanced", "optimal")
        return ("basic", "advanced", "optimal", "pld")

    def _pld(self, entries: list[LedgerEntry]) -> PLDPair:
        total = entries[0].composed.pld(self.discretization)
        for entry in entries[1:]:
            total = total.compose(entry.composed.pld(self.discretization))
        return total

    def _pld_or_none(self, entries: list[LedgerEntry], *, required: bool) -> PLDPair | None:
        """The composed PLD; ``None`` under ``"best"`` when a count is too large for the discretisation
        (the closed-form bounds are then reported), raising under ``"pld"``."""
        try:
            return self._pld(entries)
        except InvalidParameterError:
            if required:
                raise
            return None

    def _pure_epsilon(self, threat_model: ThreatModel) -> float:
        entries = self._observed(threat_model)
        if any(not entry.event.guarantee.is_pure for entry in entries):
            return math.inf
        return _basic_sum(entries, "epsilon")


def _basic_sum(entries: list[LedgerEntry], field: str) -> float:
    """``sum_j count_j * headline_j.field``, equal to ``fsum`` over the expanded list (no list is built)."""
    return exact_weighted_sum((getattr(entry.event.guarantee, field), entry.count) for entry in entries)


def _basic_delta(entries: list[LedgerEntry]) -> float:
    return _basic_sum(entries, "delta")


def _basic_epsilon(entries: list[LedgerEntry], delta: float) -> float:
    if _basic_delta(entries) > delta:
        return math.inf
    return _basic_sum(entries, "epsilon")


def _advanced_terms(entries: list[LedgerEntry]) -> tuple[float, float, float]:
    """Sum of epsilon_j^2, sum of epsilon_j (e^epsilon_j - 1) (``inf`` past float range), and sum of delta_j."""
    squares = math.fsum(e.count * e.event.guarantee.epsilon**2 for e in entries)
    drift = math.fsum(e.count * drift_term(e.event.guarantee.epsilon) for e in entries)
    deltas = math.fsum(e.count * e.event.guarantee.delta for e in entries)
    return squares, drift, deltas


def _advanced_epsilon(entries: list[LedgerEntry], delta: float) -> float:
    """Heterogeneous advanced composition: ``sqrt(2 log(1/d') sum eps_j^2) + sum eps_j(e^eps_j - 1)``.

    With identical events this is `advanced_composition_epsilon` (the form of Theorem 3.2 of Wagner (ICLR 2025)).
    """
    squares, drift, deltas = _advanced_terms(entries)
    slack = delta - deltas
    if not (slack > 0 and math.isfinite(squares)):
        return math.inf
    return math.sqrt(2.0 * squares * math.log(1.0 / slack)) + drift


def _advanced_delta(entries: list[LedgerEntry], epsilon: float) -> float:
    squares, drift, deltas = _advanced_terms(entries)
    if not (epsilon > drift and math.isfinite(squares)):
        return 1.0
    slack = math.exp(-((epsilon - drift) ** 2) / (2.0 * squares)) if squares > 0 else 0.0
    return min(1.0, deltas + slack)


def _homogeneous(entries: list[LedgerEntry]) -> tuple[PrivacyGuarantee, int]:
    """Every run is ``(max epsilon_j, max delta_j)``-DP: that guarantee, and the number of runs.

    A `ComposedEvent` counts as its runs of the event inside it (with that event's headline).
    """
    runs = [_innermost_runs(entry.event, entry.count) for entry in entries]
    worst = PrivacyGuarantee(
        max(guarantee.epsilon for guarantee, _ in runs),
        max(guarantee.delta for guarantee, _ in runs),
        entries[0].event.guarantee.neighbouring,
    )
    return worst, sum(count for _, count in runs)


def _innermost_runs(event: PrivacyEvent, count: int) -> tuple[PrivacyGuarantee, int]:
    event, count = _innermost(event, count)
    return event.guarantee, count


def _optimal_floor(entries: list[LedgerEntry]) -> float:
    """``1 - (1 - delta_max)^K``: the optimal composition's delta at epsilon ``K epsilon_max`` (and beyond)."""
    return optimal_composition_floor(*_homogeneous(entries))


def _optimal_epsilon(entries: list[LedgerEntry], delta: float) -> float:
    worst, count = _homogeneous(entries)
    if not delta > _optimal_floor(entries):
        return math.inf
    return optimal_composition(worst, count, delta).epsilon


def _innermost(event: PrivacyEvent, count: int) -> tuple[PrivacyEvent, int]:
    """The event inside `ComposedEvent` and `RelationEvent` wrappers, and how many times it runs."""
    while isinstance(event, (ComposedEvent, RelationEvent)):
        if isinstance(event, ComposedEvent):
            count *= event.count
        event = event.event
    return event, count


def _same_guarantee_events(entries: list[LedgerEntry]) -> bool:
    """Whether every run is a `GuaranteeEvent` with one and the same ``(epsilon, delta)``."""
    events = [_innermost(entry.event, entry.count)[0] for entry in entries]
    if not all(isinstance(event, GuaranteeEvent) for event in events):
        return False
    return len({(event.guarantee.epsilon, event.guarantee.delta) for event in events}) == 1


def _gaussian_epsilon(entries: list[LedgerEntry], delta: float) -> float:
    """The exact composition's epsilon (`_gaussian_ratio`), ``inf`` at ``delta = 0`` or beyond ``10^6``."""
    if not delta > 0.0:
        return math.inf
    try:
        return gaussian_epsilon(delta * (1.0 - _CLOSED_FORM_MARGIN), sigma=_gaussian_ratio(entries), sensitivity=1.0)
    except InvalidParameterError:  # no epsilon up to 10^6 meets delta
        return math.inf


def _gaussian_ratio(entries: list[LedgerEntry]) -> float | None:
    """``sigma / Delta`` of the one Gaussian mechanism all entries compose to, or ``None`` if some event is not Gaussian.

    ``k`` releases with noise ``sigma_j`` and sensitivity ``Delta_j`` (adaptively chosen or not)
    are exactly as private as one release with ``(Delta / sigma)^2 = sum_j k_j (Delta_j / sigma_j)^2``
    (the Gaussian mechanisms' trade-off functions compose to a Gaussian one: Dong, Roth & Su,
    "Gaussian Differential Privacy", JRSS-B 2022, Corollary 3.3).
    """
    total = 0.0
    for entry in entries:
        event, count = _innermost(entry.event, entry.count)
        if not isinstance(event, GaussianEvent):
            return None
        total += count * (event.sensitivity / event.sigma) ** 2
    if not (total > 0.0 and math.isfinite(total)):
        return None
    return 1.0 / (math.sqrt(total) * (1.0 + _CLOSED_FORM_MARGIN))  # rounded down: less noise is never more private
