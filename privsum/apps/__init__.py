"""Applications composed from the primitives: the private KDE classifier and class decoder."""

from privsum.apps.classifier import DECODING_SCORES, KERNELS, PROTOCOLS, ShuffledKDEClassifier, decode_class, decode_classes
from privsum.apps.labels import keep_probability, label_event, randomize_labels

__all__ = [
    "DECODING_SCORES",
    "KERNELS",
    "PROTOCOLS",
    "ShuffledKDEClassifier",
    "decode_class",
    "decode_classes",
    "keep_probability",
    "label_event",
    "randomize_labels",
]
