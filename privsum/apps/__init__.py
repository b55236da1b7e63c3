"""Applications composed from the primitives: the private KDE classifier and class decoder."""

from privsum.apps.classifier import KERNELS, PROTOCOLS, ShuffledKDEClassifier, decode_class
from privsum.apps.labels import keep_probability, label_event, randomize_labels

__all__ = ["KERNELS", "PROTOCOLS", "ShuffledKDEClassifier", "decode_class", "keep_probability", "label_event", "randomize_labels"]
