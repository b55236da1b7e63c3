"""`SkellamVectorSum.from_privacy`'s search: candidate scales and share budgets, and the one with the fewest bits."""

from __future__ import annotations

import math
from typing import Any

from privsum._validation import check_integer, invalid
from privsum.sums.split_and_mix import share_distance_bound

__all__ = ["candidates", "fewest_bits"]


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
            modulus = sk._least_modulus(n_users, sk._coordinate_bound(gamma, **common), mu, delta * wrap_fraction, dimension)
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

    Widths ``ceil(log2 q)`` are visited in increasing order: the least share count cannot fall as ``q``
    grows (both share bounds increase with ``q``), so a width whose bits at the last width's share
    count already exceed the best is not evaluated.
    """
    from privsum.sums.skellam import MAX_SHARES

    if n_shares is not None:
        n_shares = check_integer(n_shares, "n_shares", owner, low=2, high=MAX_SHARES)
    least = min(option[0] for option in options)
    admissible = sorted((math.ceil(math.log2(o[3])), o[0], o) for o in options if o[0] <= least * (1 + allowance))
    best: tuple[int, float, float, float, int, int] | None = None
    fewest: int | None = None  # least share count the bound allows, when the given n_shares is below it
    floor: dict[float, int] = {}  # per share distance, the least share count at the widths visited
    for width, variance, (_, gamma, mu, modulus, distance) in admissible:
        start = floor.get(distance, 2)
        if best is not None and width * start > best[0]:
            continue
        least_shares = next(
            (m for m in range(start, MAX_SHARES + 1) if share_distance_bound(n_users, m, modulus, dimension) <= distance), None
        )
        if least_shares is None:
            continue
        floor[distance] = least_shares
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
