"""privsum: statistics from end users under shuffle-model differential privacy.

The public names most users need are importable from here; each subpackage
(`privsum.accounting`, `privsum.shuffle`, ...) can also be used on its own.
"""

from privsum.accounting import (
    GuaranteeEvent,
    Neighbouring,
    PrivacyAccountant,
    PrivacyGuarantee,
    PrivacyProfile,
    ProfileEvent,
    ThreatModel,
)
from privsum.exceptions import (
    BudgetExceededError,
    IncompatibleSketchError,
    InvalidParameterError,
    PrivacyLeakWarning,
)
from privsum.shuffle import MessageBatch, MessageHistogram, ShuffleProtocol

__version__ = "0.1.0"

__all__ = [
    "BudgetExceededError",
    "GuaranteeEvent",
    "IncompatibleSketchError",
    "InvalidParameterError",
    "MessageBatch",
    "MessageHistogram",
    "Neighbouring",
    "PrivacyAccountant",
    "PrivacyGuarantee",
    "PrivacyLeakWarning",
    "PrivacyProfile",
    "ProfileEvent",
    "ShuffleProtocol",
    "ThreatModel",
    "__version__",
]
