"""The bit-sum interface: many independent instances of summing one bit per user."""

from __future__ import annotations

import abc
from typing import Any

import numpy as np

from privsum._validation import check_array
from privsum.shuffle.protocol import ShuffleProtocol

__all__ = ["BitSumProtocol"]


class BitSumProtocol(ShuffleProtocol):
    """A protocol estimating ``S = sum_i b_i`` for bits ``b_i``, in many instances at once.

    Inputs are bits of shape ``(n_users, n_instances)`` (a 1-D array is one instance); the
    estimate has shape ``(n_instances,)``, one independent, unbiased estimate per column.
    Subclasses carry ``n_users``, the number of users the randomizer is calibrated for.

    Privacy:
        `event` is the guarantee of **one instance** for one user's bit under replace-one
        neighbours (unless a subclass states otherwise). A user taking part in ``m`` instances
        is accounted by composing the event ``m`` times.
    """

    n_users: int

    @abc.abstractmethod
    def variance(self, true_sum: Any = None) -> np.ndarray | float:
        """Variance of one instance's estimate (given the true sum where it matters)."""

    def rmse(self, true_sum: Any = None) -> np.ndarray | float:
        """Root-mean-square error of one instance's estimate."""
        return np.sqrt(self.variance(true_sum))

    def check_bits(self, bits: Any) -> np.ndarray:
        """Validate bits and return them as an int array of shape ``(n_users, n_instances)``."""
        array = check_array(bits, "bits", type(self).__name__, ndim=(1, 2), low=0, high=1, integer=True)
        return array.reshape(array.shape[0], -1)
