"""The hand labels `benchmarks/hecbench_audit.py` scores its must-fix recall with: well formed, each with a reason."""

import importlib.util
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LABELS = ROOT / "benchmarks" / "hecbench_audit_labels.toml"


def _script():
    spec = importlib.util.spec_from_file_location("hecbench_audit", ROOT / "benchmarks" / "hecbench_audit.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_labels_are_well_formed():
    data = tomllib.loads(LABELS.read_text())
    assert set(data) == {"hunks", "alarms"}
    for table, allowed in (("hunks", {"must-fix", "taste"}), ("alarms", {"must-fix", "correct"})):
        assert data[table], table
        for key, value in data[table].items():
            assert "/" in key.split(": ", 1)[0], f"{key!r}: the id starts with BENCHMARK/FILE"
            assert value["label"] in allowed, key
            assert len(value["reason"]) > 10, key


def test_figures_count_labels_and_list_the_rest(tmp_path, capsys):
    """Found hunks without a label count as must-fix; a missed hunk or an alarm without one is listed apart."""
    labels = tmp_path / "labels.toml"
    labels.write_text('[hunks]\n"b/k.cu: x" = { label = "must-fix", reason = "a 32-bit mask" }\n'
                      '"b/k.cu: y" = { label = "taste", reason = "launch syntax only" }\n'
                      '[alarms]\n"b/k.cu: z" = { label = "correct", reason = "a 64-bit mask" }\n')
    results = {"b": {"hunks": [{"id": "b/k.cu: x", "found": False}, {"id": "b/k.cu: y", "found": False},
                               {"id": "b/k.cu: w", "found": True}, {"id": "b/k.cu: v", "found": False}],
                     "alarm_ids": ["b/k.cu: z"]}}
    out = _script()._labelled_figures(results, labels, 1, 10, False)
    assert out["must_fix_recall"] == [1, 2]
    assert out["false_alarms_labelled"] == [1, 10]
    assert out["unlabelled"] == ["hunk: b/k.cu: v"]
    assert "must-fix recall: 1/2" in capsys.readouterr().out
