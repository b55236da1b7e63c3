"""SkellamVectorSum on the classifier's demo setting: noise against the central analytic Gaussian, and costs.

Run: ``PYTHONPATH=. python benchmarks/bench_skellam.py [--repeats R] [--epsilons 1 3]``.

Setting: n = 3,000 users, d = 384, ``||x||_2 <= 1`` (random unit vectors), replace-one, delta = 1e-6.
For each epsilon it prints the calibrated parameters, the stated per-coordinate standard deviation
(`variance`), the analytic Gaussian's (Balle & Wang, L2 sensitivity 2) and their ratio, messages
per user and bits per message, the empirical standard deviation of the fast path's error over
``R`` runs (all coordinates pooled), and the wall time of `from_privacy` and of one fast run
(median and spread of the repeats, measured in this one run). The machine is shared: timings are
indicative only.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np

from privsum.accounting.gaussian import gaussian_sigma
from privsum.sums import SkellamVectorSum


def machine() -> str:
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    node = f"{platform.node()} {platform.machine()} cpus={os.cpu_count()}"
    return f"{node} load(1,5,15 min)={load} python={platform.python_version()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 3.0])
    arguments = parser.parse_args()
    print(f"machine: {machine()} (shared machine: other jobs may be running)")
    print(f"command: {' '.join([sys.executable, *sys.argv])}")
    n, d, delta = 3_000, 384, 1e-6
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    truth = x.sum(axis=0)
    header = "eps | guarantee | scale | mu | m | log2 q | sd stated | sd empirical | Gaussian sd | ratio | msgs/user | bits/msg"
    print(header)
    for epsilon in arguments.epsilons:
        start = time.perf_counter()
        protocol = SkellamVectorSum.from_privacy(epsilon=epsilon, delta=delta, n_users=n, dimension=d, norm_bound=1.0)
        calibration_s = time.perf_counter() - start
        errors, run_s = [], []
        for seed in range(arguments.repeats):
            start = time.perf_counter()
            errors.append(protocol.run(x, rng=seed) - truth)
            run_s.append(time.perf_counter() - start)
        stated = float(np.sqrt(protocol.variance()))
        central = gaussian_sigma(epsilon, delta, sensitivity=2.0)
        print(
            f"{epsilon:g} | {protocol.guarantee} | {protocol.scale:g} | {protocol.noise_mu:.6g} | {protocol.n_shares} | "
            f"{np.log2(protocol.modulus):.0f} | {stated:.3f} | {np.std(errors):.3f} | {central:.3f} | {stated / central:.3f} | "
            f"{protocol.expected_messages_per_user:.0f} | {protocol.bits_per_message()}"
        )
        print(
            f"    from_privacy {calibration_s * 1e3:.0f} ms; fast run median {np.median(run_s) * 1e3:.0f} ms "
            f"(min {min(run_s) * 1e3:.0f}, max {max(run_s) * 1e3:.0f}) over {arguments.repeats} runs"
        )


if __name__ == "__main__":
    main()
