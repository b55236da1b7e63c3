import csv
import json
import math
import xml.etree.ElementTree as ElementTree

import pytest

from privsum.__main__ import COMMANDS, build_parser
from privsum.__main__ import main as command_line
from privsum.apps import PROTOCOLS
from privsum.demo import LABEL_TREATMENTS, VECTOR_ROWS, _write_figure, main, read_csv, run_demo

TINY = ["--epsilons", "4", "--per-class", "30", "--repetitions", "8"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("demo")
    assert command_line(["demo", *TINY, "--output", str(folder)]) == 0
    return folder


def test_demo_runs_end_to_end_at_a_tiny_size(tiny_run, capsys):
    assert ElementTree.parse(tiny_run / "accuracy_vs_epsilon.svg").getroot().tag.endswith("svg")  # matplotlib's SVG
    assert (tiny_run / "accuracy_vs_epsilon.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = (tiny_run / "accuracy_vs_epsilon.csv").read_text().splitlines()
    vector_rows = sum(protocol in PROTOCOLS for _, protocol, _, _ in VECTOR_ROWS)
    # header, exact x 2 kernels, exact centroid, (3 bit sums + central) x 2 kernels, rr-seed, vector-sum rows
    assert rows[0].startswith("protocol,kernel,labels,epsilon,") and len(rows) == 1 + 2 + 1 + 2 * 4 + 1 + vector_rows


def test_the_csv_states_each_run_s_total_guarantee_as_numbers(tiny_run):
    with (tiny_run / "accuracy_vs_epsilon.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        total, delta = float(row["total_epsilon"]), float(row["total_delta"])
        if row["labels"] == "clear":  # public labels (or no privacy at all): no finite total
            assert math.isinf(total)
        else:  # the epsilon passed is the total: the label round's share included
            assert total <= float(row["epsilon"]) and delta <= 1e-6
            assert float(row["label_epsilon"]) + float(row["kde_epsilon"]) == pytest.approx(float(row["epsilon"]))
    assert [r.protocol for r in read_csv(tiny_run / "accuracy_vs_epsilon.csv")] == [row["protocol"] for row in rows]


def test_run_json_records_the_machine_wall_time_peak_memory_and_decoded_words(tiny_run):
    record = json.loads((tiny_run / "run.json").read_text())
    assert record["wall_seconds"] > 0 and record["peak_memory_mib"] > 50
    assert record["machine"]["cores"] >= 1 and record["settings"]["training_users"] == 15 * 30
    assert record["command"].startswith("python -m privsum demo --epsilons 4 --per-class 30 --repetitions 8")
    assert set(record["decoded_words"]["classes"]) == {"noun.animal", "noun.food", "noun.plant"}


def test_the_figure_has_a_legend_entry_for_every_row(tiny_run, tmp_path):
    results = read_csv(tiny_run / "accuracy_vs_epsilon.csv")
    legend = _write_figure(results, tmp_path / "figure")
    assert legend is not None and len(legend) == len(set(legend))
    assert {f"{r.protocol} ({LABEL_TREATMENTS[r.labels]})" for r in results} == set(legend)  # rr-seed included


def test_private_runs_report_a_finite_guarantee_including_the_label_round():
    results, decoded, sizes = run_demo(epsilons=(4.0,), kernels=("gaussian",), protocols=("3nb",), per_class=30, n_repetitions=8)
    private = [r for r in results if math.isfinite(r.epsilon)]
    assert all("replace-one" in r.guarantee and r.total_epsilon <= r.epsilon for r in private)
    assert 0.0 <= min(r.accuracy for r in results) <= max(r.accuracy for r in results) <= 1.0
    assert set(decoded) == {"noun.animal", "noun.food", "noun.plant"} and sizes["classes"] == 15


def test_help_exits_0_and_lists_every_command_and_its_options(capsys):
    with pytest.raises(SystemExit) as stopped:
        command_line(["--help"])
    assert stopped.value.code == 0
    printed = capsys.readouterr().out
    assert all(name in printed for name, _ in COMMANDS)
    assert "--epsilons" in printed and "--label-budget-fraction" in printed


def test_module_entry_point_rejects_unknown_or_missing_commands(capsys):
    with pytest.raises(SystemExit) as stopped:
        command_line(["train"])
    assert stopped.value.code == 2 and "invalid choice" in capsys.readouterr().err
    assert command_line([]) == 2 and "a command is required" in capsys.readouterr().err
    assert build_parser().parse_args(["demo"]).command == "demo"


def test_demo_without_matplotlib_says_so_and_still_writes_the_csv(tmp_path, capsys, monkeypatch):
    import privsum.demo as demo

    monkeypatch.setattr(demo, "pyplot_or_none", lambda: None)
    assert main(["--epsilons", "4", "--per-class", "20", "--repetitions", "8", "--output", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert 'no figure: matplotlib is not installed: install it with pip install "privsum[plot]"' in printed
    assert (tmp_path / "accuracy_vs_epsilon.csv").is_file() and not (tmp_path / "accuracy_vs_epsilon.svg").exists()


def test_the_3nb_row_uses_the_communication_flooding_and_other_rows_no_options():
    from privsum.demo import Configuration, _classifier

    def options(protocol):
        configuration = Configuration(protocol, protocol, "gaussian", 1.0, "round")
        model = _classifier(configuration, ["a", "b"], delta=1e-6, label_budget_fraction=0.5, n_repetitions=8, seed=0)
        return model.protocol_options

    assert options("3nb")["flooding"] == "communication" and options("3nb")["variance_factor"] > 1
    assert options("rr") is None and options("pure") is None
