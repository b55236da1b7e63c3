"""`SkellamVectorSum.from_privacy`'s search: candidate scales and share budgets, and the one with the fewest bits."""

from __future__ import annotations

import math
from typing import Any

from privsum._validation import check_integer, invalid
from privsum.sums.split_and_mix import share_distance_bound, share_distance_floor

__all__ = ["candidates", "coordinate_bound", "fewest_bits", "least_modulus", "share_value_mass"]

_LARGEST_BESSEL_ARGUMENT = 1e8  # scipy's ive(0, x) is accurate up to here (nan beyond about 1e9)


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


def candidates(
    epsilon: float, scales: list[float], fractions: tuple[float, ...], wrap_fraction: float, common: dict[str, Any]
) -> list[tuple[float, float, float, int, float]]:
    """``(variance, gamma, mu, q, share distance allowed)`` for every scale and share fraction that fits in ``2^46``."""
    from privsum.sums import skellam as sk  # the protocol's own bounds (imported on use: it imports this module)

    n_users, dimension, delta = common["n_users"], common["dimension"], common["delta"]
    options = []
    for fraction in fractions:
        noise_delta = delta * (1 - fraction - wrap_fraction) - 2.0**sk._RETRY_FAILURE_LOG2
        distance = delta * fraction / (1 + math.exp(epsilon))
        for gamma in scales:
            if not gamma * common["norm_bound"] * (1 + sk.NORM_TOLERANCE) < sk.MAX_SCALED_NORM:
                continue
            mu = sk._calibrate_mu(epsilon, noise_delta, gamma=gamma, **common)
            modulus = least_modulus(n_users, coordinate_bound(gamma, **common), mu, delta * wrap_fraction, dimension)
            if modulus > sk.SPARSE_MAX_MODULUS:
                continue
            variance = (2 * mu + n_users / (4 * (1 - common["rejection_probability"]))) / gamma**2
            options.append((variance, gamma, mu, modulus, distance))
    return options


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
    from privsum.sums.skellam import MAX_SHARES

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
    from privsum.sums.skellam import MAX_SHARES

    return next(
        (
            m
            for m in range(start, MAX_SHARES + 1)
            if share_distance_floor(n_users, m, modulus, dimension) <= distance
            and share_distance_bound(n_users, m, modulus, dimension, value_mass=mass) <= distance
        ),
        None,
    )


def coordinate_bound(gamma: float, *, dimension: int, norm_bound: float, rejection_probability: float, **_: Any) -> int:
    """The largest rounded coordinate: the conditional rounding's L2 bound, and at most ``ceil(gamma c)``."""
    from privsum.sums import skellam as sk

    radius = gamma * norm_bound * (1 + sk.NORM_TOLERANCE)
    l2 = sk.conditional_rounding_l2_bound(radius, dimension, rejection_probability)
    return min(math.floor(l2), math.ceil(radius))


def least_modulus(n_users: int, coordinate_bound: int, mu: float, wrap_probability: float, dimension: int) -> int:
    """Least ``q`` with ``q // 2 - 1 >= n B + t``, ``t`` the Chernoff tail of ``Sk(mu)`` (union over coordinates).

    The decoder maps residues to ``(-(q/2 - 1), q/2]``, so the even ``q = 2 (n B + t + 1)`` is the least
    holding every noisy sum in ``[-(n B + t), n B + t]``.
    """
    from privsum.sums.skellam import skellam_tail

    tail = skellam_tail(mu, wrap_probability / dimension)
    return 2 * (n_users * coordinate_bound + tail + 1)
