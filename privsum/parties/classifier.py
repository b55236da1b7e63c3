"""The classifier's training as party rounds: a label round and one KDE round per class, or one joint round.

`~privsum.apps.ShuffledKDEClassifier.fit` runs, in one process, one of three protocols
(``label_privacy``). With ``"round"`` it runs m-ary randomized response on every label,
publishes the reported class counts, and then one KDE per reported class over that class's
users; with ``"clear"`` the same rounds with every label sent as it is (no protection, exact
counts); with ``"joint"`` one vector sum over every class (`~privsum.kde.JointClassKDE`), the
label inside it. `ClassifierRounds` runs the same protocol between parties: `LabelRound` is the
label round as a deployable protocol (one message per user, its reported class),
`ClassifierRounds.kde_deployments` derives each class round's deployment from the published
counts (the calibration `fit` would use), `ClassifierRounds.joint_deployment` is the joint
round (`~privsum.parties.JointClassKDEProtocol`), and `ClassifierRounds.fitted` (or
`ClassifierRounds.fitted_joint`) assembles the fitted classifier from the analyzers. Each user
keeps its reported class (`reported_class` of its own label upload) and takes part in that
class's round only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from privsum._random import RNGLike, as_generator
from privsum._validation import check_array, check_epsilon, check_integer, invalid
from privsum.accounting.events import PrivacyEvent
from privsum.apps.classifier import PROTOCOLS, ShuffledKDEClassifier
from privsum.apps.labels import label_event, randomize_labels
from privsum.kde.vector import VectorSumKDE
from privsum.parties.analyzer import Analyzer
from privsum.parties.deployment import Deployment
from privsum.parties.kde_joint import JointClassKDEProtocol
from privsum.parties.kde_vector import VectorSumKDEProtocol
from privsum.shuffle.histogram import MessageHistogram
from privsum.shuffle.messages import MessageBatch
from privsum.shuffle.protocol import ShuffleProtocol

__all__ = ["ClassifierRounds", "LabelRound"]

_MAX_CLASSES = 2**20


@dataclass(frozen=True, kw_only=True)
class LabelRound(ShuffleProtocol):
    """The classifier's label round: each user sends its class index through m-ary randomized response.

    Args:
        n_users: users expected (the shuffler's default minimum batch).
        n_classes: ``m >= 2``, the public label set's size.
        label_epsilon: the round's epsilon (positive); ``math.inf`` sends every label as it is
            (the classifier's ``label_privacy="clear"``).

    Privacy:
        ``label_epsilon``-local DP for each user's label, replace-one (the exact m-ary RR
        profile, `privsum.apps.labels.label_event`): it holds whatever the number of participants
        and needs no shuffling. The analyzer publishes the reported class counts. With
        ``label_epsilon=inf`` the label is **not protected**: each message is the user's class
        index, the published counts are the exact class sizes, and the reported guarantee is
        infinite.

    Robustness:
        One message per sender (the cap, in the clear too): ``k`` malicious senders move each
        published count by at most ``k``.

    Examples:
        >>> from privsum.parties import Client
        >>> labels = LabelRound(n_users=10, n_classes=3, label_epsilon=1.0)
        >>> deployment = Deployment(labels, n_instances=1)
        >>> len(Client(deployment, rng=0).encode([2])) - deployment.spec.upload_header_bytes  # one 2-bit message
        1
    """

    n_users: int
    n_classes: int
    label_epsilon: float
    messages_per_instance: ClassVar[int | None] = 1

    def __post_init__(self) -> None:
        owner = "LabelRound"
        check_integer(self.n_users, "n_users", owner, low=1)
        check_integer(self.n_classes, "n_classes", owner, low=2, high=_MAX_CLASSES)
        check_epsilon(self.label_epsilon, owner, "label_epsilon", allow_infinite=True)

    @property
    def alphabet(self) -> tuple[int, ...]:
        """The class indices ``0 .. m - 1``."""
        return tuple(range(self.n_classes))

    @property
    def event(self) -> PrivacyEvent:
        """The exact m-ary RR profile (an infinite guarantee for labels in the clear)."""
        return label_event(self.label_epsilon, self.n_classes)

    @property
    def expected_messages_per_user(self) -> float:
        """One label message."""
        return 1.0

    @property
    def largest_message_effect(self) -> float:
        """One message moves one count by one."""
        return 1.0

    def _message_cap(self, tail_probability: float) -> int:
        """One label message per sender."""
        return 1

    def wire_instances(self, n_instances: int | None = None) -> int:
        """One instance (the labels are one m-ary report each)."""
        if n_instances not in (None, 1):
            raise invalid("n_instances", "LabelRound", "None or 1", n_instances)
        return 1

    def randomize(self, x: Any, *, rng: RNGLike = None) -> MessageBatch:
        """Each user's reported class (``x``: class indices, one per user, or one per row)."""
        labels = check_array(x, "x", "LabelRound", low=0, high=self.n_classes - 1, integer=True)
        if not (labels.ndim == 1 or (labels.ndim == 2 and labels.shape[1] == 1)) or labels.shape[0] == 0:
            raise invalid("x", "LabelRound", "one class index per user", f"shape {labels.shape}")
        reported = randomize_labels(labels.reshape(-1), self.n_classes, self.label_epsilon, as_generator(rng, "LabelRound"))
        return MessageBatch(np.zeros(reported.size, dtype=np.int64), reported, n_instances=1)

    def analyze(self, view: MessageHistogram | MessageBatch) -> np.ndarray:
        """The reported class counts, int64 of length ``m``."""
        return self.view(view).counts[0].astype(np.int64)


class ClassifierRounds:
    """`~privsum.apps.ShuffledKDEClassifier` training between parties, round by round.

    Args:
        classifier: an unfitted classifier with the public label set in ``classes`` and an
            integer ``random_state`` (the seed of the public LSQ family: every party builds the
            same family from it). ``label_privacy="joint"`` needs a shuffled vector sum
            (``protocol="vector"``).
        n_users: the users expected in the label round (the joint round).
        n_features: the points' dimension.

    Privacy:
        The same rounds as `fit`. ``"round"``: the label round (`LabelRound`), then each
        reported class's KDE round over that class's users, calibrated as `fit` calibrates it
        for the published count. ``"clear"``: the same with the labels sent in the clear
        (`LabelRound` with an infinite epsilon: the label is not protected, the counts the
        analyzer publishes are the exact class sizes, and ``epsilon`` covers the points only).
        ``"joint"``: one round of `~privsum.parties.JointClassKDEProtocol`, whose
        ``(epsilon, delta)`` covers points and labels. The composed guarantee is `fit`'s
        (``fitted(...).accountant_``). A round must come to the analyzer in one batch (a class
        round holding every user who reported the class), so that the guarantee `fit` reports
        is the one achieved.

    Examples:
        >>> model = ShuffledKDEClassifier(classes=[0, 1], protocol="rr", epsilon=4.0, n_repetitions=4, random_state=3)
        >>> rounds = ClassifierRounds(model, n_users=200, n_features=2)
        >>> rounds.label_deployment().wire_name
        'LabelRound'
        >>> joint = ShuffledKDEClassifier(classes=[0, 1], protocol="vector", kernel="ip", label_privacy="joint", random_state=3)
        >>> ClassifierRounds(joint, n_users=200, n_features=2).joint_deployment().wire_name  # no label round
        'JointClassKDE'
    """

    def __init__(self, classifier: ShuffledKDEClassifier, *, n_users: int, n_features: int) -> None:
        owner = "ClassifierRounds"
        if not isinstance(classifier, ShuffledKDEClassifier):
            raise invalid("classifier", owner, "a ShuffledKDEClassifier", type(classifier).__name__)
        if classifier.classes is None:
            raise invalid("classifier", owner, "the public label set in classes (not inferred from data)", None)
        if not isinstance(classifier.random_state, (int, np.integer)) or isinstance(classifier.random_state, bool):
            raise invalid("classifier", owner, "an integer random_state (the public family's seed)", classifier.random_state)
        classifier._check_parameters()
        if classifier.label_privacy == "joint" and not issubclass(PROTOCOLS[classifier.protocol], ShuffleProtocol):
            raise invalid("classifier", owner, 'a shuffled vector sum (protocol="vector") for label_privacy="joint"',
                          classifier.protocol)
        self.classifier = classifier
        self.n_users = check_integer(n_users, "n_users", owner, low=1)
        self.n_features = check_integer(n_features, "n_features", owner, low=1)
        self.classes = classifier._resolve_classes(np.asarray(classifier.classes))
        classifier.classes_ = self.classes  # `_encode` reads it
        self.label_epsilon, self.kde_epsilon = classifier._split_budget()
        classifier.label_epsilon_, classifier.kde_epsilon_ = self.label_epsilon, self.kde_epsilon
        seed = int(as_generator(classifier.random_state, owner).integers(2**62))  # as `fit` draws it first
        self.family = classifier._build_family(self.n_features, seed)
        classifier.family_ = self.family
        self._joint: Deployment | None = None

    def _require(self, modes: tuple[str, ...], owner: str) -> None:
        """Refuse a round that the classifier's ``label_privacy`` does not run."""
        if self.classifier.label_privacy not in modes:
            raise invalid("classifier", owner, f"label_privacy in {modes}", self.classifier.label_privacy)

    def class_indices(self, labels: Any) -> np.ndarray:
        """Labels from the public set as class indices (what a label client encodes)."""
        return self.classifier._encode(np.asarray(labels))

    # ----------------------------------------------------------------- the label round
    def label_deployment(self) -> Deployment:
        """The label round's deployment (a shuffler releases once ``n_users`` senders are held); ``"round"`` or ``"clear"``."""
        self._require(("round", "clear"), "ClassifierRounds.label_deployment")
        return Deployment(LabelRound(n_users=self.n_users, n_classes=len(self.classes), label_epsilon=self.label_epsilon),
                          n_instances=1)

    def reported_class(self, upload: bytes) -> int:
        """The class a user reported, read from its own label upload (the user joins that class's round)."""
        deployment = self.label_deployment()
        return int(deployment.spec.split(deployment.spec.decode_upload(upload))[1][0])

    # ----------------------------------------------------------------- the class rounds
    def kde_deployments(self, class_counts: Sequence[int]) -> list[Deployment | None]:
        """Each class round's deployment from the published counts (``None``: too few users, as in `fit`)."""
        self._require(("round", "clear"), "ClassifierRounds.kde_deployments")
        kdes = [self.classifier._class_kde(int(size)) for size in self._counts(class_counts)]
        return [None if kde is None else Deployment(VectorSumKDEProtocol.of(kde) if isinstance(kde, VectorSumKDE) else kde)
                for kde in kdes]

    def _counts(self, class_counts: Sequence[int]) -> np.ndarray:
        counts = check_array(class_counts, "class_counts", "ClassifierRounds", ndim=1, low=0, integer=True)
        if counts.size != len(self.classes):
            raise invalid("class_counts", "ClassifierRounds", f"{len(self.classes)} counts", counts.size)
        return counts.astype(np.int64)

    def fitted(self, labels: Analyzer, classes: Sequence[Analyzer | None]) -> ShuffledKDEClassifier:
        """The fitted classifier from the label round's analyzer and each class round's (``None`` where no round ran)."""
        owner = "ClassifierRounds.fitted"
        self._require(("round", "clear"), owner)
        self._check_round(labels, self.label_deployment(), owner, "labels", one_batch=False)
        counts = self._counts(labels.estimate())
        expected = self.kde_deployments(counts)
        if len(classes) != len(expected):
            raise invalid("classes", owner, f"{len(expected)} analyzers (one per class)", len(classes))
        densities, protocols = [], []
        for c, (analyzer, deployment) in enumerate(zip(classes, expected, strict=True)):
            if deployment is None or analyzer is None:
                if deployment is not None or analyzer is not None:
                    raise invalid("classes", owner, f"a round for class {c} exactly when it has enough users", analyzer)
                densities.append(None)
                protocols.append(None)
                continue
            self._check_round(analyzer, deployment, owner, "classes", f"class {c}'s", int(counts[c]))
            densities.append(analyzer.estimate())
            protocols.append(deployment.protocol)
        model = self._model(labels.n_participants)
        model.class_counts_ = counts
        model.densities_ = densities
        model.protocols_ = protocols
        model.accountant_ = model._account()
        return model

    @staticmethod
    def _check_round(analyzer: Any, deployment: Deployment, owner: str, name: str, which: str = "the",
                     senders: int | None = None, *, one_batch: bool = True) -> None:
        """Refuse an analyzer of another deployment, or (``one_batch``) one whose round came in several batches or another crowd.

        The label round's guarantee is local (no crowd), so its batches may be several; a KDE
        round's guarantee is its crowd's, and `fit` accounts for one crowd of all its users.
        """
        if not isinstance(analyzer, Analyzer) or analyzer.deployment.fingerprint != deployment.fingerprint:
            raise invalid(name, owner, f"{which} round's analyzer, of the deployment the rounds fix", "another deployment")
        if one_batch and (analyzer.n_batches != 1 or (senders is not None and analyzer.n_participants != senders)):
            crowd = "" if senders is None else f" of its {senders} reported users"
            raise invalid(name, owner, f"{which} round in one batch{crowd}",
                          f"{analyzer.n_batches} batches of {analyzer.n_participants} users")

    def _model(self, n_training_users: int) -> ShuffledKDEClassifier:
        model = self.classifier
        model.n_features_in_ = self.n_features
        model.n_training_users_ = n_training_users
        return model

    # ----------------------------------------------------------------- the joint round
    def joint_deployment(self) -> Deployment:
        """The joint round's deployment (``"joint"``): `fit`'s `~privsum.kde.JointClassKDE` for ``n_users``, deployable."""
        self._require(("joint",), "ClassifierRounds.joint_deployment")
        if self._joint is None:
            self._joint = Deployment(JointClassKDEProtocol.of(self.classifier._joint_kde(self.n_users)))
        return self._joint

    def joint_inputs(self, points: Any, labels: Any) -> np.ndarray:
        """The joint round's client inputs: each user's point, then its class index (one row per user)."""
        return JointClassKDEProtocol.inputs(points, self.class_indices(labels))

    def fitted_joint(self, joint: Analyzer) -> ShuffledKDEClassifier:
        """The fitted classifier from the joint round's analyzer (its classes' densities and noisy sizes)."""
        owner = "ClassifierRounds.fitted_joint"
        deployment = self.joint_deployment()
        self._check_round(joint, deployment, owner, "joint")
        model = self._model(joint.n_participants)
        model.densities_ = model._joint_released(deployment.protocol, *joint.estimate())
        model.accountant_ = model._account()
        return model
