"""The numerical privacy check of `CorrelatedNoiseSum`: exact privacy-loss distributions of its count view.

Replace-one: one user's rounded value ``v`` in ``{0..D}`` becomes ``w``; the adversary sees one
instance's message counts, every other user's data fixed and known; trusted shuffler. The view is a
linear map of independent noise counts (the central block's ``+1``/``-1`` messages and pairs, and
every triple kind) plus the data, and changing ``v`` to ``w`` moves it as a shift of those latent
counts does (`CorrelatedVerification.shift`, from `representation`). `CorrelatedVerification`
(mixed into `CorrelatedNoiseSum`) composes the exact PLDs of the shifted latents for every pair
(`verify`, `verified_epsilon`, up to 8 levels) and states the certified bound at any number of
levels (`certified_delta`, proved in ``privsum.sums._correlated_flooding``).
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np

from privsum._validation import check_delta, check_epsilon, check_integer, invalid, refusals_as
from privsum.accounting import PLDPair
from privsum.shuffle.noise import negative_binomial_truncated
from privsum.sums._correlated_flooding import certified_pld

__all__ = ["VERIFIABLE_LEVELS", "CorrelatedVerification", "representation", "triple"]

_TAIL = 1e-14
_MAX_CELLS = 40_000_000
#: Most levels ``D`` whose every pair of rounded values `CorrelatedVerification.verify` checks.
VERIFIABLE_LEVELS = 8


def _pld_pair(p: np.ndarray, q: np.ndarray, tail: float) -> PLDPair:
    return PLDPair.from_distributions(p, q, p_tail=tail, q_tail=tail)


def _direct_block(a_pmf: np.ndarray, p_pmf: np.ndarray, k: int) -> np.ndarray:
    """``grid[d + k, e] = sum_b a[d + b] a[b] p[e - b]``: the pmf of ``(A - B, B + P)``, summed slab by slab."""
    grid = np.zeros((2 * k + 1, p_pmf.size + k))
    slab = np.outer(a_pmf, p_pmf)
    for b, weight in enumerate(a_pmf):
        grid[k - b : 2 * k - b + 1, b : b + p_pmf.size] += weight * slab
    return grid


def _geometric_block(first: float, ratio: float, p_pmf: np.ndarray, k: int) -> np.ndarray:
    """`_direct_block` when ``a[n] = first ratio^n`` (n = 0..k): each row is a scaled, shifted geometric filter of ``p``.

    With ``H(e) = sum_{b >= 0} ratio^(2b) p[e - b]`` (the recursion ``H(e) = p[e] + ratio^2 H(e - 1)``),
    row ``d = +-j`` is ``first^2 ratio^j (H(e') - ratio^(2(k - j + 1)) H(e' - (k - j + 1)))`` with
    ``e' = e`` for ``d >= 0`` and ``e - j`` for ``d < 0``: ``O(grid)`` work instead of ``O(k grid)``.
    """
    from scipy.signal import lfilter

    width = p_pmf.size + k
    filtered = lfilter([1.0], [1.0, -(ratio**2)], np.concatenate([p_pmf, np.zeros(k)]))
    padded = np.concatenate([np.zeros(k + 1), filtered])  # padded[e + k + 1] = H(e), 0 for e < 0
    columns = np.arange(width)
    grid = np.empty((2 * k + 1, width))
    for j in range(k + 1):
        length, scale = k - j + 1, first**2 * ratio**j
        for sign in (1, -1) if j else (1,):
            start = columns - (j if sign < 0 else 0) + k + 1
            grid[k + sign * j] = scale * (padded[start] - ratio ** (2 * length) * padded[start - length])
    np.maximum(grid, 0.0, out=grid)  # rounding can leave -1e-30 where the exact value is 0
    return grid


def triple(value: int) -> tuple[int, int, int]:
    """The flooding triple of kind ``value``: ``(i, -sign(i) floor(|i|/2), -sign(i) ceil(|i|/2))``, summing to 0."""
    size, sign = abs(value), (1 if value > 0 else -1)
    return value, -sign * (size // 2), -sign * (size - size // 2)


def representation(value: int) -> dict[Any, int]:
    """Integer coefficients on latent counts whose message vectors add up to one message ``value``.

    Latents: ``"+"`` and ``"-"`` (a ``+1`` / ``-1`` message, the central block) and ``("t", i)``
    (one triple of kind ``i``): ``e_i = T_i - e_{-sign(i) floor(|i|/2)} - e_{-sign(i) ceil(|i|/2)}``.
    """
    if value == 0:
        return {}
    if value in (1, -1):
        return {"+" if value == 1 else "-": 1}
    result: dict[Any, int] = {("t", value): 1}
    for part in triple(value)[1:]:
        for key, coefficient in representation(part).items():
            result[key] = result.get(key, 0) - coefficient
    return result


class CorrelatedVerification:
    """Mixed into `CorrelatedNoiseSum`: the privacy loss of its count view, exact per pair or certified for all pairs.

    It reads the protocol's noise parameters (``levels``, ``central_ratio``, the pair and triple
    shapes and ratios), ``n_users`` and the headline ``epsilon``.
    """

    def shift(self, value: int, other: int) -> tuple[tuple[int, int], dict[int, int]]:
        """Latent shift reproducing a change of one user's rounded value from ``value`` to ``other``.

        Returns the shift ``(g1, g2)`` of the central block ``(#A + #P, #B + #P)`` and the shift of
        each triple kind ``i``; applying it to the noise counts moves the view exactly as the change does.
        """
        owner = f"{type(self).__name__}.shift"
        value = check_integer(value, "value", owner, low=0, high=self.levels)
        other = check_integer(other, "other", owner, low=0, high=self.levels)
        difference = dict(representation(other))
        for key, coefficient in representation(value).items():
            difference[key] = difference.get(key, 0) - coefficient
        central = (difference.pop("+", 0), difference.pop("-", 0))
        triples = {key[1]: c for key, c in difference.items() if c != 0}
        return central, triples

    def _central_block(self, share: float = 1.0) -> tuple[np.ndarray, int]:
        """pmf of ``(A - B, B + P)`` on a grid (rows: ``A - B + K_B``) and ``K_B``, every shape times ``share``."""
        key = ("block", share)
        if key in self._pld_cache:
            return self._pld_cache[key]
        a_pmf, _ = negative_binomial_truncated(share, self.central_ratio, _TAIL)
        p_pmf, _ = negative_binomial_truncated(self.pair_shape * share, self.pair_ratio, _TAIL)
        k = a_pmf.size - 1
        if (2 * k + 3) * (p_pmf.size + k + 2) > _MAX_CELLS:
            raise invalid("levels", type(self).__name__, "small enough for the verification grid", self.levels)
        ratio = self.central_ratio
        if k > 0 and np.allclose(a_pmf[1:] / a_pmf[:-1], ratio, rtol=1e-12, atol=0.0):
            grid = _geometric_block(a_pmf[0], ratio, p_pmf, k)
        else:
            grid = _direct_block(a_pmf, p_pmf, k)
        self._pld_cache[key] = (grid, k)
        return grid, k

    def _central_pld(self, shift: tuple[int, int], share: float = 1.0) -> PLDPair:
        grid, _ = self._central_block(share)
        rows, cols = shift[0] - shift[1], shift[1]  # (A + P, B + P) shift in (A - B, B + P) coordinates
        pad_r, pad_c = abs(rows), abs(cols)
        p = np.pad(grid, ((pad_r, pad_r), (pad_c, pad_c)))
        q = np.roll(np.roll(p, rows, axis=0), cols, axis=1)
        return _pld_pair(p.ravel(), q.ravel(), 3 * _TAIL)

    def _triple_pld(self, size: int, shift: int, share: float = 1.0) -> PLDPair:
        pmf, _ = negative_binomial_truncated(self.triple_shape * share, self.triple_ratios[size - 2], _TAIL)
        m = abs(shift)
        p = np.concatenate([pmf, np.zeros(m)])
        q = np.concatenate([np.zeros(m), pmf])
        if shift < 0:
            p, q = q, p
        return _pld_pair(p, q, _TAIL)

    @cached_property
    def _pld_cache(self) -> dict[Any, Any]:
        return {}

    def _noise_share(self, n_participants: int | None, owner: str) -> float:
        """The fraction of the calibrated noise that ``n_participants`` users send (capped at 1: more only adds noise)."""
        if n_participants is None:
            return 1.0
        n_participants = check_integer(n_participants, "n_participants", owner, low=1)
        return min(1.0, n_participants / self.n_users)

    def privacy_profile_bound(self, value: int, other: int, *, n_participants: int | None = None) -> PLDPair:
        """Pessimistic PLDs bounding the count view's privacy loss between rounded values ``value`` and ``other``.

        ``n_participants`` (default ``n_users``): the users taking part, whose noise shares make
        up the view (every noise shape times ``n_participants / n_users``, at most 1).
        """
        share = self._noise_share(n_participants, f"{type(self).__name__}.privacy_profile_bound")
        central, triples = self.shift(value, other)
        cache = self._pld_cache
        if ("central", central, share) not in cache:
            cache["central", central, share] = self._central_pld(central, share)
        pld = cache["central", central, share]
        for kind, amount in sorted(triples.items()):
            key = ("triple", abs(kind), amount, share)
            if key not in cache:
                cache[key] = self._triple_pld(abs(kind), amount, share)
            pld = pld.compose(cache[key])
        return pld

    def certified_delta(self, epsilon: float | None = None) -> float:
        """An upper bound on delta at ``epsilon`` (default: the headline) for every pair of rounded values, at any ``levels``.

        One composition bounds all pairs at once (``DLap(D)``, the block's minimum shifted by
        the largest central shift, and the worst triple kind ``K`` times; the proof is in
        ``privsum.sums._correlated_flooding``); the tests check it against `verify` for
        ``levels <= 8``. All ``n_users`` take part.

        Raises:
            InvalidParameterError: ``pair_shape`` or ``triple_shape`` below 1, ``levels`` above 1024, or
                flooding counts too long to build (``pair_ratio`` / ``triple_ratios`` too close to 1).

        Examples:
            >>> from privsum.sums import CorrelatedNoiseSum
            >>> protocol = CorrelatedNoiseSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=1_000, domain=2)
            >>> bool(protocol.verify() <= protocol.certified_delta() <= protocol.delta)
            True
        """
        owner = f"{type(self).__name__}.certified_delta"
        epsilon = self.epsilon if epsilon is None else check_epsilon(epsilon, owner)
        with refusals_as(owner):
            pld = certified_pld(
                self.levels, self.central_ratio, self.pair_shape, self.pair_ratio, self.triple_shape, self.triple_ratios
            )
        return pld.delta(epsilon)

    def verify(self, epsilon: float | None = None) -> float:
        """The largest delta at ``epsilon`` (default: the headline) over all pairs of rounded values.

        Raises:
            InvalidParameterError: ``levels`` above 8 (too many pairs / too large grids to check here).
        """
        owner = f"{type(self).__name__}.verify"
        epsilon = self.epsilon if epsilon is None else check_epsilon(epsilon, owner)
        return max(self.privacy_profile_bound(v, w).delta(epsilon) for v, w in self._value_pairs(owner))

    def verified_epsilon(self, delta: float, *, n_participants: int | None = None) -> float:
        """The largest epsilon at ``delta`` over all pairs of rounded values (see `verify`).

        ``n_participants`` (default ``n_users``): verify the noise that many users send.
        """
        owner = f"{type(self).__name__}.verified_epsilon"
        delta = check_delta(delta, owner, allow_zero=False)
        pairs = self._value_pairs(owner)
        return max(self.privacy_profile_bound(v, w, n_participants=n_participants).epsilon(delta) for v, w in pairs)

    def _value_pairs(self, owner: str) -> list[tuple[int, int]]:
        """Every pair ``v < w`` of rounded values, for `verify` and `verified_epsilon` (at most 8 levels)."""
        if self.levels > VERIFIABLE_LEVELS:
            raise invalid("levels", owner, f"at most {VERIFIABLE_LEVELS} to verify", self.levels)
        return [(v, w) for v in range(self.levels + 1) for w in range(v + 1, self.levels + 1)]
