"""Black-box audit cases: every shuffle protocol, the shuffled KDE and the private RACE release.

Each case fixes a protocol at a small ``n``, a pair of neighbouring datasets that realises the
worst case of its privacy argument, a statistic of the adversary's view (post-processing, so a
lower bound on the statistic's privacy loss is a lower bound on the view's), and a **negative
control**: the same protocol built with the noise of a much larger epsilon while the original
claim is kept. `AuditCase.audit` returns `privsum.testing.AuditResult` at false-alarm rate
``ALPHA = 1e-6`` (confidence ``1 - 1e-6``) for the honest protocol or its control.

Runs are drawn many at once where a protocol handles independent instances: one run over ``T``
instance columns, each column holding the same dataset, gives ``T`` independent runs (the
instances use independent randomness). Where a case uses a protocol's fast path (`sample_view`)
it says why the fast path is exact in law; ``FAITHFUL`` cases materialise and permute messages.

Used by tests/testing/test_audit_protocols.py and benchmarks/audit_summary.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from privsum.accounting import Neighbouring, PrivacyGuarantee
from privsum.bitsum import PureBitSum, RRBitSum
from privsum.clipping import ClippedSum
from privsum.kde import ShuffledKDE
from privsum.lsq import L2LSH
from privsum.lsq.inner_product import IdentityFeatures
from privsum.sketches import RACE
from privsum.sums import BlanketRealSum, CorrelatedNoiseSum, MultiMessageSum, ShuffledVectorSum, SkellamVectorSum
from privsum.testing.audit import AuditResult, audit_samples

ALPHA = 1e-6  # false-alarm rate of every audit (confidence 1 - 1e-6)

#: ``sample(neighbour, runs, rng, path)`` returns ``runs`` outputs on X (``neighbour=False``) or X',
#: from the protocol's ``"fast"`` or ``"faithful"`` path.
Sampler = Callable[[bool, int, np.random.Generator, str], Any]


@dataclass(frozen=True)
class AuditCase:
    """One protocol's audit: claim, neighbours, statistic, path, and its negative control."""

    name: str
    claimed: PrivacyGuarantee
    neighbours: str
    statistic: str
    path: str
    sample: Sampler
    sample_control: Sampler
    control: str
    n_trials: int  # runs per dataset in the default test run
    slow_trials: int  # runs per dataset in the slow run and the summary table
    faithful_trials: int = 0  # runs per dataset for the faithful-path audit (0: too costly, fast path only)

    def audit(self, *, control: bool = False, n_trials: int | None = None, seed: int = 0, path: str = "fast") -> AuditResult:
        """Audit the honest protocol (or its control) at the claimed delta, false-alarm rate `ALPHA`."""
        runs = self.n_trials if n_trials is None else n_trials
        sampler = self.sample_control if control else self.sample
        rng = np.random.default_rng([seed, int(control), int(path == "faithful")])
        first, second = sampler(False, runs, rng, path), sampler(True, runs, rng, path)
        return audit_samples(first, second, delta=self.claimed.delta, alpha=ALPHA)


# --------------------------------------------------------------------------- helpers
def _columns(column: np.ndarray, runs: int) -> np.ndarray:
    """``runs`` copies of one dataset as instance columns: shape ``(n_users, runs)``."""
    return np.repeat(np.asarray(column)[:, None], runs, axis=1)


def _clamp(values: np.ndarray, low: int, high: int) -> np.ndarray:
    """Coarsen an integer statistic by clamping (post-processing; keeps the event space small)."""
    return np.clip(np.rint(values).astype(np.int64), low, high)


def _view(protocol: Any, x: np.ndarray, rng: np.random.Generator, path: str) -> Any:
    """The analyzer's view: sampled directly (``"fast"``) or from permuted messages (``"faithful"``)."""
    if path == "faithful":
        return protocol.view(protocol.shuffle(protocol.randomize(x, rng=rng), rng=rng))
    return protocol.sample_view(x, rng=rng)


def _neighbour_columns(dataset: np.ndarray, neighbour: np.ndarray) -> Callable[[bool], np.ndarray]:
    return lambda use_neighbour: neighbour if use_neighbour else dataset


# --------------------------------------------------------------------------- bit sums
def _pure_bit_sum() -> AuditCase:
    honest = PureBitSum.from_privacy(epsilon=1.0, n_users=3)
    control = PureBitSum.from_privacy(epsilon=6.0, n_users=3)
    data = _neighbour_columns(np.zeros(3, dtype=np.int8), np.array([1, 0, 0], dtype=np.int8))

    def sampler(protocol: PureBitSum) -> Sampler:
        def sample(use_neighbour: bool, runs: int, rng: np.random.Generator, path: str) -> np.ndarray:
            return _view(protocol, _columns(data(use_neighbour), runs), rng, path).counts  # (runs, 2)

        return sample

    return AuditCase(
        name="PureBitSum",
        claimed=honest.guarantee,
        neighbours="bits (0,0,0) vs (1,0,0)",
        statistic="(#-1, #+1) message counts",
        path="fast (per-user NB(r/n, a) shares sum to NB(r, a); dropped bits Bin(S, 1-q))",
        sample=sampler(honest),
        sample_control=sampler(control),
        control="noise of PureBitSum.from_privacy(epsilon=6)",
        n_trials=20_000,
        slow_trials=100_000,
        faithful_trials=20_000,
    )


# --------------------------------------------------------------------------- real and integer sums
def _blanket() -> AuditCase:
    honest = BlanketRealSum.from_privacy(epsilon=1.0, delta=1e-3, n_users=3)
    control = BlanketRealSum.from_privacy(epsilon=6.0, delta=1e-3, n_users=3, precision=honest.precision)
    data = _neighbour_columns(np.zeros(3), np.array([1.0, 0.0, 0.0]))

    def sampler(protocol: BlanketRealSum) -> Sampler:
        def sample(use_neighbour: bool, runs: int, rng: np.random.Generator, path: str) -> np.ndarray:
            return _view(protocol, _columns(data(use_neighbour), runs), rng, path).counts  # (runs, k+1)

        return sample

    return AuditCase(
        name="BlanketRealSum",
        claimed=honest.guarantee,
        neighbours="x (0,0,0) vs (1,0,0)",
        statistic="message histogram (k+1 counts)",
        path="fast (the same per-user messages, counted without a permutation)",
        sample=sampler(honest),
        sample_control=sampler(control),
        control="blanket probability of from_privacy(epsilon=6), same k",
        n_trials=20_000,
        slow_trials=100_000,
        faithful_trials=20_000,
    )


def _clamped_sum_sampler(data: Any) -> Any:
    """Sampler factory: the analyzer's noisy sum of one-user-changed columns, clamped to [-8, 9]."""

    def sampler(protocol: Any) -> Sampler:
        def sample(use_neighbour: bool, runs: int, rng: np.random.Generator, path: str) -> np.ndarray:
            view = _view(protocol, _columns(data(use_neighbour), runs), rng, path)
            return _clamp(protocol.analyze(view), -8, 9)

        return sample

    return sampler


def _correlated() -> AuditCase:
    honest = CorrelatedNoiseSum.from_privacy(epsilon=1.0, delta=1e-3, n_users=3, calibration="tight")
    control = CorrelatedNoiseSum.from_privacy(epsilon=8.0, delta=1e-3, n_users=3)
    data = _neighbour_columns(np.zeros(3, dtype=np.int64), np.array([1, 0, 0]))

    sampler = _clamped_sum_sampler(data)

    return AuditCase(
        name="CorrelatedNoiseSum (GKMPS21, tight)",
        claimed=honest.guarantee,
        neighbours="x (0,0,0) vs (1,0,0), domain 1",
        statistic="sum of message values (clamped to [-8, 9])",
        path="fast (each noise kind's total is NB(total shape, ratio): NB shares add up)",
        sample=sampler(honest),
        sample_control=sampler(control),
        control="noise of from_privacy(epsilon=8)",
        n_trials=20_000,
        slow_trials=100_000,
    )


def _multi_message() -> AuditCase:
    # The noisy-sum view's law does not depend on the share count; the delta (share security,
    # BBGN20's bound) is taken from the paper, not audited.
    honest = MultiMessageSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=3)
    control = MultiMessageSum.from_privacy(epsilon=6.0, delta=1e-6, n_users=3)
    data = _neighbour_columns(np.zeros(3, dtype=np.int64), np.array([1, 0, 0]))

    sampler = _clamped_sum_sampler(data)

    return AuditCase(
        name="MultiMessageSum (BBGN20)",
        claimed=honest.guarantee,
        neighbours="x (0,0,0) vs (1,0,0), domain 1",
        statistic="noisy sum (analyzer output, clamped to [-8, 9]); epsilon only, the share delta is assumed",
        path="fast (the same shares, counted without a permutation)",
        sample=sampler(honest),
        sample_control=sampler(control),
        control="noise of from_privacy(epsilon=6)",
        n_trials=20_000,
        slow_trials=100_000,
    )


def _vector() -> AuditCase:
    honest = ShuffledVectorSum.from_privacy(epsilon=1.0, delta=1e-3, n_users=3, dimension=2)
    control = ShuffledVectorSum.from_privacy(epsilon=6.0, delta=1e-3, n_users=3, dimension=2, precision=honest.precision)
    dataset = np.zeros((3, 2))
    neighbour = dataset.copy()
    neighbour[0] = 1.0

    def sampler(protocol: ShuffledVectorSum) -> Sampler:
        def sample(use_neighbour: bool, runs: int, rng: np.random.Generator, path: str) -> np.ndarray:
            x = neighbour if use_neighbour else dataset
            views = [_view(protocol, x, rng, path).counts for _ in range(runs)]
            return np.array([int(counts[:, -1].sum()) for counts in views])

        return sample

    return AuditCase(
        name="ShuffledVectorSum",
        claimed=honest.guarantee,
        neighbours="x rows (0,0)x3 vs user 0 at (1,1)",
        statistic="messages with the top value k, over all coordinates",
        path="fast (the same per-user reports, counted without a permutation); one call per run",
        sample=sampler(honest),
        sample_control=sampler(control),
        control="blanket probability of from_privacy(epsilon=6), same k",
        n_trials=10_000,
        slow_trials=40_000,
        faithful_trials=5_000,
    )


def _skellam() -> AuditCase:
    # One coordinate, scale 8: the rounding is deterministic (8x is an integer), so the pair
    # realises a shift of 16 against the claimed bound 2 * Delta_2 = 18. The decoded sum is the
    # analyzer's output; the share delta (BBGN20's bound) is assumed, as for MultiMessageSum.
    common = {"delta": 1e-3, "n_users": 3, "dimension": 1, "norm_bound": 1.0, "scale": 8.0}
    honest = SkellamVectorSum.from_privacy(epsilon=1.0, **common)
    control = SkellamVectorSum.from_privacy(epsilon=8.0, **common)
    data = _neighbour_columns(np.array([[-1.0], [0.0], [0.0]]), np.array([[1.0], [0.0], [0.0]]))

    def sampler(protocol: SkellamVectorSum) -> Sampler:
        def sample(use_neighbour: bool, runs: int, rng: np.random.Generator, path: str) -> np.ndarray:
            x = data(use_neighbour)
            estimates = np.array([protocol.run(x, rng=rng, path=path)[0] for _ in range(runs)])
            return _clamp(estimates * protocol.scale / 16, -6, 6)

        return sample

    return AuditCase(
        name="SkellamVectorSum",
        claimed=honest.guarantee,
        neighbours="x rows (-1, 0, 0) vs (1, 0, 0), d = 1, scale 8",
        statistic="decoded sum times scale / 16, rounded and clamped to [-6, 6]; epsilon only, the share delta is assumed",
        path="fast (the rounded sum plus Sk(mu) modulo q, decoded: the faithful output's law); one call per run",
        sample=sampler(honest),
        sample_control=sampler(control),
        control="noise of from_privacy(epsilon=8), same scale",
        n_trials=20_000,
        slow_trials=60_000,
    )


def _clipped() -> AuditCase:
    honest = ClippedSum.from_privacy(epsilon=1.0, delta=1e-3, n_users=3, domain=4)
    control = ClippedSum.from_privacy(epsilon=10.0, delta=1e-3, n_users=3, domain=4)
    data = _neighbour_columns(np.array([1, 0, 0]), np.array([4, 0, 0]))

    def sampler(protocol: ClippedSum) -> Sampler:
        def sample(use_neighbour: bool, runs: int, rng: np.random.Generator, path: str) -> np.ndarray:
            x = _columns(data(use_neighbour), runs)
            if path == "faithful":
                estimates = protocol.sub_domain_estimates(protocol.shuffle(protocol.randomize(x, rng=rng), rng=rng))
            else:
                estimates = protocol.sample_sub_domain_estimates(x, rng=rng)
            low = _clamp(estimates[:, 0], -2, 3)
            top = _clamp(np.floor(estimates[:, -1] / 2), -4, 6)
            return np.stack([low, top], axis=1)

        return sample

    return AuditCase(
        name="ClippedSum (1-D, U=4)",
        claimed=honest.guarantee,
        neighbours="x (1,0,0) vs (4,0,0): one user moves from sub-domain 0 to sub-domain 2",
        statistic="(S_0 clamped to [-2, 3], floor(S_2 / 2) clamped to [-4, 6])",
        path="fast (each sub-domain's analyzer output sampled exactly in law: the sum plus DLap)",
        sample=sampler(honest),
        sample_control=sampler(control),
        control="instances of from_privacy(epsilon=10)",
        n_trials=20_000,
        slow_trials=100_000,
    )


# --------------------------------------------------------------------------- KDE and RACE
def _kde() -> AuditCase:
    single = ShuffledKDE.from_privacy(family=IdentityFeatures(dimension=1), protocol=RRBitSum, epsilon=1.0, delta=1e-3, n_users=3)
    weak_bitsum = RRBitSum.from_privacy(epsilon=6.0, delta=1e-3, n_users=3)
    dataset = np.array([[-1.0], [-1.0], [-1.0]])
    neighbour = np.array([[1.0], [-1.0], [-1.0]])

    def sampler(bitsum: RRBitSum) -> Sampler:
        def sample(use_neighbour: bool, runs: int, rng: np.random.Generator, path: str) -> np.ndarray:
            # I = runs repetitions of the (seedless) identity family are `runs` independent runs
            # of the I = 1 protocol: each repetition's coefficient is one run's released value.
            # The coefficient F = (2B - n) R is a function of the bit-sum estimate B, so the
            # audit reads B from the view (`analyze` would also compose the I-run guarantee).
            kde = ShuffledKDE(family=IdentityFeatures(dimension=1, n_repetitions=runs), bitsum=bitsum, delta=1e-3)
            view = _view(kde, neighbour if use_neighbour else dataset, rng, path)
            return _clamp(kde.bitsum.analyze(view), -100, 100)

        return sample

    return AuditCase(
        name="ShuffledKDE (RR bit sum, identity family)",
        claimed=single.guarantee,
        neighbours="points (-1,-1,-1) vs (1,-1,-1): the user's bit goes from 0 to 1",
        statistic="bit-sum estimate B behind the released coefficient F = (2B - n)R",
        path="fast (the RR bit sum's Bin counts; repetitions as independent runs)",
        sample=sampler(single.bitsum),
        sample_control=sampler(weak_bitsum),
        control="bit sum of RRBitSum.from_privacy(epsilon=6)",
        n_trials=20_000,
        slow_trials=100_000,
        faithful_trials=20_000,
    )


def _race() -> AuditCase:
    family = L2LSH(dimension=1, n_repetitions=2, bucket_width=1.0, n_buckets=4, seed=0)
    points = np.array([[-3.0], [0.0], [3.0]])
    target = np.array([[0.4]])
    base, plus = RACE(family).update(points), RACE(family).update(np.concatenate([points, target]))
    touched = np.argwhere(plus.counts != base.counts)  # one counter per row
    claimed = PrivacyGuarantee(1.0, 0.0, Neighbouring.ADD_REMOVE)

    def sampler(epsilon: float) -> Sampler:
        def sample(use_neighbour: bool, runs: int, rng: np.random.Generator, path: str) -> np.ndarray:
            del path  # the release has one path
            sketch = plus if use_neighbour else base
            rows, cols = touched[:, 0], touched[:, 1]
            excess = [
                sketch.release(epsilon, noise_source="numpy", rng=rng).counts[rows, cols] - base.counts[rows, cols]
                for _ in range(runs)
            ]
            return _clamp(np.array(excess), 0, 1)

        return sample

    return AuditCase(
        name="ReleasedRACE (R=2 rows)",
        claimed=claimed,
        neighbours="3 points vs the same plus one (add-remove)",
        statistic="whether each counter the added point hashes to exceeds its count without the point",
        path="RACE.release(noise_source='numpy'): the public release, seeded sampler",
        sample=sampler(claimed.epsilon),
        sample_control=sampler(8.0),
        control="RACE.release(epsilon=8) claimed as epsilon=1",
        n_trials=10_000,
        slow_trials=40_000,
    )


def all_cases() -> list[AuditCase]:
    """Every audited protocol, in the order of the summary table."""
    return [_pure_bit_sum(), _blanket(), _correlated(), _multi_message(), _vector(), _skellam(), _clipped(), _kde(), _race()]
