"""Run every black-box privacy audit and write the summary table to docs/audits.md.

Usage (from the repository root):

    python benchmarks/audit_summary.py            # writes docs/audits.md
    python benchmarks/audit_summary.py --print    # prints the page instead

Each row audits a protocol (and its negative control) with `privsum.testing.audit_samples` at
false-alarm rate 1e-6, on the cases of tests/testing/audit_cases.py, at their ``slow_trials``
runs per dataset (fast path) and, where the case has them, ``faithful_trials`` on the faithful path.
"""

from __future__ import annotations

import argparse
import platform
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.testing.audit_cases import ALPHA, AuditCase, all_cases  # noqa: E402

COMMAND = "python benchmarks/audit_summary.py"


def machine() -> str:
    import numpy as np

    cpu = platform.processor() or platform.machine()
    return f"{platform.system()} {platform.release()}, {cpu}, Python {platform.python_version()}, numpy {np.__version__}"


def audit_rows(case: AuditCase) -> list[str]:
    rows = []
    paths = [("fast", case.slow_trials)] + ([("faithful", case.faithful_trials)] if case.faithful_trials else [])
    for path, trials in paths:
        honest = case.audit(n_trials=trials, seed=1, path=path)
        control = case.audit(control=True, n_trials=trials, seed=1, path=path)
        claim = case.claimed
        verdict = "pass" if (not honest.refutes(claim.epsilon) and control.refutes(claim.epsilon)) else "**FAIL**"
        rows.append(
            f"| {case.name} | {claim.epsilon:.4g} | {claim.delta:.3g} | {claim.neighbouring.value} | {path} | {trials:,} "
            f"| {honest.epsilon_lower_bound:.3f} | {control.epsilon_lower_bound:.3f} | {verdict} |"
        )
    return rows


def page(rows: list[str], cases: list[AuditCase], seconds: float, peak_mib: float) -> str:
    header = [
        "# Privacy audits",
        "",
        "Black-box audits (`privsum.testing.audit_samples`, in the manner of DP-Sniper): each protocol runs many",
        "times on two neighbouring datasets; half of the runs choose an output event, the other half bound",
        "`Pr[M(X) in T]` from below and `Pr[M(X') in T]` from above with Clopper-Pearson intervals, giving",
        f"`epsilon >= log((p_low - delta) / q_high)` with confidence `1 - {ALPHA:g}` (both directions together).",
        "A lower bound above the claim would refute it. Every protocol's **negative control** is the same",
        "protocol with the noise of a much larger epsilon while the original claim is kept: the auditor must",
        "refute it. A lower bound is not a proof of privacy: it shows the claim survives this attack, on",
        "these neighbours, with this statistic.",
        "",
        "| protocol | claimed epsilon | delta | neighbouring | path | runs per dataset "
        "| lower bound (honest) | lower bound (control) | verdict |",
        "|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        "## What each audit looks at",
        "",
        "| protocol | neighbours | statistic of the view | fast path | negative control |",
        "|---|---|---|---|---|",
        *[f"| {c.name} | {c.neighbours} | {c.statistic} | {c.path} | {c.control} |" for c in cases],
        "",
        "Runs are drawn many at once where a protocol handles independent instances (each instance column",
        "holds the same dataset). The fast path is used where it is exact in law (the table says why); the",
        "faithful path (messages materialised and permuted) is audited as well where it is cheap enough.",
        "Multi-message sums (BBGN20): only the epsilon of the noisy-sum view is audited; the delta spent on",
        "the shares' statistical distance rests on the paper's theorem.",
        "",
        "The same audits run in the test suite: `tests/testing/test_audit_protocols.py` (default run with",
        "fewer runs; `pytest -m slow` for these sizes and the faithful path).",
        "",
        "## How this page was made",
        "",
        f"Command: `{COMMAND}` (from the repository root). Machine: {machine()}.",
        f"Wall time {seconds:.0f} s, peak memory {peak_mib:.0f} MiB.",
        "",
    ]
    return "\n".join(header)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--print", action="store_true", help="print the page instead of writing docs/audits.md")
    args = parser.parse_args()
    start = time.perf_counter()
    cases = all_cases()
    rows = []
    for case in cases:
        rows.extend(audit_rows(case))
        print(rows[-1], flush=True)
    seconds = time.perf_counter() - start
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    text = page(rows, cases, seconds, peak_mib)
    if args.print:
        print(text)
    else:
        (ROOT / "docs" / "audits.md").write_text(text)
        print(f"wrote docs/audits.md ({seconds:.0f} s, peak {peak_mib:.0f} MiB)")


if __name__ == "__main__":
    main()
