"""BBGN20 additive shares with a sparse view, for moduli far beyond a dense histogram (``q`` up to ``2^46``).

The clipped sums of Dong et al. (CCS 2024) run BBGN20 on sub-domains up to ``2^20`` wide with ``n ~ 10^5``
users, so the modulus reaches ``2^37``: one column per residue is out of the question, but the
shuffled multiset itself (``n m`` shares) is small. `SparseMultiMessageSum` is `MultiMessageSum`
with the same randomizer, noise and guarantee, viewed through a `SparseMessageHistogram` and
analysed with exact integer arithmetic.

References:
    Dong, Luo, Fanti, Shi & Yi, "(Almost) Instance-optimal Clipping for Summation Problems in
    the Shuffle Model of Differential Privacy", CCS 2024.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from privsum._random import RNGLike, as_generator
from privsum._validation import invalid
from privsum.shuffle import MessageBatch, MessageHistogram
from privsum.shuffle.sparse import SparseMessageHistogram
from privsum.sums.multi_message import MultiMessageSum

__all__ = ["SPARSE_MAX_MODULUS", "SparseMultiMessageSum", "residue_sums"]

SPARSE_MAX_MODULUS = 2**46  # keeps every product in `_mulmod` below 2^63
_CHUNK_BITS = 16
_SPLIT_BITS = 23


def _mulmod(values: np.ndarray, counts: np.ndarray, modulus: int) -> np.ndarray:
    """``values * counts mod modulus`` elementwise without int64 overflow (``0 <= values < modulus <= 2^46``)."""
    counts = np.mod(counts, modulus)
    result = np.zeros_like(values)
    for shift in (2 * _CHUNK_BITS, _CHUNK_BITS, 0):
        chunk = (counts >> shift) & ((1 << _CHUNK_BITS) - 1)
        result = np.mod((result << _CHUNK_BITS) + values * chunk, modulus)
    return result


def residue_sums(instances: np.ndarray, values: np.ndarray, counts: np.ndarray, n_instances: int, modulus: int) -> np.ndarray:
    """Per instance, ``sum(values * counts) mod modulus``, exactly (values in ``[0, modulus)``).

    Examples:
        >>> residue_sums(np.array([0, 0, 1]), np.array([2**45, 3, 5]), np.array([3, 1, 2]), 2, 2**46).tolist()
        [35184372088835, 10]
    """
    terms = _mulmod(np.asarray(values, dtype=np.int64), np.asarray(counts, dtype=np.int64), modulus)
    high = np.bincount(instances, weights=(terms >> _SPLIT_BITS).astype(float), minlength=n_instances)
    low = np.bincount(instances, weights=(terms & ((1 << _SPLIT_BITS) - 1)).astype(float), minlength=n_instances)
    # float sums of integers below 2^23 are exact for up to 2^30 terms; combine in Python integers
    return np.array([(int(h) * (1 << _SPLIT_BITS) + int(lo)) % modulus for h, lo in zip(high, low, strict=True)], dtype=np.int64)


@dataclass(frozen=True, kw_only=True)
class SparseMultiMessageSum(MultiMessageSum):
    """`MultiMessageSum` (BBGN20) whose analyzer view is a `SparseMessageHistogram`; moduli up to ``2^46``.

    Same parameters, randomizer, noise and privacy statement as `MultiMessageSum` (see there);
    ``alphabet`` is ``range(modulus)`` (never materialised). The analyzer sums the shares with
    exact integer arithmetic (``mod q``), so ``n m q`` may exceed ``2^53``.

    Privacy:
        As `MultiMessageSum`: replace-one, per instance; epsilon from the discrete Laplace noise
        (exact), delta from BBGN20's share theorem (**not verified here**).

    Utility:
        Unbiased (absent wrap-around, probability below ``wrap_probability``); variance
        ``2a/(1-a)^2``.

    Robustness:
        As `MultiMessageSum`: one malicious sender sets the estimate anywhere in the analyzer's
        window (`manipulation_bound` ``q - 1``); only validity proofs would bound it.

    References:
        Balle, Bell, Gascón & Nissim, "Private summation in the multi-message shuffle model", CCS 2020.

    Examples:
        >>> protocol = SparseMultiMessageSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1_000, domain=2**20)
        >>> protocol.modulus > 2**22
        True
        >>> x = np.full(1_000, 2**19)
        >>> view = protocol.sample_view(x, rng=0)
        >>> view.total_messages == 1_000 * protocol.n_shares
        True
        >>> bool(abs(protocol.analyze(view)[0] - x.sum()) < 2**20 * 30)
        True
    """

    max_modulus: ClassVar[int] = SPARSE_MAX_MODULUS

    @property
    def alphabet(self) -> range:  # type: ignore[override]
        """``range(modulus)``: every residue (a lazy range, never a tuple)."""
        return range(self.modulus)

    def view(self, messages: SparseMessageHistogram | MessageBatch | MessageHistogram) -> SparseMessageHistogram:  # type: ignore[override]
        """The sparse view of a batch (a sparse view is checked and returned unchanged)."""
        return residue_view(messages, self.modulus, type(self).__name__)

    def sample_view(self, x: Any, *, rng: RNGLike = None) -> SparseMessageHistogram:  # type: ignore[override]
        """The same shares counted directly (no permutation): identical in law to the faithful view."""
        shares = self._shares(x, as_generator(rng, type(self).__name__))
        instance_ids = np.broadcast_to(np.arange(shares.shape[1])[None, :, None], shares.shape)
        ones = np.ones(shares.size, dtype=np.int64)
        return SparseMessageHistogram.from_pairs(instance_ids.ravel(), shares.ravel(), ones, shares.shape[1])

    def analyze(self, view: SparseMessageHistogram | MessageBatch | MessageHistogram) -> np.ndarray:  # type: ignore[override]
        """The noisy sum per instance: the residue of all shares modulo ``q`` nearest ``n Delta / 2``."""
        sparse = self.view(view)
        residues = residue_sums(sparse.instances, sparse.values, sparse.counts, sparse.n_instances, self.modulus)
        return self.decode(residues)

    def decode(self, residues: np.ndarray) -> np.ndarray:
        """Map residues modulo ``q`` to the integers nearest ``n Delta / 2`` (the analyzer's last step)."""
        centre = self.n_users * self.domain // 2
        offset = np.mod(np.asarray(residues, dtype=np.int64) - centre + self.modulus // 2, self.modulus) - self.modulus // 2
        return (centre + offset).astype(float)


def residue_view(messages: Any, modulus: int, owner: str) -> SparseMessageHistogram:
    """The sparse histogram of ``(instance, residue mod modulus)`` messages; any other view is refused as ``view``."""
    if isinstance(messages, MessageBatch):
        messages = SparseMessageHistogram.from_messages(messages)
    elif isinstance(messages, MessageHistogram):
        if messages.alphabet != tuple(range(len(messages.alphabet))) or len(messages.alphabet) > modulus:
            raise invalid("view", owner, f"a histogram over residues 0..{modulus - 1}", "another alphabet")
        instance_ids, columns = np.nonzero(messages.counts)
        messages = SparseMessageHistogram(instance_ids, columns, messages.counts[instance_ids, columns], messages.n_instances)
    if not isinstance(messages, SparseMessageHistogram):
        raise invalid("view", owner, "a SparseMessageHistogram, MessageHistogram or MessageBatch", type(messages).__name__)
    if messages.values.size and not (messages.values.min() >= 0 and messages.values.max() < modulus):
        raise invalid("view", owner, f"messages with values in [0, {modulus})", "values outside")
    return messages
