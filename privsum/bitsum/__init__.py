"""Bit-sum protocols in the shuffle model (RR, 3NB, Pure) and their baselines.

Every protocol estimates ``S = sum_i b_i`` in many independent instances at once (bits of shape
``(n_users, n_instances)``), reports its privacy event per instance, its variance and its
communication, and offers ``from_privacy(epsilon=, delta=, n_users=, calibration=)`` with
``"tight"`` (checked against an exact privacy computation) and ``"analytic"`` (the papers'
formulas) calibrations. `privsum.bitsum.exact` holds the exact privacy computations.
"""

from privsum.bitsum.base import CALIBRATIONS, BitSumProtocol, ConfidenceInterval
from privsum.bitsum.central import NOISE_SOURCES, CentralGaussianBitSum, CentralLaplaceBitSum, ExactBitSum
from privsum.bitsum.noise import PureBitSum, ThreeNBBitSum
from privsum.bitsum.rr import LocalRRBitSum, RRBitSum, rr_worst_case_delta_bound, rr_worst_case_epsilon

__all__ = [
    "CALIBRATIONS",
    "NOISE_SOURCES",
    "BitSumProtocol",
    "CentralGaussianBitSum",
    "CentralLaplaceBitSum",
    "ConfidenceInterval",
    "ExactBitSum",
    "LocalRRBitSum",
    "PureBitSum",
    "RRBitSum",
    "ThreeNBBitSum",
    "rr_worst_case_delta_bound",
    "rr_worst_case_epsilon",
]
