"""Closed forms of the shuffled-DP KDE protocol (Theorems 3.2 and 3.3 of Wagner (ICLR 2025)).

References:
    Wagner, "Learning from End User Data with Shuffled Differential Privacy over Kernel
    Densities", ICLR 2025.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from privsum._validation import check_delta, check_epsilon, check_integer, check_real, invalid

__all__ = [
    "GaussianKDEParameters",
    "gaussian_kde_parameters",
    "seed_composition_epsilon",
    "seed_per_instance_epsilon",
    "sup_rmse_bound",
]


def seed_composition_epsilon(epsilon0: float, sparsity: int, n_repetitions: int, delta_slack: float) -> float:
    """Overall epsilon of Theorem 3.2: ``e0 S (e^{e0 S} - 1) I + e0 S sqrt(2 I log(1/delta'))``.

    This is advanced composition of ``I`` mechanisms, each ``(e0 S, S delta0)``-DP; the overall
    delta is ``I S delta0 + delta'``.

    Examples:
        >>> round(seed_composition_epsilon(0.01, 1, 768, 5e-7), 4)
        1.57
    """
    owner = "seed_composition_epsilon"
    epsilon0 = check_epsilon(epsilon0, owner, "epsilon0")
    sparsity = check_integer(sparsity, "sparsity", owner, low=1)
    n_repetitions = check_integer(n_repetitions, "n_repetitions", owner, low=1)
    delta_slack = check_delta(delta_slack, owner, "delta_slack", allow_zero=False)
    per_repetition = epsilon0 * sparsity
    if per_repetition > 700.0:  # e^(e0 S) overflows: the theorem bounds nothing here
        return math.inf
    drift = per_repetition * math.expm1(per_repetition) * n_repetitions
    return drift + per_repetition * math.sqrt(2.0 * n_repetitions * math.log(1.0 / delta_slack))


def seed_per_instance_epsilon(epsilon: float, sparsity: int, n_repetitions: int, delta_slack: float) -> float:
    """The largest ``epsilon0`` whose Theorem 3.2 composition is at most ``epsilon`` (bisection).

    Examples:
        >>> e0 = seed_per_instance_epsilon(2.0, 1, 768, 5e-7)
        >>> seed_composition_epsilon(e0, 1, 768, 5e-7) <= 2.0
        True
    """
    owner = "seed_per_instance_epsilon"
    epsilon = check_epsilon(epsilon, owner)
    sparsity = check_integer(sparsity, "sparsity", owner, low=1)
    n_repetitions = check_integer(n_repetitions, "n_repetitions", owner, low=1)
    delta_slack = check_delta(delta_slack, owner, "delta_slack", allow_zero=False)
    low, high = 0.0, epsilon
    for _ in range(200):
        middle = 0.5 * (low + high)
        if middle > 0 and seed_composition_epsilon(middle, sparsity, n_repetitions, delta_slack) <= epsilon:
            low = middle
        else:
            high = middle
    if not low > 0:
        raise invalid("epsilon", "seed_per_instance_epsilon", "large enough for a positive per-instance epsilon", epsilon)
    return low


def sup_rmse_bound(*, bias: float, bound: float, sparsity: int, n_repetitions: int, instance_rmse: float, n_users: int) -> float:
    """Theorem 3.2's bound ``sqrt(4 beta^2 + 16 R^4 S (S + (E/n)^2) / I)`` on the supRMSE.

    ``instance_rmse`` is the bit-sum protocol's RMSE ``E`` on one instance.

    Examples:
        >>> round(sup_rmse_bound(bias=0.0, bound=2 ** 0.5, sparsity=1, n_repetitions=100, instance_rmse=0.0, n_users=10), 3)
        0.8
    """
    owner = "sup_rmse_bound"
    bias = check_real(bias, "bias", owner, low=0.0)
    bound = check_real(bound, "bound", owner, low=0.0, low_open=True)
    sparsity = check_integer(sparsity, "sparsity", owner, low=1)
    n_repetitions = check_integer(n_repetitions, "n_repetitions", owner, low=1)
    instance_rmse = check_real(instance_rmse, "instance_rmse", owner, low=0.0)
    n_users = check_integer(n_users, "n_users", owner, low=1)
    variance_term = 16.0 * bound**4 * sparsity * (sparsity + (instance_rmse / n_users) ** 2) / n_repetitions
    return math.sqrt(4.0 * bias**2 + variance_term)


@dataclass(frozen=True)
class GaussianKDEParameters:
    """Theorem 3.3's choice for a Gaussian KDE with target supRMSE ``alpha``.

    Attributes:
        n_repetitions: ``I = ceil(1/alpha^2)``.
        epsilon0: per-instance epsilon ``epsilon / sqrt(I log(1/delta))``.
        delta0: per-instance delta ``delta / (2I)``.
        delta_slack: ``delta' = delta / 2``.
    """

    n_repetitions: int
    epsilon0: float
    delta0: float
    delta_slack: float


def gaussian_kde_parameters(alpha: float, *, epsilon: float, delta: float) -> GaussianKDEParameters:
    """Parameters of Theorem 3.3 of Wagner (ICLR 2025) (random Fourier features with a 3NB bit sum).

    Privacy:
        Theorem 3.3 proves (epsilon, delta) up to unstated constants; compose the returned
        per-instance guarantee with `seed_composition_epsilon` (or an accountant) to see the
        guarantee actually obtained, which is what privsum reports.

    References:
        Wagner (ICLR 2025), Theorem 3.3 and Appendix A.2.

    Examples:
        >>> gaussian_kde_parameters(0.1, epsilon=1.0, delta=1e-6).n_repetitions
        100
    """
    owner = "gaussian_kde_parameters"
    alpha = check_real(alpha, "alpha", owner, low=0.0, high=1.0, low_open=True)
    epsilon = check_epsilon(epsilon, owner)
    delta = check_delta(delta, owner, allow_zero=False)
    n_repetitions = math.ceil(1.0 / alpha**2 - 1e-9)
    epsilon0 = epsilon / math.sqrt(n_repetitions * math.log(1.0 / delta))
    return GaussianKDEParameters(n_repetitions, epsilon0, delta / (2 * n_repetitions), delta / 2)
