"""Locality-sensitive quantization (LSQ) families: random Fourier features, random signs, LSH."""

from privsum.lsq.base import LSQFamily

__all__ = ["LSQFamily"]
