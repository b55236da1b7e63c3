import math
import xml.etree.ElementTree as ElementTree

from privsum.__main__ import _main
from privsum.apps import PROTOCOLS
from privsum.demo import VECTOR_ROWS, main, run_demo


def test_demo_runs_end_to_end_at_a_tiny_size(tmp_path, capsys):
    assert main(["--epsilons", "4", "--per-class", "30", "--repetitions", "8", "--output", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "3nb" in printed and "replace-one" in printed and "Decoded words" in printed
    assert ElementTree.parse(tmp_path / "accuracy_vs_epsilon.svg").getroot().tag.endswith("svg")  # matplotlib's SVG
    rows = (tmp_path / "accuracy_vs_epsilon.csv").read_text().splitlines()
    vector_rows = sum(protocol in PROTOCOLS for _, protocol, _, _ in VECTOR_ROWS)
    # header, exact x 2 kernels, exact centroid, (3 bit sums + central) x 2 kernels, rr-seed, vector-sum rows
    assert rows[0].startswith("protocol,kernel,epsilon,accuracy") and len(rows) == 1 + 2 + 1 + 2 * 4 + 1 + vector_rows
    assert "exact-centroid" in printed and "central-gaussian-clear" in printed and "messages/user" in printed


def test_private_runs_report_a_finite_guarantee_including_the_label_round():
    results, decoded = run_demo(epsilons=(4.0,), kernels=("gaussian",), protocols=("3nb",), per_class=30, n_repetitions=8)
    private = [r for r in results if math.isfinite(r.epsilon)]
    assert all("replace-one" in r.guarantee for r in private)
    assert 0.0 <= min(r.accuracy for r in results) <= max(r.accuracy for r in results) <= 1.0
    assert set(decoded) == {"noun.animal", "noun.food", "noun.plant"}


def test_module_entry_point_rejects_unknown_commands(capsys):
    assert _main(["train"]) == 2
    assert "usage" in capsys.readouterr().err


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
        return _classifier(configuration, ["a", "b"], delta=1e-6, label_epsilon=4.0, n_repetitions=8, seed=0).protocol_options

    assert options("3nb")["flooding"] == "communication" and options("3nb")["variance_factor"] > 1
    assert options("rr") is None and options("pure") is None
