"""Second moments of sketched rows from RACE kernel sums under signed random projections.

`RACELinearRegression` (``solver="moments"``) reads the released sketch at public queries
``q(w) = (w, 0, sqrt(1 - ||w||^2))`` with ``||w|| <= 1``. With the asymmetric embedding
``P(z) = (z / M, padding, 0)`` the inner product ``P(z) . q(w)`` is exactly ``z . w / M``, so the
sketch estimates ``sum_i k(z_i . w / M)`` with the known collision probability
``k(t) = (1 - arccos(t) / pi)^p``. These sums are fitted, by nonlinear least squares over all
queries, with ``n E[k(T / M)]``, ``T ~ N(m . w, w^T S w)``: a Gaussian proxy for the rows with
the rows' count ``n``, mean ``m`` and covariance ``S``. The fit returns the rows' second moment
``m m^T + S``; least squares is a function of that matrix alone. Everything here is
post-processing of the sketch.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize

#: Probabilists' Gauss-Hermite rule for ``E[f(mu + sigma N(0, 1))]``.
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(24)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


def moment_parameter_count(dimension: int, constant: int | None = None) -> int:
    """Unknowns of the Gaussian proxy: count, mean and Cholesky factor of the non-constant coordinates."""
    free = dimension - (constant is not None)
    return 1 + free + free * (free + 1) // 2


def moment_queries(n_queries: int, dimension: int, seed: int) -> np.ndarray:
    """``2 n_queries`` public query vectors ``w``: uniform in the unit ball, and their negatives."""
    rng = np.random.default_rng([seed, 2])
    directions = rng.standard_normal((n_queries, dimension))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    radii = rng.uniform(0.0, 1.0, size=(n_queries, 1)) ** (1.0 / dimension)
    vectors = directions * radii
    return np.vstack([vectors, -vectors])


def embed_queries(vectors: np.ndarray, padding_dimension: int) -> np.ndarray:
    """``(w, 0, sqrt(1 - ||w||^2))``: unit queries whose inner product with ``P(z)`` is ``z . w / M``."""
    last = np.sqrt(np.maximum(1.0 - np.sum(vectors**2, axis=1, keepdims=True), 0.0))
    return np.hstack([vectors, np.zeros((vectors.shape[0], padding_dimension)), last])


def _srp_kernel(cosines: np.ndarray, n_bits: int) -> np.ndarray:
    return (1.0 - np.arccos(np.clip(cosines, -1.0, 1.0)) / np.pi) ** n_bits


class _Proxy:
    """The Gaussian proxy's parameter layout: ``[count, mean of free coordinates, Cholesky factor]``.

    ``constant`` is a coordinate known to equal 1 in every row (the intercept's): its mean is
    fixed at 1 and its variance at 0, so only the other coordinates are fitted.
    """

    def __init__(self, dimension: int, constant: int | None) -> None:
        self.dimension = dimension
        self.constant = constant
        self.free = np.array([index for index in range(dimension) if index != constant])
        self.lower = np.tril_indices(self.free.size)

    def start(self, count: float) -> np.ndarray:
        return np.concatenate([[count], np.zeros(self.free.size), 0.3 * np.eye(self.free.size)[self.lower]])

    def unpack(self, parameters: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Count, full mean and full Cholesky factor (zero row and column at the constant coordinate)."""
        mean, factor = np.zeros(self.dimension), np.zeros((self.dimension, self.dimension))
        if self.constant is not None:
            mean[self.constant] = 1.0
        mean[self.free] = parameters[1 : 1 + self.free.size]
        free_factor = np.zeros((self.free.size, self.free.size))
        free_factor[self.lower] = parameters[1 + self.free.size :]
        factor[np.ix_(self.free, self.free)] = free_factor
        return float(parameters[0]), mean, factor

    def kernel_sums(self, parameters: np.ndarray, vectors: np.ndarray, data_bound: float, n_bits: int) -> np.ndarray:
        """``n E[k(T / M)]`` at each query, ``T ~ N(m . w, ||L^T w||^2)`` (Gauss-Hermite quadrature)."""
        count, mean, factor = self.unpack(parameters)
        centres = vectors @ mean / data_bound
        spreads = np.linalg.norm(vectors @ factor, axis=1) / data_bound
        return count * (_srp_kernel(centres[:, np.newaxis] + spreads[:, np.newaxis] * _NODES, n_bits) @ _WEIGHTS)


def fit_second_moment(
    vectors: np.ndarray, kernel_sums: np.ndarray, data_bound: float, n_bits: int, *, constant: int | None = None
) -> tuple[float, np.ndarray]:
    """The proxy's count ``n`` and second moment ``m m^T + S`` fitted to ``kernel_sums`` at ``vectors``.

    The search starts from ``m = 0`` (1 at ``constant``), ``S = 0.09 I`` (0 at ``constant``) and
    the count that explains the mean kernel sum at the kernel's centre value ``k(0) = 2^-p``.
    """
    proxy = _Proxy(vectors.shape[1], constant)
    start = proxy.start(max(float(np.mean(kernel_sums)) * 2.0**n_bits, 1.0))
    solution = optimize.least_squares(
        lambda parameters: proxy.kernel_sums(parameters, vectors, data_bound, n_bits) - kernel_sums, start, x_scale="jac"
    )
    count, mean, factor = proxy.unpack(solution.x)
    return count, np.outer(mean, mean) + factor @ factor.T


def least_squares_in_ball(second_moment: np.ndarray, coef_bound: float) -> np.ndarray:
    """``argmin_theta (theta, -1)^T G (theta, -1)`` subject to ``||theta|| <= coef_bound``.

    Unconstrained: the normal equations ``G_ff theta = G_fy``. Where their solution leaves the
    ball (or ``G_ff`` is singular) the constrained minimiser is ``(G_ff + lambda I)^-1 G_fy`` with
    the ``lambda > 0`` that puts it on the sphere (its norm decreases in ``lambda``; bisection).
    """
    gram, cross = second_moment[:-1, :-1], second_moment[:-1, -1]
    try:
        theta = np.linalg.solve(gram, cross)
        if np.all(np.isfinite(theta)) and float(np.linalg.norm(theta)) <= coef_bound:
            return theta
    except np.linalg.LinAlgError:
        pass
    identity = np.eye(gram.shape[0])

    def ridge(penalty: float) -> np.ndarray:
        return np.linalg.solve(gram + penalty * identity, cross)

    low, high = 0.0, max(1e-12, float(np.linalg.norm(cross)) / coef_bound)
    for _ in range(200):
        middle = 0.5 * (low + high)
        if middle <= 0.0 or float(np.linalg.norm(ridge(middle))) > coef_bound:
            low = middle
        else:
            high = middle
    return ridge(high)
