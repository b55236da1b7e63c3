"""The shuffled-DP KDE classifier on Fashion-MNIST (70,000 images of 28 x 28 pixels, 10 classes).

Run with ``python examples/fashion_mnist.py`` after ``apt-get install -y dataset-fashion-mnist``
(the Debian package puts the four IDX files, gzipped, under ``/usr/share/datasets/fashion-mnist``;
``--path`` points elsewhere). It mirrors the image experiment of section 4 of Wagner, "Learning from End User
Data with Shuffled Differential Privacy over Kernel Densities", ICLR 2025 (CIFAR-10 there):
every training image is one user, the Gaussian kernel ``exp(-||x - y||^2)`` (bandwidth 1) on
unit-norm vectors, ``I = d`` LSQ repetitions, ``delta = 1e-5``, labels sent by m-ary randomized
response at ``--label-epsilon``; test accuracy of `privsum.apps.ShuffledKDEClassifier` with the
RR, 3NB and Pure bit sums against the non-private (``exact``) and central-DP
(``central-gaussian``) baselines.

**Representation.** The paper embeds images with a pretrained network; no such model ships here,
so each image is represented by its raw pixels: scaled to ``[0, 1]``, centred by the image's own
mean (a per-user operation that uses no one else's data), optionally mapped to ``--dimension``
coordinates by a `privsum.lsq.FastJLT` drawn from a fixed public seed (randomness chosen before
and independently of the data, so it reveals nothing), and scaled to unit norm. Raw pixels
separate the classes less well than learned embeddings, so accuracies are lower than the paper's.

Prints the command, the machine and a table (accuracy, guarantee of the whole run including the
label round, per-user communication, seconds), and saves ``accuracy_vs_epsilon.csv`` and ``.svg``
in ``--output``. Everything is seeded (``--seed``); nothing touches the network; the IDX files are
parsed with numpy.
"""

from __future__ import annotations

import argparse
import gzip
import math
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from privsum.apps import ShuffledKDEClassifier
from privsum.demo import Result, _write_csv, _write_figure
from privsum.lsq import FastJLT

DEFAULT_PATH = "/usr/share/datasets/fashion-mnist"
CLASS_NAMES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot")
DEFAULT_PROTOCOLS = ("rr", "3nb", "pure")
DEFAULT_EPSILONS = (1.0, 3.0, 8.0)
PROJECTION_SEED = 2
_IDX_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
_MISSING_HELP = (
    "Install the data with `apt-get install -y dataset-fashion-mnist`, or pass --path to a folder holding the IDX files."
)


def machine_description() -> str:
    """CPU, core count, OS and library versions (no host name)."""
    processor = platform.processor() or platform.machine()
    system = f"{platform.system()} {platform.release()}"
    return f"{processor}, {os.cpu_count()} cpus, {system}, python {platform.python_version()}, numpy {np.__version__}"


def read_idx(file: Path) -> np.ndarray:
    """An IDX array (the MNIST file format, optionally gzipped): two zero bytes, type, rank, big-endian sizes, data."""
    raw = gzip.decompress(file.read_bytes()) if file.suffix == ".gz" else file.read_bytes()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_TYPES:
        raise ValueError(f"{file} is not an IDX file")
    rank = raw[3]
    shape = tuple(int(size) for size in np.frombuffer(raw, dtype=">u4", count=rank, offset=4))
    dtype = np.dtype(_IDX_TYPES[raw[2]])
    data = np.frombuffer(raw, dtype=dtype, offset=4 + 4 * rank)
    if data.size != math.prod(shape):
        raise ValueError(f"{file} holds {data.size} values, its header says {shape}")
    return data.reshape(shape)


def find_file(folder: Path, name: str) -> Path:
    """``folder/name`` or ``folder/name.gz``; exits with install instructions when neither exists."""
    for candidate in (folder / name, folder / f"{name}.gz"):
        if candidate.is_file():
            return candidate
    raise SystemExit(f"Fashion-MNIST was not found: neither {folder / name} nor {folder / name}.gz exists.\n{_MISSING_HELP}")


def load_split(folder: Path, prefix: str) -> tuple[np.ndarray, np.ndarray]:
    """Images ``(n, 784)`` uint8 and labels ``(n,)`` of the ``train`` or ``t10k`` split."""
    image_file, label_file = find_file(folder, f"{prefix}-images-idx3-ubyte"), find_file(folder, f"{prefix}-labels-idx1-ubyte")
    images, labels = read_idx(image_file), read_idx(label_file)
    if images.ndim != 3 or labels.ndim != 1 or images.shape[0] != labels.shape[0]:
        raise ValueError(f"{prefix} images {images.shape} and labels {labels.shape} do not match")
    return images.reshape(images.shape[0], -1), labels.astype(np.int64)


def embed(images: np.ndarray, dimension: int) -> np.ndarray:
    """Per-image centred pixels, publicly projected to ``dimension`` coordinates, at unit norm."""
    if np.any(np.ptp(images, axis=1) == 0):
        raise ValueError("an image is constant: centred, it has no direction to normalise")
    pixels = images.astype(float) / 255.0
    pixels -= pixels.mean(axis=1, keepdims=True)
    if dimension < pixels.shape[1]:
        pixels = FastJLT(input_dimension=pixels.shape[1], output_dimension=dimension, seed=PROJECTION_SEED).transform(pixels)
    return pixels / np.linalg.norm(pixels, axis=1, keepdims=True)


def subsample(n_available: int, n_wanted: int | None, rng: np.random.Generator) -> np.ndarray:
    """Sorted indices of ``n_wanted`` rows drawn without replacement (all rows when ``None``)."""
    if n_wanted is None or n_wanted >= n_available:
        return np.arange(n_available)
    return np.sort(rng.choice(n_available, size=n_wanted, replace=False))


def main(
    *,
    path: str | os.PathLike[str] = DEFAULT_PATH,
    protocols: Sequence[str] = DEFAULT_PROTOCOLS,
    epsilons: Sequence[float] = DEFAULT_EPSILONS,
    kernel: str = "gaussian",
    dimension: int = 784,
    repetitions: int | None = None,
    label_epsilon: float = 4.0,
    delta: float = 1e-5,
    train_points: int | None = None,
    test_points: int | None = None,
    output: str | os.PathLike[str] | None = "fashion-mnist-output",
    seed: int = 0,
) -> list[Result]:
    """Train every configuration, print the table, save CSV and SVG; returns the results."""
    folder = Path(path)
    if not folder.is_dir():
        raise SystemExit(f"Fashion-MNIST was not found: {folder} is not a folder.\n{_MISSING_HELP}")
    start = time.perf_counter()
    rng = np.random.default_rng(seed)
    (train_images, train_labels), (test_images, test_labels) = load_split(folder, "train"), load_split(folder, "t10k")
    train_rows = subsample(train_labels.size, train_points, rng)
    test_rows = subsample(test_labels.size, test_points, rng)
    dimension = min(dimension, train_images.shape[1])
    repetitions = dimension if repetitions is None else repetitions
    X, X_test = embed(train_images[train_rows], dimension), embed(test_images[test_rows], dimension)
    names = np.asarray(CLASS_NAMES)
    y, y_test = names[train_labels[train_rows]], names[test_labels[test_rows]]
    projection = "none" if dimension == train_images.shape[1] else f"public FastJLT to {dimension}-d, seed {PROJECTION_SEED}"
    print(f"machine: {machine_description()}")
    print(f"data: Fashion-MNIST ({folder}), {len(y)} training users, {len(y_test)} test images, {len(CLASS_NAMES)} classes")
    print(f"representation: {train_images.shape[1]} pixels / 255, centred per image, projection: {projection}, unit norm")
    print(
        f"kernel {kernel} (bandwidth 1); I = {repetitions}; delta = {delta:g}; "
        f"label round epsilon = {label_epsilon:g}; seed {seed}\n"
    )
    header = f"{'protocol':<17}{'epsilon':>8}{'accuracy':>10}{'msgs/user':>12}{'bits/msg':>9}{'seconds':>9}"
    print(header + "  guarantee (communication threat, incl. labels)")
    private = [p for p in dict.fromkeys((*protocols, "central-gaussian")) if p != "exact"]
    results = []
    for protocol, epsilon in [("exact", math.inf)] + [(p, e) for p in private for e in epsilons]:
        began = time.perf_counter()
        model = ShuffledKDEClassifier(
            classes=CLASS_NAMES,
            kernel=kernel,
            protocol=protocol,
            # the KDE part at `epsilon` and the label round at `label_epsilon`: a total of their sum
            epsilon=1.0 if math.isinf(epsilon) else epsilon + label_epsilon,
            label_budget_fraction=0.5 if math.isinf(epsilon) else label_epsilon / (epsilon + label_epsilon),
            delta=delta,
            label_privacy="clear" if protocol == "exact" else "round",
            n_repetitions=repetitions,
            random_state=seed,
        ).fit(X, y)
        guarantee = "none (non-private)" if protocol == "exact" else str(model.guarantees_["communication"])
        result = Result(protocol, kernel, epsilon, model.score(X_test, y_test), guarantee, time.perf_counter() - began)
        results.append(result)
        messages, bits = model.communication_["expected_messages_per_user"], model.communication_["bits_per_message"]
        shown = "-" if math.isinf(epsilon) else f"{epsilon:g}"
        print(
            f"{protocol:<17}{shown:>8}{result.accuracy:>10.3f}{messages:>12.4g}{bits:>9.0f}{result.seconds:>9.1f}  {guarantee}",
            flush=True,
        )
    print(f"\nmajority-class accuracy: {max(np.mean(y_test == c) for c in CLASS_NAMES):.3f}")
    if output:
        destination = Path(output)
        destination.mkdir(parents=True, exist_ok=True)
        _write_csv(results, destination / "accuracy_vs_epsilon.csv")
        drawn = _write_figure(results, destination / "accuracy_vs_epsilon.svg")
        figure_note = " and .svg" if drawn else " (no figure: matplotlib is not installed)"
        print(f"saved: {destination / 'accuracy_vs_epsilon.csv'}{figure_note}")
    print(f"elapsed: {time.perf_counter() - start:.1f} s")
    return results


def parse_arguments(argv: Sequence[str] | None = None) -> dict:
    """The options of `main`, from the command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--path", default=DEFAULT_PATH, help=f"folder with the four IDX files (default {DEFAULT_PATH})")
    parser.add_argument("--protocols", nargs="+", default=list(DEFAULT_PROTOCOLS), help="private bit sums (rr, 3nb, pure, local)")
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(DEFAULT_EPSILONS), help="KDE epsilons")
    parser.add_argument("--kernel", default="gaussian", choices=["gaussian", "ip", "lsh"])
    parser.add_argument("--dimension", type=int, default=784, help="public projection to this many coordinates (784: none)")
    parser.add_argument("--repetitions", type=int, default=None, help="I, LSQ repetitions (default: the dimension, as the paper)")
    parser.add_argument("--label-epsilon", type=float, default=4.0)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--train-points", type=int, default=None, help="training users (default: all 60,000)")
    parser.add_argument("--test-points", type=int, default=None, help="test images (default: all 10,000)")
    parser.add_argument("--output", default="fashion-mnist-output", help="folder for the CSV and SVG ('' to skip)")
    parser.add_argument("--seed", type=int, default=0)
    arguments = vars(parser.parse_args(argv))
    arguments["output"] = arguments["output"] or None
    return arguments


if __name__ == "__main__":
    print(f"command: python {' '.join(sys.argv)}")
    main(**parse_arguments())
