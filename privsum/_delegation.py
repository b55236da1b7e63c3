"""Read-only properties that report an attribute of a component the object holds.

A wrapper whose guarantee, event or size *is* its component's (a mean over a sum protocol, a KDE over
a vector sum, a sketch over its hash family) states that once, as ``event = delegated("sum.event")``,
instead of repeating a getter per attribute.
"""

from __future__ import annotations

import operator

__all__ = ["delegated"]


def delegated(path: str, doc: str | None = None) -> property:
    """A read-only property returning ``self.<path>`` (a dotted attribute path, e.g. ``"sum_protocol.event"``).

    Examples:
        >>> class Box:
        ...     size = delegated("items.__len__", "How many items the box holds.")
        ...     def __init__(self, items):
        ...         self.items = items
        >>> Box([1, 2]).size()
        2
    """
    return property(operator.attrgetter(path), doc=doc if doc is not None else f"The ``{path}``.")
