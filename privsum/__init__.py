"""privsum: statistics from end users under shuffle-model differential privacy.

The public names most users need are importable from here; each subpackage
(`privsum.accounting`, `privsum.shuffle`, ...) can also be used on its own.
"""

from privsum._random import secure_generator
from privsum.accounting import (
    GuaranteeEvent,
    Neighbouring,
    PrivacyAccountant,
    PrivacyGuarantee,
    PrivacyProfile,
    ProfileEvent,
    ThreatModel,
)
from privsum.apps import ShuffledKDEClassifier, decode_class
from privsum.bitsum import (
    CentralGaussianBitSum,
    CentralLaplaceBitSum,
    ExactBitSum,
    LocalRRBitSum,
    PureBitSum,
    RRBitSum,
    ThreeNBBitSum,
)
from privsum.exceptions import (
    BudgetExceededError,
    DeltaFloorWarning,
    IncompatibleSketchError,
    InvalidParameterError,
    NotFittedError,
    PrivacyLeakWarning,
)
from privsum.kde import KDEFunction, ShuffledKDE
from privsum.lsq import L2LSH, RandomFourierFeatures, RandomSigns, SignedRandomProjection
from privsum.shuffle import MessageBatch, MessageHistogram, ShuffleProtocol
from privsum.sketches import RACE, ReleasedRACE
from privsum.sums import BlanketRealSum, ClippedSum, CorrelatedNoiseSum, MultiMessageSum, ShuffledVectorSum

__version__ = "0.1.0"

__all__ = [
    "L2LSH",
    "RACE",
    "BlanketRealSum",
    "BudgetExceededError",
    "CentralGaussianBitSum",
    "CentralLaplaceBitSum",
    "ClippedSum",
    "CorrelatedNoiseSum",
    "DeltaFloorWarning",
    "ExactBitSum",
    "GuaranteeEvent",
    "IncompatibleSketchError",
    "InvalidParameterError",
    "KDEFunction",
    "LocalRRBitSum",
    "MessageBatch",
    "MessageHistogram",
    "MultiMessageSum",
    "Neighbouring",
    "NotFittedError",
    "PrivacyAccountant",
    "PrivacyGuarantee",
    "PrivacyLeakWarning",
    "PrivacyProfile",
    "ProfileEvent",
    "PureBitSum",
    "RRBitSum",
    "RandomFourierFeatures",
    "RandomSigns",
    "ReleasedRACE",
    "ShuffleProtocol",
    "ShuffledKDE",
    "ShuffledKDEClassifier",
    "ShuffledVectorSum",
    "SignedRandomProjection",
    "ThreatModel",
    "ThreeNBBitSum",
    "__version__",
    "decode_class",
    "secure_generator",
]
