"""The Dask example of docs/scale.md runs when saved as a script (small size, local cluster of 2 workers)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "scale.md"


def dask_example() -> str:
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("## Distributed runs on Dask") :]
    return re.search(r"^```python\n(.*?)^```", section, re.MULTILINE | re.DOTALL).group(1)


def test_example_is_a_guarded_script():
    source = dask_example()
    assert 'if __name__ == "__main__":' in source and "LocalCluster" in source


@pytest.mark.slow
def test_example_runs_as_a_script(tmp_path):
    script = tmp_path / "count_on_dask.py"
    script.write_text(dask_example(), encoding="utf-8")
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, str(script), "20000", "2"], cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=400
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.strip().splitlines()
    assert lines[0] == "20,000 users x 100 counts on 2 workers; guarantee per count: (1, 1e-06)-DP, replace-one", lines
    match = re.fullmatch(r"largest error ([\d.]+); (\d+)% of the 95% intervals contain the true count", lines[1])
    assert match, lines
    assert int(match.group(2)) >= 82  # 100 independent intervals at (at least) 95%: at most 81 covered has probability < 1e-6
