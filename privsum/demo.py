"""The main job: the shuffled-DP KDE classifier and class decoder on the bundled WordNet data.

Run ``python -m privsum demo`` (``--help`` for options). Trains the private classifier with the
RR, 3NB and Pure bit sums and both kernels at a few total epsilons (and RR under Wagner (ICLR
2025)'s looser accounting, for comparison), and with the shuffled vector sum (inner-product
kernel; labels in the clear, through the label round, or inside one joint sum); prints test
accuracy and messages per user next to the non-private baselines (Algorithm 1's rounded features
and the exact centroid) and the best central-DP baseline (the Gaussian mechanism on each class's
feature sum), the guarantee of each run and decoded words for a few classes. It writes
``accuracy_vs_epsilon.csv``, ``accuracy_vs_epsilon.svg`` and ``.png`` and ``run.json`` (the
settings, the machine, wall time and peak memory, the decoded words) in the output folder;
``scripts/readme_figures.py`` builds the README's tables and figures from them.

Each row's epsilon is the total of one fit for each user's (point, label) (the label round takes
``label_budget_fraction`` of it), except for rows with labels in the clear, where it is the KDE
part's and the labels are public.

References:
    Wagner, "Learning from End User Data with Shuffled Differential Privacy over Kernel
    Densities", ICLR 2025.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from privsum._plotting import MISSING_MATPLOTLIB, pyplot_or_none
from privsum.apps import PROTOCOLS, ShuffledKDEClassifier, decode_classes
from privsum.datasets import load_vocabulary, load_wordnet_glosses

__all__ = ["COMMAND_HELP", "add_arguments", "main", "run", "run_demo"]

COMMAND_HELP = "the main job: the shuffled-DP KDE classifier on the bundled WordNet glosses (README: The main job)"
PRIVATE_PROTOCOLS = ("rr", "3nb", "pure")
SEED_ACCOUNTING_LABEL = "rr-seed"  # RR calibrated by Wagner's Theorem 3.2 instead of the tight (PLD) accounting
EXACT_CENTROID_LABEL = "exact-centroid"  # the non-private nearest-centroid classifier (exact feature sums)
#: The share of each total epsilon spent on the label round (``label_budget_fraction``).
LABEL_BUDGET_FRACTION = 0.5
#: ``protocol_options`` of the bit-sum rows: 3NB's flooding calibrated for the fewest messages
#: (`privsum.bitsum.ThreeNBBitSum.from_privacy`); the tight composition search buys the variance
#: allowance back (``benchmarks/bench_3nb_demo_flooding.py`` compares it with the paper's flooding).
PROTOCOL_OPTIONS = {"3nb": {"flooding": "communication", "variance_factor": 4.0}}
#: Vector-sum rows (inner-product kernel): (row name, classifier protocol, how labels are treated,
#: every epsilon or only the first). The joint row runs at the first epsilon only (the joint sum has
#: C (d + 1) coordinates per user), to keep the demo fast.
VECTOR_ROWS = (
    ("vector", "vector", "clear", True),
    ("vector+label-round", "vector", "round", True),
    ("vector-joint", "vector", "joint", False),
    ("central-gaussian-clear", "central-gaussian", "clear", True),
)
CSV_NAME = "accuracy_vs_epsilon.csv"
FIGURE_NAME = "accuracy_vs_epsilon"  # .svg and .png
RUN_NAME = "run.json"


@dataclass(frozen=True)
class Configuration:
    """One classifier to train: the row name, the classifier's protocol and kernel, and the label treatment."""

    name: str
    protocol: str
    kernel: str
    epsilon: float  # the classifier's epsilon: the total (labels "round" or "joint") or the KDE part's ("clear")
    labels: str  # "clear", "round" (the label round takes LABEL_BUDGET_FRACTION of epsilon) or "joint"
    accounting: str = "tight"


DECODED_CLASSES = ("noun.animal", "noun.food", "noun.plant")
#: What each row name stands for, in the order the summary tables list them.
ROW_DESCRIPTIONS = {
    EXACT_CENTROID_LABEL: "non-private, exact feature sums (nearest class centre)",
    "exact": "non-private, Algorithm 1's 1-bit rounded features",
    "central-gaussian-clear": "best central, labels public: Gaussian mechanism on each class's feature sum",
    "vector": "shuffled Skellam vector sum",
    "vector+label-round": "shuffled Skellam vector sum",
    "vector-joint": "shuffled Skellam vector sum, one joint sum over all classes",
    "central-gaussian": "best central: Gaussian mechanism on each class's feature sum",
    "3nb": "3NB bit sums, communication flooding",
    "rr": "RR bit sums, tight (PLD) accounting",
    SEED_ACCOUNTING_LABEL: "RR bit sums, Wagner's Theorem 3.2 accounting",
    "pure": "Pure bit sums",
}
LABEL_TREATMENTS = {"clear": "labels public", "round": "label round", "joint": "joint sum"}


@dataclass(frozen=True)
class Result:
    """One trained configuration: its test accuracy, guarantee and cost.

    ``epsilon`` is the classifier's epsilon (the total, or the KDE part's for labels in the clear);
    ``total_epsilon`` and ``total_delta`` are the guarantee the fit reports (infinite when labels
    are public or the run is non-private).
    """

    protocol: str
    kernel: str
    epsilon: float
    accuracy: float
    guarantee: str
    seconds: float
    labels: str = "clear"
    messages_per_user: float = math.nan
    bits_per_user: float = math.nan
    label_epsilon: float = math.inf
    kde_epsilon: float = math.inf
    total_epsilon: float = math.inf
    total_delta: float = 0.0


def _subsample(labels: np.ndarray, per_class: int, rng: np.random.Generator) -> np.ndarray:
    keep = [rng.permutation(np.flatnonzero(labels == c))[:per_class] for c in np.unique(labels)]
    return np.sort(np.concatenate(keep))


def run_demo(
    *,
    epsilons: tuple[float, ...] = (1.0, 3.0, 8.0),
    kernels: tuple[str, ...] = ("gaussian", "ip"),
    protocols: tuple[str, ...] = PRIVATE_PROTOCOLS,
    per_class: int = 3000,
    n_repetitions: int = 384,
    label_budget_fraction: float = LABEL_BUDGET_FRACTION,
    delta: float = 1e-6,
    seed: int = 0,
    progress: bool = True,
) -> tuple[list[Result], dict[str, list[str]], dict[str, int]]:
    """Train every configuration; return the results, the decoded words (3NB, middle epsilon) and the data's sizes.

    ``progress`` shows a progress bar (tqdm) on standard error.
    """
    train, test = load_wordnet_glosses(split="train"), load_wordnet_glosses(split="test")
    rng = np.random.default_rng(seed)
    rows = _subsample(train.labels, per_class, rng)
    names = np.asarray(train.class_names)
    X, y = train.embeddings[rows], names[train.labels[rows]]
    X_test, y_test = test.embeddings, names[test.labels]
    sizes = {"training_users": int(X.shape[0]), "test_points": int(X_test.shape[0]), "classes": len(train.class_names)}
    sizes["dimension"] = int(X.shape[1])
    configurations = _configurations(epsilons, kernels, protocols)
    results: list[Result] = []
    decoded: dict[str, list[str]] = {}
    words, vectors = load_vocabulary()
    bar = tqdm(configurations, desc="demo", unit="run", file=sys.stderr, disable=not progress, dynamic_ncols=True)
    for configuration in bar:
        bar.set_postfix_str(f"{configuration.name} / {configuration.kernel} / eps={configuration.epsilon:g}")
        start = time.perf_counter()
        model = _classifier(
            configuration,
            train.class_names,
            delta=delta,
            label_budget_fraction=label_budget_fraction,
            n_repetitions=n_repetitions,
            seed=seed,
        )
        model.fit(X, y)
        results.append(_result(configuration, model, model.score(X_test, y_test), time.perf_counter() - start))
        if (
            configuration.name == "3nb"
            and configuration.kernel == kernels[0]
            and configuration.epsilon == epsilons[len(epsilons) // 2]
        ):
            labels = [c for c in DECODED_CLASSES if c in train.class_names]
            decoded = decode_classes(model, words, vectors, labels=labels, top_k=8)
    bar.close()
    return results, decoded, sizes


def _result(configuration: Configuration, model: ShuffledKDEClassifier, accuracy: float, seconds: float) -> Result:
    private = math.isfinite(configuration.epsilon)
    total = model.guarantees_["communication"]
    guarantee = str(total) if private else "none (non-private)"
    if private and configuration.labels == "clear":
        guarantee += f"; KDE part alone {model.kde_guarantee_}"
    return Result(
        configuration.name,
        configuration.kernel,
        configuration.epsilon,
        accuracy,
        guarantee,
        seconds,
        configuration.labels,
        model.communication_["expected_messages_per_user"],
        model.communication_["expected_bits_per_user"],
        label_epsilon=model.label_epsilon_ if private else math.inf,
        kde_epsilon=model.kde_epsilon_ if private else math.inf,
        total_epsilon=total.epsilon if private else math.inf,
        total_delta=total.delta if private else 0.0,
    )


def _configurations(epsilons: tuple[float, ...], kernels: tuple[str, ...], protocols: tuple[str, ...]) -> list[Configuration]:
    """The demo's rows: non-private references, bit sums, the best central baseline and the vector sums."""
    rows = [Configuration("exact", "exact", k, math.inf, "clear") for k in kernels]
    if "ip" in kernels:
        rows.append(Configuration(EXACT_CENTROID_LABEL, "exact-vector", "ip", math.inf, "clear"))
    rows += [Configuration(p, p, k, e, "round") for k in kernels for p in (*protocols, "central-gaussian") for e in epsilons]
    if "rr" in protocols:  # how much of RR's gap to 3NB the tight accounting closes (first kernel)
        rows += [Configuration(SEED_ACCOUNTING_LABEL, "rr", kernels[0], e, "round", accounting="seed") for e in epsilons]
    if "ip" in kernels:
        rows += [
            Configuration(name, protocol, "ip", e, labels)
            for name, protocol, labels, every_epsilon in VECTOR_ROWS
            if protocol in PROTOCOLS
            for e in (epsilons if every_epsilon else epsilons[:1])
        ]
    return rows


def _classifier(
    configuration: Configuration,
    classes: list[str],
    *,
    delta: float,
    label_budget_fraction: float,
    n_repetitions: int,
    seed: int,
) -> ShuffledKDEClassifier:
    return ShuffledKDEClassifier(
        classes=classes,
        kernel=configuration.kernel,
        protocol=configuration.protocol,
        accounting=configuration.accounting,
        epsilon=1.0 if math.isinf(configuration.epsilon) else configuration.epsilon,
        delta=delta,
        label_budget_fraction=label_budget_fraction,
        label_privacy=configuration.labels,
        n_repetitions=n_repetitions,
        protocol_options=PROTOCOL_OPTIONS.get(configuration.protocol),
        random_state=seed,
    )


# ----- output files ---------------------------------------------------------------------------

CSV_COLUMNS = (
    "protocol",
    "kernel",
    "labels",
    "epsilon",
    "label_epsilon",
    "kde_epsilon",
    "total_epsilon",
    "total_delta",
    "accuracy",
    "messages_per_user",
    "bits_per_user",
    "seconds",
    "guarantee",
)


def _write_csv(results: list[Result], path: Path) -> None:
    """One row per run; every epsilon and delta column is numeric (``inf``: no guarantee)."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(CSV_COLUMNS)
        for r in results:
            writer.writerow(
                [
                    r.protocol,
                    r.kernel,
                    r.labels,
                    f"{r.epsilon:g}",
                    f"{r.label_epsilon:.6g}",
                    f"{r.kde_epsilon:.6g}",
                    f"{r.total_epsilon:.6g}",
                    f"{r.total_delta:.6g}",
                    repr(r.accuracy),  # exact: the README rounds it as the demo prints it
                    f"{r.messages_per_user:.6g}",
                    f"{r.bits_per_user:.6g}",
                    f"{r.seconds:.1f}",
                    r.guarantee,
                ]
            )


def read_csv(path: Path) -> list[Result]:
    """The results a demo run wrote with its CSV."""
    with Path(path).open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    return [
        Result(
            row["protocol"],
            row["kernel"],
            float(row["epsilon"]),
            float(row["accuracy"]),
            row["guarantee"],
            float(row["seconds"]),
            row["labels"],
            float(row["messages_per_user"]),
            float(row.get("bits_per_user", "nan")),
            label_epsilon=float(row["label_epsilon"]),
            kde_epsilon=float(row["kde_epsilon"]),
            total_epsilon=float(row["total_epsilon"]),
            total_delta=float(row["total_delta"]),
        )
        for row in rows
    ]


def machine_description() -> dict[str, object]:
    """The CPU model, the cores this process may use, the OS and library versions (no host name)."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            model = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), model)
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu": model,
        "cores": cores,
        "system": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "load_average_at_start": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
    }


def peak_memory_mib() -> float | None:
    """This process's peak resident memory so far (``resource.getrusage``), in MiB; ``None`` where unavailable."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10  # bytes on macOS, KiB on Linux


# ----- printed summary (the README shows the same tables) ------------------------------------


def summary_rows(results: list[Result], kernel: str) -> list[tuple[str, str, dict[float, float], float, float]]:
    """``(row name, labels, {epsilon: accuracy}, messages and bits per user at the first epsilon)`` for one kernel, in order.

    Non-private rows have one accuracy, shown under every epsilon.
    """
    epsilons = summary_epsilons(results)
    rows = []
    order = {name: position for position, name in enumerate(ROW_DESCRIPTIONS)}
    keys = sorted({(r.protocol, r.labels) for r in results if r.kernel == kernel}, key=lambda key: (order.get(key[0], 99), key))
    for name, labels in keys:
        runs = [r for r in results if r.kernel == kernel and r.protocol == name and r.labels == labels]
        if all(math.isinf(r.epsilon) for r in runs):
            accuracy = {e: runs[0].accuracy for e in epsilons}
        else:
            accuracy = {r.epsilon: r.accuracy for r in runs}
        first = min(runs, key=lambda r: r.epsilon if math.isfinite(r.epsilon) else -1.0)
        rows.append((name, labels, accuracy, first.messages_per_user, first.bits_per_user))
    return rows


def summary_epsilons(results: list[Result]) -> list[float]:
    """The finite epsilons the run used, in increasing order."""
    return sorted({r.epsilon for r in results if math.isfinite(r.epsilon)})


def summary_table(results: list[Result], kernel: str) -> str:
    """The plain-text summary table of one kernel (the README's table for it, in text)."""
    epsilons = summary_epsilons(results)
    head = f"{'row':<24}{'labels':<15}" + "".join(f"{'eps=' + format(e, 'g'):>9}" for e in epsilons)
    head += f"{'messages/user':>15}{'bits/user':>12}"
    lines = [head]
    for name, labels, accuracy, messages, bits in summary_rows(results, kernel):
        cells = "".join(f"{accuracy[e]:>9.3f}" if e in accuracy else f"{'-':>9}" for e in epsilons)
        lines.append(f"{name:<24}{LABEL_TREATMENTS[labels]:<15}{cells}{messages:>15,.0f}{bits:>12,.0f}")
    return "\n".join(lines)


# ----- figure ---------------------------------------------------------------------------------

#: name -> (colour, marker, line style, marker size, hollow marker) of each row in the figure; rows
#: whose values coincide (the vector sums and their central baseline) differ in marker shape and size.
FIGURE_STYLES = {
    "rr": ("#d62728", "o", "-", 6, False),
    SEED_ACCOUNTING_LABEL: ("#ff9896", "v", ":", 8, True),
    "3nb": ("#1f77b4", "s", "-", 6, False),
    "pure": ("#2ca02c", "^", "-", 7, False),
    "central-gaussian": ("#9467bd", "D", "--", 8, True),
    "exact": ("#444444", None, (0, (5, 2)), 0, False),
    EXACT_CENTROID_LABEL: ("#888888", None, (0, (1, 1)), 0, False),
    "vector": ("#ff7f0e", "o", "-", 5, False),
    "vector+label-round": ("#bcbd22", "s", "-.", 7, False),
    "vector-joint": ("#17becf", "*", "none", 16, False),
    "central-gaussian-clear": ("#9467bd", "P", "--", 11, True),
}
#: (panel title, kernel, rows); the bit sums and the vector sums have their own panels
FIGURE_PANELS = (
    ("Gaussian kernel: bit sums", "gaussian", ("exact", "central-gaussian", "3nb", "rr", SEED_ACCOUNTING_LABEL, "pure")),
    ("inner-product kernel: bit sums", "ip", ("exact", "central-gaussian", "3nb", "rr", SEED_ACCOUNTING_LABEL, "pure")),
    (
        "inner-product kernel: vector sums",
        "ip",
        (EXACT_CENTROID_LABEL, "central-gaussian-clear", "vector", "vector+label-round", "vector-joint"),
    ),
)


def _write_figure(results: list[Result], stem: Path) -> list[str] | None:
    """Accuracy versus total epsilon (SVG and PNG): one panel per kernel and kind of sum, one legend entry per row.

    Returns the legend's entries; ``None`` without matplotlib.
    """
    pyplot = pyplot_or_none()
    if pyplot is None:
        return None
    panels = [(title, kernel, rows) for title, kernel, rows in FIGURE_PANELS if any(r.kernel == kernel for r in results)]
    epsilons = summary_epsilons(results)
    figure, axes = pyplot.subplots(1, len(panels), figsize=(4.6 * len(panels) + 2.6, 4.6), sharey=True, squeeze=False)
    handles: dict[str, object] = {}
    for axis, (title, kernel, names) in zip(axes[0], panels, strict=True):
        for name in names:
            _plot_row(axis, [r for r in results if r.kernel == kernel and r.protocol == name], name, handles)
        axis.set_xscale("log")
        axis.set_xticks(epsilons, [f"{e:g}" for e in epsilons])
        axis.xaxis.set_minor_locator(pyplot.NullLocator())
        axis.set_title(title, fontsize=10)
        axis.set_xlabel("ε: total per user (KDE part when labels are public)", fontsize=8)
        axis.set_ylim(0.0, 1.0)
        axis.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("test accuracy")
    figure.legend(
        list(handles.values()), list(handles), loc="center left", bbox_to_anchor=(0.995, 0.5), fontsize=8, frameon=False
    )
    figure.tight_layout(rect=(0.0, 0.0, 1.0, 1.0))
    for suffix in (".svg", ".png"):
        figure.savefig(stem.with_suffix(suffix), bbox_inches="tight", dpi=150)
    pyplot.close(figure)
    return list(handles)


def _plot_row(axis, runs: list[Result], name: str, handles: dict[str, object]) -> None:
    """One row's line (a horizontal reference for a non-private row); its legend entry is recorded once."""
    if not runs:
        return
    colour, marker, style, size, hollow = FIGURE_STYLES[name]
    label = f"{name} ({LABEL_TREATMENTS[runs[0].labels]})"
    if all(math.isinf(r.epsilon) for r in runs):
        line = axis.axhline(runs[0].accuracy, color=colour, linestyle=style, linewidth=1.4, zorder=1)
    else:
        points = sorted((r.epsilon, r.accuracy) for r in runs)
        epsilons, accuracies = zip(*points, strict=True)
        (line,) = axis.plot(
            epsilons,
            accuracies,
            marker=marker,
            markersize=size,
            markerfacecolor="none" if hollow else colour,
            markeredgewidth=1.6 if hollow else 1.0,
            color=colour,
            linestyle=style,
            linewidth=1.8,
            zorder=3 if size > 10 and not hollow else 2,
        )
    handles.setdefault(label, line)


# ----- command line ---------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The demo's options (``python -m privsum demo --help``)."""
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 3.0, 8.0], help="total epsilons (default: 1 3 8)")
    parser.add_argument("--per-class", type=int, default=3000, help="training users per class, subsampled (default: 3000)")
    parser.add_argument("--repetitions", type=int, default=384, help="I, LSQ repetitions (default: 384; the paper uses I = d)")
    parser.add_argument(
        "--label-budget-fraction",
        type=float,
        default=LABEL_BUDGET_FRACTION,
        help=f"share of each epsilon spent on the label round (default: {LABEL_BUDGET_FRACTION:g})",
    )
    parser.add_argument(
        "--output", type=Path, default=Path("privsum-demo-output"), help="folder for the CSV, figures and run.json"
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")


def main(argv: list[str] | None = None) -> int:
    """The demo with its own arguments (``python -m privsum demo`` parses them the same way)."""
    parser = argparse.ArgumentParser(prog="python -m privsum demo", description=COMMAND_HELP)
    add_arguments(parser)
    return run(parser.parse_args(argv))


def run(arguments: argparse.Namespace) -> int:
    """Run the demo with parsed ``arguments``; print the results and write the output files."""
    start = time.perf_counter()
    machine = machine_description()
    results, decoded, sizes = run_demo(
        epsilons=tuple(arguments.epsilons),
        per_class=arguments.per_class,
        n_repetitions=arguments.repetitions,
        label_budget_fraction=arguments.label_budget_fraction,
        seed=arguments.seed,
    )
    _print_results(results, decoded, sizes, arguments)
    arguments.output.mkdir(parents=True, exist_ok=True)
    _write_csv(results, arguments.output / CSV_NAME)
    stem = arguments.output / FIGURE_NAME
    drawn = _write_figure(results, stem) is not None
    wall = time.perf_counter() - start
    peak = peak_memory_mib()
    record = {
        "command": "python -m privsum demo " + " ".join(_argument_words(arguments)),
        "settings": {
            "epsilons": list(arguments.epsilons),
            "per_class": arguments.per_class,
            "repetitions": arguments.repetitions,
            "label_budget_fraction": arguments.label_budget_fraction,
            "delta": 1e-6,
            "seed": arguments.seed,
            **sizes,
        },
        "machine": machine,
        "wall_seconds": round(wall, 1),
        "peak_memory_mib": None if peak is None else round(peak, 1),
        "decoded_words": {"setting": "3nb, first kernel, middle epsilon", "classes": decoded},
    }
    (arguments.output / RUN_NAME).write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")
    written = f"{stem}.svg, .png, .csv and {RUN_NAME}" if drawn else f"{stem}.csv and {RUN_NAME}; no figure: {MISSING_MATPLOTLIB}"
    memory = "unknown" if peak is None else f"{peak:,.0f} MiB"
    print(f"\nSaved {written}.\nWall time {wall:.0f} s; peak memory {memory}.")
    return 0


def _argument_words(arguments: argparse.Namespace) -> list[str]:
    """The options that differ from the defaults, as command-line words."""
    defaults = {"epsilons": [1.0, 3.0, 8.0], "per_class": 3000, "repetitions": 384}
    defaults |= {"label_budget_fraction": LABEL_BUDGET_FRACTION, "seed": 0, "output": Path("privsum-demo-output")}
    words = []
    for name, default in defaults.items():
        value = getattr(arguments, name)
        if value != default:
            shown = [f"{v:g}" for v in value] if isinstance(value, list) else [str(value)]
            words += [f"--{name.replace('_', '-')}", *shown]
    return words


def _print_results(results: list[Result], decoded: dict[str, list[str]], sizes: dict[str, int], arguments) -> None:
    print(
        f"Shuffled-DP KDE classifier on WordNet glosses ({sizes['classes']} classes, all-MiniLM-L6-v2 embeddings, "
        f"d = {sizes['dimension']})"
    )
    print(
        f"training users: {sizes['training_users']:,} ({arguments.per_class} per class); test points: {sizes['test_points']:,}; "
        f"I = {arguments.repetitions}; delta = 1e-6; replace-one neighbours\n"
        f"epsilon: the total per user, the label round taking {arguments.label_budget_fraction:g} of it (labels 'round'),\n"
        "or the joint sum's (labels 'joint'); for labels 'clear' the KDE part alone, the labels being public\n"
    )
    header = f"{'protocol':<24}{'kernel':<10}{'labels':<8}{'epsilon':>9}{'accuracy':>10}{'messages/user':>15}"
    print(f"{header}  guarantee (communication threat, incl. labels)")
    for r in results:
        epsilon = "-" if math.isinf(r.epsilon) else f"{r.epsilon:g}"
        row = f"{r.protocol:<24}{r.kernel:<10}{r.labels:<8}{epsilon:>9}{r.accuracy:>10.3f}{r.messages_per_user:>15,.0f}"
        print(f"{row}  {r.guarantee}")
    for kernel, title in (("ip", "Inner-product kernel"), ("gaussian", "Gaussian kernel")):
        if any(r.kernel == kernel for r in results):
            print(f"\n{title}: test accuracy (the README's table)\n{summary_table(results, kernel)}")
    print("\nRows:")
    for name, description in ROW_DESCRIPTIONS.items():
        if any(r.protocol == name for r in results):
            print(f"  {name:<24}{description}")
    print("\nDecoded words (3NB, first kernel, middle epsilon):")
    for label, top in decoded.items():
        print(f"  {label:<14} {', '.join(top)}")
