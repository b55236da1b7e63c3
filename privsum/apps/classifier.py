"""Private highest-density-class classifier and class decoder over shuffled-DP KDEs (section 3.3 of Wagner (ICLR 2025)).

References:
    Wagner, "Learning from End User Data with Shuffled Differential Privacy over Kernel
    Densities", ICLR 2025.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from privsum._estimator import keep_parameters
from privsum._random import RNGLike, as_generator
from privsum._validation import (
    check_array,
    check_choice,
    check_delta,
    check_epsilon,
    check_integer,
    check_real,
    invalid,
    refusals_as,
)
from privsum.accounting.guarantee import PrivacyGuarantee, ThreatModel
from privsum.apps._class_rounds import MIN_CLASS_USERS, PROTOCOLS, VECTOR_PROTOCOLS, ClassKDERounds, calibration_size
from privsum.apps._densities import densities_at, probabilities_from_densities
from privsum.apps._estimator import ClassifierBase, NotFittedError
from privsum.apps._inputs import check_labels, check_points
from privsum.apps.decoding import DECODING_SCORES, decode_class, decode_classes
from privsum.apps.labels import randomize_labels
from privsum.exceptions import KernelScaleWarning, PrivacyLeakWarning
from privsum.kde.calibration import calibration_option_names
from privsum.kde.protocol import ShuffledKDE
from privsum.kde.scale import warn_if_degenerate_scale
from privsum.kde.vector import VectorSumKDE
from privsum.lsq import IdentityFeatures, LSQFamily, RandomFourierFeatures, RandomSigns, SignedRandomProjection
from privsum.shuffle.robustness import check_malicious

__all__ = [
    "DECODING_SCORES",
    "KERNELS",
    "LABEL_PRIVACY",
    "PROTOCOLS",
    "VECTOR_PROTOCOLS",
    "ShuffledKDEClassifier",
    "decode_class",
    "decode_classes",
    "probabilities_from_densities",
    "protocol_option_names",
]

KERNELS = ("gaussian", "ip", "lsh")
#: How labels are protected: a randomized-response round paid from ``epsilon``, inside one joint
#: vector sum, or not at all (labels treated as public).
LABEL_PRIVACY = ("round", "joint", "clear")


class ShuffledKDEClassifier(ClassKDERounds, ClassifierBase):
    """Highest-density-class classifier trained with shuffled differential privacy.

    ``fit`` runs the protocol of section 3.3 of Wagner (ICLR 2025): every user reports a label through m-ary
    randomized response (the label round, ``label_budget_fraction * epsilon``); the noisy class
    counts ``n_c`` are published; the users of each reported class run the shuffled KDE protocol
    (`privsum.kde.ShuffledKDE`) with ``n = n_c`` and the rest of ``epsilon``; ``predict`` returns
    ``argmax_c K_c(x)``. A scikit-learn classifier when
    scikit-learn is installed (it passes ``check_estimator``); the same conventions otherwise:
    ``__init__`` only stores, fitted attributes end with ``_``. `class_densities` gives every
    class's private density; `decision_function` follows scikit-learn's shape convention;
    `predict_proba` normalises the densities into class probabilities (see there: noisy
    densities can be negative, and they are not calibrated probabilities).

    Args:
        classes: the public label set. ``None`` infers it from the data, which reveals it: a
            `PrivacyLeakWarning` is raised.
        kernel: ``"gaussian"`` (random Fourier features, bandwidth ``bandwidth``), ``"ip"``
            (inner product: random signs over bit sums, the identity features ``f(x) = x`` over
            vector sums) or ``"lsh"`` (angular, signed random projections).
        protocol: a name from `PROTOCOLS`. Bit sums run Algorithm 1 per class (each feature
            rounded to one bit, instances composed): ``"rr"``, ``"3nb"``, ``"pure"``, ``"local"``,
            ``"central-gaussian-per-instance"`` (the paper's central baseline), ``"central-laplace"``,
            ``"exact"`` (non-private, rounded features). Vector sums (`VECTOR_PROTOCOLS`) release
            each class's feature sum at once with L2 accounting: ``"vector"`` (the shuffled
            Skellam vector sum, `privsum.sums.SkellamVectorSum`), ``"central-gaussian"`` (the
            Gaussian mechanism with L2 sensitivity ``2 max||f||``, Balle & Wang's exact
            calibration; trusted curator), ``"exact-vector"`` (non-private; with ``kernel="ip"``
            the exact nearest-centroid classifier).
        epsilon: the total epsilon of one ``fit`` for each user's (point, label): the label round
            and the KDE together (``label_privacy="round"``), or the joint sum
            (``"joint"``). With ``label_privacy="clear"`` it covers the points only (the KDE
            part); the labels are public and the reported guarantee is infinite.
        delta: the total delta of one ``fit`` (the label round is pure, so it is the KDE part's).
        label_budget_fraction: the share of ``epsilon`` spent on the label round, in ``(0, 1)``
            (``label_privacy="round"`` only): the label round is ``label_budget_fraction *
            epsilon``-DP and each class's KDE gets the rest, ``(1 - label_budget_fraction) *
            epsilon``. m-ary randomized response over many classes needs a large share to keep
            labels useful (`privsum.apps.keep_probability` gives the chance a label is kept).
            The fitted ``label_epsilon_`` and ``kde_epsilon_`` hold the split.
        label_privacy: ``"round"`` (the label round above, then one KDE per reported class),
            ``"joint"`` (vector sums only: one sum over all classes of dimension
            ``C (I Q + 1)``, `privsum.kde.JointClassKDE`, whose noise protects the label too:
            no label round, and ``(epsilon, delta)`` covers points and labels) or ``"clear"``
            (labels sent as they are: ``epsilon`` is the KDE part's, for neighbours that keep
            their label; the published class counts reveal labels, so the reported guarantee is
            infinite).
        n_repetitions: ``I``; default the data dimension (section 4 of Wagner (ICLR 2025)). Unused by the identity
            features (``kernel="ip"`` over a vector sum has ``I = 1``: copies add nothing).
        bandwidth: Gaussian-kernel bandwidth ``h`` in ``exp(-||x-y||^2/h^2)``.
        lsh_bits: concatenated sign bits for ``kernel="lsh"``.
        accounting: ``"tight"`` (PLD) or ``"seed"`` (Theorem 3.2) for the per-class calibration.
        calibration: the bit sum's calibration, ``"tight"`` or ``"analytic"``.
        protocol_options: ``None`` or a mapping of further keyword arguments for the bit sum's
            ``from_privacy`` (routed through `privsum.kde.ShuffledKDE.from_privacy`); the names
            a protocol accepts are `protocol_option_names` (for ``"3nb"``: ``flooding`` and
            ``variance_factor``; for ``"rr"``: ``composition``). 3NB without ``flooding`` takes
            ``{"flooding": "communication", "variance_factor": 4.0}`` (the least messages,
            `privsum.bitsum.ThreeNBBitSum.from_privacy`) wherever its per-instance RMSE is within
            1% of the paper flooding's (`privsum.kde.ShuffledKDE.from_privacy`); on the bundled
            demo's data ``benchmarks/bench_3nb_demo_flooding.py`` compares its messages and
            per-instance RMSE with the paper flooding's. ``{"flooding": "paper"}`` keeps the paper's.
            Each class's calibration (and its cache key) includes these options.
        random_state: seed of the public LSQ draws and of the simulated users' randomness.

    Privacy:
        Replace-one neighbours on (point, label). With ``label_privacy="round"`` the label round
        is ``epsilon_L = label_budget_fraction * epsilon``-DP; given the reported labels, each
        user's point enters exactly one class's KDE, which is ``(epsilon - epsilon_L, delta)``-DP,
        so the whole run is ``(epsilon, delta)``-DP by adaptive composition (the accountant's PLD
        composition can report slightly less). The accountant (``accountant_``) records the label
        round and then the class KDEs as one parallel composition (one part per user). With
        ``label_privacy="joint"`` it records the joint sum alone, ``(epsilon, delta)``. Corollary
        3.4 of Wagner (ICLR 2025) states the KDE part's guarantee under the model threat; that
        holds for neighbours that keep the label, but the released model includes the noisy
        counts, which depend on labels, so privsum reports the composed total under both threat
        models; see ``guarantees_`` (and ``kde_guarantee_`` for the KDE part alone).

    Robustness:
        `manipulation_bounds`: ``k`` malicious users move a published class count by at most
        ``k`` (one label message each) and every KDE coefficient by the class protocol's
        `~privsum.kde.ShuffledKDE.manipulation_bound`.

    Examples:
        >>> rng = np.random.default_rng(0)
        >>> X = np.vstack([rng.normal([3, 0], 0.3, (300, 2)), rng.normal([-3, 0], 0.3, (300, 2))])
        >>> y = np.repeat(["a", "b"], 300)
        >>> model = ShuffledKDEClassifier(classes=["a", "b"], protocol="exact", n_repetitions=64, random_state=0)
        >>> model.fit(X, y).predict(np.array([[3.0, 0.0], [-3.0, 0.0]])).tolist()
        ['a', 'b']
    """

    def __init__(
        self,
        *,
        classes: Any = None,
        kernel: str = "gaussian",
        protocol: str = "3nb",
        epsilon: float = 2.0,
        delta: float = 1e-6,
        label_budget_fraction: float = 0.5,
        label_privacy: str = "round",
        n_repetitions: int | None = None,
        bandwidth: float = 1.0,
        lsh_bits: int = 4,
        accounting: str = "tight",
        calibration: str = "tight",
        protocol_options: Mapping[str, Any] | None = None,
        random_state: RNGLike = None,
    ) -> None:
        keep_parameters(self, locals())

    # ----- fitting --------------------------------------------------------------------------

    def fit(self, X: Any, y: Any) -> ShuffledKDEClassifier:
        """Run the private training protocol on users' points ``X`` and labels ``y``.

        With the Gaussian kernel, a `KernelScaleWarning` says when the points' scale makes the
        kernel degenerate for ``bandwidth`` (typical distances far beyond or far below it: the
        model would predict at chance), with the measured distances and the fix (normalise the
        points, e.g. scikit-learn's ``Normalizer`` in a ``Pipeline``, or set ``bandwidth``). The
        check looks at an evenly spaced sample of at most 256 rows of ``X``; it is a local
        diagnostic for the data owner running ``fit``, not differentially private: its message
        states statistics of the data, so do not publish it. In a deployment, where no party
        holds every user's point, run the same check on public or synthetic data of the same
        kind before collection.
        """
        owner = type(self).__name__
        points = check_points(X, owner)
        labels = check_labels(y, points.shape[0], owner)
        self._check_parameters()
        self.classes_ = self._resolve_classes(labels)
        self.n_features_in_ = points.shape[1]
        self.n_training_users_ = points.shape[0]
        encoded = self._encode(labels)
        self.label_epsilon_, self.kde_epsilon_ = self._split_budget()
        rng = as_generator(self.random_state, owner)
        self.family_ = self._build_family(points.shape[1], int(rng.integers(2**62)))
        with refusals_as(owner, {"x": "X", "points": "X"}):  # e.g. a point above the family's norm bound
            self.family_.check_points(points, "X")
        warn_if_degenerate_scale(self.family_, points, owner)  # once here, not again for each class below
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", KernelScaleWarning)
            if self.label_privacy == "joint":
                with refusals_as(owner, {"x": "X"}):
                    self.densities_ = self._fit_joint(points, encoded, rng)
            else:
                reported = randomize_labels(encoded, len(self.classes_), self.label_epsilon_, rng)
                self.class_counts_ = np.bincount(reported, minlength=len(self.classes_))
                with refusals_as(owner, {"x": "X"}):
                    self.densities_ = self._fit_classes(points, reported, rng)
        self.accountant_ = self._account()
        return self

    def _check_parameters(self) -> None:
        owner = type(self).__name__
        check_choice(self.kernel, "kernel", owner, KERNELS)
        check_choice(self.protocol, "protocol", owner, tuple(PROTOCOLS))
        check_epsilon(self.epsilon, owner)
        check_delta(self.delta, owner)
        check_real(self.label_budget_fraction, "label_budget_fraction", owner, low=0.0, high=1.0, low_open=True, high_open=True)
        check_choice(self.label_privacy, "label_privacy", owner, LABEL_PRIVACY)
        if self.label_privacy == "joint" and self.protocol not in VECTOR_PROTOCOLS:
            raise invalid(
                "label_privacy",
                owner,
                f"'round' or 'clear' unless protocol is a vector sum {VECTOR_PROTOCOLS}",
                self.label_privacy,
            )
        if self.n_repetitions is not None:
            check_integer(self.n_repetitions, "n_repetitions", owner, low=1)
        check_real(self.bandwidth, "bandwidth", owner, low=0.0, low_open=True)
        check_integer(self.lsh_bits, "lsh_bits", owner, low=1, high=16)
        check_choice(self.accounting, "accounting", owner, ("tight", "seed"))
        check_choice(self.calibration, "calibration", owner, ("tight", "analytic"))
        self._check_protocol_options()

    def _check_protocol_options(self) -> None:
        """``protocol_options`` is ``None`` or a mapping whose keys the protocol's ``from_privacy`` accepts."""
        owner = type(self).__name__
        options = self.protocol_options
        if options is None:
            return
        accepted = protocol_option_names(self.protocol)
        if not (isinstance(options, Mapping) and all(isinstance(key, str) for key in options)):
            raise invalid("protocol_options", owner, "None or a mapping of option names to values", options)
        unknown = sorted(key for key in options if key not in accepted)
        if unknown:
            expected = f"a mapping whose keys are among {accepted} for protocol={self.protocol!r}"
            raise invalid("protocol_options", owner, expected, dict(options))

    def _resolve_classes(self, labels: np.ndarray) -> np.ndarray:
        if self.classes is None:
            warnings.warn(
                "classes=None: the label set is inferred from the private data, which reveals it. "
                "Pass the public label set as `classes`.",
                PrivacyLeakWarning,
                stacklevel=3,
            )
            if labels.dtype.kind == "f" and not np.all(np.mod(labels, 1) == 0):
                raise invalid("y", type(self).__name__, "class labels (Unknown label type: a continuous target)", "floats")
            inferred = np.unique(labels)
            if inferred.size < 2:
                raise invalid("y", type(self).__name__, "labels of at least two classes", "one class only")
            return inferred
        classes = np.asarray(self.classes)
        if classes.ndim != 1 or len(np.unique(classes)) != classes.size or classes.size < 2:
            raise invalid("classes", type(self).__name__, "at least two distinct labels", self.classes)
        return classes

    def _encode(self, labels: np.ndarray) -> np.ndarray:
        index = {label: position for position, label in enumerate(self.classes_.tolist())}
        unknown = [label for label in np.unique(labels).tolist() if label not in index]
        if unknown:
            raise invalid("y", type(self).__name__, f"labels from classes {self.classes_.tolist()}", unknown[:5])
        return np.array([index[label] for label in labels.tolist()], dtype=np.int64)

    def _build_family(self, dimension: int, seed: int) -> LSQFamily:
        repetitions = dimension if self.n_repetitions is None else self.n_repetitions
        if self.kernel == "gaussian":
            return RandomFourierFeatures(dimension=dimension, n_repetitions=repetitions, bandwidth=self.bandwidth, seed=seed)
        if self.kernel == "ip" and self.protocol in VECTOR_PROTOCOLS:
            return IdentityFeatures(dimension=dimension)
        if self.kernel == "ip":
            return RandomSigns(dimension=dimension, n_repetitions=repetitions, seed=seed)
        return SignedRandomProjection(dimension=dimension, n_repetitions=repetitions, n_bits=self.lsh_bits, seed=seed)

    def _class_kde(self, size: int) -> ShuffledKDE | VectorSumKDE | None:
        """The KDE `fit` runs for a class of ``size`` reported users (``None`` below the minimum); `privsum.parties` uses it."""
        if size < MIN_CLASS_USERS:
            return None
        if self.protocol in VECTOR_PROTOCOLS:
            return VectorSumKDE.from_privacy(
                family=self.family_, protocol=PROTOCOLS[self.protocol], **self._vector_budget(), n_users=size
            )
        return self._calibrate(calibration_size(size))

    # ----- fitted behaviour ---------------------------------------------------------------

    @property
    def kde_guarantee_(self) -> PrivacyGuarantee:
        """The KDE part alone: the guarantee for neighbours that keep their (public) label."""
        self._check_fitted()
        return max((d.guarantee for d in self.densities_ if d is not None), key=lambda g: (g.epsilon, g.delta))

    @property
    def guarantees_(self) -> dict[str, PrivacyGuarantee]:
        """Overall guarantee at ``delta`` under each threat model."""
        self._check_fitted()
        return {t.value: self.accountant_.guarantee(self.delta, threat_model=t) for t in ThreatModel}

    @property
    def communication_(self) -> dict[str, float]:
        """Per-user communication: the label message plus the KDE messages of the user's class.

        ``expected_messages_per_user`` is the largest over classes (it is the same for all but
        RR-free protocols whose noise shares depend on the class size); ``bits_per_message`` is the
        KDE message width (instance tag plus value); ``expected_bits_per_user`` is what one user
        uploads: the label message and the largest class's KDE upload (a protocol's own
        ``bits_per_user`` where it has one, as the tag-free Skellam shares, else its messages
        times their width).
        """
        self._check_fitted()
        protocols = [p for p in self.protocols_ if p is not None]
        label_messages = 0.0 if self.label_privacy == "joint" else 1.0  # a clear label is one message too
        label_bits = 0.0 if self.label_privacy == "joint" else float(max(1, math.ceil(math.log2(len(self.classes_)))))
        return {
            "expected_messages_per_user": label_messages + max(p.expected_messages_per_user for p in protocols),
            "bits_per_message": float(max(p.bits_per_message() for p in protocols)),
            "label_message_bits": label_bits,
            "expected_bits_per_user": label_bits + max(_expected_bits_per_user(p) for p in protocols),
        }

    def manipulation_bounds(self, n_malicious: int, *, cap: int | None = None) -> dict[str, float]:
        """How far ``n_malicious`` malicious users with well-formed messages move each published number.

        ``"label_counts"``: each user sends one label message, so a class count moves by at most
        ``n_malicious`` (with ``label_privacy="joint"`` the sizes are the joint sum's count
        coordinates divided by their weight: its bound over ``count_weight``);
        ``"kde_coefficients"``: the largest `manipulation_bound` of the class KDEs (every class's
        coefficients may be attacked at once; ``cap`` as there). The malicious users take part in both rounds;
        the counts also set the KDEs' ``n``, which is post-processing of the label round.

        Raises:
            NotImplementedError: a trusted-curator protocol (no shuffler) is fitted.
        """
        self._check_fitted()
        n_malicious = check_malicious(n_malicious, f"{type(self).__name__}.manipulation_bounds")
        protocols = [p for p in self.protocols_ if p is not None]
        kde = max(float(p.manipulation_bound(n_malicious, cap=cap)) for p in protocols)
        label = kde / protocols[0].count_weight if self.label_privacy == "joint" else float(n_malicious)
        return {"label_counts": label, "kde_coefficients": kde}

    def class_densities(self, X: Any) -> np.ndarray:
        """Private density of each class at each point, shape ``(n, n_classes)``; empty classes get ``-inf``."""
        self._check_fitted()
        points = check_points(X, type(self).__name__, n_features=self.n_features_in_)
        points = self.family_.check_points(points, "X")
        return densities_at(self.densities_, self.family_, points)

    def decision_function(self, X: Any) -> np.ndarray:
        """scikit-learn's convention: `class_densities` for three or more classes; for two, one score per point.

        With two classes the score is ``predict_proba[:, 1] - predict_proba[:, 0]`` (in
        ``[-1, 1]``; positive: the second class), so that it ranks points exactly as the
        probabilities do; `class_densities` gives the raw densities.
        """
        densities = self.class_densities(X)
        if densities.shape[1] != 2:
            return densities
        probabilities = probabilities_from_densities(densities)
        return probabilities[:, 1] - probabilities[:, 0]  # both classes empty: 0, no preference

    def predict(self, X: Any) -> np.ndarray:
        """The class of highest private density at each point (the first such class on ties)."""
        densities = self.class_densities(X)
        return self.classes_[np.argmax(densities, axis=1)]

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Mean accuracy of `predict` on ``(X, y)``, weighted by ``sample_weight`` if given.

        Post-processing of the released model: no extra privacy cost.
        """
        owner = type(self).__name__
        points = check_points(X, owner)
        labels = check_labels(y, points.shape[0], owner)
        correct = np.asarray(self.predict(points) == labels, dtype=float)
        if sample_weight is None:
            return float(correct.mean())
        weights = check_array(sample_weight, "sample_weight", owner, ndim=1, low=0.0)
        if weights.shape[0] != points.shape[0] or not weights.sum() > 0:
            expected = f"{points.shape[0]} non-negative weights, not all zero"
            raise invalid("sample_weight", owner, expected, f"shape {weights.shape}")
        return float(np.average(correct, weights=weights))

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities from the private densities, shape ``(n, n_classes)``; rows sum to 1.

        ``p_c(x) = max(K_c(x), 0) / sum_c' max(K_c'(x), 0)``: the densities, each clipped below at
        0, normalised at each point. A noisy density can be negative (noise exceeding the true
        density, where a class has little mass); clipping treats it as "no support". Classes
        with no released density (no user reported them) get 0. Where no class has a positive
        density at ``x`` (noise dominates everywhere), the densities are shifted by their
        minimum over the released classes and normalised instead (uniform when they are all
        equal): a weak ordering that keeps ``argmax`` equal to `predict`.

        These are the model's relative densities, **not calibrated probabilities**: the classes'
        sizes (priors) are not used, since `predict` compares densities alone, and the privacy
        noise makes small densities unreliable. Post-processing of the released model: no extra
        privacy cost.
        """
        return probabilities_from_densities(self.class_densities(X))

    def _check_fitted(self) -> None:
        if not hasattr(self, "densities_"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call 'fit' first.")


def protocol_option_names(protocol: str) -> tuple[str, ...]:
    """The ``protocol_options`` names a classifier ``protocol`` accepts (empty for vector sums and ``"exact"``).

    They are the keyword arguments of the bit sum's ``from_privacy`` besides those the classifier
    sets itself (``epsilon``, ``delta``, ``n_users``, ``calibration``).

    Examples:
        >>> protocol_option_names("3nb")
        ('flooding', 'variance_factor')
        >>> protocol_option_names("vector")
        ()
    """
    if protocol not in PROTOCOLS or protocol == "exact" or protocol in VECTOR_PROTOCOLS:
        return ()
    return calibration_option_names(PROTOCOLS[protocol]) or ()


def _expected_bits_per_user(protocol: Any) -> float:
    """One user's expected upload in bits: the (wrapped vector sum's) ``bits_per_user``, else messages times width."""
    inner = getattr(protocol, "vector_sum", protocol)
    if callable(getattr(inner, "bits_per_user", None)):
        return float(inner.bits_per_user())
    return float(protocol.expected_messages_per_user * protocol.bits_per_message())
