"""Learning from released RACE sketches (Coleman & Shrivastava, CCS 2021, section 4): KDE, classification, anomalies, regression.

Every application is post-processing of released sketches, so its guarantee is the release's.
KDE is `ReleasedRACE.density` itself; this module adds the rest.

References:
    Coleman & Shrivastava, "A One-Pass Distributed and Private Sketch for Kernel Sums with
    Applications to Machine Learning at Scale", CCS 2021.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import optimize

from privsum._deprecation import NOT_GIVEN, renamed
from privsum._estimator import keep_parameters
from privsum._random import RNGLike, as_generator
from privsum._validation import as_array, check_array, check_choice, check_epsilon, check_integer, check_real, invalid
from privsum.accounting import GuaranteeEvent, Neighbouring, PrivacyGuarantee
from privsum.exceptions import NotFittedError
from privsum.lsq.lsh import LSHFamily, SignedRandomProjection
from privsum.sketches._moments import (
    embed_queries,
    fit_second_moment,
    least_squares_in_ball,
    moment_parameter_count,
    moment_queries,
)
from privsum.sketches._noise import NOISE_SOURCES
from privsum.sketches._signs import (
    SignModel,
    fit_sign_model,
    linear_second_moment,
    shrink_slopes,
    shrinkage_factor,
    walsh_coefficients,
)
from privsum.sketches.race import RACE, SKETCH_RELATIONS, ReleasedRACE

__all__ = ["RACEClassifier", "RACELinearRegression", "anomaly_score"]

CLASSIFIER_RULES = ("map", "maximum_likelihood")


def _noise_source(estimator: Any, owner: str) -> str:
    """The estimator's ``noise_source``, or its deprecated ``sampler`` when that was set."""
    return renamed("sampler", estimator.sampler, "noise_source", estimator.noise_source, "opendp", owner)


def _private_rng(noise_source: Any, random_state: RNGLike, owner: str) -> Any:
    """One Generator for all releases of a fit (numpy noise); ``None`` for OpenDP's own CSPRNG."""
    if check_choice(noise_source, "noise_source", owner, NOISE_SOURCES) == "numpy":
        return as_generator(random_state, owner)
    if random_state is not None:
        raise invalid("random_state", owner, "None with noise_source='opendp' (OpenDP draws from its own CSPRNG)", random_state)
    return None


#: Coordinates that carry the data's padding ``sqrt(1 - ||z||^2 / M^2) u_i`` (random unit ``u_i``, orthogonal to the query).
_PADDING_DIMENSION = 32


def _embed_data(rows: np.ndarray, data_bound: float, generator: np.random.Generator, owner: str) -> np.ndarray:
    """``(z / M, sqrt(1 - ||z||^2 / M^2) u, 0)``: every row on the unit sphere; rows above the bound are refused.

    ``u`` is a uniformly random unit vector per row, in coordinates where every query is 0: it
    leaves every inner product with a query (so every collision probability) unchanged, and
    spreads the points over the sphere, so their collisions are far less correlated than with a
    shared padding direction (the sketch's variance drops from order ``n^2 / R`` towards ``n / R``).
    """
    scaled = rows / data_bound
    squared = np.sum(scaled**2, axis=1)
    if squared.size and not float(squared.max()) <= 1.0:
        worst = float(np.sqrt(squared.max()) * data_bound)
        constraint = f"rows (x, 1 if fit_intercept, y) of norm at most data_bound={data_bound:g}"
        raise invalid("X", owner, constraint, f"a row of norm {worst:g}")
    directions = generator.normal(size=(rows.shape[0], _PADDING_DIMENSION))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    return np.column_stack([scaled, np.sqrt(1.0 - squared)[:, np.newaxis] * directions, np.zeros(rows.shape[0])])


def _check_sign_rows(n_rows: int, n_bits: int, n_unknowns: int, owner: str) -> int:
    """``n_rows``, refused when its Walsh coefficients of orders 0 to 2 are fewer than the model's unknowns."""
    per_row = 1 + n_bits + n_bits * (n_bits - 1) // 2
    needed = -(-n_unknowns // per_row)
    if n_rows < needed:
        constraint = (
            f"at least {needed} with solver='signs' ({n_unknowns} unknowns, {per_row} coefficients per row at n_bits={n_bits})"
        )
        raise invalid("n_rows", owner, constraint, n_rows)
    return n_rows


def _check_fitted(model: Any, attribute: str) -> None:
    if not hasattr(model, attribute):
        raise NotFittedError(f"This {type(model).__name__} instance is not fitted yet: call 'fit' first.")


def _check_labels(labels: Any, name: str, owner: str) -> np.ndarray:
    """A 1-D array of labels (numbers, strings or booleans) that can be sorted and compared."""
    array = as_array(labels, name, owner)
    if array.ndim != 1:
        raise invalid(name, owner, "a 1-D sequence of labels", f"shape {array.shape}")
    constraint = "labels that are numbers (not NaN), strings or booleans"
    if array.dtype.kind not in "biufUSO" or (array.dtype.kind == "f" and not np.all(np.isfinite(array))):
        raise invalid(name, owner, constraint, f"dtype {array.dtype}")
    if array.dtype.kind == "O":
        try:
            np.unique(array)  # labels must sort, as the classes of a fitted model do
        except TypeError:
            raise invalid(name, owner, constraint, "labels of mixed or unorderable types") from None
    return array


def anomaly_score(sketch: RACE | ReleasedRACE, queries: Any, *, method: str = "mean", n_groups: int = 9) -> np.ndarray:
    """Anomaly scores ``-density(y)``: the higher, the fewer sketched points lie near ``y``.

    A query with a low estimated kernel density has few similar points in the data (Coleman & Shrivastava (CCS 2021)
    section 4, after Luo & Shrivastava's ACE). Flag anomalies by thresholding the score, e.g. at
    minus a density quantile of known-normal points.

    Args:
        sketch: a `ReleasedRACE` (private) or a raw `RACE` (not private).
        queries: ``(m, d)`` points.
        method: ``"mean"`` or ``"median_of_means"`` (see `RACE.estimate`).
        n_groups: groups for the median of means.

    Privacy:
        Post-processing of ``sketch``: the release's ``event`` covers it.

    Examples:
        >>> from privsum.lsq import L2LSH
        >>> family = L2LSH(dimension=1, n_repetitions=100, bucket_width=1.0, n_buckets=64, seed=0)
        >>> data = np.random.default_rng(0).normal(size=(5000, 1))
        >>> released = RACE(family).update(data).release(1.0, noise_source="numpy", rng=1)
        >>> scores = anomaly_score(released, np.array([[0.0], [6.0]]))
        >>> bool(scores[1] > scores[0])
        True
    """
    if not isinstance(sketch, (RACE, ReleasedRACE)):
        raise invalid("sketch", "anomaly_score", "a RACE or ReleasedRACE", type(sketch).__name__)
    return -sketch.density(queries, method=method, n_groups=n_groups)


class RACEClassifier:
    """Kernel-density classifier from one released RACE sketch per class (section 4 of Coleman & Shrivastava (CCS 2021)).

    `fit` builds a sketch of each class's points over one shared public LSH family and releases
    each with discrete Laplace noise. With ``K_c(y)`` the estimated kernel sum of class ``c`` and
    ``n_c`` its noisy point count (from the same sketch), the maximum-likelihood rule predicts
    ``argmax_c K_c(y)/n_c`` and the MAP rule, with prior ``n_c/n``, ``argmax_c K_c(y)``.

    Args:
        family: the public `~privsum.lsq.LSHFamily` shared by all class sketches.
        classes: the public list of labels (never inferred from the data: that would leak them).
        epsilon: the privacy parameter of the whole fit.
        neighbouring: ``"add-remove"`` or ``"replace-one"`` (a user's point and label may change).
        rule: ``"map"`` or ``"maximum_likelihood"``.
        noise_source: ``"opendp"`` or ``"numpy"`` (see `RACE.release`).
        random_state: private randomness for ``noise_source="numpy"``.
        sampler: deprecated name of ``noise_source``.

    Privacy:
        Each user's point enters exactly one class sketch. Each sketch is released with the
        scale `RACE.release` uses for ``(epsilon, neighbouring)``. Under add/remove one sketch
        changes in one counter per row: ``epsilon``. Under replace-one, either one sketch changes
        by a replacement (covered by its ``2R/epsilon`` scale) or one sketch loses a point and
        another gains one, an L1 change of ``2R`` over all counters at scale ``2R/epsilon``:
        ``epsilon`` again. So the fit is ``(epsilon, 0)``-DP (``event_``); predictions are
        post-processing. Labels must be public-domain values listed in ``classes``.

    Examples:
        >>> from privsum.lsq import L2LSH
        >>> rng = np.random.default_rng(0)
        >>> X = np.vstack([rng.normal(-2, 1, size=(2000, 2)), rng.normal(2, 1, size=(2000, 2))])
        >>> y = np.repeat([0, 1], 2000)
        >>> family = L2LSH(dimension=2, n_repetitions=100, bucket_width=2.0, n_buckets=64, seed=1)
        >>> model = RACEClassifier(family=family, classes=[0, 1], epsilon=1.0, noise_source="numpy", random_state=2)
        >>> model.fit(X, y).predict(np.array([[-2.0, -2.0], [2.0, 2.0]])).tolist()
        [0, 1]
    """

    def __init__(
        self,
        *,
        family: LSHFamily,
        classes: Any,
        epsilon: float,
        neighbouring: Neighbouring | str = Neighbouring.ADD_REMOVE,
        rule: str = "map",
        noise_source: str = "opendp",
        random_state: RNGLike = None,
        sampler: str = NOT_GIVEN,
    ) -> None:
        keep_parameters(self, locals())

    def fit(self, X: Any, y: Any) -> RACEClassifier:
        """Sketch and release each class's points; sets ``sketches_``, ``classes_``, ``event_``."""
        owner = "RACEClassifier"
        if not isinstance(self.family, LSHFamily):
            raise invalid("family", owner, "an LSHFamily", self.family)
        epsilon = check_epsilon(self.epsilon, owner)
        relation = Neighbouring.parse(self.neighbouring, owner, SKETCH_RELATIONS)
        check_choice(self.rule, "rule", owner, CLASSIFIER_RULES)
        classes = _check_labels(self.classes, "classes", owner)
        if classes.size < 2 or np.unique(classes).size != classes.size:
            raise invalid("classes", owner, "a sequence of at least two distinct labels", self.classes)
        points = self.family.check_points(X, "X")
        labels = _check_labels(y, "y", owner)
        if labels.shape != (points.shape[0],):
            raise invalid("y", owner, f"a 1-D array of {points.shape[0]} labels", f"shape {labels.shape}")
        if not np.all(np.isin(labels, classes)):
            raise invalid("y", owner, "labels listed in 'classes'", "a label outside classes")
        noise_source = _noise_source(self, owner)
        rng = _private_rng(noise_source, self.random_state, owner)
        self.sketches_ = [
            RACE(self.family)
            .update(points[labels == label])
            .release(epsilon, neighbouring=relation, noise_source=noise_source, rng=rng)
            for label in classes
        ]
        self.classes_ = classes
        self.event_ = GuaranteeEvent(PrivacyGuarantee(epsilon, 0.0, relation))
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """``(m, C)`` class scores: ``K_c(y)`` (MAP) or ``K_c(y)/n_c`` (maximum likelihood)."""
        _check_fitted(self, "sketches_")
        if self.rule == "map":
            return np.column_stack([sketch.estimate(X) for sketch in self.sketches_])
        return np.column_stack([sketch.density(X) for sketch in self.sketches_])

    def predict_proba(self, X: Any) -> np.ndarray:
        """Scores clipped at 0 and normalised per row (uniform where all are 0)."""
        scores = np.maximum(self.decision_function(X), 0.0)
        totals = scores.sum(axis=1, keepdims=True)
        uniform = np.full_like(scores, 1.0 / scores.shape[1])
        return np.where(totals > 0, scores / np.where(totals > 0, totals, 1.0), uniform)

    def predict(self, X: Any) -> np.ndarray:
        """The label with the highest score."""
        _check_fitted(self, "sketches_")
        return self.classes_[np.argmax(self.decision_function(X), axis=1)]


#: How `RACELinearRegression` embeds the data and the query before hashing.
REGRESSION_TRANSFORMS = ("asymmetric", "none")

#: How `RACELinearRegression` turns the released sketch into coefficients.
REGRESSION_SOLVERS = ("signs", "moments", "surrogate", "linear")

#: The transform each solver uses when ``transform`` is ``None``.
SOLVER_TRANSFORMS = {"signs": "none", "moments": "asymmetric", "surrogate": "asymmetric", "linear": "asymmetric"}

#: Sketch rows when ``n_rows`` is ``None``: a fixed number, or for ``solver="signs"`` per unit of epsilon.
DEFAULT_ROWS, SIGN_ROWS_PER_EPSILON, SIGN_ROWS_RANGE = 500, 5, (10, 500)


def default_rows(solver: str, epsilon: float | None, relation: Neighbouring) -> int:
    """``n_rows`` when it is ``None``: ``ceil(5 epsilon')`` in ``[10, 500]`` for ``solver="signs"``, else 500.

    ``epsilon'`` is epsilon over the counters' sensitivity per row (2 under replace-one): each
    row adds ``(R / epsilon')^2`` to the noise variance of every sign coefficient it gives, so
    the fit is best with few rows under strong privacy and many without (500 at ``epsilon=None``).
    """
    if solver != "signs":
        return DEFAULT_ROWS
    low, high = SIGN_ROWS_RANGE
    if epsilon is None:
        return high
    per_row = 2.0 if relation == Neighbouring.REPLACE_ONE else 1.0
    return int(min(high, max(low, math.ceil(SIGN_ROWS_PER_EPSILON * epsilon / per_row))))


#: At most this many public queries for ``solver="moments"`` (each is hashed into every row).
MAX_MOMENT_QUERIES = 100_000


class RACELinearRegression:
    """Linear regression from a released RACE sketch of ``(x, y)`` under signed random projections.

    The users' rows ``z_i = (x_i, 1 if fit_intercept, y_i)`` are hashed by signed random
    projections: sketch row ``r`` draws ``p`` (`n_bits`) public Gaussian hyperplanes
    ``h_r1 .. h_rp`` and counts each row in the bucket of its sign pattern
    ``(sign(h_rj . v_i))_j``, with ``v_i = z_i`` (``transform="none"``) or the asymmetric
    embedding of Coleman & Shrivastava's regression (after Shrivastava & Li's asymmetric LSH),
    ``v_i = P(z_i) = (z_i / M, sqrt(1 - ||z_i||^2 / M^2) u_i, 0)``, with a public bound ``M``
    (`data_bound`) on ``||z_i||`` and ``u_i`` a random unit vector in 32 coordinates, drawn per
    row from the public seed. A query ``q = (w, 0, sqrt(1 - ||w||^2))`` with ``||w|| <= 1`` then
    has ``P(z_i) . q = z_i . w / M`` exactly, so that sketch estimates the kernel sums
    ``K(w) = sum_i k(z_i . w / M)``, ``k(t) = (1 - arccos(t) / pi)^p``. Least squares depends on
    the data only through the rows' second moment ``G = (1/n) sum_i z_i z_i^T``; every solver
    estimates it (``second_moment_``, ``count_``; except the surrogate) and solves the normal
    equations ``G_xx theta = G_xy`` (with the ridge that puts ``theta`` on the sphere
    ``||theta|| = coef_bound`` when their solution lies outside).

    ``solver="signs"`` (the default; rows hashed as they are unless ``transform`` says
    otherwise) reads each sketch row's Walsh coefficients, linear in its counters: the row
    total ``n``, the sums ``sum_i sign(h_rj . v_i)`` and ``sum_i sign(h_rj . v_i) sign(h_rl . v_i)``
    (``j < l``). The hyperplanes are public, so these have no hashing noise given them, only
    the release's noise, of known variance ``2^p sigma^2`` each (``sigma^2`` per counter). It
    fits a Gaussian model of the rows (count ``n``, mean ``m``, covariance ``S``; the
    intercept's coordinate is 1) by weighted least squares: under it each projection
    ``h . v`` is normal, and the coefficients' expectations are closed-form normal and
    bivariate normal orthant probabilities (Owen's T-function). The weights are
    ``1 / (2^p sigma^2 + n (1 - e^2) + 1)`` for a coefficient of expectation ``n e``: the
    release's noise plus the model's sampling variance. ``G = m m^T + S``. With ``shrinkage``
    (and an intercept) the slopes are multiplied by ``max(0, 1 - d / LR)``
    (``shrinkage_factor_``), ``LR`` the likelihood-ratio statistic of the ``d`` slopes (the
    drop in the weighted residual sum of squares from the model whose target is uncorrelated
    with the features, over the reduced chi-square where that exceeds 1), and the intercept set
    so the line passes through the fitted means: the plug-in for the factor
    ``beta^2 / (beta^2 + s^2)`` that minimises the slope's expected squared error, so a fit
    drowned in noise falls back to predicting the mean. On Gaussian rows the model holds and
    the fit approaches least squares as ``R`` grows (tested); on other rows it returns the
    second moment of the Gaussian that best matches their sign statistics (the diabetes
    data below: slope 4-5 % under least squares' at large ``R``).

    ``solver="linear"`` (asymmetric transform) uses the Gaussian sign identity: for unit ``v``
    and independent Gaussian ``h_j, h_l``, ``E[(h_j . a)(h_l . b) sign(h_j . v) sign(h_l . v)] =
    (2 / pi)(a . v)(b . v)``, so ``(pi / 2) M^2`` times the mean over rows and pairs of
    ``h_j h_l^T`` times the pair coefficient is unbiased for ``sum_i z_i z_i^T`` whatever the
    rows (tested). Its variance over the hyperplanes is of order ``n^2`` per pair (the rows'
    signs are correlated through their shared intercept), so it needs many rows, and the
    privacy noise then buries it on small data.

    ``solver="moments"`` reads the sketch at ``2 n_queries`` public vectors ``w`` (uniform in
    the unit ball, and their negatives) and fits, by nonlinear least squares,
    ``n E[k(T / M)]`` with ``T ~ N(m . w, w^T S w)``. On the exact kernel sums (no sketch, no
    noise) of scikit-learn's diabetes data (BMI feature, max-abs scaled) its slope is 0.9 %
    above least squares' (tested within 1.5 %); the sketched kernel sums carry hashing noise.

    ``solver="surrogate"`` minimises the paper's surrogate
    ``L(theta) = K(Q) + K(-Q)`` at ``Q(theta) = (theta, -1, 0, sqrt(B^2 - ||theta||^2 - 1)) / B``,
    ``B^2 = coef_bound^2 + 1``: then ``cos(a_i pi) = r_i / (M B)`` for the residual
    ``r_i = theta . x_i - y_i``, and ``L = n 2^(1-p) + c sum_i r_i^2 + O(sum_i r_i^4)`` with
    ``c > 0``, whose exact minimiser is within 0.2 % of least squares on the diabetes data
    (tested). The sketched surrogate is piecewise constant with a shallow minimum (its
    curvature is ``c n Var(x)``, ``c`` of order ``p (p-1) 2^(2-p) / (pi M B)^2``), so it is
    minimised by Nelder-Mead on a smoothed surrogate (the mean over ``n_smoothing`` fixed
    Gaussian perturbations of ``theta`` of scale ``smoothing``) and one sketch's hashing noise
    moves that minimiser far. With ``transform="none"`` it hashes ``(theta, -1)`` as it is:
    the cosine ``r_i / (||z_i|| ||(theta, -1)||)`` weights points by their norms and rewards
    large ``||theta||`` (on the diabetes data slope 0.65 against least squares' 0.47).

    Args:
        n_rows: ``R``, rows of the sketch; ``None``: for ``solver="signs"``
            ``ceil(5 epsilon)`` within ``[10, 500]`` (``epsilon / 2`` under replace-one; 500
            without privacy), else 500 (see Utility for the trade-off).
        n_bits: ``p >= 2`` (with ``p = 1`` there are no sign pairs and the surrogate is
            constant). More bits give more sign pairs per row (``p (p - 1) / 2``) at ``2^p``
            times the noise variance on each.
        epsilon: the privacy parameter; ``None`` fits on the raw sketch (a non-private reference:
            ``event_`` then reports epsilon = infinity).
        neighbouring: ``"add-remove"`` or ``"replace-one"``.
        fit_intercept: append a constant-1 feature (a public transformation).
        smoothing: perturbation scale of the smoothed surrogate (``0`` disables smoothing;
            ``solver="surrogate"`` only).
        n_smoothing: number of perturbations (``solver="surrogate"`` only).
        seed: public seed of the hash functions, the padding, the queries and the perturbations.
        noise_source: ``"opendp"`` or ``"numpy"`` (see `RACE.release`).
        random_state: private randomness for ``noise_source="numpy"``.
        transform: ``"asymmetric"`` or ``"none"`` (``"moments"`` and ``"linear"`` need the
            asymmetric one); ``None``: ``"none"`` for ``solver="signs"``, else ``"asymmetric"``.
            Rows hashed as they are should have features and target of order 1 (the
            hyperplanes' offsets come from the intercept's coordinate 1).
        data_bound: ``M``, a public bound on the norm of every row ``(x_i, 1 if fit_intercept, y_i)``;
            ``None``: ``sqrt(number of those coordinates)``, i.e. every feature and target in
            ``[-1, 1]``. A row above it is refused (never clipped). Asymmetric transform only.
        coef_bound: a public bound on the norm of ``theta`` (coefficients and intercept); the
            solution stays inside it (the surrogate: asymmetric transform only).
        solver: ``"signs"`` (default), ``"moments"``, ``"surrogate"`` or ``"linear"`` (see above).
        n_queries: public query vectors of the moment fit (each also negated); at least the
            number of fitted unknowns ``1 + D + D (D + 1) / 2`` for ``D`` row coordinates, at
            most 100,000. Suited to a few features: the unknowns grow as ``D^2``.
        shrinkage: shrink the slopes towards predicting the mean by the noise-aware factor
            above (``solver="signs"`` with ``fit_intercept`` only).
        sampler: deprecated name of ``noise_source``.

    Privacy:
        One sketch of the users' hashed ``(x, y)`` rows is released: ``(epsilon, 0)``-DP
        under ``neighbouring`` (``event_``), in the central model (a trusted curator or a
        secure aggregation of the counters). The Walsh coefficients, the model fits, the
        shrinkage, the queries and the optimisation read only the released counters, their
        public noise scale and public values (hyperplanes, bounds, seed): post-processing,
        covered by ``event_``. The transform and its bounds are public; any rescaling of the
        data must use public bounds, not statistics of the data. ``count_``,
        ``second_moment_`` and ``shrinkage_factor_`` are computed from the release, not from
        the data.

    Utility:
        What limits a solver is the privacy noise, which grows with ``R`` (each row adds to
        the sensitivity, so each counter's noise has scale ``R / epsilon``), and for the
        kernel-sum solvers also the hashing noise, which shrinks as ``1 / sqrt(R)``. The sign
        fit has no hashing noise, so it wants few rows under privacy. Measured on the
        diabetes data (BMI, max-abs scaled, 70/30 splits, 309 training points, 16 seeds;
        ``benchmarks/bench_race_regression.py``; median [min, max]; least squares' test
        error is 0.66 [0.48, 0.81] of predicting the training mean). The default
        (``solver="signs"``, ``p = 6``, rows hashed as they are): slope over least squares'
        0.96 [0.91, 1.01] without privacy (``R = 500``; 0.95 [0.93, 0.98] at ``R = 2000``,
        0.92 [0.88, 1.05] at ``R = 50``); at ``epsilon = 10`` (``R = 50``) slope 0.99
        [0.81, 1.13] and test error 0.67 [0.49, 0.81] of the mean's, below the mean's on
        every split and close to least squares'. The kernel-sum solvers' test errors at
        ``epsilon = 10`` are not: ``solver="moments"`` 1.07 [0.73, 7.26] and
        ``solver="linear"`` 1.20 [0.70, 5.23] (``R = 100``); without privacy their slopes
        are centred near least squares' but spread, 1.03 [0.88, 1.21] and 0.99 [0.90, 1.20]
        at ``R = 8000``. At ``epsilon = 3`` (``R = 15``) the sign fit's test error is 0.67
        [0.54, 0.84]; at ``epsilon = 1`` (``R = 10``) it shrinks towards the mean: 0.75
        [0.58, 1.14] (1.00 [0.52, 1.13] at ``R = 50``). Suited to a few features:
        its unknowns grow as ``D^2`` for ``D`` row coordinates.

    References:
        Coleman & Shrivastava, "A One-Pass Distributed and Private Sketch for Kernel Sums with
        Applications to Machine Learning at Scale", CCS 2021, section 4; Shrivastava & Li,
        "Asymmetric LSH (ALSH) for Sublinear Time Maximum Inner Product Search", NeurIPS 2014.

    Examples:
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-1, 1, size=(20000, 1))
        >>> y = 0.5 * X[:, 0] + 0.05 * rng.normal(size=20000)
        >>> model = RACELinearRegression(
        ...     n_rows=500, n_bits=4, epsilon=1.0, fit_intercept=False, seed=1, noise_source="numpy", random_state=1
        ... ).fit(X, y)
        >>> round(float(model.coef_[0]), 1), model.event_.guarantee.epsilon
        (0.5, 1.0)
    """

    def __init__(
        self,
        *,
        n_rows: int | None = None,
        n_bits: int = 6,
        epsilon: float,
        neighbouring: Neighbouring | str = Neighbouring.ADD_REMOVE,
        fit_intercept: bool = True,
        smoothing: float = 0.1,
        n_smoothing: int = 64,
        seed: int = 0,
        noise_source: str = "opendp",
        random_state: RNGLike = None,
        transform: str | None = None,
        data_bound: float | None = None,
        coef_bound: float = 2.0,
        solver: str = "signs",
        n_queries: int = 1000,
        shrinkage: bool = True,
        sampler: str = NOT_GIVEN,
    ) -> None:
        keep_parameters(self, locals())

    def fit(self, X: Any, y: Any) -> RACELinearRegression:
        """Sketch ``(x, y)``, release it, solve; sets ``coef_``, ``intercept_``, ``sketch_``, ``event_``."""
        owner = "RACELinearRegression"
        check_integer(self.n_bits, "n_bits", owner, low=2, high=20)
        epsilon = None if self.epsilon is None else check_epsilon(self.epsilon, owner)
        relation = Neighbouring.parse(self.neighbouring, owner, SKETCH_RELATIONS)
        smoothing = check_real(self.smoothing, "smoothing", owner, low=0.0)
        n_smoothing = check_integer(self.n_smoothing, "n_smoothing", owner, low=1)
        solver = check_choice(self.solver, "solver", owner, REGRESSION_SOLVERS)
        transform = (
            SOLVER_TRANSFORMS[solver]
            if self.transform is None
            else check_choice(self.transform, "transform", owner, REGRESSION_TRANSFORMS)
        )
        if solver in ("moments", "linear") and transform != "asymmetric":
            raise invalid("transform", owner, f"'asymmetric' (or None) with solver={solver!r}", self.transform)
        if self.n_rows is None:
            n_rows = default_rows(solver, epsilon, relation)
        else:
            n_rows = check_integer(self.n_rows, "n_rows", owner, low=1)
        if not isinstance(self.shrinkage, bool):
            raise invalid("shrinkage", owner, "True or False", self.shrinkage)
        coef_bound = check_real(self.coef_bound, "coef_bound", owner, low=0.0, low_open=True)
        features = check_array(X, "X", owner, ndim=2).astype(float)
        targets = check_array(y, "y", owner, ndim=1).astype(float)
        if targets.shape[0] != features.shape[0]:
            raise invalid("y", owner, f"a 1-D array of {features.shape[0]} targets", f"shape {targets.shape}")
        if self.fit_intercept:
            features = np.column_stack([features, np.ones(features.shape[0])])
        n_coefficients = features.shape[1]
        constant = n_coefficients - 1 if self.fit_intercept else None  # the intercept's coordinate is 1 in every row
        if solver == "moments":
            needed = moment_parameter_count(n_coefficients + 1, constant)
            n_queries = check_integer(self.n_queries, "n_queries", owner, low=needed, high=MAX_MOMENT_QUERIES)
        if solver == "signs":
            _check_sign_rows(n_rows, self.n_bits, moment_parameter_count(n_coefficients + 1, constant), owner)
        rows = np.column_stack([features, targets])
        if self.data_bound is None:
            data_bound = math.sqrt(rows.shape[1])
        else:
            data_bound = check_real(self.data_bound, "data_bound", owner, low=0.0, low_open=True)
        if transform == "asymmetric":
            rows = _embed_data(rows, data_bound, np.random.default_rng([self.seed, 1]), owner)
        family = SignedRandomProjection(dimension=rows.shape[1], n_repetitions=n_rows, n_bits=self.n_bits, seed=self.seed)
        noise_source = _noise_source(self, owner)
        rng = _private_rng(noise_source, self.random_state, owner)
        sketch = RACE(family).update(rows)
        self._transform, self._query_bound = transform, math.sqrt(coef_bound**2 + 1.0)
        if epsilon is None:  # the non-private reference: the raw sketch, and no guarantee
            self.sketch_ = sketch
            self.event_ = GuaranteeEvent(PrivacyGuarantee(math.inf, 0.0, relation))
        else:
            self.sketch_ = sketch.release(epsilon, neighbouring=relation, noise_source=noise_source, rng=rng)
            self.event_ = self.sketch_.event
        dimension = n_coefficients + 1
        if solver == "signs":
            solution = self._solve_signs(dimension, constant, data_bound, coef_bound)
        elif solver == "moments":
            solution = self._solve_moments(n_queries, dimension, data_bound, coef_bound)
        elif solver == "linear":
            solution = self._solve_linear(dimension, data_bound, coef_bound)
        else:
            perturbations = np.random.default_rng(self.seed).normal(scale=smoothing, size=(n_smoothing, n_coefficients))
            solution = self._minimise(perturbations, n_coefficients)
        self.coef_ = solution[:-1] if self.fit_intercept else solution
        self.intercept_ = float(solution[-1]) if self.fit_intercept else 0.0
        return self

    def _solve_signs(self, dimension: int, constant: int | None, data_bound: float, coef_bound: float) -> np.ndarray:
        """A Gaussian model of the rows fitted to the sketch rows' sign patterns, shrunk, then least squares."""
        family = self.sketch_.family
        hyperplanes, padding = family.directions[:, :, :dimension], None
        if self._transform == "asymmetric":
            hyperplanes = hyperplanes / data_bound
            pads = family.directions[:, :, dimension : dimension + _PADDING_DIMENSION]
            padding = np.einsum("rjd,rld->rjl", pads, pads) / _PADDING_DIMENSION
        model = SignModel(hyperplanes, constant=constant, padding_gram=padding, data_bound=data_bound)
        variance = self.sketch_.noise_variance() if isinstance(self.sketch_, ReleasedRACE) else 0.0
        coefficients = walsh_coefficients(self.sketch_.counts, self.n_bits)
        fit = fit_sign_model(coefficients, model, self.n_bits, variance)
        features, centred = np.arange(dimension - (2 if self.fit_intercept else 1)), bool(self.fit_intercept)
        shrink = self.shrinkage and self.fit_intercept  # towards the intercept-only model (predicting the mean)
        self.shrinkage_factor_ = shrinkage_factor(coefficients, fit, features.size) if shrink else 1.0
        self.count_, self.second_moment_ = fit.count, fit.second_moment
        mean = model.unpack(fit.parameters)[1]
        return least_squares_in_ball(
            shrink_slopes(fit.second_moment, mean, features, self.shrinkage_factor_, centred), coef_bound
        )

    def _solve_linear(self, dimension: int, data_bound: float, coef_bound: float) -> np.ndarray:
        """The sign identity's unbiased second moment from the sketch rows' sign pairs, then least squares."""
        totals, _, pairs = walsh_coefficients(self.sketch_.counts, self.n_bits)
        moment_sum = data_bound**2 * linear_second_moment(pairs, self.sketch_.family.directions[:, :, :dimension])
        self.count_ = float(np.mean(totals))
        self.second_moment_ = moment_sum / max(self.count_, 1.0)
        return least_squares_in_ball(self.second_moment_, coef_bound)

    def _solve_moments(self, n_queries: int, dimension: int, data_bound: float, coef_bound: float) -> np.ndarray:
        """Second moment of the rows fitted to the sketch at public queries, then least squares on it."""
        vectors = moment_queries(n_queries, dimension, self.seed)
        kernel_sums = self.sketch_.estimate(embed_queries(vectors, _PADDING_DIMENSION))
        constant = dimension - 2 if self.fit_intercept else None  # the intercept's coordinate is 1 in every row
        count, second_moment = fit_second_moment(vectors, kernel_sums, data_bound, self.n_bits, constant=constant)
        self.count_, self.second_moment_ = count, second_moment
        return least_squares_in_ball(second_moment, coef_bound)

    def _queries(self, thetas: np.ndarray) -> np.ndarray:
        """The hashed queries for coefficient rows ``thetas`` (``None`` rows outside the bound are not produced here)."""
        minus_one = -np.ones((thetas.shape[0], 1))
        plain = np.hstack([thetas, minus_one])
        if self._transform == "none":
            return plain
        bound = self._query_bound
        padding = np.sqrt(np.maximum(bound**2 - np.sum(plain**2, axis=1, keepdims=True), 0.0))
        return np.hstack([plain, np.zeros((thetas.shape[0], _PADDING_DIMENSION)), padding]) / bound

    def _project(self, thetas: np.ndarray) -> np.ndarray:
        """Rows of ``thetas`` scaled into the ball ``||theta|| <= coef_bound`` (unchanged without the transform)."""
        if self._transform == "none":
            return thetas
        norms = np.linalg.norm(thetas, axis=1, keepdims=True)
        return thetas * np.minimum(1.0, self.coef_bound / np.maximum(norms, 1e-300))

    def _inside(self, thetas: np.ndarray) -> bool:
        return self._transform == "none" or bool(np.all(np.sum(thetas**2, axis=1) + 1.0 <= self._query_bound**2))

    def surrogate_loss(self, coefficients: Any) -> float:
        """The unsmoothed surrogate ``K(Q) + K(-Q)`` at ``coefficients`` (intercept last if fitted)."""
        _check_fitted(self, "sketch_")
        owner = "RACELinearRegression.surrogate_loss"
        coefficients = check_array(coefficients, "coefficients", owner, ndim=1).astype(float)
        n_coefficients = self.sketch_.family.dimension - (1 if self._transform == "none" else 2 + _PADDING_DIMENSION)
        if coefficients.size != n_coefficients:
            raise invalid("coefficients", owner, f"{n_coefficients} coefficients", f"shape {coefficients.shape}")
        if not self._inside(coefficients[np.newaxis, :]):
            raise invalid("coefficients", owner, f"coefficients of norm at most coef_bound={self.coef_bound}", coefficients)
        query = self._queries(coefficients[np.newaxis, :])
        return float(self.sketch_.estimate(query)[0] + self.sketch_.estimate(-query)[0])

    def _minimise(self, perturbations: np.ndarray, n_coefficients: int) -> np.ndarray:
        def smoothed(theta: np.ndarray) -> float:
            centre, excess = self._project(theta[np.newaxis, :])[0], 0.0
            if self._transform == "asymmetric":
                excess = max(0.0, float(np.linalg.norm(theta)) - self.coef_bound)
            queries = self._queries(self._project(centre + perturbations))
            value = float(np.mean(self.sketch_.estimate(queries) + self.sketch_.estimate(-queries)))
            return value + excess * (1.0 + abs(value))  # outside the public bound: pushed back inside

        start = np.zeros(n_coefficients)
        step = 1.0 if self._transform == "none" else min(1.0, self.coef_bound / 2)
        simplex = np.vstack([start, step * np.eye(n_coefficients)])
        options = {"initial_simplex": simplex, "xatol": 1e-3, "fatol": 1e-9, "maxiter": 200 * n_coefficients}
        return optimize.minimize(smoothed, start, method="Nelder-Mead", options=options).x

    def predict(self, X: Any) -> np.ndarray:
        """``X @ coef_ + intercept_``."""
        _check_fitted(self, "coef_")
        features = check_array(X, "X", "RACELinearRegression.predict", ndim=2).astype(float)
        if features.shape[1] != self.coef_.size:
            raise invalid("X", "RACELinearRegression.predict", f"{self.coef_.size} feature columns", f"shape {features.shape}")
        return features @ self.coef_ + self.intercept_
