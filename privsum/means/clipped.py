"""The mean of reals with only a loose public bound: instance-optimal clipping (Dong et al., CCS 2024)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from privsum._delegation import delegated
from privsum._random import RNGLike, as_generator
from privsum._validation import check_array, check_real, invalid
from privsum.clipping.scalar import ClippedSum

__all__ = ["ClippedMean"]


@dataclass(frozen=True, kw_only=True)
class ClippedMean:
    """The mean of reals in ``[low, upper]`` when ``upper`` is a loose public bound: instance-optimal clipping.

    Values are shifted by ``low`` and run through ``clipped_sum`` (`ClippedSum` with real inputs at
    ``resolution``); its threshold ``tau`` is chosen privately from the data, so values above
    ``tau`` are dropped (biasing the mean down) while the noise scales with ``tau``, not ``upper``.
    The estimate is ``low + S / n``.

    Args:
        low: public lower end of the values.
        clipped_sum: a `ClippedSum` with a ``resolution`` (from `from_privacy`).

    Privacy:
        That of ``clipped_sum`` under its neighbouring relation (replace-one by default).

    Utility:
        With probability ``1 - failure_probability`` the threshold does not overshoot the data's
        largest values' sub-domain; the error is then ``O(max_i x_i log(log U / beta) / epsilon) / n``
        (Theorem 5.1 of Dong et al. (CCS 2024)), plus the randomized rounding's
        ``resolution sqrt(n) / (2 n)`` at most. ``upper / resolution`` is rounded up to a power of two.

    References:
        Dong, Luo, Fanti, Shi & Yi, "(Almost) Instance-optimal Clipping for Summation Problems in
        the Shuffle Model of Differential Privacy", CCS 2024.

    Examples:
        >>> mean = ClippedMean.from_privacy(epsilon=1.0, delta=1e-6, n_users=5000, low=0.0, upper=1e6)
        >>> values = np.random.default_rng(0).exponential(10.0, 5000)
        >>> bool(abs(mean.run(values, rng=1) - values.mean()) < 2.0)
        True
    """

    low: float
    clipped_sum: ClippedSum

    def __post_init__(self) -> None:
        owner = type(self).__name__
        object.__setattr__(self, "low", check_real(self.low, "low", owner))
        if not isinstance(self.clipped_sum, ClippedSum) or self.clipped_sum.resolution is None:
            raise invalid("clipped_sum", owner, "a ClippedSum with a resolution (real inputs)", self.clipped_sum)

    @classmethod
    def from_privacy(
        cls,
        *,
        epsilon: float,
        delta: float,
        n_users: int,
        low: float,
        upper: float,
        resolution: float | None = None,
        failure_probability: float = 0.1,
        neighbouring: str = "replace-one",
    ) -> ClippedMean:
        """A clipped sum over ``[0, upper - low]`` at ``resolution`` (default: ``(upper - low) / 2^20``)."""
        owner = cls.__name__
        low = check_real(low, "low", owner)
        upper = check_real(upper, "upper", owner)
        if not upper > low:
            raise invalid("upper", owner, f"greater than low={low:g}", upper)
        width = upper - low
        if resolution is None:
            resolution = width / 2**20
            if not (resolution > 0 and math.isfinite(resolution)):
                raise invalid("upper", owner, f"a finite upper - low whose 2^20th part is positive (low={low:g})", upper)
        else:
            resolution = check_real(resolution, "resolution", owner, low=0.0, low_open=True)
        ratio = width / resolution
        if not ratio <= 2**40:  # inf and NaN refused too
            raise invalid("resolution", owner, f"at least (upper - low) / 2^40 = {width / 2**40:.3g}", resolution)
        steps = math.ceil(ratio)
        domain = 1 << max(1, math.ceil(math.log2(max(2, steps))))
        clipped = ClippedSum.from_privacy(
            epsilon=epsilon,
            delta=delta,
            n_users=n_users,
            domain=domain,
            failure_probability=failure_probability,
            resolution=resolution,
            neighbouring=neighbouring,
        )
        return cls(low=low, clipped_sum=clipped)

    n_users = delegated("clipped_sum.n_users", "Users the clipped sum is set up for.")

    @property
    def upper(self) -> float:
        """The largest value accepted: ``low + domain * resolution`` (the requested upper end, rounded up)."""
        return self.low + self.clipped_sum.domain * self.clipped_sum.resolution

    event = delegated("clipped_sum.event", "The clipped sum's event (the mean is post-processing of the sum).")
    guarantee = delegated("clipped_sum.guarantee", "The clipped sum's guarantee.")
    expected_messages_per_user = delegated("clipped_sum.expected_messages_per_user", "The clipped sum's messages per user.")

    def run(self, values: Any, *, rng: RNGLike = None) -> float:
        """The estimated mean of ``values`` (one per user, within ``[low, upper]``)."""
        owner = type(self).__name__
        array = check_array(values, "values", owner, ndim=1, low=self.low, high=self.upper).astype(float)
        if array.size == 0:
            raise invalid("values", owner, "at least one value", "no values")
        total = float(np.asarray(self.clipped_sum.run(array - self.low, rng=as_generator(rng, owner)))[0])
        return self.low + total / self.n_users
