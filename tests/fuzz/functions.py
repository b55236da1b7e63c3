"""Valid arguments for every public function of privsum, the starting points of the function fuzz tests.

``FUNCTIONS`` maps each public function's name (as `public_callables` spells it) to keyword
arguments of one valid, fast call. A new public function without an entry fails
``test_every_public_function_is_fuzzed``.
"""

from __future__ import annotations

import importlib
import inspect
import math
import pkgutil
from typing import Any

import numpy as np

import privsum
from privsum.accounting import Neighbouring, PrivacyGuarantee
from privsum.apps import ShuffledKDEClassifier
from privsum.bitsum import RRBitSum
from privsum.lsq import L2LSH, RandomFourierFeatures
from privsum.serve import pack_records
from privsum.shuffle import MessageBatch
from privsum.sketches import RACE

#: Optional dependencies a subpackage may need; without them its names cannot be imported here.
OPTIONAL_IMPORTS = ("dask", "distributed", "fastapi", "uvicorn", "httpx", "starlette", "pydantic")


def public_modules() -> dict[str, Any]:
    """``privsum`` and every subpackage, found by walking the package (so new ones join automatically)."""
    modules = {"": privsum}
    for info in pkgutil.iter_modules(privsum.__path__):
        if not info.ispkg or info.name.startswith("_"):
            continue
        try:
            modules[info.name] = importlib.import_module(f"privsum.{info.name}")
        except ModuleNotFoundError as error:
            if (error.name or "").split(".")[0] not in OPTIONAL_IMPORTS:
                raise
    return modules


def public_names() -> dict[str, Any]:
    """Every public name: ``privsum.__all__`` and each subpackage's ``__all__`` (``package.name``)."""
    names = {}
    for package, module in public_modules().items():
        for name in getattr(module, "__all__", ()):
            if name != "__version__":
                names[f"{package}.{name}" if package else name] = getattr(module, name)
    return names


def public_callables() -> dict[str, Any]:
    """Every public function (classes, enums, exceptions and constants are not functions)."""
    return {name: value for name, value in public_names().items() if callable(value) and not inspect.isclass(value)}


N = 20
GUARANTEE = PrivacyGuarantee(1.0, 1e-6)
RFF = RandomFourierFeatures(dimension=2, n_repetitions=4, seed=0)
LSH = L2LSH(dimension=2, n_repetitions=4, bucket_width=1.0, n_buckets=8, seed=0)
_POINTS = np.random.default_rng(0).normal(size=(N, 2)) / 3
_SKETCH = RACE(LSH).update(_POINTS)
_BITS = np.arange(N) % 2


def _classifier() -> ShuffledKDEClassifier:
    model = ShuffledKDEClassifier(classes=[0, 1], protocol="exact", n_repetitions=8, random_state=0)
    return model.fit(np.clip(_POINTS, -1, 1), _BITS)


def _coin(data: Any, rng: np.random.Generator) -> int:
    """RR of a bit derived from any dataset (never raises: the fuzz varies the datasets)."""
    return (len(repr(data)) % 2) ^ int(rng.random() < 0.25)


def _delta_at(parameter: float) -> float:
    """A decreasing delta curve defined at every real parameter (never raises)."""
    return math.exp(-min(max(parameter, -700.0), 700.0))


_CLASSIFIER = _classifier()
_WORDS = (["east", "west"], np.array([[0.5, 0.0], [-0.5, 0.0]]))
_SAMPLES = np.arange(40) % 4

#: ``public name: valid keyword arguments`` of one fast call.
FUNCTIONS: dict[str, dict[str, Any]] = {
    "clipping.choose_instance": {"epsilon": 0.5, "delta": 5e-7, "n_users": 1000, "domain": 4},
    "clipping.default_rounding_levels": {"epsilon": 1.0, "n_users": 1000, "domain": 64},
    "clipping.full_domain_correlated_sum": {"epsilon": 1.0, "delta": 1e-6, "n_users": 1000, "domain": 4},
    "clipping.full_domain_multi_message_sum": {"epsilon": 1.0, "delta": 1e-6, "n_users": 1000, "domain": 4},
    "clipping.sub_domain_index": {"values": np.array([0, 1, 2, 9])},
    "clipping.upper_tail_threshold": {"ratio": 0.5, "probability": 1e-3},
    "decode_class": {"model": _CLASSIFIER, "label": 0, "words": _WORDS[0], "embeddings": _WORDS[1], "top_k": 1},
    "secure_generator": {"seed": 3},
    "accounting.advanced_composition": {"guarantee": GUARANTEE, "count": 10, "delta_slack": 1e-6},
    "accounting.advanced_composition_epsilon": {"epsilon0": 0.1, "count": 10, "delta_slack": 1e-6},
    "accounting.basic_composition": {"guarantees": [GUARANTEE, GUARANTEE]},
    "accounting.calibrate": {
        "delta_at": _delta_at,
        "target_delta": 1e-3,
        "lower": 0.0,
        "upper": 20.0,
        "more_private": "increasing",
    },
    "accounting.gaussian_delta": {"epsilon": 1.0, "sigma": 5.0, "sensitivity": 1.0},
    "accounting.gaussian_epsilon": {"delta": 1e-6, "sigma": 5.0, "sensitivity": 1.0},
    "accounting.gaussian_sigma": {"epsilon": 1.0, "delta": 1e-6, "sensitivity": 1.0},
    "accounting.optimal_composition": {"guarantee": GUARANTEE, "count": 10, "delta": 1e-5},
    "accounting.optimal_composition_delta": {"guarantee": GUARANTEE, "count": 10, "epsilon": 3.0},
    "accounting.optimal_composition_floor": {"guarantee": GUARANTEE, "count": 10},
    "accounting.parallel_composition": {"guarantees": [GUARANTEE, GUARANTEE], "parts_per_user": 1},
    "accounting.pure_composition": {"guarantees": [PrivacyGuarantee(1.0, 0.0)] * 2},
    "accounting.randomized_response_profile": {"epsilon": 1.0, "n_categories": 2, "neighbouring": "replace-one"},
    "accounting.rdp_delta": {"orders": np.array([2.0, 4.0]), "rdp": np.array([0.1, 0.2]), "epsilon": 1.0},
    "accounting.rdp_epsilon": {"orders": np.array([2.0, 4.0]), "rdp": np.array([0.1, 0.2]), "delta": 1e-6},
    "accounting.repeated_composition": {"guarantee": GUARANTEE, "count": 3},
    "accounting.shuffle_amplification": {"epsilon0": 1.0, "delta": 1e-6, "n_users": 1000},
    "accounting.shuffle_amplification_closed_form": {"epsilon0": 1.0, "delta": 1e-6, "n_users": 1000},
    "accounting.shuffle_amplification_delta": {"epsilon0": 1.0, "n_users": 100, "epsilon": 0.5},
    "accounting.shuffle_amplification_profile": {"epsilon0": 1.0, "n_users": 100},
    "accounting.skellam_rdp": {"orders": np.array([2.0, 3.0]), "mu": 50.0, "l2_sensitivity": 2.0, "l1_sensitivity": 4.0},
    "accounting.zero_out_to_replace_one": {"guarantee": PrivacyGuarantee(1.0, 1e-6, Neighbouring.ZERO_OUT)},
    "apps.decode_class": {"model": _CLASSIFIER, "label": 0, "words": _WORDS[0], "embeddings": _WORDS[1], "top_k": 1},
    "apps.decode_classes": {"model": _CLASSIFIER, "words": _WORDS[0], "embeddings": _WORDS[1], "top_k": 1},
    "apps.keep_probability": {"label_epsilon": 1.0, "n_classes": 3},
    "apps.label_event": {"label_epsilon": 1.0, "n_classes": 3},
    "apps.randomize_labels": {"labels": _BITS, "n_classes": 2, "label_epsilon": 1.0, "rng": 0},
    "bitsum.bitsum_protocol": {"protocol": "rr", "owner": "fuzz"},
    "bitsum.rr_worst_case_delta_bound": {"n_users": 50, "flip_probability": 0.2, "epsilons": np.array([0.5, 1.0])},
    "bitsum.rr_worst_case_epsilon": {"n_users": 50, "flip_probability": 0.2, "delta": 1e-6},
    "bitsum.rr_worst_case_profile": {"n_users": 50, "flip_probability": 0.2},
    "distributed.build_race": {"family": LSH, "points": [_POINTS[:10], _POINTS[10:]]},
    "distributed.partial_view": {
        "protocol": RRBitSum(n_users=N, flip_probability=0.3, delta=1e-6),
        "users": [_BITS[:10], _BITS[10:]],
        "seeds": np.random.SeedSequence(0).spawn(2),
    },
    "distributed.run": {"protocol": RRBitSum(n_users=N, flip_probability=0.3, delta=1e-6), "users": [_BITS], "rng": 0},
    "distributed.sample_view": {"protocol": RRBitSum(n_users=N, flip_probability=0.3, delta=1e-6), "users": [_BITS], "rng": 0},
    "distributed.spawn_seeds": {"rng": 0, "count": 3},
    "datasets.embed_texts": {"texts": ["a dog"]},
    "datasets.load_vocabulary": {},
    "datasets.load_wordnet_glosses": {"split": "test"},
    "kde.feature_norm_bound": {"family": RFF},
    "kde.gaussian_kde_parameters": {"alpha": 0.1, "epsilon": 1.0, "delta": 1e-6},
    "kde.seed_composition_epsilon": {"epsilon0": 0.01, "sparsity": 1, "n_repetitions": 768, "delta_slack": 5e-7},
    "kde.seed_per_instance_epsilon": {"epsilon": 2.0, "sparsity": 1, "n_repetitions": 768, "delta_slack": 5e-7},
    "kde.sup_rmse_bound": {
        "bias": 0.0,
        "bound": 2**0.5,
        "sparsity": 1,
        "n_repetitions": 100,
        "instance_rmse": 0.0,
        "n_users": 10,
    },
    "kde.touched_per_repetition": {"family": RFF},
    "lsq.family_from_spec": {"spec": LSH.spec()},
    "lsq.fast_walsh_hadamard": {"values": np.arange(8.0)},
    "lsq.l2_lsh_collision_probability": {"distance": np.array([0.5, 1.0]), "bucket_width": 1.0},
    "lsq.next_power_of_two": {"value": 5},
    "lsq.srp_collision_probability": {"angle": np.array([0.5, 1.0]), "n_bits": 2},
    "shuffle.shuffle_messages": {"messages": MessageBatch(np.array([0, 1]), np.array([1, -1]), 2), "rng": 0},
    "sketches.anomaly_score": {"sketch": _SKETCH, "queries": _POINTS[:3]},
    "sketches.noise_scale": {"n_rows": 100, "epsilon": 2.0, "neighbouring": Neighbouring.ADD_REMOVE},
    "sums.analytic_blanket_epsilon": {"blanket_probability": 0.5, "delta": 1e-6, "size": 3.0, "n_users": 1000},
    "sums.analytic_blanket_probability": {"epsilon": 1.0, "delta": 1e-6, "size": 3.0, "n_users": 1000},
    "sums.blanket_profile": {"blanket_probability": 0.5, "n_values": 3, "n_users": 50},
    "sums.blanket_variance_bound": {"blanket_probability": 0.5, "precision": 2, "n_users": 100},
    "sums.conditional_rounding_l2_bound": {"radius": 10.0, "dimension": 4, "rejection_probability": math.exp(-2)},
    "sums.conditional_rounding_squared_bound": {"radius": 10.0, "dimension": 4, "rejection_probability": math.exp(-2)},
    "sums.default_share_count": {"security_bits": 40.0, "modulus": 2**46, "n_users": 10_000},
    "histograms.nonnegative": {"counts": np.array([3.5, -1.2, 0.0])},
    "histograms.consistent_with_total": {"counts": np.array([6.0, -2.0, 5.0]), "total": 10.0},
    "histograms.top_k": {"counts": np.array([3.0, 9.0, 5.0]), "k": 2},
    "histograms.count_sketch_table": {"items": [3, "three", b"five"], "seed": 0, "rows": 2, "width": 4},
    "sums.divisible_laplace_epsilon": {"share": 0.5, "ratio": 0.5, "sensitivity": 1},
    "sums.gkmps_parameters": {"epsilon": 1.0, "delta": 1e-6, "levels": 4},
    "sums.skellam_tail": {"mu": 50.0, "probability": 1e-6},
    "sums.supported_security_bits": {"n_shares": 12, "modulus": 2**46, "n_users": 10_000},
    "testing.assert_matches_pmf": {"samples": _SAMPLES, "support": np.arange(4), "pmf": np.full(4, 0.25)},
    "testing.assert_mean": {"samples": _SAMPLES, "expected": 1.5},
    "testing.assert_same_distribution": {"first": _SAMPLES, "second": _SAMPLES[::-1]},
    "testing.assert_variance": {"samples": _SAMPLES, "expected": 1.25},
    "testing.audit_privacy": {"mechanism": _coin, "dataset": 0, "neighbour": 1, "n_trials": 40, "rng": 0},
    "testing.audit_samples": {"first": _SAMPLES, "second": _SAMPLES[::-1]},
    "testing.clopper_pearson": {"successes": 50, "trials": 100, "alpha": 0.05},
    "testing.two_sided_z": {"alpha": 1e-6},
    "parties.protocol_classes": {},
    "parties.register_protocol": {"cls": RRBitSum},
    "serve.pack_records": {"records": [("alice", b"xy"), ("bob", b"")]},
    "serve.unpack_records": {"body": pack_records([("alice", b"xy")]), "max_upload_bytes": 10},
    "wire.canonical_encoding": {"value": {"b": [1, True, None], "a": 0.5}},
    "wire.fingerprint": {"value": {"protocol": "RRBitSum"}},
    "wire.pack_fields": {"fields": np.array([5, 2, 7]), "width": 3},
    "wire.packed_size": {"n_fields": 3, "width": 3},
    "wire.unpack_fields": {"payload": bytes.fromhex("ab80"), "count": 3, "width": 3},
}

#: Public functions whose documented errors include more than the library's own (name: exception types).
DOCUMENTED_ERRORS: dict[str, tuple[type[BaseException], ...]] = {
    # statistical assertions fail with AssertionError by design
    "testing.assert_matches_pmf": (AssertionError,),
    "testing.assert_mean": (AssertionError,),
    "testing.assert_same_distribution": (AssertionError,),
    "testing.assert_variance": (AssertionError,),
    # loaders: a path naming no file (documented under Raises)
    "datasets.load_vocabulary": (FileNotFoundError,),
    "datasets.load_wordnet_glosses": (FileNotFoundError,),
}

#: Parameters documented to accept ``inf`` (name: parameters).
INFINITY_ALLOWED: dict[str, tuple[str, ...]] = {
    "apps.keep_probability": ("label_epsilon",),  # inf: labels reported as they are
    "apps.label_event": ("label_epsilon",),
    "apps.randomize_labels": ("label_epsilon",),
}

#: Seeds: numpy accepts integers of any size (a SeedSequence's entropy), so ``10**400`` is valid there.
SEEDS = ("rng", "seed", "random_state")

#: Arguments that are the caller's data, not numbers: any value is valid (a dataset handed to the
#: caller's mechanism, outputs compared as hashable values, a class label matched against the classes).
OPAQUE: dict[str, tuple[str, ...]] = {
    "testing.audit_privacy": ("dataset", "neighbour"),
    "testing.audit_samples": ("first", "second"),
    "decode_class": ("label",),
    "apps.decode_class": ("label",),
}
