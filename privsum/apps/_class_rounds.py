"""The private training rounds of `~privsum.apps.ShuffledKDEClassifier`: the budget split, the per-class KDEs, the accounting.

With ``label_privacy="round"`` (or ``"clear"``) every reported class's users run one KDE
(`privsum.kde.ShuffledKDE` over a bit sum, or `privsum.kde.VectorSumKDE` over a vector sum),
calibrated for the class's reported size; with ``"joint"`` one `privsum.kde.JointClassKDE` releases
every class at once. The accountant records the rounds as the classifier's docstring states.
"""

from __future__ import annotations

import math

import numpy as np

from privsum._validation import invalid, refusals_as
from privsum.accounting.accountant import PrivacyAccountant
from privsum.accounting.events import GuaranteeEvent, ParallelEvent
from privsum.apps.labels import label_event
from privsum.bitsum import PROTOCOLS as BIT_SUM_PROTOCOLS
from privsum.kde.function import KDEFunction
from privsum.kde.joint import JointClassKDE
from privsum.kde.protocol import ShuffledKDE
from privsum.kde.vector import VectorSumKDE
from privsum.sums.central_vector import CentralGaussianVectorSum, ExactVectorSum
from privsum.sums.skellam import SkellamVectorSum

__all__ = ["MIN_CLASS_USERS", "PROTOCOLS", "VECTOR_PROTOCOLS", "ClassKDERounds", "calibration_size"]

#: The bit sums by name (`privsum.bitsum.PROTOCOLS`), then the vector sums.
PROTOCOLS: dict[str, type] = {
    **BIT_SUM_PROTOCOLS,
    "vector": SkellamVectorSum,
    "central-gaussian": CentralGaussianVectorSum,
    "exact-vector": ExactVectorSum,
}
#: Protocols that sum each class's feature vectors at once (`privsum.kde.VectorSumKDE`); the others are bit sums.
VECTOR_PROTOCOLS = ("vector", "central-gaussian", "exact-vector")
#: Reported users a class needs for its KDE to be released.
MIN_CLASS_USERS = 2


def calibration_size(size: int) -> int:
    """``size`` rounded down to two significant digits (at least ``MIN_CLASS_USERS``)."""
    scale = 10 ** max(0, len(str(size)) - 2)
    return max(MIN_CLASS_USERS, size // scale * scale)


class ClassKDERounds:
    """The rounds of `ShuffledKDEClassifier.fit <privsum.apps.ShuffledKDEClassifier.fit>` after the labels are reported.

    A mixin of the classifier: it reads the estimator's parameters (``protocol``, ``epsilon``,
    ``delta``, ``label_privacy``, ...) and sets the fitted ``protocols_`` and, for the joint sum,
    ``class_counts_``.
    """

    def _fit_joint(self, points: np.ndarray, encoded: np.ndarray, rng: np.random.Generator) -> list[KDEFunction | None]:
        """Every class's KDE and noisy size from one joint vector sum (`JointClassKDE`); no label round."""
        joint = self._joint_kde(points.shape[0])
        return self._joint_released(joint, *joint.run(points, encoded, rng=rng))

    def _joint_kde(self, n_users: int) -> JointClassKDE:
        """The joint sum `fit` calibrates for ``n_users`` (`privsum.parties` deploys it)."""
        return JointClassKDE.from_privacy(
            family=self.family_,
            n_classes=len(self.classes_),
            protocol=PROTOCOLS[self.protocol],
            **self._vector_budget(),
            n_users=n_users,
        )

    def _joint_released(self, joint: JointClassKDE, densities: list[KDEFunction], sizes: np.ndarray) -> list[KDEFunction | None]:
        """The fitted state from the joint sum's release: sizes as class counts, classes below the minimum without a density."""
        self.protocols_ = [joint]
        self.class_counts_ = sizes
        return [d if size >= MIN_CLASS_USERS else None for d, size in zip(densities, sizes, strict=True)]

    def _split_budget(self) -> tuple[float, float]:
        """``(label round epsilon, KDE epsilon)``: ``inf`` for clear labels, 0 for the joint sum's (no label round)."""
        if self.label_privacy == "clear":
            return math.inf, self.epsilon
        if self.label_privacy == "joint":
            return 0.0, self.epsilon
        label_epsilon = self.label_budget_fraction * self.epsilon
        kde_epsilon = self.epsilon - label_epsilon
        if label_epsilon + kde_epsilon > self.epsilon:  # rounding: the parts never add up to more than epsilon
            kde_epsilon = math.nextafter(kde_epsilon, 0.0)
        return label_epsilon, kde_epsilon

    def _vector_budget(self) -> dict[str, float]:
        if self.protocol == "exact-vector":
            return {"epsilon": math.inf, "delta": 0.0}
        return {"epsilon": self.kde_epsilon_, "delta": self.delta}

    def _fit_vector_classes(self, points: np.ndarray, reported: np.ndarray, rng: np.random.Generator) -> list[KDEFunction | None]:
        """One `VectorSumKDE` per reported class, each calibrated for its own size."""
        calibrated: dict[int, VectorSumKDE] = {}
        densities: list[KDEFunction | None] = []
        self.protocols_: list[ShuffledKDE | VectorSumKDE | JointClassKDE | None] = []
        for c in range(len(self.classes_)):
            members = points[reported == c]
            size = members.shape[0]
            if size < MIN_CLASS_USERS:
                densities.append(None)
                self.protocols_.append(None)
                continue
            if size not in calibrated:
                calibrated[size] = VectorSumKDE.from_privacy(
                    family=self.family_, protocol=PROTOCOLS[self.protocol], **self._vector_budget(), n_users=size
                )
            self.protocols_.append(calibrated[size])
            densities.append(calibrated[size].run(members, rng=rng))
        if all(d is None for d in densities):
            sizes = np.bincount(reported, minlength=len(self.classes_)).tolist()
            raise invalid("y", type(self).__name__, f"at least one class with {MIN_CLASS_USERS} reported users", sizes)
        return densities

    def _fit_classes(self, points: np.ndarray, reported: np.ndarray, rng: np.random.Generator) -> list[KDEFunction | None]:
        """One KDE per reported class, each calibrated for its own reported (noisy) size ``n_c``.

        A class with more users needs less noise for the same per-class ``(epsilon, delta)``, so
        each class's bit sums are calibrated for its own ``n_c``, rounded down to two significant
        digits (so that classes of similar size share one calibration; a calibration for fewer
        users than take part stays valid: the extra users' reports are independent of the
        target, post-processing). Each user's point enters one class's KDE only (parallel composition), so the
        KDE part's guarantee is the largest of the classes' guarantees, each at most the target.
        """
        if self.protocol in VECTOR_PROTOCOLS:
            return self._fit_vector_classes(points, reported, rng)
        sizes = [int(np.count_nonzero(reported == c)) for c in range(len(self.classes_))]
        if not any(size >= MIN_CLASS_USERS for size in sizes):
            raise invalid("y", type(self).__name__, f"at least one class with {MIN_CLASS_USERS} reported users", sizes)
        calibrated: dict[int, ShuffledKDE] = {}
        densities: list[KDEFunction | None] = []
        self.protocols_: list[ShuffledKDE | None] = []
        for c, size in enumerate(sizes):
            if size < MIN_CLASS_USERS:
                densities.append(None)
                self.protocols_.append(None)
                continue
            rounded = calibration_size(size)
            if rounded not in calibrated:
                calibrated[rounded] = self._calibrate(rounded)
            self.protocols_.append(calibrated[rounded])
            densities.append(calibrated[rounded].run(points[reported == c], rng=rng))
        return densities

    def _calibrate(self, n_users: int) -> ShuffledKDE:
        if self.protocol == "exact":
            return ShuffledKDE(family=self.family_, bitsum=PROTOCOLS["exact"](n_users=n_users))
        options = dict(self.protocol_options or {})
        with refusals_as(type(self).__name__, dict.fromkeys(options, "protocol_options")):
            return ShuffledKDE.from_privacy(
                family=self.family_,
                protocol=PROTOCOLS[self.protocol],
                epsilon=self.kde_epsilon_,
                delta=self.delta,
                n_users=n_users,
                accounting=self.accounting,
                calibration=self.calibration,
                protocol_options=options,
            )

    def _account(self) -> PrivacyAccountant:
        accountant = PrivacyAccountant()
        if self.label_privacy == "joint":
            joint = self.protocols_[0]
            event = joint.vector_sum.event_for_participants(self.n_training_users_)
            accountant.compose(event, label=f"joint vector sum over classes ({self.protocol}, {self.kernel})")
            return accountant
        label_round = f"label round (m-ary RR, eps={self.label_epsilon_:g})"
        if self.label_privacy == "clear":
            label_round = "labels in the clear"
        accountant.compose(label_event(self.label_epsilon_, len(self.classes_)), label=label_round)
        if self.protocol in VECTOR_PROTOCOLS:
            events = [
                p.event_for_participants(int(n))
                for p, n in zip(self.protocols_, self.class_counts_, strict=True)
                if p is not None
            ]
            accountant.compose(
                ParallelEvent(events, parts_per_user=1),
                label=f"per-class vector-sum KDEs, parallel ({self.protocol}, {self.kernel})",
            )
            return accountant
        accountant.compose(GuaranteeEvent(self.kde_guarantee_), label=f"per-class shuffled KDE ({self.protocol}, {self.kernel})")
        return accountant
