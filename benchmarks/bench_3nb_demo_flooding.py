"""3NB in the demo's classifier: the paper's flooding against the communication flooding.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bench_3nb_demo_flooding.py [--epsilons 1 3 8] [--kernels gaussian ip]
        [--seeds 0 1 2] [--factors 4] [--skip-paper]

The demo's setting (`privsum.demo`): WordNet glosses, 3,000 training users per class (15 classes),
``I = 384`` repetitions, ``delta = 1e-6``, label round ``epsilon = 4``, ``accounting="tight"``.
For each kernel, epsilon and seed it trains `ShuffledKDEClassifier(protocol="3nb")` with
``flooding="paper"`` and with ``protocol_options={"flooding": "communication",
"variance_factor": f}`` for each factor ``f``, and prints the test accuracy, the expected
messages per user (label message included; the largest over classes) and the wall time of the
fit. The seed changes the label round, the public features and the simulated users' randomness
(``random_state``), not the training subsample (the demo's, seed 0). Then per setting the median
and range over seeds, and the messages ratio paper / communication.

The machine may be shared with other work: the load average is printed with every fit.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np

from privsum.apps import ShuffledKDEClassifier
from privsum.datasets import load_wordnet_glosses
from privsum.demo import _subsample


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 3.0, 8.0])
    parser.add_argument("--kernels", nargs="+", default=["gaussian", "ip"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--factors", type=float, nargs="+", default=[4.0])
    parser.add_argument("--skip-paper", action="store_true", help="train only the communication flooding")
    args = parser.parse_args()
    print(f"command: {' '.join([os.path.basename(sys.executable), *sys.argv])}")
    print(f"machine: {platform.node()} {platform.machine()} cpus={os.cpu_count()} python {platform.python_version()}")
    print(f"load average at start: {os.getloadavg()}")
    train, test = load_wordnet_glosses(split="train"), load_wordnet_glosses(split="test")
    rows = _subsample(train.labels, 3000, np.random.default_rng(0))
    names = np.asarray(train.class_names)
    X, y = train.embeddings[rows], names[train.labels[rows]]
    X_test, y_test = test.embeddings, names[test.labels]
    settings = ([] if args.skip_paper else [("paper", None)]) + [
        (f"communication x{factor:g}", {"flooding": "communication", "variance_factor": factor}) for factor in args.factors
    ]
    summary: dict[tuple[str, float, str], list[tuple[float, float]]] = {}
    for kernel in args.kernels:
        for epsilon in args.epsilons:
            for seed in args.seeds:
                for label, options in settings:
                    start = time.perf_counter()
                    model = ShuffledKDEClassifier(
                        classes=train.class_names,
                        kernel=kernel,
                        protocol="3nb",
                        epsilon=epsilon + 4.0,  # the KDE part at epsilon, the label round at 4 on top
                        label_budget_fraction=4.0 / (epsilon + 4.0),
                        delta=1e-6,
                        n_repetitions=384,
                        protocol_options=options,
                        random_state=seed,
                    ).fit(X, y)
                    accuracy = model.score(X_test, y_test)
                    messages = model.communication_["expected_messages_per_user"]
                    summary.setdefault((kernel, epsilon, label), []).append((accuracy, messages))
                    print(
                        f"{kernel:<8} eps={epsilon:g} seed={seed} {label:<18} accuracy={accuracy:.3f} "
                        f"messages/user={messages:,.0f} fit {time.perf_counter() - start:.1f} s load {os.getloadavg()[0]:.2f}",
                        flush=True,
                    )
    print("summary (median [min, max] over seeds):")
    for (kernel, epsilon, label), values in summary.items():
        accuracies = [a for a, _ in values]
        messages = statistics.median(m for _, m in values)
        paper = summary.get((kernel, epsilon, "paper"))
        ratio = f" (paper / this {statistics.median(m for _, m in paper) / messages:.1f}x)" if paper else ""
        print(
            f"{kernel:<8} eps={epsilon:g} {label:<18} accuracy {statistics.median(accuracies):.3f} "
            f"[{min(accuracies):.3f}, {max(accuracies):.3f}] messages/user {messages:,.0f}{ratio}"
        )


if __name__ == "__main__":
    main()
