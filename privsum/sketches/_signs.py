"""The rows' second moment read from a released RACE sketch's sign patterns (signed random projections).

Under signed random projections with ``p`` bits, sketch row ``r`` draws ``p`` public hyperplanes
``h_r1 .. h_rp`` and counts each hashed vector ``v_i`` in the bucket whose bit ``j`` is
``1[h_rj . v_i >= 0]``. With ``s_j(b) = +-1`` the sign of bucket ``b``'s bit ``j``, the row's Walsh
coefficients

- order 0: ``sum_b A[r, b] = n``,
- order 1: ``sum_b A[r, b] s_j(b) = sum_i sign(h_rj . v_i)``,
- order 2: ``sum_b A[r, b] s_j(b) s_l(b) = sum_i sign(h_rj . v_i) sign(h_rl . v_i)`` (``j < l``)

are linear in the counters, so a release's zero-mean noise leaves them unbiased. The ``2^p``
sign patterns are orthogonal: on independent noise of variance ``sigma^2`` per counter each
coefficient's noise has variance ``2^p sigma^2``, uncorrelated with the others'.

Two estimators of the rows' second moment from them (both post-processing of the release):

- `fit_sign_model`: a Gaussian model of the rows, fitted by weighted least squares to the
  coefficients' expectations given the public hyperplanes (closed-form univariate and
  bivariate normal orthant probabilities). The hyperplanes are public, so the fit has no
  hashing noise: what remains is the release's noise and the rows' departure from the model.
- `linear_second_moment`: the Gaussian sign identity ``E[(h . a) sign(h . v)] = sqrt(2 / pi) a . v``
  for unit ``v``, applied to independent Gaussian
  ``h_j, h_l``: ``E[(h_j . a)(h_l . b) sign(h_j . v) sign(h_l . v)] = (2 / pi)(a . v)(b . v)``,
  so averaging ``(h_j h_l^T)`` times the order-2 coefficients over rows and pairs is unbiased
  for ``(2 / pi) sum_i v_i v_i^T``, whatever the rows. Its variance over the hyperplanes is of
  order ``n^2`` per pair (the rows' signs are correlated), which buries it under privacy noise
  on small data.

References:
    Owen, "Tables for Computing Bivariate Normal Probabilities", Annals of Mathematical
    Statistics 1956.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize
from scipy.special import ndtr, owens_t

#: Reweighting passes of the model fit (weights from the previous pass's expectations).
_PASSES = 2
#: Smallest variance of a projection in the model (a point mass would divide by zero).
_TINY_VARIANCE = 1e-12


def bucket_signs(n_bits: int) -> np.ndarray:
    """``(2^p, p)`` signs: entry ``(b, j)`` is ``+1`` where bit ``j`` of bucket ``b`` is set (``h_j . v >= 0``)."""
    buckets = np.arange(1 << n_bits)[:, np.newaxis]
    return 2 * ((buckets >> np.arange(n_bits)) & 1) - 1


def walsh_coefficients(counts: np.ndarray, n_bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each sketch row's Walsh coefficients of orders 0, 1 and 2: ``(R,)``, ``(R, p)``, ``(R, p (p - 1) / 2)``.

    Order 2 lists the pairs ``j < l`` in `np.triu_indices` order.
    """
    signs = bucket_signs(n_bits).astype(float)
    values = np.asarray(counts, dtype=float)
    first, second = np.triu_indices(n_bits, 1)
    return values.sum(axis=1), values @ signs, values @ (signs[:, first] * signs[:, second])


def linear_second_moment(pair_sums: np.ndarray, hyperplanes: np.ndarray) -> np.ndarray:
    """Unbiased ``sum_i v_i v_i^T`` over the coordinates of ``hyperplanes`` (``(R, p, D)``), for unit ``v_i``.

    ``pair_sums`` are the order-2 Walsh coefficients. Each ordered pair ``(j, l)`` contributes
    ``(pi / 2) h_j h_l^T`` times its coefficient; the symmetric mean over all pairs of all rows
    is returned.
    """
    n_rows, n_bits, _ = hyperplanes.shape
    first, second = np.triu_indices(n_bits, 1)
    outer = np.einsum("rka,rkb,rk->ab", hyperplanes[:, first], hyperplanes[:, second], pair_sums)
    return (math.pi / 2) * (outer + outer.T) / (2 * n_rows * first.size)


def _bivariate_orthant(upper_a: np.ndarray, upper_b: np.ndarray, correlation: np.ndarray) -> np.ndarray:
    """``P[X <= a, Y <= b]`` for standard normals of correlation ``rho`` (Owen's T-function form)."""
    a = np.where(np.abs(upper_a) < 1e-10, 1e-10, upper_a)  # the formula's limits at 0, well inside its precision
    b = np.where(np.abs(upper_b) < 1e-10, 1e-10, upper_b)
    root = np.sqrt(1.0 - correlation**2)
    opposite = np.where(a * b < 0, 0.5, 0.0)
    return (
        0.5 * (ndtr(a) + ndtr(b))
        - owens_t(a, (b - correlation * a) / (a * root))
        - owens_t(b, (a - correlation * b) / (b * root))
        - opposite
    )


def _normal_density(values: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * values**2) / math.sqrt(2.0 * math.pi)


@dataclass(frozen=True)
class SignExpectations:
    """``E[sign(a_j)]`` ``(R, p)``, ``E[sign(a_j) sign(a_l)]`` ``(R, P)`` and their partial derivatives.

    The derivatives are with respect to the standardised means ``t_j = mu_j / sigma_j`` and the
    correlations ``rho_jl``: ``d signs / d t`` ``(R, p)``; ``d products / d t_j``, ``/ d t_l``
    and ``/ d rho`` ``(R, P)`` each.
    """

    signs: np.ndarray
    products: np.ndarray
    signs_by_t: np.ndarray
    products_by_first: np.ndarray
    products_by_second: np.ndarray
    products_by_correlation: np.ndarray


def sign_expectations(standard: np.ndarray, correlation: np.ndarray) -> SignExpectations:
    """The sign expectations of normal projections with standardised means ``standard`` ``(R, p)``.

    ``correlation`` ``(R, P)`` lists the pairs ``j < l``. With ``Phi_2`` the bivariate normal
    distribution function, ``E[sign(a_j) sign(a_l)] = 4 Phi_2(t_j, t_l; rho) - 2 Phi(t_j) -
    2 Phi(t_l) + 1``; its derivatives are ``2 phi(t_j) (2 Phi((t_l - rho t_j) / sqrt(1 - rho^2)) - 1)``
    and ``4 phi_2(t_j, t_l; rho)``.
    """
    first, second = np.triu_indices(standard.shape[1], 1)
    rho = np.clip(correlation, -1.0 + 1e-12, 1.0 - 1e-12)
    a, b = standard[:, first], standard[:, second]
    root = np.sqrt(1.0 - rho**2)
    products = 4.0 * _bivariate_orthant(a, b, rho) - 2.0 * ndtr(a) - 2.0 * ndtr(b) + 1.0
    by_first = 2.0 * _normal_density(a) * (2.0 * ndtr((b - rho * a) / root) - 1.0)
    by_second = 2.0 * _normal_density(b) * (2.0 * ndtr((a - rho * b) / root) - 1.0)
    exponent = (a**2 - 2.0 * rho * a * b + b**2) / (2.0 * root**2)
    by_correlation = 4.0 * np.exp(-exponent) / (2.0 * math.pi * root)
    return SignExpectations(
        2.0 * ndtr(standard) - 1.0, products, 2.0 * _normal_density(standard), by_first, by_second, by_correlation
    )


class SignModel:
    """Rows ``z`` with ``N(m, S)`` free coordinates (and an optional constant 1), hashed as ``v = (z / M, padding)``.

    A projection is ``h . v = g . z + h_pad . padding`` with ``g`` the hyperplane's row
    coordinates over ``M`` (`hyperplanes`). Under the asymmetric embedding the padding is
    ``sqrt(1 - ||z||^2 / M^2) u`` with ``u`` uniform on the unit sphere of 32 coordinates: the
    projections of a row then have the covariance ``(1 - E||z||^2 / M^2) h_j,pad . h_l,pad / 32``
    (`padding_gram`, without the factor), taken as normal. Parameters:
    ``[count, mean of the free coordinates, their covariance's Cholesky factor]``.
    """

    def __init__(
        self, hyperplanes: np.ndarray, *, constant: int | None, padding_gram: np.ndarray | None, data_bound: float
    ) -> None:
        self.hyperplanes = hyperplanes
        self.dimension = hyperplanes.shape[2]
        self.constant = constant
        self.free = np.array([index for index in range(self.dimension) if index != constant], dtype=int)
        self.lower = np.tril_indices(self.free.size)
        self.padding_gram = padding_gram
        self.data_bound = data_bound

    @property
    def n_parameters(self) -> int:
        return 1 + self.free.size + self.lower[0].size

    def start(self, count: float, spread: float) -> np.ndarray:
        """Mean 0, covariance ``spread^2 I``."""
        return np.concatenate([[count], np.zeros(self.free.size), spread * np.eye(self.free.size)[self.lower]])

    def unpack(self, parameters: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Count, full mean (1 at the constant) and full covariance (0 in the constant's row and column)."""
        mean, factor = np.zeros(self.dimension), np.zeros((self.free.size, self.free.size))
        if self.constant is not None:
            mean[self.constant] = 1.0
        mean[self.free] = parameters[1 : 1 + self.free.size]
        factor[self.lower] = parameters[1 + self.free.size :]
        covariance = np.zeros((self.dimension, self.dimension))
        covariance[np.ix_(self.free, self.free)] = factor @ factor.T
        return float(parameters[0]), mean, covariance

    def _projection_moments(self, parameters: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """Per row: the projections' means ``(R, p)``, covariances ``(R, p, p)``, ``L^T g`` ``(R, p, f)``, padding factor."""
        _, mean, covariance = self.unpack(parameters)
        factor = np.zeros((self.free.size, self.free.size))
        factor[self.lower] = parameters[1 + self.free.size :]
        loadings = self.hyperplanes[:, :, self.free] @ factor
        covariances = loadings @ loadings.transpose(0, 2, 1)
        padding = 0.0
        if self.padding_gram is not None:
            padding = max(1.0 - (float(mean @ mean) + float(np.trace(covariance))) / self.data_bound**2, 0.0)
            covariances = covariances + padding * self.padding_gram
        return self.hyperplanes @ mean, covariances, loadings, padding

    def expectations(self, parameters: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Count, and the expected order-1 and order-2 coefficients per row divided by the count."""
        means, covariances, _, _ = self._projection_moments(parameters)
        standard, correlation, _ = _standardise(means, covariances)
        expected = sign_expectations(standard, correlation)
        return float(parameters[0]), expected.signs, expected.products

    def expectations_with_derivatives(self, parameters: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``E[sign]`` ``(R, p)``, ``E[sign sign]`` ``(R, P)`` and their derivatives in the non-count parameters.

        The derivatives are ``(k - 1, R, p)`` and ``(k - 1, R, P)`` (chain rule through the
        standardised means and the correlations).
        """
        means, covariances, loadings, padding = self._projection_moments(parameters)
        standard, correlation, deviations = _standardise(means, covariances)
        expected = sign_expectations(standard, correlation)
        mean_steps, covariance_steps = self._moment_derivatives(parameters, loadings, padding)
        variances = deviations**2
        variance_steps = np.einsum("krjj->krj", covariance_steps)
        standard_steps = mean_steps / deviations - 0.5 * standard * variance_steps / variances
        first, second = np.triu_indices(means.shape[1], 1)
        correlation_steps = covariance_steps[:, :, first, second] / (deviations[:, first] * deviations[:, second])
        correlation_steps -= (
            0.5
            * correlation
            * (variance_steps[:, :, first] / variances[:, first] + variance_steps[:, :, second] / variances[:, second])
        )
        sign_steps = expected.signs_by_t * standard_steps
        product_steps = (
            expected.products_by_first * standard_steps[:, :, first]
            + expected.products_by_second * standard_steps[:, :, second]
            + expected.products_by_correlation * correlation_steps
        )
        return expected.signs, expected.products, sign_steps, product_steps

    def _moment_derivatives(self, parameters: np.ndarray, loadings: np.ndarray, padding: float) -> tuple[np.ndarray, np.ndarray]:
        """Derivatives of the projections' means ``(k - 1, R, p)`` and covariances ``(k - 1, R, p, p)``."""
        n_rows, n_bits, _ = self.hyperplanes.shape
        free_planes = self.hyperplanes[:, :, self.free]
        mean_steps = np.concatenate([np.moveaxis(free_planes, 2, 0), np.zeros((self.lower[0].size, n_rows, n_bits))])
        covariance_steps = np.zeros((self.n_parameters - 1, n_rows, n_bits, n_bits))
        for index, (row, column) in enumerate(zip(*self.lower, strict=True)):  # S = L L^T: dS_jl / dL_ab = g_ja u_lb + g_la u_jb
            outer = free_planes[:, :, row, np.newaxis] * loadings[:, np.newaxis, :, column]
            covariance_steps[self.free.size + index] = outer + outer.transpose(0, 2, 1)
        if self.padding_gram is not None and padding > 0.0:  # the padding shrinks as E||z||^2 = |m|^2 + ||L||_F^2 grows
            scale = -2.0 / self.data_bound**2
            values = parameters[1:]
            covariance_steps += (scale * values)[:, np.newaxis, np.newaxis, np.newaxis] * self.padding_gram[np.newaxis]
        return mean_steps, covariance_steps


def _standardise(means: np.ndarray, covariances: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Standardised means ``(R, p)``, pair correlations ``(R, P)`` and standard deviations ``(R, p)``."""
    deviations = np.sqrt(np.maximum(np.einsum("rjj->rj", covariances), _TINY_VARIANCE))
    first, second = np.triu_indices(means.shape[1], 1)
    correlation = covariances[:, first, second] / (deviations[:, first] * deviations[:, second])
    return means / deviations, correlation, deviations


Coefficients = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class SignFit:
    """A fitted `SignModel`, with the weights of its last pass and its weighted residual sum of squares."""

    model: SignModel
    parameters: np.ndarray
    weights: tuple[np.ndarray, np.ndarray, np.ndarray]
    chi_square: float
    degrees_of_freedom: int

    @property
    def count(self) -> float:
        return self.model.unpack(self.parameters)[0]

    @property
    def second_moment(self) -> np.ndarray:
        """``m m^T + S``: the model's per-row second moment."""
        _, mean, covariance = self.model.unpack(self.parameters)
        return np.outer(mean, mean) + covariance


def _weighted_fit(
    coefficients: Coefficients, model: SignModel, weights: tuple[np.ndarray, ...], start: np.ndarray, fixed: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Least squares of the weighted residuals over the parameters not ``fixed`` (those keep their start values).

    Returns the parameters and the weighted residuals at them.
    """
    totals, signs, products = coefficients
    varied = np.flatnonzero(~fixed)

    def full(values: np.ndarray) -> np.ndarray:
        parameters = start.copy()
        parameters[varied] = values
        return parameters

    def residuals(values: np.ndarray) -> np.ndarray:
        count, expected_signs, expected_products = model.expectations(full(values))
        return np.concatenate(
            [
                (totals - count) * weights[0],
                ((signs - count * expected_signs) * weights[1]).ravel(),
                ((products - count * expected_products) * weights[2]).ravel(),
            ]
        )

    def jacobian(values: np.ndarray) -> np.ndarray:
        parameters = full(values)
        expected_signs, expected_products, sign_steps, product_steps = model.expectations_with_derivatives(parameters)
        by_count = np.concatenate(
            [-weights[0], (-expected_signs * weights[1]).ravel(), (-expected_products * weights[2]).ravel()]
        )
        others = parameters.size - 1
        by_others = np.concatenate(
            [
                np.zeros((others, totals.size)),
                (-parameters[0] * sign_steps * weights[1]).reshape(others, -1),
                (-parameters[0] * product_steps * weights[2]).reshape(others, -1),
            ],
            axis=1,
        )
        return np.column_stack([by_count, by_others.T])[:, varied]

    with np.errstate(over="ignore", invalid="ignore"):  # trust-region trial steps far off; rejected by the solver
        solution = optimize.least_squares(residuals, start[varied], jac=jacobian, x_scale="jac")
    return full(solution.x), solution.fun


def fit_sign_model(coefficients: Coefficients, model: SignModel, n_bits: int, counter_variance: float) -> SignFit:
    """Weighted least squares of the Walsh coefficients on the model's expectations.

    Each coefficient is weighted by ``1 / (2^p sigma^2 + n (1 - e^2) + 1)``: the release's noise
    (``sigma^2`` per counter, public) plus the variance of a sum of ``n`` signs of mean ``e``
    drawn from the model (1 keeps a noiseless total finite). The first pass takes its weights
    from the start (mean 0, covariance ``0.09 I``, the mean row total as count), the second
    from the first pass's fit.
    """
    totals = coefficients[0]
    noise = float(2**n_bits * counter_variance)
    parameters = model.start(max(float(np.mean(totals)), 1.0), 0.3)
    fixed = np.zeros(parameters.size, dtype=bool)
    for _ in range(_PASSES):
        count, expected_signs, expected_products = model.expectations(parameters)
        scale = max(count, 0.0)
        weights = (
            np.full(totals.shape, 1.0 / math.sqrt(noise + 1.0)),
            1.0 / np.sqrt(noise + scale * (1.0 - expected_signs**2) + 1.0),
            1.0 / np.sqrt(noise + scale * (1.0 - expected_products**2) + 1.0),
        )
        parameters, residuals = _weighted_fit(coefficients, model, weights, parameters, fixed)
    return SignFit(model, parameters, weights, float(residuals @ residuals), max(residuals.size - parameters.size, 1))


def shrinkage_factor(coefficients: Coefficients, fit: SignFit, n_features: int) -> float:
    """``max(0, 1 - d / LR)``: the positive-part factor on the fitted slopes of ``d`` features.

    ``LR`` is the likelihood-ratio statistic of the slopes: the drop in the weighted residual
    sum of squares from the model whose target is uncorrelated with the features (its
    covariance's Cholesky factor has zeros in the target's row, refitted with the same weights)
    to the full model, over the full model's reduced chi-square where that exceeds 1. For one
    slope of standard error ``s`` it estimates ``beta^2 / s^2``, and ``1 - 1 / LR`` the factor
    ``beta^2 / (beta^2 + s^2)`` that minimises the expected squared error of the shrunk slope:
    pure noise (``LR`` near ``d``) gives the intercept-only model, a clear relation keeps the fit.
    """
    model = fit.model
    target = model.free.size - 1  # the last free coordinate: rows are (x..., 1 if intercept, y)
    in_target_row = (model.lower[0] == target) & (model.lower[1] < target)
    fixed = np.concatenate([np.zeros(1 + model.free.size, dtype=bool), in_target_row])
    start = np.where(fixed, 0.0, fit.parameters)
    _, residuals = _weighted_fit(coefficients, model, fit.weights, start, fixed)
    scale = max(1.0, fit.chi_square / fit.degrees_of_freedom)
    statistic = (float(residuals @ residuals) - fit.chi_square) / scale
    if not statistic > n_features:
        return 0.0
    return 1.0 - n_features / statistic


def shrink_slopes(second_moment: np.ndarray, mean: np.ndarray, features: np.ndarray, factor: float, centred: bool) -> np.ndarray:
    """The second moment whose least-squares slopes are ``factor`` times those of ``second_moment``.

    The features' cross moment with the target (centred with an intercept) is multiplied by
    ``factor``: the slopes scale by it and, with an intercept, the intercept becomes
    ``mean_y - factor beta . mean_x`` (towards predicting the mean).
    """
    centre = np.outer(mean, mean) if centred else np.zeros_like(second_moment)
    matrix = second_moment - centre
    matrix[features, -1] *= factor
    matrix[-1, features] *= factor
    return matrix + centre
