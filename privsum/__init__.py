"""privsum: statistics from end users under shuffle-model differential privacy.

The public names most users need are importable from here; each subpackage
(`privsum.accounting`, `privsum.shuffle`, ...) can also be used on its own.

Names are imported on first use (PEP 562 module ``__getattr__``), so ``import privsum`` stays
light: the heavy dependencies (dp-accounting, scipy.stats, scipy.signal, scikit-learn, OpenDP,
Dask) load only when a name that needs them is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Public name -> module defining it; imported by `__getattr__` on first access.
_EXPORTS = {
    "BlanketRealSum": "privsum.sums",
    "BudgetExceededError": "privsum.exceptions",
    "CentralGaussianBitSum": "privsum.bitsum",
    "CentralLaplaceBitSum": "privsum.bitsum",
    "ClippedSum": "privsum.clipping",
    "CorrelatedNoiseSum": "privsum.sums",
    "decode_class": "privsum.apps",
    "DeltaFloorWarning": "privsum.exceptions",
    "ExactBitSum": "privsum.bitsum",
    "GuaranteeEvent": "privsum.accounting",
    "IncompatibleSketchError": "privsum.exceptions",
    "InvalidParameterError": "privsum.exceptions",
    "KDEFunction": "privsum.kde",
    "KernelScaleWarning": "privsum.exceptions",
    "L2LSH": "privsum.lsq",
    "LocalRRBitSum": "privsum.bitsum",
    "MessageBatch": "privsum.shuffle",
    "MessageHistogram": "privsum.shuffle",
    "MultiMessageSum": "privsum.sums",
    "Neighbouring": "privsum.accounting",
    "NotFittedError": "privsum.exceptions",
    "PrivacyAccountant": "privsum.accounting",
    "PrivacyGuarantee": "privsum.accounting",
    "PrivacyLeakWarning": "privsum.exceptions",
    "PrivacyProfile": "privsum.accounting",
    "ProfileEvent": "privsum.accounting",
    "PureBitSum": "privsum.bitsum",
    "RACE": "privsum.sketches",
    "RandomFourierFeatures": "privsum.lsq",
    "RandomSigns": "privsum.lsq",
    "ReleasedRACE": "privsum.sketches",
    "RRBitSum": "privsum.bitsum",
    "secure_generator": "privsum._random",
    "ShuffledKDE": "privsum.kde",
    "ShuffledKDEClassifier": "privsum.apps",
    "ShuffledVectorSum": "privsum.sums",
    "ShuffleProtocol": "privsum.shuffle",
    "SignedRandomProjection": "privsum.lsq",
    "ThreatModel": "privsum.accounting",
    "ThreeNBBitSum": "privsum.bitsum",
}

#: Subpackages reachable as attributes (``privsum.bitsum``) without importing them explicitly.
_SUBPACKAGES = (
    "accounting",
    "apps",
    "bitsum",
    "clipping",
    "datasets",
    "distributed",
    "histograms",
    "kde",
    "lsq",
    "means",
    "shuffle",
    "sketches",
    "sums",
    "testing",
)

if TYPE_CHECKING:  # pragma: no cover - static analysers and IDEs see the eager imports
    from privsum._random import (
        secure_generator,
    )
    from privsum.accounting import (
        GuaranteeEvent,
        Neighbouring,
        PrivacyAccountant,
        PrivacyGuarantee,
        PrivacyProfile,
        ProfileEvent,
        ThreatModel,
    )
    from privsum.apps import (
        ShuffledKDEClassifier,
        decode_class,
    )
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
        ClippedSum,
    )
    from privsum.exceptions import (
        BudgetExceededError,
        DeltaFloorWarning,
        IncompatibleSketchError,
        InvalidParameterError,
        KernelScaleWarning,
        NotFittedError,
        PrivacyLeakWarning,
    )
    from privsum.kde import (
        KDEFunction,
        ShuffledKDE,
    )
    from privsum.lsq import (
        L2LSH,
        RandomFourierFeatures,
        RandomSigns,
        SignedRandomProjection,
    )
    from privsum.shuffle import (
        MessageBatch,
        MessageHistogram,
        ShuffleProtocol,
    )
    from privsum.sketches import (
        RACE,
        ReleasedRACE,
    )
    from privsum.sums import (
        BlanketRealSum,
        CorrelatedNoiseSum,
        MultiMessageSum,
        ShuffledVectorSum,
    )

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
    "KernelScaleWarning",
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


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    elif name in _SUBPACKAGES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | set(_SUBPACKAGES))
