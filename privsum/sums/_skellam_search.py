"""`SkellamVectorSum.from_privacy`: the search over scales and share budgets for the fewest bits per user.

`SkellamCalibration` (mixed into `SkellamVectorSum`) holds `from_privacy`. At every candidate scale and
split of delta, `candidates` calibrates the noise (`least_mu`, on the conditional rounding's bounds at
that scale) and sizes the modulus (`least_modulus`); `fewest_bits` then picks the candidate with the
fewest bits per user within the accuracy allowance, with the least share count the share bound allows.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from privsum._conditional_rounding import (
    MAX_DIMENSION,
    MAX_SCALED_NORM,
    RETRY_FAILURE_LOG2,
    RoundingAt,
    integer_l1_bound,
    root_up,
)
from privsum._validation import check_choice, check_delta, check_epsilon, check_integer, check_real, invalid
from privsum.accounting import Neighbouring, calibrate
from privsum.accounting.skellam import RDP_ORDERS, SkellamEvent, rdp_delta
from privsum.sums.labelled_rows import check_label_parameters, labelled_row_shifts
from privsum.sums.sparse_shares import SPARSE_MAX_MODULUS
from privsum.sums.split_and_mix import share_distance_bound, share_distance_floor

if TYPE_CHECKING:
    from privsum.sums.skellam import SkellamVectorSum

__all__ = [
    "COMMON_FIELDS",
    "MAX_SHARES",
    "NORM_TOLERANCE",
    "REFINEMENT",
    "RELATIONS",
    "SCALE_GRID",
    "SHARE_FRACTIONS",
    "SkellamCalibration",
    "candidates",
    "checked_common",
    "fewest_bits",
    "least_modulus",
    "least_mu",
    "neighbour_shifts",
    "share_value_mass",
    "skellam_tail",
]

NORM_TOLERANCE = 1e-9  # relative slack on the norm check (unit vectors normalised in floating point)
RELATIONS = (Neighbouring.REPLACE_ONE, Neighbouring.ZERO_OUT)  # the relations `neighbour_shifts` bounds
#: The protocol's fields that `from_privacy` takes from the caller (checked by `checked_common`, as the constructor checks them).
COMMON_FIELDS = (
    "n_users",
    "dimension",
    "norm_bound",
    "delta",
    "rejection_probability",
    "neighbouring",
    "label_rows",
    "count_weight",
)
MAX_SHARES = 1024  # shares per coordinate: sums of m residues below 2^46 stay below 2^63
#: Largest ``norm_bound`` and least ``scale``: a variance ``(2 mu + n/4) / scale^2`` stays a finite float.
MAX_NORM_BOUND = 2.0**400
MIN_SCALE = 2.0**-400
SCALE_GRID = tuple(2.0**k for k in range(2, 21))  # candidate gamma * norm_bound, refined near the accuracy boundary
REFINEMENT = (2.0**-0.75, 2.0**-0.5, 2.0**-0.25, 2.0**0.25, 2.0**0.5, 2.0**0.75, 2.0**1.25, 2.0**1.5, 2.0**1.75)
SHARE_FRACTIONS = (0.01, 0.03, 0.1, 0.3)  # candidate parts of delta for the shares
_LARGEST_BESSEL_ARGUMENT = 1e8  # scipy's ive(0, x) is accurate up to here (nan beyond about 1e9)


class SkellamCalibration:
    """Mixed into `SkellamVectorSum`: `from_privacy`, the protocol with the fewest bits per user meeting a target."""

    @classmethod
    def from_privacy(
        cls,
        *,
        epsilon: float,
        delta: float,
        n_users: int,
        dimension: int,
        norm_bound: float,
        neighbouring: Neighbouring | str = Neighbouring.REPLACE_ONE,
        calibration: str = "tight",
        scale: float | None = None,
        n_shares: int | None = None,
        rejection_probability: float = 1e-6,
        share_delta_fraction: float | None = None,
        wrap_delta_fraction: float = 0.001,
        variance_allowance: float = 0.05,
        label_rows: int = 0,
        count_weight: float = 0.0,
    ) -> SkellamVectorSum:
        """The fewest bits per user meeting ``(epsilon, delta)`` within a stated accuracy loss.

        The delta budget is split: ``share_delta_fraction`` for the split-and-mix distance (which
        fixes ``m``), ``wrap_delta_fraction`` for the wrap-around (which fixes ``q``), the rest for
        the noise, whose ``mu`` is the least (by bisection, on the safe side) whose Rényi bound
        meets ``epsilon``. ``q`` is the least modulus whose wrap-around probability is within its
        part (any integer: a power of two only where it happens to be the least), and ``m`` the
        least share count whose distance bound (`privsum.sums.split_and_mix.share_distance_bound`,
        the smaller of the chi-square bound averaged over the noise shares and BBGN20's) is within
        the shares' part. The search
        runs over ``gamma`` in octaves of ``2^2 .. 2^20`` over ``norm_bound``, refined to quarter
        octaves around the least admissible one (or the given ``scale``), and over share fractions
        ``0.01, 0.03, 0.1, 0.3`` (or the given one): among the candidates whose worst-case
        per-coordinate variance (`variance`) is within
        ``1 + variance_allowance`` of the least found, it takes the fewest bits per user
        (`bits_per_user`), then the least variance. The result's guarantee never exceeds the target.

        Args:
            epsilon: target epsilon.
            delta: target delta in ``(0, 1)``.
            n_users: number of users (at least 3).
            dimension: ``d``.
            norm_bound: ``c``, at most ``MAX_NORM_BOUND = 2^400``.
            neighbouring: ``"replace-one"`` or ``"zero-out"``.
            calibration: ``"tight"`` (the only one: the Rényi bound with the tight conversion).
            scale: ``gamma``; ``None`` searches it.
            n_shares: ``m``; ``None`` takes the least the share bound allows; fewer raise.
            rejection_probability: ``beta`` (see the class).
            share_delta_fraction: part of ``delta`` for the shares; ``None`` searches it.
            wrap_delta_fraction: part of ``delta`` for the wrap-around.
            variance_allowance: the accuracy loss accepted for fewer bits: variance at most
                ``1 + variance_allowance`` times the least variance of the search (``0`` takes the
                most accurate candidate).
            label_rows: ``C >= 2`` for labelled-row vectors (`privsum.sums.labelled_rows`: one of
                ``C`` rows, whose last coordinate is ``count_weight``), calibrated for their exact
                replace-one shift; ``0`` (default) for plain vectors.
            count_weight: the count coordinate of labelled rows (in ``(0, norm_bound]``).
        """
        owner = f"{cls.__name__}.from_privacy"
        epsilon = check_epsilon(epsilon, owner)
        common = checked_common(
            {
                "n_users": n_users,
                "dimension": dimension,
                "norm_bound": norm_bound,
                "delta": delta,
                "rejection_probability": rejection_probability,
                "neighbouring": neighbouring,
                "label_rows": label_rows,
                "count_weight": count_weight,
            },
            owner,
        )
        n_users, dimension, norm_bound, delta = common["n_users"], common["dimension"], common["norm_bound"], common["delta"]
        check_choice(calibration, "calibration", owner, ("tight",))
        wrap_fraction = check_real(wrap_delta_fraction, "wrap_delta_fraction", owner, low=0.0, high=0.5, low_open=True)
        allowance = check_real(variance_allowance, "variance_allowance", owner, low=0.0, high=1.0)
        if share_delta_fraction is None:
            fractions = SHARE_FRACTIONS
        else:
            fractions = (check_real(share_delta_fraction, "share_delta_fraction", owner, low=0.0, high=0.5, low_open=True),)
        if not delta * (1 - max(fractions) - wrap_fraction) - 2.0**RETRY_FAILURE_LOG2 > 0:
            raise invalid("delta", owner, "above 2^-80 (the rounding's failure probability)", delta)
        scales = [g / norm_bound for g in SCALE_GRID] if scale is None else [check_real(scale, "scale", owner, low=MIN_SCALE)]
        options = candidates(epsilon, scales, fractions, wrap_fraction, common)
        if scale is None and options:  # quarter octaves around the least admissible scale, where bits are fewest
            least = min(option[0] for option in options)
            lowest = min(option[1] for option in options if option[0] <= least * (1 + allowance))
            options += candidates(epsilon, [lowest * factor for factor in REFINEMENT], fractions, wrap_fraction, common)
        if not options:
            raise invalid(
                "scale" if scale is not None else "n_users", owner, "small enough that the modulus fits in 2^46", scale or n_users
            )
        gamma, mu, modulus, shares = fewest_bits(options, allowance, n_shares, owner, n_users, dimension)
        protocol = cls(scale=gamma, noise_mu=mu, n_shares=shares, modulus=modulus, **common)  # type: ignore[call-arg]
        for _ in range(60):  # float rounding in the conversion: never return a protocol above the target
            if protocol.guarantee.epsilon <= epsilon:
                return protocol
            protocol = cls(  # type: ignore[call-arg]
                scale=gamma, noise_mu=protocol.noise_mu * (1 + 1e-9), n_shares=shares, modulus=modulus, **common
            )
        raise invalid("epsilon", owner, "reachable by the calibration", epsilon)  # pragma: no cover - defensive


def skellam_tail(mu: float, probability: float) -> int:
    """Least integer ``t`` with ``P(|Sk(mu)| > t) <= probability`` by the Chernoff bound.

    ``E exp(lambda K) = exp(2 mu (cosh(lambda) - 1))`` for ``K ~ Sk(mu)``, so
    ``P(K >= t) <= exp(-t asinh(t / 2mu) + 2 mu (sqrt(1 + (t / 2mu)^2) - 1))`` and the two tails
    are equal.

    Examples:
        >>> skellam_tail(100.0, 1e-9) > 6 * math.sqrt(200)
        True
    """
    from scipy.optimize import brentq  # imported where a modulus is sized

    owner = "skellam_tail"
    mu = check_real(mu, "mu", owner, low=1e-300, high=1e300)  # 2 mu and t / 2 mu stay finite
    probability = check_real(probability, "probability", owner, low=0.0, high=1.0, low_open=True)
    target = math.log(2 / probability)

    def exponent(t: float) -> float:
        ratio = t / (2 * mu)
        return t * math.asinh(ratio) - 2 * mu * (math.hypot(1.0, ratio) - 1) - target  # hypot: no overflow of ratio^2

    upper = 1.0
    while exponent(upper) < 0:
        upper *= 2
    return math.ceil(brentq(exponent, 0.0, upper, xtol=1e-6)) + 1


def share_value_mass(rate: float, modulus: int) -> float:
    """Upper bound on ``max_v P(N = v mod q)`` for one user's noise share ``N = Pois(rate) - Pois(rate)``.

    The Skellam law is symmetric and unimodal, so its largest mass is ``P(N = 0) = e^(-2 rate) I_0(2 rate)``
    (evaluated at ``min(2 rate, 1e8)``: it falls with the rate); the other representatives of a residue
    lie at ``|v| >= q/2``, whose total is at most the Chernoff tail
    ``2 exp(-(t asinh(t / 2 rate) - 2 rate (sqrt(1 + (t / 2 rate)^2) - 1)))``, ``t = q/2``; the float
    evaluation is rounded up by ``1e-9`` relative.

    Examples:
        >>> 0.0154 < share_value_mass(333.0, 2**20) < 0.0159
        True
    """
    from scipy.special import ive  # imported where a share count is sized

    half = modulus / 2
    ratio = half / (2 * rate)
    exponent = half * math.asinh(ratio) - 2 * rate * (math.hypot(1.0, ratio) - 1)
    peak = float(ive(0, min(2 * rate, _LARGEST_BESSEL_ARGUMENT)))  # e^-x I_0(x) falls with x: capping x is safe
    mass = peak * (1 + 1e-9) + 2 * math.exp(-exponent)
    return min(1.0, mass) if math.isfinite(mass) else 1.0  # 1: the worst case over inputs, always safe


def checked_common(values: dict[str, Any], owner: str) -> dict[str, Any]:
    """The `COMMON_FIELDS` of ``values`` checked, the relation parsed and the labelled-row parameters normalised.

    One check for `from_privacy` (before its search) and the protocol's constructor.
    """
    n_users = check_integer(values["n_users"], "n_users", owner, low=3)
    dimension = check_integer(values["dimension"], "dimension", owner, low=1, high=MAX_DIMENSION)
    norm_bound = check_real(values["norm_bound"], "norm_bound", owner, low=0.0, high=MAX_NORM_BOUND, low_open=True)
    delta = check_delta(values["delta"], owner, allow_zero=False)
    beta = check_real(values["rejection_probability"], "rejection_probability", owner, low=0.0, high=0.5, low_open=True)
    relation = Neighbouring.parse(values["neighbouring"], owner, RELATIONS)
    rows = check_label_parameters(values["label_rows"], values["count_weight"], dimension, norm_bound, owner)
    return {
        "n_users": n_users,
        "dimension": dimension,
        "norm_bound": norm_bound,
        "delta": delta,
        "rejection_probability": beta,
        "neighbouring": relation,
        "label_rows": rows[0],
        "count_weight": rows[1],
    }


def candidates(
    epsilon: float, scales: list[float], fractions: tuple[float, ...], wrap_fraction: float, common: dict[str, Any]
) -> list[tuple[float, float, float, int, float]]:
    """``(variance, gamma, mu, q, share distance allowed)`` for every scale and share fraction that fits in ``2^46``."""
    n_users, dimension, delta = common["n_users"], common["dimension"], common["delta"]
    options = []
    for fraction in fractions:
        noise_delta = delta * (1 - fraction - wrap_fraction) - 2.0**RETRY_FAILURE_LOG2
        distance = delta * fraction / (1 + math.exp(epsilon))
        for gamma in scales:
            radius = gamma * common["norm_bound"] * (1 + NORM_TOLERANCE)
            if not radius < MAX_SCALED_NORM:
                continue
            rounding = RoundingAt(radius, dimension, common["rejection_probability"])
            relation, rows, weight = common["neighbouring"], common["label_rows"], common["count_weight"]
            shifts = neighbour_shifts(rounding.squared_norm_bound, dimension, gamma, relation, rows, weight)
            mu = least_mu(epsilon, noise_delta, shifts)
            modulus = least_modulus(n_users, rounding.coordinate_bound, mu, delta * wrap_fraction, dimension)
            if modulus > SPARSE_MAX_MODULUS:
                continue
            variance = (2 * mu + n_users / (4 * (1 - common["rejection_probability"]))) / gamma**2
            options.append((variance, gamma, mu, modulus, distance))
    return options


def neighbour_shifts(
    squared: int, dimension: int, scale: float, relation: Neighbouring, label_rows: int, count_weight: float
) -> tuple[float, float]:
    """L2 and L1 shift bounds: ``(Delta_2, Delta_1)`` for zero-out, twice that for replace-one, exact for labelled rows."""
    if relation is not Neighbouring.REPLACE_ONE:
        return root_up(squared), integer_l1_bound(squared, dimension)
    if label_rows:
        return labelled_row_shifts(squared, dimension, scale, label_rows, count_weight)
    return 2 * root_up(squared), 2 * integer_l1_bound(squared, dimension)


def least_mu(epsilon: float, noise_delta: float, shifts: tuple[float, float]) -> float:
    """Least ``mu`` (bisection, safe end) whose Rényi bound for these L2 and L1 shifts gives ``epsilon`` at ``noise_delta``."""
    l2_shift, l1_shift = shifts
    target = epsilon * (1 - 1e-9)

    def delta_at(log_mu: float) -> float:
        event_rdp = SkellamEvent(mu=math.exp(log_mu), l2_sensitivity=l2_shift, l1_sensitivity=l1_shift, headline_delta=0.5)
        return rdp_delta(RDP_ORDERS, event_rdp.rdp(), target)

    upper = math.log(l2_shift**2) + 2.0
    while not delta_at(upper) <= noise_delta:
        upper += 2.0
        if upper > 200:  # pragma: no cover - epsilon and delta are validated positive
            raise invalid("epsilon", "SkellamVectorSum.from_privacy", "achievable", epsilon)
    return math.exp(
        calibrate(delta_at, target_delta=noise_delta, lower=upper - 40.0, upper=upper, more_private="increasing", tolerance=1e-10)
    )


def fewest_bits(
    options: list[tuple[float, float, float, int, float]],
    allowance: float,
    n_shares: int | None,
    owner: str,
    n_users: int,
    dimension: int,
) -> tuple[float, float, int, int]:
    """Among candidates within ``1 + allowance`` of the least variance: fewest ``m ceil(log2 q)``, then least variance.

    Widths ``ceil(log2 q)`` are visited in increasing order. The share count the bound allows at the
    least value mass it accepts (``q^-1/2``) cannot fall as ``q`` grows (every factor of the
    recursion grows with ``q``, as does BBGN20's bound), and no value mass allows fewer shares; so
    it is where the search for the candidate's share count starts, and a width whose bits at that
    count already exceed the best is not evaluated.
    """
    if n_shares is not None:
        n_shares = check_integer(n_shares, "n_shares", owner, low=2, high=MAX_SHARES)
    least = min(option[0] for option in options)
    admissible = sorted((math.ceil(math.log2(o[3])), o[0], o) for o in options if o[0] <= least * (1 + allowance))
    best: tuple[int, float, float, float, int, int] | None = None
    fewest: int | None = None  # least share count the bound allows, when the given n_shares is below it
    floor: dict[float, int] = {}  # per share distance, the least share count any value mass allows at the widths visited
    for width, variance, (_, gamma, mu, modulus, distance) in admissible:
        start = _least_shares(n_users, modulus, dimension, distance, _ANY_MASS, floor.get(distance, 2))
        if start is None:
            continue
        floor[distance] = start
        if best is not None and width * start > best[0]:
            continue
        least_shares = _least_shares(n_users, modulus, dimension, distance, share_value_mass(mu / n_users, modulus), start)
        if least_shares is None:
            continue
        if n_shares is not None and n_shares < least_shares:
            fewest = least_shares if fewest is None else min(fewest, least_shares)
            continue
        bits = (least_shares if n_shares is None else n_shares) * width
        if best is None or bits < best[0]:
            best = (bits, variance, gamma, mu, modulus, least_shares if n_shares is None else n_shares)
    if best is None and fewest is not None:
        raise invalid("n_shares", owner, f"at least {fewest} (the least the share bound allows)", n_shares)
    if best is None:
        raise invalid("n_users", owner, f"large enough that at most {MAX_SHARES} shares suffice", n_users)
    return best[2], best[3], best[4], best[5]


_ANY_MASS = 1e-300  # below every value mass: the share bound then uses its least, q^-1/2


def _least_shares(n_users: int, modulus: int, dimension: int, distance: float, mass: float, start: int) -> int | None:
    """Least ``m >= start`` whose share distance bound at this value mass is within ``distance`` (``None``: none)."""
    return next(
        (
            m
            for m in range(start, MAX_SHARES + 1)
            if share_distance_floor(n_users, m, modulus, dimension) <= distance
            and share_distance_bound(n_users, m, modulus, dimension, value_mass=mass) <= distance
        ),
        None,
    )


def least_modulus(n_users: int, coordinate_bound: int, mu: float, wrap_probability: float, dimension: int) -> int:
    """Least ``q`` with ``q // 2 - 1 >= n B + t``, ``t`` the Chernoff tail of ``Sk(mu)`` (union over coordinates).

    The decoder maps residues to ``(-(q/2 - 1), q/2]``, so the even ``q = 2 (n B + t + 1)`` is the least
    holding every noisy sum in ``[-(n B + t), n B + t]``.
    """
    tail = skellam_tail(mu, wrap_probability / dimension)
    return 2 * (n_users * coordinate_bound + tail + 1)
