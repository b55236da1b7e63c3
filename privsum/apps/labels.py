"""The label round: m-ary randomized response on each user's class label (section 3.3 of Wagner (ICLR 2025)).

References:
    Wagner, "Learning from End User Data with Shuffled Differential Privacy over Kernel
    Densities", ICLR 2025.
"""

from __future__ import annotations

import math

import numpy as np

from privsum._random import RNGLike, as_generator
from privsum._validation import check_array, check_epsilon, check_integer
from privsum.accounting.events import GuaranteeEvent, PrivacyEvent, ProfileEvent
from privsum.accounting.guarantee import PrivacyGuarantee
from privsum.accounting.profile import randomized_response_profile

__all__ = ["keep_probability", "label_event", "randomize_labels"]

#: Most classes the label round supports (the m-ary RR profile holds ``m`` probabilities).
_MAX_CLASSES = 2**20


def keep_probability(label_epsilon: float, n_classes: int) -> float:
    """``e^eps / (e^eps - 1 + m)``: the chance a label is reported truthfully (1 when eps is inf).

    Examples:
        >>> round(keep_probability(math.log(3), 2), 4)
        0.75
    """
    label_epsilon = check_epsilon(label_epsilon, "keep_probability", "label_epsilon", allow_infinite=True)
    n_classes = check_integer(n_classes, "n_classes", "keep_probability", low=2, high=_MAX_CLASSES)
    if math.isinf(label_epsilon):
        return 1.0
    return math.exp(label_epsilon) / (math.expm1(label_epsilon) + n_classes)


def randomize_labels(labels: np.ndarray, n_classes: int, label_epsilon: float, rng: RNGLike) -> np.ndarray:
    """Each label kept with `keep_probability`, else replaced by a uniform *other* label.

    Args:
        labels: integer class indices in ``[0, n_classes)`` (integer-valued floats are read
            exactly; anything else is refused, never rounded).
        n_classes: ``m >= 2``.
        label_epsilon: the label round's epsilon (``inf``: labels reported as they are).
        rng: a `numpy.random.Generator`, a seed or ``"secure"``.

    Returns:
        The reported labels, int64, of the shape of ``labels``.

    Privacy:
        ``label_epsilon``-local DP for each user's label (no shuffling needed); replace-one.

    Examples:
        >>> labels = np.zeros(10_000, dtype=int)
        >>> reported = randomize_labels(labels, 4, math.log(3), np.random.default_rng(0))
        >>> bool(abs((reported == 0).mean() - 0.5) < 0.02)
        True
    """
    owner = "randomize_labels"
    n_classes = check_integer(n_classes, "n_classes", owner, low=2, high=_MAX_CLASSES)
    label_epsilon = check_epsilon(label_epsilon, owner, "label_epsilon", allow_infinite=True)
    labels = check_array(labels, "labels", owner, low=0, high=n_classes - 1, integer=True).astype(np.int64, copy=False)
    rng = as_generator(rng, owner)
    keep = keep_probability(label_epsilon, n_classes)
    if keep == 1.0:
        return labels.copy()
    shift = rng.integers(1, n_classes, size=labels.shape)  # a uniform other label
    return np.where(rng.random(labels.shape) < keep, labels, (labels + shift) % n_classes)


def label_event(label_epsilon: float, n_classes: int) -> PrivacyEvent:
    """The label round's event: the exact m-ary RR profile (``inf``: no label privacy)."""
    label_epsilon = check_epsilon(label_epsilon, "label_event", "label_epsilon", allow_infinite=True)
    n_classes = check_integer(n_classes, "n_classes", "label_event", low=2, high=_MAX_CLASSES)
    if math.isinf(label_epsilon):
        return GuaranteeEvent(PrivacyGuarantee(math.inf))
    return ProfileEvent.at_delta(randomized_response_profile(label_epsilon, n_classes), 0.0)
