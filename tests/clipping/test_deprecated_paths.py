"""The clipped sums' old paths under `privsum.sums` keep working for one release, each warning once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_SCRIPT = """
import json, sys, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    import privsum.sums
    eager = "privsum.clipping" in sys.modules
    first = privsum.sums.ClippedSum
    second = privsum.sums.ClippedSum
    from privsum.sums.clipped import ClippedSum as module_path
    from privsum.sums.clipped import ClippedSum as again
    from privsum.sums.clipped_vector import CompositionEvent, SparseVectorAggregation
    from privsum.sums.clipped_shares import SparseMultiMessageSum
from privsum.accounting.budget import ComposedEventWithHeadline as new_event
from privsum.clipping import ClippedSum, SparseVectorAggregation as new_sparse
from privsum.sums.sparse_shares import SparseMultiMessageSum as new_shares
print(json.dumps({
    "eager": eager,
    "same": first is second is module_path is again is ClippedSum,
    "others": CompositionEvent is new_event and SparseVectorAggregation is new_sparse and SparseMultiMessageSum is new_shares,
    "messages": [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)],
}))
"""


def test_old_paths_work_warn_once_each_and_load_nothing_eagerly():
    done = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, cwd=ROOT, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert not result["eager"], "importing privsum.sums must not import privsum.clipping"
    assert result["same"] and result["others"]
    messages = result["messages"]
    assert len(messages) == 4, messages  # the name once, and each of the three old modules once
    assert sum("privsum.sums.ClippedSum" in m for m in messages) == 1
    for old in ("clipped", "clipped_vector", "clipped_shares"):
        assert sum(m.startswith(f"privsum.sums.{old} has moved") for m in messages) == 1, messages


def test_renamed_names_warn_and_resolve():
    import pytest

    from privsum.accounting import budget
    from privsum.bitsum.central import CURATED_BITSUMS

    with pytest.warns(DeprecationWarning, match="ComposedEventWithHeadline"):
        assert budget.__getattr__("CompositionEvent") is budget.ComposedEventWithHeadline
    import privsum.kde

    with pytest.warns(DeprecationWarning, match="privsum.bitsum.central.CURATED_BITSUMS"):
        assert privsum.kde.__getattr__("CURATED_BITSUMS") is CURATED_BITSUMS
    assert all(cls.curated for cls in CURATED_BITSUMS)
