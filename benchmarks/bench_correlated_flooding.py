"""Correlated-noise sum (GKMPS21): the paper's flooding against the communication flooding certified at any level.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bench_correlated_flooding.py [--users 50000] [--domains 100 1024] [--repeats 3]

For each domain ``Delta`` (``levels = Delta``, no rounding), target ``(epsilon, delta)`` per sum,
replace-one: the default ``CorrelatedNoiseSum.from_privacy`` (``calibration="analytic"``, the
paper's flooding: its guarantee is the paper's claim, checkable only up to 8 levels) and
``calibration="tight", flooding="communication"`` (the fewest expected messages per user among
the searched floodings whose certified delta, `CorrelatedNoiseSum.certified_delta`, meets the
target, with central-noise variance at most ``variance_factor`` times the paper's). Printed:
expected messages per user, the noise variance and its ratio to the paper's, the flooding's
parameters, the headline (certified) epsilon and the certified delta at the target epsilon, and
the uncached calibration time (median and spread of the repeats; the calibration cache is
cleared before each). The machine may be shared with other work: the load average is printed
with every timing.
"""

from __future__ import annotations

import argparse
import math
import os

from bench_timing import print_header, spread, uncached_times

from privsum.sums import CorrelatedNoiseSum
from privsum.sums._correlated_flooding import shift_structure


def _kappa(protocol: CorrelatedNoiseSum) -> float:
    """The flooding's scale: the pairs' standard deviation over the largest central shift they hide."""
    shape, ratio = protocol.pair_shape, protocol.pair_ratio
    return math.sqrt(shape * ratio) / (1.0 - ratio) / shift_structure(protocol.levels).central_shift


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=50_000)
    parser.add_argument("--domains", type=int, nargs="+", default=[100, 1024])
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--variance-factor", type=float, default=1.1)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print_header()
    print(f"setting: n={args.users} target ({args.epsilon}, {args.delta}) per sum, replace-one, levels = domain")
    common = {"epsilon": args.epsilon, "delta": args.delta, "n_users": args.users}
    for domain in args.domains:
        paper = CorrelatedNoiseSum.from_privacy(**common, domain=domain)
        print(
            f"domain {domain:>5} paper flooding (analytic, claimed): messages/user={paper.expected_messages_per_user:.1f} "
            f"variance={paper.variance():.4g} epsilon={paper.epsilon:g} (not checkable above 8 levels)",
            flush=True,
        )
        calibrated, times = uncached_times(
            lambda domain=domain: CorrelatedNoiseSum.from_privacy(
                **common,
                domain=domain,
                calibration="tight",
                flooding="communication",
                variance_factor=args.variance_factor,
            ),
            args.repeats,
        )
        ratio = calibrated.variance() / paper.variance()
        fewer = paper.expected_messages_per_user / calibrated.expected_messages_per_user
        print(
            f"domain {domain:>5} communication flooding (certified): messages/user={calibrated.expected_messages_per_user:.2f} "
            f"({fewer:.0f}x fewer) variance={calibrated.variance():.4g} variance/paper={ratio:.4f} "
            f"shape={calibrated.pair_shape:g} kappa={_kappa(calibrated):.1f} certified epsilon={calibrated.epsilon:.4f} "
            f"certified delta at {args.epsilon:g}={calibrated.certified_delta(args.epsilon):.3g} "
            f"calibration {spread(times, 1)} load {os.getloadavg()[0]:.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
