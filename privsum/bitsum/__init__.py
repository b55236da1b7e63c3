"""Bit-sum protocols in the shuffle model (RR, 3NB, Pure) and their baselines.

Every protocol estimates ``S = sum_i b_i`` in many independent instances at once (bits of shape
``(n_users, n_instances)``), reports its privacy event per instance, its variance and its
communication, and offers ``from_privacy(epsilon=, delta=, n_users=, calibration=)`` with
``"tight"`` (checked against an exact privacy computation) and ``"analytic"`` (the papers'
formulas) calibrations. `privsum.bitsum.exact` holds the exact privacy computations.
"""

from privsum._validation import invalid
from privsum.bitsum.base import CALIBRATIONS, BitSumProtocol, ConfidenceInterval
from privsum.bitsum.central import NOISE_SOURCES, CentralGaussianBitSum, CentralLaplaceBitSum, ExactBitSum
from privsum.bitsum.noise import PureBitSum, ThreeNBBitSum
from privsum.bitsum.rr import LocalRRBitSum, RRBitSum, rr_worst_case_delta_bound, rr_worst_case_epsilon, rr_worst_case_profile

PROTOCOLS: dict[str, type[BitSumProtocol]] = {
    "rr": RRBitSum,
    "3nb": ThreeNBBitSum,
    "pure": PureBitSum,
    "local": LocalRRBitSum,
    "central-gaussian-per-instance": CentralGaussianBitSum,
    "central-laplace": CentralLaplaceBitSum,
    "exact": ExactBitSum,
}
"""The bit-sum protocols by the short names that ``protocol=`` options accept (the classifier's names for bit sums)."""


def bitsum_protocol(protocol: object, owner: str, name: str = "protocol") -> type[BitSumProtocol]:
    """The bit-sum class named by ``protocol``: a key of `PROTOCOLS` (``"rr"``, ``"3nb"``, ...) or the class itself.

    Examples:
        >>> bitsum_protocol("3nb", "example") is ThreeNBBitSum
        True
        >>> bitsum_protocol(RRBitSum, "example") is RRBitSum
        True
    """
    if isinstance(protocol, type) and issubclass(protocol, BitSumProtocol):
        return protocol
    if isinstance(protocol, str) and protocol.lower() in PROTOCOLS:
        return PROTOCOLS[protocol.lower()]
    names = ", ".join(repr(key) for key in PROTOCOLS)
    raise invalid(name, owner, f"a BitSumProtocol class or one of {names}", protocol)


__all__ = [
    "CALIBRATIONS",
    "NOISE_SOURCES",
    "PROTOCOLS",
    "BitSumProtocol",
    "CentralGaussianBitSum",
    "CentralLaplaceBitSum",
    "ConfidenceInterval",
    "ExactBitSum",
    "LocalRRBitSum",
    "PureBitSum",
    "RRBitSum",
    "ThreeNBBitSum",
    "bitsum_protocol",
    "rr_worst_case_delta_bound",
    "rr_worst_case_epsilon",
    "rr_worst_case_profile",
]
