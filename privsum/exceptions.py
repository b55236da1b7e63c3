"""Exceptions and warnings raised by privsum."""

from __future__ import annotations

__all__ = [
    "BudgetExceededError",
    "DeltaFloorWarning",
    "IncompatibleSketchError",
    "InvalidParameterError",
    "KernelScaleWarning",
    "NotFittedError",
    "PrivacyLeakWarning",
]


class InvalidParameterError(ValueError, TypeError):
    """A parameter is outside its valid range or of the wrong type.

    Subclasses both `ValueError` and `TypeError` so that callers catching either keep working.
    The message always names the parameter, the constraint and the offending value.
    """


class BudgetExceededError(RuntimeError):
    """Composing another event would exceed the accountant's privacy budget."""


class IncompatibleSketchError(ValueError):
    """Two sketches cannot be merged: their public seeds or shapes differ."""


class NotFittedError(ValueError, AttributeError):
    """A model or sketch is used before it was fitted (also a scikit-learn `NotFittedError` where installed)."""


class PrivacyLeakWarning(UserWarning):
    """An operation reveals information that is not covered by the stated guarantee."""


class DeltaFloorWarning(UserWarning):
    """A requested delta is below what the composed events can reach, so epsilon is infinite.

    Events stated as ``(epsilon, delta)`` guarantees keep their delta under composition: the
    composed deltas form a floor (`PrivacyAccountant.min_delta`) below which no finite epsilon
    holds.
    """


class KernelScaleWarning(UserWarning):
    """The data's scale makes the kernel degenerate for the bandwidth, so the model cannot learn.

    Raised by the KDE protocols and the classifier when the typical distance between points is
    far beyond the Gaussian kernel's bandwidth (every density is close to 0 away from the
    training points) or far below it (every density is close to its maximum and the classes
    differ by less than the privacy noise). The message gives the measured distances and the
    fix: normalise the points or set the bandwidth.
    """
