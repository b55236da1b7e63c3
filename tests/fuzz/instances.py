"""Valid starting points for the fuzz tests: constructor and ``from_privacy`` arguments of public classes."""

from __future__ import annotations

from typing import Any

import numpy as np

from privsum.accounting import (
    ComposedEvent,
    DiscreteGaussianEvent,
    GaussianEvent,
    GuaranteeEvent,
    ParallelEvent,
    PrivacyAccountant,
    PrivacyGuarantee,
    PrivacyProfile,
    ProfileEvent,
    RelationEvent,
    SkellamEvent,
    WorstCaseProfile,
)
from privsum.apps import ShuffledKDEClassifier
from privsum.bitsum import (
    CentralGaussianBitSum,
    CentralLaplaceBitSum,
    ExactBitSum,
    LocalRRBitSum,
    PureBitSum,
    RRBitSum,
    ThreeNBBitSum,
)
from privsum.clipping import (
    CentralClippedSum,
    CentralClippedVectorSum,
    CentralSparseAggregation,
    ClippedSum,
    ClippedVectorSum,
    PrivateCentralClippedSum,
    SparseVectorAggregation,
)
from privsum.histograms import (
    BinsEvent,
    Categories,
    CentralHistogram,
    PoissonCounterEvent,
    PoissonNoiseBitSum,
    PrefixHeavyHitters,
    ReleasedCountSketch,
    ReleasedPrefixTree,
    RoundsEvent,
    ShuffledCountSketch,
    ShuffledHistogram,
    TwoRoundHeavyHitters,
)
from privsum.kde import JointClassKDE, KDEFunction, ShuffledKDE, VectorSumKDE
from privsum.lsq import (
    L2LSH,
    FastJLT,
    IdentityFeatures,
    RandomFourierFeatures,
    RandomizedHadamard,
    RandomSigns,
    SignedRandomProjection,
)
from privsum.means import ClippedMean, ShuffledMean, ShuffledMeanVariance
from privsum.parties import (
    Analyzer,
    ClassifierRounds,
    Client,
    Deployment,
    JointClassKDEProtocol,
    LabelRound,
    Shuffler,
    VectorSumKDEProtocol,
)
from privsum.shuffle import MessageBatch, MessageHistogram, PartialView, UserChunks
from privsum.sketches import RACE, RACEClassifier, RACELinearRegression
from privsum.sums import (
    BlanketRealSum,
    CentralGaussianVectorSum,
    CorrelatedNoiseSum,
    ExactVectorSum,
    MultiMessageSum,
    ShuffledVectorSum,
    SkellamVectorSum,
)
from privsum.wire import WireSpec

N = 20
GUARANTEE = PrivacyGuarantee(1.0, 1e-6)
LSH = L2LSH(dimension=2, n_repetitions=4, bucket_width=1.0, n_buckets=8, seed=0)
RFF = RandomFourierFeatures(dimension=2, n_repetitions=4, seed=0)
JOINT_SKELLAM = JointClassKDE.from_privacy(family=RFF, n_classes=2, protocol=SkellamVectorSum, epsilon=1.0, delta=1e-6, n_users=N)
PROFILE = PrivacyProfile([0.5, 0.5], [0.25, 0.75])
DEPLOYMENT = Deployment(RRBitSum(n_users=2, flip_probability=0.3, delta=1e-6), n_instances=2)

#: Methods fuzzed with arbitrary arguments wherever an instance has them.
ENTRY_POINTS = (
    "run",
    "manipulation_bound",
    "manipulation_bounds",
    "per_sender_message_cap",
    "largest_decrease",
    "randomize",
    "analyze",
    "sample_view",
    "view",
    "shuffle",
    "variance",
    "estimate",
    "density",
    "row_estimates",
    "update",
    "merge",
    "release",
    "to_bytes",
    "from_bytes",
    "fit",
    "predict",
    "predict_proba",
    "decision_function",
    "score",
    "compose",
    "epsilon",
    "delta",
    "f",
    "g",
    "kernel",
    "hash",
    "__call__",
    "event_for_participants",
    "bits_per_message",
    "error_bound",
    "candidate_miss_probability",
    "counting_margin",
    "counter",
    "user_message_counts",
    "local_reports",
    "dominates",
    "round_vectors",
    "decode",
    "bias_bound",
    "wrap_probability",
    "rdp",
    # the deployable parties and the wire format: bytes from a network
    "encode",
    "encode_many",
    "submit",
    "absorb",
    "decode_upload",
    "decode_batch",
    "batch_counts",
    "from_file_dict",
)

#: ``name: (class, valid keyword arguments)`` for every public class that can be built directly.
CONSTRUCTORS: dict[str, tuple[type, dict[str, Any]]] = {
    "PrivacyGuarantee": (PrivacyGuarantee, {"epsilon": 1.0, "delta": 1e-6}),
    "GuaranteeEvent": (GuaranteeEvent, {"headline": GUARANTEE}),
    "ProfileEvent": (ProfileEvent, {"profile": PROFILE, "headline": PrivacyGuarantee(PROFILE.epsilon(0.0), 0.0)}),
    "ComposedEvent": (ComposedEvent, {"event": GuaranteeEvent(GUARANTEE), "count": 3}),
    "ParallelEvent": (ParallelEvent, {"events": (GuaranteeEvent(GUARANTEE),) * 2, "parts_per_user": 1}),
    "RelationEvent": (RelationEvent, {"event": GuaranteeEvent(GUARANTEE), "relation": "zero-out"}),
    "DiscreteGaussianEvent": (DiscreteGaussianEvent, {"sigma": 5.0, "headline": PrivacyGuarantee(1.0, 1e-3)}),
    "GaussianEvent": (GaussianEvent, {"sigma": 8.5, "sensitivity": 2.0, "headline": PrivacyGuarantee(1.0, 1e-6)}),
    "SkellamEvent": (SkellamEvent, {"mu": 50.0, "l2_sensitivity": 2.0, "l1_sensitivity": 4.0, "headline_delta": 1e-6}),
    "PrivacyProfile": (PrivacyProfile, {"p": [0.5, 0.5], "q": [0.25, 0.75]}),
    "WorstCaseProfile": (WorstCaseProfile, {"profiles": [PROFILE]}),
    "PrivacyAccountant": (PrivacyAccountant, {}),
    "MessageBatch": (MessageBatch, {"instances": np.array([0, 1]), "values": np.array([1, -1]), "n_instances": 2}),
    "MessageHistogram": (MessageHistogram, {"counts": np.array([[1, 2]]), "alphabet": (-1, 1)}),
    "PartialView": (PartialView, {"histogram": MessageHistogram(np.array([[1, 2]]), (-1, 1)), "n_users": 3}),
    "UserChunks": (UserChunks, {"chunks": [np.zeros(2), np.ones(3)]}),
    "RRBitSum": (RRBitSum, {"n_users": N, "flip_probability": 0.3, "delta": 1e-6}),
    "LocalRRBitSum": (LocalRRBitSum, {"n_users": N, "flip_probability": 0.3}),
    "ThreeNBBitSum": (
        ThreeNBBitSum,
        {"n_users": N, "noise_ratio": 0.5, "flooding_shape": 1.0, "flooding_ratio": 0.5, "delta": 1e-6},
    ),
    "PureBitSum": (PureBitSum, {"n_users": N, "drop_probability": 0.4, "noise_ratio": 0.3}),
    "CentralLaplaceBitSum": (CentralLaplaceBitSum, {"n_users": N, "scale": 1.0, "noise_source": "numpy"}),
    "CentralGaussianBitSum": (CentralGaussianBitSum, {"n_users": N, "scale": 3.0, "delta": 1e-6, "noise_source": "numpy"}),
    "ExactBitSum": (ExactBitSum, {"n_users": N}),
    "BlanketRealSum": (BlanketRealSum, {"n_users": N, "precision": 2, "blanket_probability": 0.5, "delta": 1e-6}),
    "ShuffledVectorSum": (
        ShuffledVectorSum,
        {"n_users": N, "dimension": 2, "precision": 2, "blanket_probability": 0.5, "delta": 1e-6},
    ),
    "SkellamVectorSum": (
        SkellamVectorSum,
        {
            "n_users": N,
            "dimension": 2,
            "norm_bound": 1.0,
            "scale": 8.0,
            "noise_mu": 500.0,
            "n_shares": 30,
            "modulus": 2**12,
            "delta": 1e-5,
        },
    ),
    "L2LSH": (L2LSH, {"dimension": 2, "n_repetitions": 4, "bucket_width": 1.0, "n_buckets": 8}),
    "RandomFourierFeatures": (RandomFourierFeatures, {"dimension": 2, "n_repetitions": 4}),
    "RandomSigns": (RandomSigns, {"dimension": 2, "n_repetitions": 4}),
    "SignedRandomProjection": (SignedRandomProjection, {"dimension": 2, "n_repetitions": 4}),
    "IdentityFeatures": (IdentityFeatures, {"dimension": 2}),
    "FastJLT": (FastJLT, {"input_dimension": 4, "output_dimension": 2}),
    "RandomizedHadamard": (RandomizedHadamard, {"dimension": 4}),
    "RACE": (RACE, {"family": LSH}),
    "KDEFunction": (KDEFunction, {"family": RFF, "coefficients": np.zeros((4, 1)), "n_users": N}),
    "RACEClassifier": (
        RACEClassifier,
        {"family": LSH, "classes": [0, 1], "epsilon": 1.0, "noise_source": "numpy", "random_state": 0},
    ),
    "RACELinearRegression": (RACELinearRegression, {"n_rows": 8, "epsilon": 1.0, "noise_source": "numpy", "random_state": 0}),
    "CentralClippedSum": (CentralClippedSum, {"epsilon": 1.0, "clipping_bound": 4, "noise_source": "numpy"}),
    "PrivateCentralClippedSum": (PrivateCentralClippedSum, {"epsilon": 1.0, "domain": 16}),
    "CentralClippedVectorSum": (CentralClippedVectorSum, {"epsilon": 1.0, "delta": 1e-6, "clipping_bound": 1.0}),
    "CentralSparseAggregation": (CentralSparseAggregation, {"epsilon": 1.0, "delta": 1e-6, "sparsity_bound": 2}),
    "ShuffledKDEClassifier": (
        ShuffledKDEClassifier,
        {"classes": [0, 1], "n_repetitions": 4, "protocol": "rr", "random_state": 0},
    ),
    "Categories": (Categories, {"labels": ["a", "b", 3]}),
    "CentralHistogram": (CentralHistogram, {"epsilon": 1.0, "delta": 1e-6, "categories": [1, 2]}),
    "BinsEvent": (
        BinsEvent,
        {
            "bin_event": GuaranteeEvent(PrivacyGuarantee(0.5, 1e-7)),
            "bins_per_change": 2,
            "relation": "replace-one",
            "delta": 1e-6,
        },
    ),
    "PoissonCounterEvent": (PoissonCounterEvent, {"noise_mean": 30.0, "delta": 1e-6}),
    "ShuffledCountSketch": (ShuffledCountSketch, {"n_users": N, "rows": 2, "width": 8, "noise_mean": 30.0, "delta": 1e-6}),
    "ReleasedCountSketch": (
        ReleasedCountSketch,
        {"table": np.zeros((2, 4)), "seed": 0, "noise_variance": 1.0, "n_users": N, "guarantee": GUARANTEE},
    ),
    "ReleasedPrefixTree": (
        ReleasedPrefixTree,
        {
            "levels": (ReleasedCountSketch(table=np.zeros((2, 4)), seed=0, noise_variance=1.0, n_users=N, guarantee=GUARANTEE),),
            "level_weights": (1.0,),
            "level_bits": (4,),
        },
    ),
    "PrefixHeavyHitters": (
        PrefixHeavyHitters,
        {
            "domain_size": 1000,
            "bits_per_level": 4,
            "level_sketch": ShuffledCountSketch(n_users=N, rows=2, width=8, noise_mean=30.0, delta=1e-6),
        },
    ),
    "RoundsEvent": (RoundsEvent, {"events": (PoissonCounterEvent(noise_mean=30.0, delta=1e-6),), "delta": 1e-6}),
    "TwoRoundHeavyHitters": (
        TwoRoundHeavyHitters,
        {
            "finder": ShuffledCountSketch(n_users=N, rows=2, width=8, noise_mean=30.0, delta=1e-6),
            "counter_noise_mean": 30.0,
            "max_candidates": 4,
            "delta": 1e-6,
        },
    ),
    "WireSpec": (
        WireSpec,
        {"name": "RRBitSum", "fingerprint": bytes(32), "n_instances": 2, "alphabet_size": 2, "max_upload_messages": 2},
    ),
    "Deployment": (Deployment, {"protocol": RRBitSum(n_users=2, flip_probability=0.3, delta=1e-6), "n_instances": 2}),
    "Client": (Client, {"deployment": DEPLOYMENT, "rng": 0}),
    "Shuffler": (Shuffler, {"deployment": DEPLOYMENT, "rng": 0}),
    "Analyzer": (Analyzer, {"deployment": DEPLOYMENT}),
    "LabelRound": (LabelRound, {"n_users": N, "n_classes": 3, "label_epsilon": 1.0}),
    "VectorSumKDEProtocol": (VectorSumKDEProtocol, {
        "family": RFF, "vector_sum": VectorSumKDEProtocol.from_privacy(
            family=RFF, protocol=SkellamVectorSum, epsilon=1.0, delta=1e-6, n_users=N).vector_sum}),
    "JointClassKDEProtocol": (JointClassKDEProtocol, {
        "family": RFF, "n_classes": 2, "count_weight": JOINT_SKELLAM.count_weight, "vector_sum": JOINT_SKELLAM.vector_sum}),
    "ClassifierRounds": (ClassifierRounds, {
        "classifier": ShuffledKDEClassifier(classes=[0, 1], protocol="rr", n_repetitions=2, random_state=0),
        "n_users": N, "n_features": 2}),
}

#: ``name: (class, valid from_privacy arguments)``.
FROM_PRIVACY_ARGUMENTS: dict[str, tuple[type, dict[str, Any]]] = {
    "RRBitSum": (RRBitSum, {"epsilon": 1.0, "delta": 1e-6, "n_users": N}),
    "LocalRRBitSum": (LocalRRBitSum, {"epsilon": 1.0, "n_users": N}),
    "ThreeNBBitSum": (ThreeNBBitSum, {"epsilon": 1.0, "delta": 1e-6, "n_users": N}),
    "PureBitSum": (PureBitSum, {"epsilon": 1.0, "n_users": N}),
    "CentralLaplaceBitSum": (CentralLaplaceBitSum, {"epsilon": 1.0, "n_users": N}),
    "CentralGaussianBitSum": (CentralGaussianBitSum, {"epsilon": 1.0, "delta": 1e-6, "n_users": N}),
    "ExactBitSum": (ExactBitSum, {"n_users": N}),
    "BlanketRealSum": (BlanketRealSum, {"epsilon": 1.0, "delta": 1e-6, "n_users": N}),
    "CorrelatedNoiseSum": (CorrelatedNoiseSum, {"epsilon": 1.0, "delta": 1e-6, "n_users": N, "domain": 2}),
    "CorrelatedNoiseSum.communication": (
        CorrelatedNoiseSum,
        {
            "epsilon": 1.0,
            "delta": 1e-6,
            "n_users": N,
            "domain": 2,
            "calibration": "tight",
            "flooding": "communication",
            "variance_factor": 1.1,
        },
    ),
    "MultiMessageSum": (MultiMessageSum, {"epsilon": 1.0, "delta": 1e-6, "n_users": N, "domain": 2}),
    "ShuffledVectorSum": (ShuffledVectorSum, {"epsilon": 1.0, "delta": 1e-6, "n_users": N, "dimension": 2}),
    "SkellamVectorSum": (
        SkellamVectorSum,
        {"epsilon": 1.0, "delta": 1e-6, "n_users": N, "dimension": 2, "norm_bound": 1.0},
    ),
    "ClippedSum": (ClippedSum, {"epsilon": 1.0, "delta": 1e-6, "n_users": N, "domain": 16}),
    "ClippedVectorSum": (
        ClippedVectorSum,
        {"epsilon": 1.0, "delta": 1e-6, "n_users": N, "dimension": 2, "radius": 1.0, "levels": 16},
    ),
    "SparseVectorAggregation": (SparseVectorAggregation, {"epsilon": 1.0, "delta": 1e-6, "n_users": N, "dimension": 4}),
    "CentralGaussianVectorSum": (
        CentralGaussianVectorSum,
        {"epsilon": 1.0, "delta": 1e-6, "n_users": N, "dimension": 2, "norm_bound": 1.0},
    ),
    "ExactVectorSum": (ExactVectorSum, {"n_users": N, "dimension": 2, "norm_bound": 1.0}),
    "ShuffledKDE": (
        ShuffledKDE,
        {"family": RFF, "protocol": RRBitSum, "epsilon": 4.0, "delta": 1e-6, "n_users": N},
    ),
    "VectorSumKDE": (
        VectorSumKDE,
        {"family": RFF, "protocol": CentralGaussianVectorSum, "epsilon": 1.0, "delta": 1e-6, "n_users": N},
    ),
    "JointClassKDE": (
        JointClassKDE,
        {"family": RFF, "n_classes": 2, "protocol": CentralGaussianVectorSum, "epsilon": 1.0, "delta": 1e-6, "n_users": N},
    ),
    "ShuffledHistogram": (
        ShuffledHistogram,
        {"epsilon": 1.0, "delta": 1e-6, "n_users": N, "categories": ["a", "b", 3], "protocol": "3nb"},
    ),
    "PoissonNoiseBitSum": (PoissonNoiseBitSum, {"epsilon": 1.0, "delta": 1e-6, "n_users": N}),
    "ShuffledCountSketch": (
        ShuffledCountSketch,
        {"epsilon": 1.0, "delta": 1e-6, "n_users": N, "rows": 2, "width": 4, "max_messages_per_user": 1e4},
    ),
    "PrefixHeavyHitters": (
        PrefixHeavyHitters,
        {"epsilon": 1.0, "delta": 1e-6, "n_users": N, "domain_size": 1000, "max_messages_per_user": 1e5},
    ),
    "TwoRoundHeavyHitters": (
        TwoRoundHeavyHitters,
        {"epsilon": 1.0, "delta": 1e-6, "n_users": N, "max_candidates": 4, "max_messages_per_user": 1e5},
    ),
    "ShuffledMean": (ShuffledMean, {"epsilon": 1.0, "delta": 1e-6, "n_users": N, "low": 0.0, "high": 1.0}),
    "ShuffledMeanVariance": (ShuffledMeanVariance, {"epsilon": 1.0, "delta": 1e-6, "n_users": N, "low": 0.0, "high": 1.0}),
    "ClippedMean": (ClippedMean, {"epsilon": 1.0, "delta": 1e-6, "n_users": N, "low": 0.0, "upper": 100.0}),
    "JointClassKDEProtocol": (
        JointClassKDEProtocol,
        {"family": RFF, "n_classes": 2, "protocol": SkellamVectorSum, "epsilon": 1.0, "delta": 1e-6, "n_users": N},
    ),
    "VectorSumKDEProtocol": (
        VectorSumKDEProtocol,
        {"family": RFF, "protocol": SkellamVectorSum, "epsilon": 1.0, "delta": 1e-6, "n_users": N},
    ),
}


def valid_instances() -> dict[str, Any]:
    """One valid instance per public class (constructed, calibrated, fitted or released)."""
    instances = {name: cls(**kwargs) for name, (cls, kwargs) in CONSTRUCTORS.items()}
    for name, (cls, kwargs) in FROM_PRIVACY_ARGUMENTS.items():
        instances.setdefault(name, cls.from_privacy(**kwargs))
        instances[f"{name}.from_privacy"] = cls.from_privacy(**kwargs)
    points = np.random.default_rng(0).normal(size=(N, 2)) / 3
    instances["RACE"] = RACE(LSH).update(points)
    instances["ReleasedRACE"] = instances["RACE"].release(1.0, noise_source="numpy", rng=0)
    instances["KDEFunction.released"] = instances["ShuffledKDE"].run(np.clip(points, -1, 1), rng=0)
    labels = np.arange(N) % 2
    instances["RACEClassifier.fitted"] = RACEClassifier(**CONSTRUCTORS["RACEClassifier"][1]).fit(points, labels)
    instances["RACELinearRegression.fitted"] = RACELinearRegression(**CONSTRUCTORS["RACELinearRegression"][1]).fit(
        points, points[:, 0]
    )
    instances["ReleasedCountSketch.released"] = instances["ShuffledCountSketch"].run(np.arange(N), rng=0)
    instances["ReleasedPrefixTree.released"] = instances["PrefixHeavyHitters"].run(np.arange(N), rng=0)
    instances["PrivacyAccountant.used"] = PrivacyAccountant().compose(GuaranteeEvent(GUARANTEE), count=2)
    return instances
