"""3NB inside the KDE: the communication-calibrated flooding by default wherever it is as accurate (RMSE within 1%)."""

from __future__ import annotations

import math

from privsum.bitsum import ThreeNBBitSum
from privsum.kde import ShuffledKDE
from privsum.lsq import RandomFourierFeatures

COMMON = {"protocol": ThreeNBBitSum, "epsilon": 2.0, "delta": 1e-6, "n_users": 1_000}


def _family() -> RandomFourierFeatures:
    return RandomFourierFeatures(dimension=3, n_repetitions=64, seed=0)


def test_default_takes_the_communication_flooding_when_within_one_percent():
    default = ShuffledKDE.from_privacy(family=_family(), **COMMON)
    paper = ShuffledKDE.from_privacy(family=_family(), **COMMON, protocol_options={"flooding": "paper"})
    communication = ShuffledKDE.from_privacy(
        family=_family(), **COMMON, protocol_options={"flooding": "communication", "variance_factor": 4.0}
    )
    within = math.sqrt(communication.bitsum.variance()) <= 1.01 * math.sqrt(paper.bitsum.variance())
    assert within  # at this setting (the measured gap is about 0.4%)
    assert default.bitsum == communication.bitsum
    assert default.bitsum.expected_messages_per_user < paper.bitsum.expected_messages_per_user / 4
    assert default.guarantee.epsilon <= 2.0 * (1 + 1e-9) and default.guarantee.delta <= 1e-6 * (1 + 1e-9)


def test_an_explicit_flooding_is_kept():
    paper = ShuffledKDE.from_privacy(family=_family(), **COMMON, protocol_options={"flooding": "paper"})
    analytic = ShuffledKDE.from_privacy(family=_family(), **COMMON, calibration="analytic")
    assert paper.bitsum.flooding_shape == analytic.bitsum.flooding_shape  # the paper's r' = 3(1 + log(1/delta0))
