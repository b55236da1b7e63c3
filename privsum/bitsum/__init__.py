"""Bit-sum protocols in the shuffle model (RR, 3NB, Pure) and their baselines."""

from privsum.bitsum.base import BitSumProtocol

__all__ = ["BitSumProtocol"]
