"""A public list of categories and the mapping of users' values onto it."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import numpy as np

from privsum._validation import invalid

__all__ = ["MAX_CATEGORIES", "Categories"]

#: Most categories a histogram over a known domain accepts. Every user sends to every bin, so the
#: work grows as users times categories; beyond this use a frequency sketch
#: (`privsum.histograms.ShuffledCountSketch`), whose size does not grow with the domain.
MAX_CATEGORIES = 1 << 16


def _is_nan(value: Any) -> bool:
    return isinstance(value, (float, np.floating)) and math.isnan(value)


@dataclass(frozen=True)
class Categories:
    """The public domain of a histogram: distinct hashable labels, in the order the bins follow.

    The list must be public (fixed before seeing the data): labels inferred from the data would
    leak which values occur.

    Args:
        labels: the categories (ints, strings or any hashable), distinct, at least one, at most
            `MAX_CATEGORIES`. NaN is refused (it is not equal to itself, so it cannot be looked up);
            booleans are refused next to numbers (``True == 1`` would merge two labels). Values
            must have a label's type: ``1.0`` is refused among integer labels, never rounded.

    Examples:
        >>> colours = Categories(["red", "green", "blue"])
        >>> colours.index(["blue", "red", "blue"]).tolist()
        [2, 0, 2]
        >>> len(colours)
        3
    """

    labels: Sequence[Hashable]
    _positions: dict = field(init=False, repr=False, compare=False)
    _label_types: frozenset = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        owner = "Categories"
        if isinstance(self.labels, (str, bytes)) or not hasattr(self.labels, "__iter__"):
            raise invalid("categories", owner, "a sequence of distinct hashable labels", self.labels)
        if isinstance(self.labels, np.ndarray) and self.labels.ndim != 1:
            raise invalid(
                "categories", owner, "a 1-D sequence of distinct hashable labels", f"an array of shape {self.labels.shape}"
            )
        # At most one label past the limit is read: a huge domain is refused before it is materialised.
        source = self.labels.flat if isinstance(self.labels, np.ndarray) else self.labels
        labels = tuple(label.item() if isinstance(label, np.generic) else label for label in islice(source, MAX_CATEGORIES + 1))
        if not 1 <= len(labels) <= MAX_CATEGORIES:
            size = len(self.labels) if hasattr(self.labels, "__len__") else f"more than {MAX_CATEGORIES}"
            raise invalid(
                "categories",
                owner,
                f"between 1 and {MAX_CATEGORIES} labels (a domain of size 0 has no bins; "
                "for larger domains use ShuffledCountSketch or TwoRoundHeavyHitters)",
                f"{size} labels",
            )
        positions: dict = {}
        for position, label in enumerate(labels):
            if _is_nan(label) or not isinstance(label, Hashable):
                raise invalid("categories", owner, "hashable labels other than NaN", label)
            if label in positions:
                raise invalid("categories", owner, "distinct labels", f"{label!r} twice")
            positions[label] = position
        has_bool = any(isinstance(label, (bool, np.bool_)) for label in labels)
        if has_bool and not all(isinstance(label, (bool, np.bool_)) for label in labels):
            raise invalid("categories", owner, "booleans only with booleans (True == 1 would merge labels)", labels)
        object.__setattr__(self, "labels", labels)
        object.__setattr__(self, "_positions", positions)
        object.__setattr__(self, "_label_types", frozenset(type(label) for label in labels))

    def __len__(self) -> int:
        return len(self.labels)

    def index(self, values: Any, owner: str = "Categories", name: str = "values") -> np.ndarray:
        """The bin of each value, an ``int64`` array of shape ``(n_users,)``.

        Raises:
            InvalidParameterError: ``values`` is not a non-empty 1-D sequence, or holds a value
                that is not one of the categories (named in the message; NaN never is).
        """
        if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
            raise invalid(name, owner, "a 1-D sequence of categories, one per user", type(values).__name__)
        array = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values
        if array.ndim != 1 or array.size == 0:
            raise invalid(name, owner, "a non-empty 1-D sequence of categories, one per user", f"shape {array.shape}")
        fast = self._index_integers(array, owner, name)
        if fast is not None:
            return fast
        positions, label_types = self._positions, self._label_types
        out = np.empty(array.size, dtype=np.int64)
        for row, value in enumerate(array.tolist()):
            if type(value) not in label_types:  # 1.0 is not the label 1, nor True, nor "1"
                kinds = " or ".join(sorted(kind.__name__ for kind in label_types))
                raise invalid(name, owner, f"categories of the labels' type ({kinds})", value)
            position = positions.get(value) if _hashable(value) else None
            if position is None:
                raise invalid(name, owner, f"categories among the {len(self)} public labels", value)
            out[row] = position
        return out

    def _index_integers(self, array: np.ndarray, owner: str, name: str) -> np.ndarray | None:
        """Integer arrays against integer labels by one sorted search (``None`` where it does not apply)."""
        if array.dtype.kind not in "iu" or not all(type(label) is int for label in self.labels):
            return None
        labels = np.array(self.labels, dtype=object)
        if not all(-(2**63) <= label < 2**63 for label in self.labels):
            return None
        labels = labels.astype(np.int64)
        order = np.argsort(labels, kind="stable")
        sorted_labels = labels[order]
        values = array.astype(np.int64) if array.dtype.kind == "i" or array.max() < 2**63 else None
        if values is None:
            return None
        where = np.clip(np.searchsorted(sorted_labels, values), 0, len(labels) - 1)
        found = sorted_labels[where] == values
        if not found.all():
            unknown = array[np.flatnonzero(~found)[0]]
            raise invalid(name, owner, f"categories among the {len(self)} public labels", unknown.item())
        return order[where].astype(np.int64)

    def one_hot(self, bins: np.ndarray) -> np.ndarray:
        """``int8`` rows with a single 1 in each user's bin, shape ``(n_users, n_categories)``."""
        bits = np.zeros((bins.size, len(self)), dtype=np.int8)
        bits[np.arange(bins.size), bins] = 1
        return bits


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True
