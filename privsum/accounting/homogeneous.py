"""The optimal composition of ``k`` mechanisms that are each ``(epsilon0, delta0)``-DP.

Every ``(epsilon0, delta0)``-DP mechanism is dominated by one pair of distributions on four
outcomes (Kairouz, Oh & Viswanath): with probability ``delta0`` an outcome only the first input
produces, with ``delta0`` one only the second produces, and otherwise randomized response with
ratio ``e^epsilon0``. The ``k``-fold product of that pair is therefore the worst case of any
``k``-fold (adaptive) composition, and its hockey-stick divergence has a closed form:

    delta(epsilon) = 1 - (1 - delta0)^k
                     + (1 - delta0)^k * (P[I <= j] - e^epsilon * Q[I <= j]),

with ``I`` the number of "low" randomized-response outcomes, ``Bin(k, 1/(1 + e^epsilon0))``
under the first input and ``Bin(k, e^epsilon0/(1 + e^epsilon0))`` under the second, and ``j`` the
largest count whose privacy loss ``(k - 2j) epsilon0`` exceeds ``epsilon``. Between consecutive
losses the curve is ``A - e^epsilon B``, so the epsilon at a target delta is found exactly: a
binary search over the ``k/2`` pieces, then a logarithm. The work is ``O(log k)`` binomial
distribution functions, whatever ``k``.

References:
    Kairouz, Oh & Viswanath, "The Composition Theorem for Differential Privacy", ICML 2015.
    Murtagh & Vadhan, "The Complexity of Computing the Optimal Composition of Differential
    Privacy", TCC 2016.
"""

from __future__ import annotations

import math

from privsum._validation import check_delta, check_integer, check_real, invalid
from privsum.accounting.guarantee import PrivacyGuarantee

__all__ = ["optimal_composition", "optimal_composition_delta", "optimal_composition_floor"]

# Float error of the binomial distribution functions (scipy's regularised incomplete beta, within
# 1e-13 relative of 40-digit term sums in the tests; the central limit is checked at k = 10^12), covered
# with a wide margin: every delta is raised by this fraction of the two terms whose difference it
# is, so a computed delta is never below the exact one.
_CDF_MARGIN = 1e-10
# Probabilities below this may have underflowed to zero: added to every delta below epsilon = k epsilon0.
_UNDERFLOW = 1e-300


def optimal_composition_delta(guarantee: PrivacyGuarantee, count: int, epsilon: float) -> float:
    """The exact delta at ``epsilon`` of ``count`` compositions of ``guarantee`` (an upper bound by a margin of 1e-12).

    Args:
        guarantee: the ``(epsilon0, delta0)`` of each mechanism.
        count: how many mechanisms are composed (``k >= 1``).
        epsilon: where to evaluate, ``>= 0``.

    Returns:
        The smallest delta such that every ``k``-fold adaptive composition of
        ``(epsilon0, delta0)``-DP mechanisms is ``(epsilon, delta)``-DP, plus at most
        ``1e-12`` times the two probabilities it is the difference of (float error).

    Privacy:
        Tight for the worst mechanism with this guarantee, under the guarantee's neighbouring
        relation (Kairouz, Oh & Viswanath, ICML 2015).

    Examples:
        >>> g = PrivacyGuarantee(0.1, 0.0)
        >>> round(optimal_composition_delta(g, 2, 0.0), 6)  # total variation of two RR(0.1) draws
        0.049958
    """
    owner = "optimal_composition_delta"
    epsilon0, delta0, count = _checked(guarantee, count, owner)
    epsilon = check_real(epsilon, "epsilon", owner, low=0.0)
    if math.isinf(epsilon0):
        return 1.0
    kept, floor = _atoms(delta0, count)
    if epsilon >= count * epsilon0:
        return floor
    index = _piece_index(epsilon, epsilon0, count)
    return min(1.0, floor + kept * _randomized_response_delta(index, epsilon, epsilon0, count))


def optimal_composition(guarantee: PrivacyGuarantee, count: int, delta: float) -> PrivacyGuarantee:
    """The least epsilon at ``delta`` of ``count`` compositions of ``guarantee`` (optimal composition).

    Args:
        guarantee: the ``(epsilon0, delta0)`` of each mechanism.
        count: how many mechanisms are composed (``k >= 1``).
        delta: the composed delta, in ``[0, 1)``; it must exceed ``1 - (1 - delta0)^k``.

    Returns:
        ``(epsilon, delta)`` under the guarantee's relation, with ``epsilon`` the least value whose
        `optimal_composition_delta` is at most ``delta`` (rounded up).

    Raises:
        InvalidParameterError: ``delta`` is at most ``1 - (1 - delta0)^k`` (no finite epsilon).

    Privacy:
        Adaptive composition of any mechanisms that are each ``(epsilon0, delta0)``-DP, under the
        guarantee's neighbouring relation; tight for the worst such mechanisms (Kairouz, Oh &
        Viswanath, "The Composition Theorem for Differential Privacy", ICML 2015), so never above
        advanced composition or a PLD composition of the same pair.

    Examples:
        >>> g = optimal_composition(PrivacyGuarantee(0.1, 1e-9), 100, 1e-6)
        >>> round(g.epsilon, 3), g.delta  # advanced composition: 6.328; basic: 10
        (4.788, 1e-06)
    """
    owner = "optimal_composition"
    epsilon0, delta0, count = _checked(guarantee, count, owner)
    delta = check_delta(delta, owner)
    kept, floor = _atoms(delta0, count)
    if not delta > floor:
        raise invalid("delta", owner, f"above 1 - (1 - delta0)^k = {floor:.6g} for a finite epsilon", delta)
    if math.isinf(epsilon0):
        raise invalid("guarantee", owner, "a finite epsilon0", guarantee)
    residual = (delta - floor) / kept  # what the randomized-response part may contribute
    epsilon = _least_epsilon(residual, epsilon0, count)
    return PrivacyGuarantee(epsilon, delta, guarantee.neighbouring)


def optimal_composition_floor(guarantee: PrivacyGuarantee, count: int) -> float:
    """``1 - (1 - delta0)^k`` (rounded up): the composed delta at every epsilon ``>= k epsilon0``, and its infimum.

    Examples:
        >>> round(optimal_composition_floor(PrivacyGuarantee(1.0, 1e-8), 100), 12)
        1e-06
    """
    _, delta0, count = _checked(guarantee, count, "optimal_composition_floor")
    return _atoms(delta0, count)[1]


def _checked(guarantee: PrivacyGuarantee, count: int, owner: str) -> tuple[float, float, int]:
    if not isinstance(guarantee, PrivacyGuarantee):
        raise invalid("guarantee", owner, "a PrivacyGuarantee", guarantee)
    return guarantee.epsilon, guarantee.delta, check_integer(count, "count", owner, low=1)


def _atoms(delta0: float, count: int) -> tuple[float, float]:
    """``(1 - delta0)^k`` (no draw in a ``delta0`` atom) and ``1 - (1 - delta0)^k`` rounded up by the margin."""
    log_kept = count * math.log1p(-delta0)
    return math.exp(log_kept), min(1.0, -math.expm1(log_kept) * (1.0 + _CDF_MARGIN))


def _piece_index(epsilon: float, epsilon0: float, count: int) -> int:
    """The largest ``j`` with loss ``(count - 2j) epsilon0 > epsilon`` (``epsilon < count * epsilon0``)."""
    index = math.ceil((count - epsilon / epsilon0) / 2.0) - 1
    while index >= 0 and (count - 2 * index) * epsilon0 <= epsilon:  # float rounding of the ratio
        index -= 1
    while (count - 2 * (index + 1)) * epsilon0 > epsilon:
        index += 1
    return index


def _piece(index: int, epsilon0: float, count: int) -> tuple[float, float]:
    """``(P[I <= index], Q[I <= index])``: the masses whose loss exceeds the piece's epsilons.

    ``I`` is ``Bin(k, b)`` under the first input and ``Bin(k, 1 - b)`` under the second, with
    ``b = 1/(1 + e^epsilon0)``; the second is read as the upper tail ``P[Bin(k, b) >= k - index]``
    so that ``1 - b`` is never rounded to one.
    """
    from scipy.special import betainc, betaincc  # scipy.special only: a light import

    if index < 0:
        return 0.0, 0.0
    low = 1.0 / (1.0 + math.exp(min(epsilon0, 700.0)))
    # P[Bin(k, b) <= j] = 1 - I_b(j + 1, k - j) and P[Bin(k, b) >= k - j] = I_b(k - j, j + 1)
    return float(betaincc(index + 1, count - index, low)), float(betainc(count - index, index + 1, low))


def _randomized_response_delta(index: int, epsilon: float, epsilon0: float, count: int) -> float:
    first, second = _piece(index, epsilon0, count)
    log_scaled = epsilon + math.log(second) if second > 0.0 else -math.inf
    if log_scaled > 1.0:  # e^epsilon Q[...] exceeds every probability: only the margin remains
        return _UNDERFLOW
    return max(0.0, (1.0 + _CDF_MARGIN) * first - (1.0 - _CDF_MARGIN) * math.exp(log_scaled)) + _UNDERFLOW


def _least_epsilon(residual: float, epsilon0: float, count: int) -> float:
    """Least epsilon in ``[0, count * epsilon0]`` whose randomized-response delta is at most ``residual``."""

    def delta_at_loss(index: int) -> float:  # delta at the breakpoint epsilon = (count - 2 index) epsilon0
        return _randomized_response_delta(index - 1, (count - 2 * index) * epsilon0, epsilon0, count)

    if residual <= _UNDERFLOW:
        return count * epsilon0  # every finite loss is at most k epsilon0
    # Breakpoints get more private as the index falls (larger epsilon); index 0 (epsilon = k eps0) has delta 0.
    feasible, infeasible = 0, count // 2 + 1
    while infeasible - feasible > 1:
        middle = (feasible + infeasible) // 2
        if delta_at_loss(middle) <= residual:
            feasible = middle
        else:
            infeasible = middle
    # On (loss(feasible + 1), loss(feasible)) the delta is (1 + m) A - e^eps (1 - m) B with the masses of I <= feasible.
    first, second = _piece(feasible, epsilon0, count)
    upper = (count - 2 * feasible) * epsilon0
    lower = max((count - 2 * feasible - 2) * epsilon0, 0.0)
    numerator = (1.0 + _CDF_MARGIN) * first - residual
    if numerator <= 0.0:
        return lower
    if second <= 0.0:  # underflowed: no finite solution on the piece is certified
        return upper
    epsilon = min(max(math.log(numerator / ((1.0 - _CDF_MARGIN) * second)), lower), upper)
    while epsilon < upper and _randomized_response_delta(feasible, epsilon, epsilon0, count) > residual:
        epsilon = math.nextafter(epsilon, math.inf)  # the logarithm's rounding: step up to a verified value
    return epsilon
