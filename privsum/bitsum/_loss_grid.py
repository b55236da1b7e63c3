"""A dominating pair accumulated on a fixed grid of privacy losses.

A set of outcomes whose masses are ``p`` under ``P`` and ``q`` under ``Q``, and whose every
privacy loss ``log(P(x)/Q(x))`` lies in ``[a, b]``, is a post-processing of a pair of two
outcomes with losses ``a`` and ``b`` and the same total masses: each outcome's ``(P(x), Q(x))``
is a non-negative combination ``u_x (e^a, 1) + v_x (e^b, 1)``, so the two outcomes, with masses
``(e^a, 1) sum u_x`` and ``(e^b, 1) sum v_x``, are mapped to ``x`` with probabilities
``u_x / sum u`` and ``v_x / sum v``. Replacing the set by those two outcomes can only raise every
hockey-stick divergence, in both directions: the result is a dominating pair (Zhu, Dong & Wang,
"Optimal Accounting of Differential Privacy via Characteristic Function", AISTATS 2022), and
outcomes of equal loss merge without changing it. `LossGrid` places ``a`` and ``b`` on a fixed
grid, so that any number of sets (outcomes with a known loss, or regions with only a loss
interval known) collapses into one short pair.
"""

from __future__ import annotations

import math

import numpy as np

from privsum.accounting.guarantee import Neighbouring
from privsum.accounting.profile import PrivacyProfile

# Grid losses scale * sinh(k * step), k = -half_size..half_size: spacing scale*step (1e-5) near 0,
# relative spacing step (1e-4) far from it, up to about +-55 (beyond: infinite loss).
_SCALE = 0.1
_STEP = 1e-4
_HALF_SIZE = 70_000


class LossGrid:
    """Outcome masses accumulated on grid losses ``scale * sinh(k step)`` by two-point splitting.

    `add` takes sets with a loss interval, `add_points` outcomes with their exact loss; masses
    whose loss interval reaches beyond the grid are split towards infinite loss (kept as
    ``P``-only or ``Q``-only mass). `profile` returns the accumulated pair, which dominates
    every set added (module docstring), up to floating-point rounding of the splitting
    (relative ``1e-11`` of each set's mass for the default grid).
    """

    def __init__(self, scale: float = _SCALE, step: float = _STEP, half_size: int = _HALF_SIZE) -> None:
        self.scale, self.step, self.half_size = scale, step, half_size
        self.losses = scale * np.sinh(np.arange(-half_size, half_size + 1) * step)
        self._ratios = np.exp(self.losses)
        self.p = np.zeros(self.losses.size)
        self.q = np.zeros(self.losses.size)
        self.p_only = 0.0
        self.q_only = 0.0

    def add_points(self, p: np.ndarray, q: np.ndarray) -> None:
        """Outcomes with masses ``p`` and ``q`` (their losses are ``log(p/q)``)."""
        self.add(p, q, None, None)

    def add(self, p: np.ndarray, q: np.ndarray, low: np.ndarray | float | None, high: np.ndarray | float | None) -> None:
        """Sets with total masses ``p``, ``q`` whose every loss lies in ``[low, high]`` (elementwise).

        ``None`` bounds mean the sets are single outcomes (the loss is ``log(p/q)``). The
        interval is widened to contain ``log(p/q)`` (an aggregate of losses in the interval
        lies in it; this only absorbs rounding).
        """
        p, q = np.ravel(np.asarray(p, dtype=float)), np.ravel(np.asarray(q, dtype=float))
        both = (p > 0) & (q > 0)
        if not both.all():
            self.p_only += math.fsum(p[(p > 0) & (q == 0)])
            self.q_only += math.fsum(q[(q > 0) & (p == 0)])
        if not both.any():
            return
        if low is not None:
            low = np.broadcast_to(low, p.shape)[both]
            high = np.broadcast_to(high, p.shape)[both]
        p, q = p[both], q[both]
        with np.errstate(divide="ignore"):
            loss = np.log(p) - np.log(q)
        if low is None:
            below = self._index(loss, np.floor)
            above = below + 1
        else:
            below = self._index(np.minimum(low, loss), np.floor)
            above = self._index(np.maximum(high, loss), np.ceil)
        self._split(p, q, below, above)

    def _split(self, p: np.ndarray, q: np.ndarray, below: np.ndarray, above: np.ndarray) -> None:
        """The two-point split between grid points ``below <= above`` (one past an end: infinite loss)."""
        half = self.half_size
        if p.size == 0:
            return
        if below.min() < -half or above.max() > half:
            self._split_beyond(p, q, below, above)
            return
        ratio_a, ratio_b = self._ratios[below + half], self._ratios[above + half]
        apart = above > below
        with np.errstate(divide="ignore", invalid="ignore"):
            q_b = np.where(apart, (p - ratio_a * q) / (ratio_b - ratio_a), 0.0)
        q_b = np.clip(q_b, 0.0, q)
        q_a = q - q_b
        size = self.losses.size
        self.q += np.bincount(below + half, q_a, size) + np.bincount(above + half, q_b, size)
        self.p += np.bincount(below + half, ratio_a * q_a, size) + np.bincount(above + half, ratio_b * q_b, size)

    def _split_beyond(self, p: np.ndarray, q: np.ndarray, below: np.ndarray, above: np.ndarray) -> None:
        """`_split` where some intervals reach past the grid: their excess mass is kept as infinite loss."""
        half = self.half_size
        left, right = below < -half, above > half
        nowhere = left & right
        self.p_only += math.fsum(p[nowhere])
        self.q_only += math.fsum(q[nowhere])
        only_right = right & ~left  # q at the grid point below, the excess of p at +infinity
        ratio_a = self._ratios[below[only_right] + half]
        self.p_only += math.fsum(np.maximum(p[only_right] - ratio_a * q[only_right], 0.0))
        self._split(ratio_a * q[only_right], q[only_right], below[only_right], below[only_right])
        only_left = left & ~right  # p at the grid point above, the excess of q at -infinity
        ratio_b = self._ratios[above[only_left] + half]
        kept = np.minimum(p[only_left] / ratio_b, q[only_left])
        self.q_only += math.fsum(q[only_left] - kept)
        self._split(ratio_b * kept, kept, above[only_left], above[only_left])
        inside = ~(left | right)
        self._split(p[inside], q[inside], below[inside], above[inside])

    def _index(self, loss: np.ndarray, rounding: np.ufunc) -> np.ndarray:
        """The grid index at or below (floor) / at or above (ceil) each loss; one past the ends: +-infinity."""
        half = self.half_size
        lowest, highest = (-half - 1, half) if rounding is np.floor else (-half, half + 1)
        raw = np.clip(rounding(np.arcsinh(loss / self.scale) / self.step), lowest, highest)
        index = raw.astype(np.int64)
        # the arcsinh may round across a grid point: step once more where the grid value is on the wrong side
        value = self.losses[np.clip(index, -half, half) + half]
        on_grid = np.abs(index) <= half
        if rounding is np.floor:
            index -= on_grid & (value > loss)
        else:
            index += on_grid & (value < loss)
        return index

    def profile(self, p_tail: float, q_tail: float, neighbouring: Neighbouring = Neighbouring.REPLACE_ONE) -> PrivacyProfile:
        """The accumulated pair, with ``p_tail``/``q_tail`` (mass not added) counted as infinite loss."""
        kept = (self.p > 0) | (self.q > 0)
        return PrivacyProfile(
            self.p[kept],
            self.q[kept],
            neighbouring=neighbouring,
            p_tail=min(1.0, p_tail + self.p_only),
            q_tail=min(1.0, q_tail + self.q_only),
        )
