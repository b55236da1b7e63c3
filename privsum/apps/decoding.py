"""Decoding a private KDE classifier with a public vocabulary: the words that best describe each class.

Post-processing of a fitted `~privsum.apps.ShuffledKDEClassifier` (section 3.3 of Wagner, *Learning
from End User Data with Shuffled Differential Privacy over Kernel Densities*, ICLR 2025): no
further privacy cost.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privsum._validation import check_array, check_choice, check_integer, check_real, invalid, refusals_as
from privsum.apps._densities import densities_at

__all__ = ["DECODING_SCORES", "decode_class", "decode_classes"]

#: How `decode_class` ranks the vocabulary.
DECODING_SCORES = ("log_ratio", "density")


def decode_class(
    model: Any,
    label: Any,
    words: Any,
    embeddings: Any,
    *,
    top_k: int = 10,
    score: str = "log_ratio",
    floor_quantile: float = 0.9,
) -> list[str]:
    """The ``top_k`` words of a public vocabulary that best describe ``label`` under the private model.

    Args:
        model: a fitted `ShuffledKDEClassifier`, or a fitted scikit-learn ``Pipeline`` whose last
            step is one (the embeddings then pass through the earlier steps' ``transform`` first).
        label: one of the model's classes.
        words: the vocabulary, one word per row of ``embeddings``.
        embeddings: ``(len(words), d)`` public embeddings of the words (before the pipeline's steps).
        top_k: how many words to return.
        score: ``"log_ratio"`` (default) ranks by ``log K_c(v) - log mean_c' K_c'(v)``, the class's
            density relative to the mean over all classes with a released density, so words
            that are dense for every class (generic words) do not top every list.
            ``"density"`` ranks by the class's own density ``K_c(v)`` (Wagner, ICLR 2025,
            section 3.3).
        floor_quantile: for ``"log_ratio"``, every released density below this quantile of all
            of them (over classes and words) is raised to it first: the ratio of two small noisy
            densities is noise (and a noisy release can be zero or negative), so only words where
            the class is dense can rank high; ties are broken by the class's density. In ``[0, 1)``.

    Privacy:
        Post-processing of the fitted model with public data: no further cost.

    Examples:
        >>> from privsum.apps import ShuffledKDEClassifier
        >>> rng = np.random.default_rng(1)
        >>> X = np.vstack([rng.normal([3, 0], 0.3, (200, 2)), rng.normal([-3, 0], 0.3, (200, 2))])
        >>> model = ShuffledKDEClassifier(classes=[0, 1], protocol="exact", n_repetitions=64, random_state=0)
        >>> model = model.fit(X, np.repeat([0, 1], 200))
        >>> decode_class(model, 0, ["east", "west"], np.array([[3.0, 0.0], [-3.0, 0.0]]), top_k=1)
        ['east']
    """
    return decode_classes(
        model, words, embeddings, labels=[label], top_k=top_k, score=score, floor_quantile=floor_quantile, owner="decode_class"
    )[label]


def decode_classes(
    model: Any,
    words: Any,
    embeddings: Any,
    *,
    labels: Any = None,
    top_k: int = 10,
    score: str = "log_ratio",
    floor_quantile: float = 0.9,
    owner: str = "decode_classes",
) -> dict[Any, list[str]]:
    """`decode_class` for several classes at once (default: every class), evaluating each density once.

    Args:
        model: as in `decode_class`.
        words: as in `decode_class`.
        embeddings: as in `decode_class`.
        labels: the classes to decode (default: all of ``model.classes_``).
        top_k: how many words per class.
        score: as in `decode_class`.
        floor_quantile: as in `decode_class`.
        owner: the name used in error messages.

    Privacy:
        Post-processing of the fitted model with public data: no further cost.
    """
    if not isinstance(owner, str):
        raise invalid("owner", "decode_classes", "a string", owner)
    model, transform = _classifier_of(model, owner)
    model._check_fitted()
    labels = list(model.classes_) if labels is None else _sequence(labels, "labels", owner)
    indices = {}
    for label in labels:
        if isinstance(label, (np.ndarray, list, dict, set)):  # not one label (unhashable, or compared elementwise)
            raise invalid("label", owner, f"one of {model.classes_.tolist()}", label)
        matches = np.flatnonzero(model.classes_ == label)
        if matches.size != 1:
            raise invalid("label", owner, f"one of {model.classes_.tolist()}", label)
        indices[label] = int(matches[0])
    top_k = check_integer(top_k, "top_k", owner, low=1)
    score = check_choice(score, "score", owner, DECODING_SCORES)
    floor_quantile = check_real(floor_quantile, "floor_quantile", owner, low=0.0, high=1.0, high_open=True)
    words = _sequence(words, "words", owner)
    if not all(isinstance(word, str) for word in words):
        raise invalid("words", owner, "a sequence of strings", next(w for w in words if not isinstance(w, str)))
    vectors = check_array(embeddings, "embeddings", owner, ndim=2)
    if vectors.shape[0] != len(words):
        raise invalid("embeddings", owner, f"one row per word ({len(words)})", f"shape {vectors.shape}")
    if transform is not None:
        vectors = transform(vectors)
    needed = range(len(model.densities_)) if score == "log_ratio" else set(indices.values())
    evaluated = [density if c in needed else None for c, density in enumerate(model.densities_)]
    with refusals_as(owner, {"queries": "embeddings", "points": "embeddings"}):
        values = densities_at(evaluated, model.family_, model.family_.check_points(vectors, "embeddings"))
    densities = {c: values[:, c] for c in needed if evaluated[c] is not None}
    scores = _log_ratio_scores(densities, floor_quantile) if score == "log_ratio" and densities else densities
    decoded = {}
    for label, index in indices.items():
        if index not in densities:  # no user reported this class: nothing was released for it
            decoded[label] = []
            continue
        order = np.lexsort((-densities[index], -scores[index]))[:top_k]  # ties (all floored): the higher density first
        decoded[label] = [words[i] for i in order]
    return decoded


def _sequence(values: Any, name: str, owner: str) -> list[Any]:
    """``list(values)`` for a sequence or array (a string, a number or None refused)."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__") or getattr(values, "ndim", 1) == 0:
        raise invalid(name, owner, "a sequence", type(values).__name__)
    return list(values)


def _classifier_of(model: Any, owner: str) -> tuple[Any, Any]:
    """The classifier and, for a scikit-learn ``Pipeline`` ending in one, the transform of its earlier steps."""
    from privsum.apps.classifier import ShuffledKDEClassifier  # the classifier's module re-exports this one

    if isinstance(model, ShuffledKDEClassifier):
        return model, None
    steps = getattr(model, "steps", None)
    if isinstance(steps, list) and steps and isinstance(steps[-1][1], ShuffledKDEClassifier):
        return steps[-1][1], (model[:-1].transform if len(steps) > 1 else None)
    raise invalid("model", owner, "a ShuffledKDEClassifier or a Pipeline ending in one", type(model).__name__)


def _log_ratio_scores(densities: dict[int, np.ndarray], floor_quantile: float) -> dict[int, np.ndarray]:
    """``log K_c - log mean_c' K_c'`` over the released densities, each raised to their ``floor_quantile`` first."""
    values = np.array(list(densities.values()))
    floor = max(float(np.quantile(values, floor_quantile)), float(np.finfo(float).tiny))
    values = np.maximum(values, floor)
    log_mean = np.log(values.mean(axis=0))
    return {c: np.log(values[position]) - log_mean for position, c in enumerate(densities)}
