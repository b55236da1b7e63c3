"""Small calibrated instances of every protocol the parties carry, with inputs (shared by the party tests)."""

from __future__ import annotations

import math

import numpy as np

from privsum.bitsum import LocalRRBitSum, PureBitSum, RRBitSum, ThreeNBBitSum
from privsum.clipping import ClippedSum, ClippedVectorSum, SparseVectorAggregation
from privsum.kde import ShuffledKDE
from privsum.lsq import RandomFourierFeatures
from privsum.parties import JointClassKDEProtocol, LabelRound, VectorSumKDEProtocol
from privsum.sums import BlanketRealSum, CorrelatedNoiseSum, MultiMessageSum, ShuffledVectorSum, SkellamVectorSum


def protocol(name: str, n_users: int):
    """A protocol calibrated for ``n_users`` at epsilon 1 (delta 1e-6 where it has one)."""
    privacy = {"epsilon": 1.0, "n_users": n_users}
    builders = {
        "RRBitSum": lambda: RRBitSum.from_privacy(**privacy, delta=1e-6),
        "LocalRRBitSum": lambda: LocalRRBitSum.from_privacy(**privacy),
        "ThreeNBBitSum": lambda: ThreeNBBitSum.from_privacy(**privacy, delta=1e-6),
        "PureBitSum": lambda: PureBitSum.from_privacy(**privacy),
        "BlanketRealSum": lambda: BlanketRealSum.from_privacy(**privacy, delta=1e-6),
        "CorrelatedNoiseSum": lambda: CorrelatedNoiseSum.from_privacy(**privacy, delta=1e-6),
        "MultiMessageSum": lambda: MultiMessageSum.from_privacy(**privacy, delta=1e-6),
        "ShuffledVectorSum": lambda: ShuffledVectorSum.from_privacy(**privacy, delta=1e-6, dimension=4),
        "SkellamVectorSum": lambda: SkellamVectorSum.from_privacy(**privacy, delta=1e-6, dimension=4, norm_bound=1.0),
        "ShuffledKDE": lambda: ShuffledKDE.from_privacy(family=RandomFourierFeatures(dimension=2, n_repetitions=6, seed=1),
                                                        protocol=RRBitSum, epsilon=4.0, delta=1e-6, n_users=n_users),
        "ClippedSum": lambda: ClippedSum.from_privacy(**privacy, delta=1e-6, domain=2**5),
        "ClippedVectorSum": lambda: ClippedVectorSum.from_privacy(**privacy, delta=1e-6, dimension=4, radius=1.0),
        "SparseVectorAggregation": lambda: SparseVectorAggregation.from_privacy(**privacy, delta=1e-6, dimension=4),
        "VectorSumKDEProtocol": lambda: VectorSumKDEProtocol.from_privacy(
            family=RandomFourierFeatures(dimension=2, n_repetitions=2, seed=1), protocol=SkellamVectorSum,
            epsilon=1.0, delta=1e-6, n_users=n_users),
        "LabelRound": lambda: LabelRound(n_users=n_users, n_classes=3, label_epsilon=1.0),
        "LabelRoundClear": lambda: LabelRound(n_users=n_users, n_classes=3, label_epsilon=math.inf),
        "JointClassKDEProtocol": lambda: JointClassKDEProtocol.from_privacy(
            family=RandomFourierFeatures(dimension=2, n_repetitions=2, seed=1), n_classes=2, protocol=SkellamVectorSum,
            epsilon=1.0, delta=1e-6, n_users=n_users),
    }
    return builders[name]()


NAMES = ("RRBitSum", "LocalRRBitSum", "ThreeNBBitSum", "PureBitSum", "BlanketRealSum", "CorrelatedNoiseSum",
         "MultiMessageSum", "ShuffledVectorSum", "SkellamVectorSum", "ShuffledKDE",
         "ClippedSum", "ClippedVectorSum", "SparseVectorAggregation", "VectorSumKDEProtocol", "LabelRound",
         "LabelRoundClear", "JointClassKDEProtocol")
VECTOR_SUMS = ("ShuffledVectorSum", "SkellamVectorSum", "ClippedVectorSum", "SparseVectorAggregation")
KDES = ("ShuffledKDE", "VectorSumKDEProtocol")
LABEL_ROUNDS = ("LabelRound", "LabelRoundClear")
FIXED_INSTANCES = (*VECTOR_SUMS, *KDES, *LABEL_ROUNDS, "ClippedSum", "JointClassKDEProtocol")


def inputs(name: str, n_users: int, n_instances: int, rng: np.random.Generator) -> np.ndarray:
    """Valid inputs of ``n_users`` users (``n_instances`` columns, or the dimension for vector sums)."""
    if name == "SparseVectorAggregation":
        return (rng.random((n_users, 4)) < 0.3).astype(int)
    if name in VECTOR_SUMS:
        return rng.random((n_users, 4)) / 4
    if name == "ClippedSum":
        return rng.integers(0, 20, (n_users, 1))
    if name in KDES:
        return rng.normal(size=(n_users, 2)) * 0.5
    if name in LABEL_ROUNDS:
        return rng.integers(0, 3, (n_users, 1))
    if name == "JointClassKDEProtocol":  # each point, then its class index
        return np.column_stack([rng.normal(size=(n_users, 2)) * 0.5, rng.integers(0, 2, n_users)])
    if name in ("CorrelatedNoiseSum", "MultiMessageSum"):
        return rng.integers(0, 2, (n_users, n_instances))
    if name == "BlanketRealSum":
        return rng.random((n_users, n_instances))
    return rng.integers(0, 2, (n_users, n_instances))


def n_instances(name: str, columns: int) -> int | None:
    return None if name in FIXED_INSTANCES else columns
