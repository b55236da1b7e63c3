"""Shuffle-model summation on real data: four protocols and the central Laplace sum versus epsilon.

Run with ``python examples/sums_on_wordnet.py`` (about 90 s on two cores); ``--help``
lists the sizes. Each of the 33,437 bundled WordNet glosses (`privsum.datasets.load_wordnet_glosses`,
``split="all"``) is one user.

* **Scalar data: the length of the user's gloss in words**, clipped at the public bound
  ``--domain`` (default 32 words; about 1% of the glosses are longer, and the example says how
  many). The target is the total clipped length.

  - `CorrelatedNoiseSum` (GKMPS21) on the integers ``{0..32}``, with every level
    (``levels = domain``, no rounding) and with ``levels = 4`` (random rounding, fewer messages);
    analytic calibration (the paper's constants).
  - `MultiMessageSum` (BBGN20) on the integers ``{0..32}``.
  - `BlanketRealSum` (BBGN19) on ``length / 32`` in ``[0, 1]``, tight calibration; its
    estimate is multiplied back by 32.
  - Central reference: the exact sum plus OpenDP's discrete Laplace of scale ``32/epsilon``
    (a trusted curator; pure epsilon-DP for replace-one).

* **Vector data: the first ``--dimension`` (default 4) coordinates of each gloss's unit-norm
  embedding**, mapped to ``(1 + x)/2`` in ``[0, 1]`` (unit norm bounds every coordinate by 1,
  so nothing is clipped). `ShuffledVectorSum` (Scott, Cormode & Maple, "Applying the Shuffle Model of
  Differential Privacy to Vector Aggregation", BICOD 2021, one sampled coordinate per user, tight
  calibration) against OpenDP's Laplace of scale ``d/epsilon`` per coordinate (replace-one L1
  sensitivity ``d``).

Every shuffle protocol is ``(epsilon, delta)``-DP for replace-one neighbours with a trusted
shuffler (``delta = --delta``); the central sums are ``(epsilon, 0)``-DP. The relative error is
``|estimate - sum| / sum`` (the Euclidean norms for vectors), averaged over ``--trials`` runs;
shuffle protocols run their exact fast path with seeded noise, OpenDP draws from the OS.
Messages per user is each protocol's ``expected_messages_per_user``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from privsum.datasets import load_wordnet_glosses
from privsum.sums import BlanketRealSum, CorrelatedNoiseSum, MultiMessageSum, ShuffledVectorSum

DEFAULT_EPSILONS = (0.1, 0.3, 1.0, 3.0)
SUBSAMPLE_SEED = 0


@dataclass(frozen=True)
class Result:
    """One protocol at one epsilon."""

    data: str
    protocol: str
    epsilon: float
    relative_error: float
    messages_per_user: float | None  # None: central (no messages)


def machine_description() -> str:
    """CPU, core count, OS and library versions (no host name)."""
    processor = platform.processor() or platform.machine()
    system = f"{platform.system()} {platform.release()}"
    return f"{processor}, {os.cpu_count()} cpus, {system}, python {platform.python_version()}, numpy {np.__version__}"


def gloss_lengths(texts: Sequence[str]) -> np.ndarray:
    """Words per gloss (whitespace-separated tokens)."""
    return np.array([len(text.split()) for text in texts], dtype=np.int64)


def central_integer_sum(domain: int) -> Callable[[float], Callable[[int], int]]:
    """For each epsilon, OpenDP's discrete Laplace mechanism on an integer sum of sensitivity ``domain``."""
    import opendp.prelude as dp

    dp.enable_features("contrib")  # OpenDP gates its non-vetted constructors behind this flag

    def at(epsilon: float) -> Callable[[int], int]:
        measurement = dp.m.make_laplace(dp.atom_domain(T=dp.i64), dp.absolute_distance(T=dp.i64), scale=domain / epsilon)
        if not measurement.map(domain) <= epsilon * (1 + 1e-9):
            raise RuntimeError("OpenDP's privacy map disagrees with the scale domain/epsilon")
        return measurement

    return at


def central_vector_sum(dimension: int) -> Callable[[float], Callable[[list[float]], list[float]]]:
    """For each epsilon, OpenDP's Laplace mechanism on a vector sum of L1 sensitivity ``dimension``."""
    import opendp.prelude as dp

    dp.enable_features("contrib")

    def at(epsilon: float) -> Callable[[list[float]], list[float]]:
        domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
        measurement = dp.m.make_laplace(domain, dp.l1_distance(T=float), scale=dimension / epsilon)
        if not measurement.map(float(dimension)) <= epsilon * (1 + 1e-9):
            raise RuntimeError("OpenDP's privacy map disagrees with the scale dimension/epsilon")
        return measurement

    return at


def mean_relative_error(estimates: Sequence[np.ndarray], truth: np.ndarray) -> float:
    truth = np.atleast_1d(np.asarray(truth, dtype=float))
    return float(np.mean([np.linalg.norm(np.atleast_1d(e) - truth) / np.linalg.norm(truth) for e in estimates]))


def scalar_results(lengths: np.ndarray, domain: int, epsilon: float, delta: float, trials: int, rng: np.random.Generator):
    """The four scalar protocols and the central discrete Laplace at one epsilon."""
    n_users, truth = lengths.size, lengths.sum()
    protocols = {
        f"CorrelatedNoiseSum (levels={domain})": CorrelatedNoiseSum.from_privacy(
            epsilon=epsilon, delta=delta, n_users=n_users, domain=domain
        ),
        "CorrelatedNoiseSum (levels=4)": CorrelatedNoiseSum.from_privacy(
            epsilon=epsilon, delta=delta, n_users=n_users, domain=domain, levels=min(4, domain)
        ),
        "MultiMessageSum": MultiMessageSum.from_privacy(epsilon=epsilon, delta=delta, n_users=n_users, domain=domain),
    }
    results = []
    for name, protocol in protocols.items():
        estimates = [protocol.run(lengths, rng=rng)[0] for _ in range(trials)]
        results.append(
            Result("length", name, epsilon, mean_relative_error(estimates, truth), protocol.expected_messages_per_user)
        )
    blanket = BlanketRealSum.from_privacy(epsilon=epsilon, delta=delta, n_users=n_users)
    scaled = lengths / domain  # in [0, 1] by the public bound
    estimates = [domain * blanket.run(scaled, rng=rng)[0] for _ in range(trials)]
    results.append(
        Result("length", "BlanketRealSum", epsilon, mean_relative_error(estimates, truth), blanket.expected_messages_per_user)
    )
    mechanism = central_integer_sum(domain)(epsilon)
    estimates = [float(mechanism(int(truth))) for _ in range(trials)]
    results.append(Result("length", "central discrete Laplace", epsilon, mean_relative_error(estimates, truth), None))
    return results


def vector_results(vectors: np.ndarray, epsilon: float, delta: float, trials: int, rng: np.random.Generator):
    """`ShuffledVectorSum` and the central Laplace on the vector sum at one epsilon."""
    n_users, dimension = vectors.shape
    truth = vectors.sum(axis=0)
    protocol = ShuffledVectorSum.from_privacy(epsilon=epsilon, delta=delta, n_users=n_users, dimension=dimension)
    estimates = [protocol.run(vectors, rng=rng) for _ in range(trials)]
    shuffled = Result(
        "embedding", "ShuffledVectorSum", epsilon, mean_relative_error(estimates, truth), protocol.expected_messages_per_user
    )
    mechanism = central_vector_sum(dimension)(epsilon)
    estimates = [np.asarray(mechanism(truth.tolist())) for _ in range(trials)]
    return [shuffled, Result("embedding", "central Laplace", epsilon, mean_relative_error(estimates, truth), None)]


def format_tables(results: Sequence[Result], epsilons: Sequence[float]) -> str:
    """Two tables, protocol by epsilon: mean relative error, and expected messages per user."""
    names = list(dict.fromkeys((r.data, r.protocol) for r in results))
    cell = {(r.data, r.protocol, r.epsilon): r for r in results}
    width = max(len(f"{d}: {p}") for d, p in names) + 1
    header = f"{'':<{width}}" + "".join(f"{f'eps={e:g}':>11}" for e in epsilons)
    lines = ["mean relative error", header]
    for data, protocol in names:
        values = "".join(f"{cell[data, protocol, e].relative_error:>11.2e}" for e in epsilons)
        lines.append(f"{f'{data}: {protocol}':<{width}}" + values)
    lines += ["", "expected messages per user", header]
    for data, protocol in names:
        counts = [cell[data, protocol, e].messages_per_user for e in epsilons]
        values = "".join(f"{'-':>11}" if c is None else f"{c:>11.4g}" for c in counts)
        lines.append(f"{f'{data}: {protocol}':<{width}}" + values)
    return "\n".join(lines)


def save_plot(results: Sequence[Result], path: str) -> bool:
    """Relative error and messages per user versus epsilon; returns False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    figure, (error_axes, message_axes) = plt.subplots(1, 2, figsize=(11, 4.2))
    for index, (data, protocol) in enumerate(dict.fromkeys((r.data, r.protocol) for r in results)):
        mine = [r for r in results if (r.data, r.protocol) == (data, protocol)]
        epsilons = [r.epsilon for r in mine]
        style = "--" if protocol.startswith("central") else "-"
        marker = "os^vDx*"[index % 7]
        label = f"{data}: {protocol}"
        error_axes.loglog(epsilons, [r.relative_error for r in mine], style, marker=marker, label=label)
        if mine[0].messages_per_user is not None:
            message_axes.loglog(epsilons, [r.messages_per_user for r in mine], style, marker=marker, label=label)
    error_axes.set(xlabel="epsilon", ylabel="mean relative error", title="Sums over 33,437 WordNet glosses")
    message_axes.set(xlabel="epsilon", ylabel="expected messages per user", title="Communication")
    error_axes.legend(fontsize="x-small")
    message_axes.legend(fontsize="x-small")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return True


def main(
    *,
    epsilons: Sequence[float] = DEFAULT_EPSILONS,
    delta: float = 1e-6,
    users: int | None = None,
    domain: int = 32,
    dimension: int = 4,
    trials: int = 50,
    seed: int = 0,
    plot: str | None = "sums_on_wordnet.png",
) -> list[Result]:
    """Run the comparison, print the tables, save the plot; returns every result.

    Args:
        epsilons: privacy parameters compared.
        delta: the shuffle protocols' delta (replace-one).
        users: glosses used (``None``: all 33,437), a seeded subsample.
        domain: public bound on a gloss's length in words (longer glosses are clipped to it).
        dimension: embedding coordinates summed by the vector protocols.
        trials: runs averaged per protocol and epsilon.
        seed: seed of the shuffle protocols' randomness.
        plot: PNG path, or ``None`` for no plot.
    """
    started = time.perf_counter()
    data = load_wordnet_glosses(split="all")
    rows = np.arange(data.n_examples)
    if users is not None and users < data.n_examples:
        rows = np.sort(np.random.default_rng(SUBSAMPLE_SEED).choice(data.n_examples, size=users, replace=False))
    raw_lengths = gloss_lengths([data.texts[i] for i in rows])
    lengths = np.minimum(raw_lengths, domain)
    vectors = (1.0 + np.asarray(data.embeddings[rows, :dimension], dtype=float)) / 2.0
    print(f"machine: {machine_description()}")
    print(
        f"users: {rows.size} WordNet glosses; gloss length in words clipped at {domain} "
        f"({np.count_nonzero(raw_lengths > domain)} glosses clipped), mean {lengths.mean():.2f}, sum {lengths.sum()}"
    )
    print(f"vectors: embedding coordinates 1..{dimension} mapped to (1 + x)/2 in [0, 1]")
    print(
        f"privacy: replace-one; shuffle protocols (epsilon, {delta:g}), central sums (epsilon, 0); {trials} trials, seed {seed}\n"
    )
    rng = np.random.default_rng(seed)
    results = []
    for epsilon in epsilons:
        results += scalar_results(lengths, domain, epsilon, delta, trials, rng)
        results += vector_results(vectors, epsilon, delta, trials, rng)
    print(format_tables(results, epsilons))
    if plot is not None:
        print(f"\nplot: {plot}" if save_plot(results, plot) else "\nplot: skipped (matplotlib is not installed)")
    print(f"elapsed: {time.perf_counter() - started:.1f} s")
    return results


def parse_arguments(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(DEFAULT_EPSILONS))
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--users", type=int, default=None, help="glosses used (default: all 33,437)")
    parser.add_argument("--domain", type=int, default=32, help="public bound on gloss length in words")
    parser.add_argument("--dimension", type=int, default=4, help="embedding coordinates in the vector sum")
    parser.add_argument("--trials", type=int, default=50, help="runs averaged per protocol and epsilon")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot", default="sums_on_wordnet.png", help="PNG path ('' for none)")
    arguments = vars(parser.parse_args(argv))
    arguments["plot"] = arguments["plot"] or None
    return arguments


if __name__ == "__main__":
    print(f"command: python {' '.join(sys.argv)}")
    main(**parse_arguments())
