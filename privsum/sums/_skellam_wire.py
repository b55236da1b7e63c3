"""What `SkellamVectorSum`'s parties exchange: every coordinate's noisy rounded value as ``m`` shares modulo ``q``.

`SkellamShareWire` (mixed into `SkellamVectorSum`) makes each user's shares (its rounded vector
plus its noise share, split into ``m`` uniform residues per coordinate summing to it modulo ``q``),
their views (faithful, counted, one chunk at a time) and the analyzer's modular decoding. The
protocol class holds the parameters, the rounding, the guarantee and the costs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privsum._random import RNGLike, as_generator
from privsum._validation import check_choice, check_integer_array, invalid
from privsum.shuffle import MessageBatch, MessageHistogram
from privsum.shuffle.protocol import EXECUTION_PATHS, SenderCap
from privsum.shuffle.robustness import check_malicious
from privsum.shuffle.sparse import SparseMessageHistogram
from privsum.shuffle.streaming import PartialView
from privsum.sums._common import wire_coordinates
from privsum.sums.sparse_shares import residue_sums, residue_view

__all__ = ["MAX_FAITHFUL_MESSAGES", "SkellamShareWire"]

MAX_FAITHFUL_MESSAGES = 2**23  # the faithful path materialises n * d * m messages


class SkellamShareWire:
    """Mixed into `SkellamVectorSum`: its messages ``(coordinate, share)``, their views and their decoding.

    It reads the protocol's ``dimension``, ``n_users``, ``n_shares``, ``modulus``, ``noise_mu`` and
    ``scale``, its input check and its rounding.
    """

    def wire_instances(self, n_instances: int | None = None) -> int:
        """The ``d`` coordinates are the instances."""
        return wire_coordinates(self.dimension, n_instances, type(self).__name__)

    def sender_cap(self, n_instances: int, exceed_probability: float) -> SenderCap:
        """``m`` shares per coordinate."""
        return SenderCap.fixed(self.n_shares, n_instances)

    def _message_cap(self, tail_probability: float) -> int:
        """``m`` shares per user and coordinate."""
        return self.n_shares

    def _shares(self, x: Any, generator: np.random.Generator, *, check: bool = True) -> np.ndarray:
        owner = type(self).__name__
        scaled = self._scaled_inputs(x)
        if scaled.shape[0] * self.dimension * self.n_shares > MAX_FAITHFUL_MESSAGES:
            raise invalid(
                "x",
                owner,
                f"at most {MAX_FAITHFUL_MESSAGES} messages (n * d * m) on the share-level paths; "
                "use path='fast' or stream chunks",
                f"{scaled.shape[0]} rows",
            )
        rounded = self._round_rows(scaled, generator)  # type: ignore[attr-defined]
        if check:
            self.check_participants(rounded.shape[0])
        rate = self.noise_mu / self.n_users
        noisy = rounded + generator.poisson(rate, rounded.shape) - generator.poisson(rate, rounded.shape)
        secret = np.mod(noisy, self.modulus)
        shares = generator.integers(0, self.modulus, size=(*secret.shape, self.n_shares), dtype=np.int64)
        shares[..., -1] = np.mod(secret - np.mod(shares[..., :-1].sum(axis=-1), self.modulus), self.modulus)
        return shares  # (n_users, dimension, n_shares)

    def _tagged(self, shares: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every share of `_shares` with its coordinate, user by user: ``(coordinates, shares)``, flat."""
        coordinates = np.broadcast_to(np.arange(self.dimension)[None, :, None], shares.shape)
        return coordinates.ravel(), shares.ravel()

    def randomize(self, x: Any, *, rng: RNGLike = None) -> MessageBatch:
        """Every user's ``d m`` messages ``(coordinate, share)``."""
        shares = self._shares(x, as_generator(rng, type(self).__name__))
        return MessageBatch(*self._tagged(shares), n_instances=self.dimension)

    def randomize_unchecked(self, x: Any, *, rng: RNGLike = None) -> MessageBatch:
        """`randomize` without the participant check (for one chunk of a streamed run)."""
        shares = self._shares(x, as_generator(rng, type(self).__name__), check=False)
        return MessageBatch(*self._tagged(shares), n_instances=self.dimension)

    def sample_view(self, x: Any, *, rng: RNGLike = None) -> SparseMessageHistogram:  # type: ignore[override]
        """The shares counted directly (no permutation): the faithful view's law, without the shuffle."""
        shares = self._shares(x, as_generator(rng, type(self).__name__))
        ones = np.ones(shares.size, dtype=np.int64)
        return SparseMessageHistogram.from_pairs(*self._tagged(shares), ones, self.dimension)

    def view(self, messages: SparseMessageHistogram | MessageBatch | MessageHistogram) -> SparseMessageHistogram:  # type: ignore[override]
        """The sparse histogram of ``(coordinate, share)`` messages (a sparse view is checked and returned)."""
        owner = type(self).__name__
        messages = residue_view(messages, self.modulus, owner)
        if messages.n_instances != self.dimension:
            raise invalid("view", owner, f"a view of {self.dimension} coordinates", f"{messages.n_instances} instances")
        return messages

    def partial_view(self, chunk: Any, *, rng: RNGLike = None, path: str = "fast") -> PartialView:
        """One chunk of users, counted (participants are checked once, on the total).

        ``"faithful"``: the chunk's shares, shuffled, as a sparse view. ``"fast"``: one message per
        coordinate, the residue of the chunk's share sum, ``(sum round(y_i) + Sk(k mu / n)) mod q``
        for ``k`` users (exact in law: the ``k`` noise shares sum to ``Sk(k mu / n)``); the partial
        views add up modulo ``q`` to the law of the faithful analyzer's sum, in memory ``O(k d)``.
        """
        owner = type(self).__name__
        path = check_choice(path, "path", owner, EXECUTION_PATHS)
        generator = as_generator(rng, owner)
        if path == "faithful":
            view = self.view(self.shuffle(self.randomize_unchecked(chunk, rng=generator), rng=generator))
            return PartialView(view, int(view.total_messages // (self.dimension * self.n_shares)))
        rounded = self.round_vectors(chunk, rng=generator)
        residues = self.noisy_residues(rounded.sum(axis=0), rounded.shape[0], generator)
        coordinates = np.arange(self.dimension)
        view = SparseMessageHistogram.from_pairs(coordinates, residues, np.ones(self.dimension, dtype=np.int64), self.dimension)
        return PartialView(view, int(rounded.shape[0]))

    def noisy_residues(self, rounded_total: np.ndarray, n_participants: int, generator: np.random.Generator) -> np.ndarray:
        """``(rounded_total + Sk(k mu / n)) mod q`` for ``k = n_participants``: what the shares of ``k`` users sum to.

        The fast paths' one noise draw (the ``k`` users' noise shares sum to ``Sk(k mu / n)``).
        """
        mu = self.noise_mu * n_participants / self.n_users
        noise = generator.poisson(mu, self.dimension) - generator.poisson(mu, self.dimension)
        return np.mod(rounded_total + noise, self.modulus)

    def analyze(self, view: SparseMessageHistogram | MessageBatch | MessageHistogram) -> np.ndarray:  # type: ignore[override]
        """The estimate of ``sum_i x_i``: each coordinate's shares summed modulo ``q``, centred, divided by ``gamma``."""
        sparse = self.view(view)
        residues = residue_sums(sparse.instances, sparse.values, sparse.counts, self.dimension, self.modulus)
        return self.decode(residues)

    def decode(self, residues: Any) -> np.ndarray:
        """Residues modulo ``q`` (one per coordinate) to the estimate: the representative in ``(-q/2, q/2]`` over ``gamma``."""
        owner = type(self).__name__
        residues = check_integer_array(residues, "residues", owner, ndim=1, low=0)
        if residues.size != self.dimension or (residues.size and not residues.max() < self.modulus):
            raise invalid("residues", owner, f"{self.dimension} integers in [0, {self.modulus})", f"shape {residues.shape}")
        half = self.modulus // 2
        centred = np.mod(residues + half - 1, self.modulus) - (half - 1)
        return centred.astype(float) / self.scale

    def manipulation_bound(self, n_malicious: int, *, cap: int | None = None) -> float:
        """``(q - 1)/gamma`` per coordinate for ``n_malicious >= 1`` (the whole decoding window; 0 for none)."""
        owner = f"{type(self).__name__}.manipulation_bound"
        n_malicious = check_malicious(n_malicious, owner)
        self._enforced_cap(cap, owner)  # any cap: one share suffices
        return (self.modulus - 1) / self.scale if n_malicious else 0.0
