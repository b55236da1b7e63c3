"""The shared privacy accountant: guarantees, events, composition, exact profiles, PLDs.

Usable on its own; knows nothing about protocols.
"""

from privsum.accounting.accountant import COMPOSITION_METHODS, LedgerEntry, PrivacyAccountant
from privsum.accounting.amplification import (
    shuffle_amplification,
    shuffle_amplification_closed_form,
    shuffle_amplification_delta,
    shuffle_amplification_profile,
)
from privsum.accounting.calibration import calibrate
from privsum.accounting.composition import (
    advanced_composition,
    advanced_composition_epsilon,
    basic_composition,
    parallel_composition,
    pure_composition,
    repeated_composition,
    zero_out_to_replace_one,
)
from privsum.accounting.events import (
    ComposedEvent,
    DiscreteGaussianEvent,
    GuaranteeEvent,
    ParallelEvent,
    PrivacyEvent,
    ProfileEvent,
    RelationEvent,
)
from privsum.accounting.gaussian import GaussianEvent, gaussian_delta, gaussian_epsilon, gaussian_sigma
from privsum.accounting.guarantee import Neighbouring, PrivacyGuarantee, ThreatModel
from privsum.accounting.homogeneous import optimal_composition, optimal_composition_delta, optimal_composition_floor
from privsum.accounting.pld import DEFAULT_DISCRETIZATION, PLDPair
from privsum.accounting.profile import PrivacyProfile, WorstCaseProfile, randomized_response_profile
from privsum.accounting.skellam import RDP_ORDERS, SkellamEvent, rdp_delta, rdp_epsilon, skellam_rdp

__all__ = [
    "COMPOSITION_METHODS",
    "DEFAULT_DISCRETIZATION",
    "RDP_ORDERS",
    "ComposedEvent",
    "DiscreteGaussianEvent",
    "GaussianEvent",
    "GuaranteeEvent",
    "LedgerEntry",
    "Neighbouring",
    "PLDPair",
    "ParallelEvent",
    "PrivacyAccountant",
    "PrivacyEvent",
    "PrivacyGuarantee",
    "PrivacyProfile",
    "ProfileEvent",
    "RelationEvent",
    "SkellamEvent",
    "ThreatModel",
    "WorstCaseProfile",
    "advanced_composition",
    "advanced_composition_epsilon",
    "basic_composition",
    "calibrate",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_sigma",
    "optimal_composition",
    "optimal_composition_delta",
    "optimal_composition_floor",
    "parallel_composition",
    "pure_composition",
    "randomized_response_profile",
    "rdp_delta",
    "rdp_epsilon",
    "repeated_composition",
    "shuffle_amplification",
    "shuffle_amplification_closed_form",
    "shuffle_amplification_delta",
    "shuffle_amplification_profile",
    "skellam_rdp",
    "zero_out_to_replace_one",
]
