"""Smoke tests: each example's ``main()`` runs end to end at a tiny size and prints its table."""

import importlib.util
import math
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load_example(name: str):
    """Import ``examples/<name>.py`` as a module (the examples folder is not a package)."""
    spec = importlib.util.spec_from_file_location(f"privsum_example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_race_example_runs_at_a_tiny_size(capsys):
    example = load_example("race_on_wordnet")
    rows = example.main(
        epsilons=(0.5, 50.0), train_points=3000, test_points=300, queries=100, dimension=16, rows=30, trials=1, plot=None
    )
    printed = capsys.readouterr().out
    assert "KDE mean rel. err" in printed and "non-private" in printed and "machine:" in printed
    assert [row.epsilon for row in rows] == [None, 0.5, 50.0]
    for row in rows:
        assert 0.0 <= row.accuracy_map <= 1.0 and 0.0 <= row.accuracy_maximum_likelihood <= 1.0
        assert math.isfinite(row.kde_mean_relative_error)
    reference, noisy, nearly_exact = rows
    assert reference.kde_mean_relative_error < 0.5
    assert noisy.kde_mean_relative_error > nearly_exact.kde_mean_relative_error  # more noise at the smaller epsilon


def test_race_example_arguments_parse():
    arguments = load_example("race_on_wordnet").parse_arguments(["--epsilons", "1", "2", "--train-points", "10", "--plot", ""])
    assert arguments["epsilons"] == [1.0, 2.0] and arguments["train_points"] == 10 and arguments["plot"] is None


def test_sums_example_runs_at_a_tiny_size(capsys):
    example = load_example("sums_on_wordnet")
    results = example.main(epsilons=(1.0,), users=2000, domain=16, dimension=2, trials=3, plot=None)
    printed = capsys.readouterr().out
    assert "mean relative error" in printed and "expected messages per user" in printed
    protocols = {result.protocol for result in results}
    assert {"MultiMessageSum", "BlanketRealSum", "ShuffledVectorSum", "central discrete Laplace", "central Laplace"} <= protocols
    assert sum(name.startswith("CorrelatedNoiseSum") for name in protocols) == 2
    for result in results:
        assert math.isfinite(result.relative_error) and 0.0 <= result.relative_error < 1.0
        assert result.messages_per_user is None or result.messages_per_user >= 1.0


@pytest.mark.parametrize(("name", "arguments"), [("race_on_wordnet", ([], 0.1)), ("sums_on_wordnet", ([],))])
def test_plot_is_skipped_without_matplotlib(name, arguments, monkeypatch, tmp_path):
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(module, *args, **kwargs):
        if module.startswith("matplotlib"):
            raise ImportError(module)
        return real_import(module, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    assert load_example(name).save_plot(*arguments, str(tmp_path / "plot.png")) is False
    assert not (tmp_path / "plot.png").exists()


def test_accountant_tour_prints_every_bound(capsys):
    load_example("accountant_tour").main()
    printed = capsys.readouterr().out
    for expected in ("closed form (FMT21)", "numerical (FMT21 pair)", "exact, binary RR", "pld", "model threat"):
        assert expected in printed
