"""The lab's catalogue and its scoring (no MPI needed): the vocabulary, the cases, and the F1 arithmetic
checked against counts worked by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ioweather.cli import cli
from ioweather.services.lab.catalogue import CASES, LABEL_NAMES, LABELS, code_labels, select
from ioweather.stats.lab_scores import UNPLANTED, prf, score
from ioweather.views.lab_report import scores_markdown

IMBALANCED = Path("/work/shared/testdata/darshan/imbalanced-io.darshan")


def test_the_catalogue_covers_the_vocabulary_with_controls():
    assert len(CASES) >= 30
    assert len({c.name for c in CASES}) == len(CASES)
    used = {label for c in CASES for label in (*c.labels, *c.tolerated)}
    assert used <= set(LABEL_NAMES)
    assert set(LABEL_NAMES) <= {label for c in CASES for label in c.labels}  # every label planted somewhere
    assert sum(c.control for c in CASES) >= 3
    assert any(not c.mpi and c.procs > 1 for c in CASES)
    for c in CASES:
        assert c.argv[0] in {"ior", "mdtest", "lab_posix", "lab_posix_nompi", "lab_mpiio", "lab_hdf5"}, c.name


def test_a_code_names_one_label_per_tool():
    for tool in ("ioweather", "drishti"):
        codes = [code for label in LABELS for code in getattr(label, tool)]
        assert len(codes) == len(set(codes)), tool
        assert code_labels(tool)["P06"] == "small-writes"
    # Drishti's M09 is about aggregators between nodes, not read-modify-write
    assert "M09" not in code_labels("drishti")


def test_select_names_the_unknown_case():
    assert [c.name for c in select(["reread"])] == ["reread"]
    with pytest.raises(ValueError, match="nope"):
        select(["reread", "nope"])


def test_prf_by_hand():
    assert prf(3, 1, 2) == {"tp": 3, "fp": 1, "fn": 2, "precision": 0.75, "recall": 0.6, "f1": 6 / 9}
    assert prf(0, 0, 0)["precision"] is None and prf(0, 0, 0)["f1"] is None


def test_score_counts_by_hand():
    labels = ("a", "b", "c")
    cases = [
        ({"a"}, set(), {"a", "b"}, {"X01"}),   # a: tp; b: fp; one unplanted alarm
        ({"a", "c"}, set(), {"c"}, set()),     # a: fn; c: tp
        (set(), {"b"}, {"b"}, set()),          # b tolerated: neither fp nor tp
        (set(), set(), set(), {"X01", "X02"}),  # a control with two alarms
    ]
    s = score(labels, cases)
    assert (s["labels"]["a"]["tp"], s["labels"]["a"]["fp"], s["labels"]["a"]["fn"]) == (1, 0, 1)
    assert (s["labels"]["b"]["tp"], s["labels"]["b"]["fp"], s["labels"]["b"]["fn"]) == (0, 1, 0)
    assert (s["labels"]["c"]["tp"], s["labels"]["c"]["fp"], s["labels"]["c"]["fn"]) == (1, 0, 0)
    assert s["labels"][UNPLANTED]["fp"] == 3
    # pooled: tp 2, fp 1 + 3, fn 1
    assert s["micro_precision"] == pytest.approx(2 / 6)
    assert s["micro_recall"] == pytest.approx(2 / 3)
    assert s["micro_f1"] == pytest.approx(4 / (4 + 4 + 1))
    assert s["micro_f1_labels"] == pytest.approx(4 / (4 + 1 + 1))


def test_lab_list_json_is_the_catalogue():
    out = CliRunner().invoke(cli, ["lab", "list", "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert [r["name"] for r in doc["cases"]] == [c.name for c in CASES]
    assert [r["label"] for r in doc["labels"]] == list(LABEL_NAMES)


def test_lab_run_refuses_an_unknown_case_in_one_line(tmp_path):
    out = CliRunner().invoke(cli, ["lab", "run", "--dir", str(tmp_path), "--case", "nope"])
    assert out.exit_code == 2
    assert "unknown case(s): nope" in out.output


def test_lab_storm_refuses_a_used_store_before_running_anything(tmp_path):
    """The pair records into a new store: a store with anything in it (a site's own) is refused in one line."""
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "ioweather.sqlite").write_text("")
    out = CliRunner().invoke(cli, ["lab", "storm", "--dir", str(tmp_path), "--store", str(tmp_path / "home")])
    assert out.exit_code == 2 and "not empty (the pair records into a new store)" in out.output
    out = CliRunner().invoke(cli, ["lab", "storm", "--dir", str(tmp_path / "nope")])
    assert out.exit_code == 2 and "not a directory" in out.output


@pytest.mark.slow  # two reports of a 100 MB log: 7 s here
@pytest.mark.skipif(not IMBALANCED.exists(), reason="shared Darshan logs absent")
def test_score_maps_ioweathers_alarms_to_labels(tmp_path):
    """One public log in a lab index: the case's named labels are its WARN/HIGH codes through the mapping."""
    index = {"dir": "/x", "logs_dir": str(tmp_path), "toolchain": "cache", "started": "2026-11-28T00:00:00Z",
             "cases": [{"name": "imb", "cause": "", "labels": ["rank-imbalance"], "tolerated": [], "control": False,
                        "procs": 1, "mpi": True, "command": "", "logs": [str(IMBALANCED)], "elapsed_s": 1.0,
                        "status": "ok", "reason": None}]}
    (tmp_path / "INDEX.json").write_text(json.dumps(index))
    out = CliRunner().invoke(cli, ["lab", "score", str(tmp_path), "--no-drishti", "--json"])
    assert out.exit_code == 0, out.output
    (tool,) = json.loads(out.output)["tools"]
    (case,) = tool["cases"]
    job = CliRunner().invoke(cli, ["job", str(IMBALANCED), "--json"])
    alarms = sorted({f["code"] for f in json.loads(job.output)["findings"] if f["level"] in ("WARN", "HIGH")})
    assert case["alarms"] == alarms
    mapping = code_labels("ioweather")
    assert case["named"] == sorted({mapping[c] for c in alarms if c in mapping})
    assert case["unplanted"] == [c for c in alarms if c not in mapping]
    row = {r["label"]: r for r in tool["labels"]}["rank-imbalance"]
    assert row["tp"] == (1 if "rank-imbalance" in case["named"] else 0)


def test_the_markdown_table_carries_each_tools_counts():
    row = {"label": "a", "tp": 1, "fp": 2, "fn": 0, "precision": 1 / 3, "recall": 1.0, "f1": 0.5}
    case = {"case": "c1", "planted": ["a"], "named": ["a"], "unplanted": ["M01"], "alarms": ["M01", "P06"],
            "control": False, "quiet": None, "verdict": None, "error": None}
    tool = {"tool": "ioweather", "version": "0.1", "available": True, "reason": None, "micro_precision": 0.25,
            "micro_recall": 1.0, "micro_f1": 0.4, "micro_f1_labels": 0.5, "controls": 1, "controls_quiet": 0,
            "labels": [row], "cases": [case]}
    md = scores_markdown({"logs_dir": "/x", "cases": 1, "tools": [tool, {"tool": "drishti", "available": False,
                                                                             "reason": "no network"}]})
    assert "| a | 0.33 | 1.00 | 0.50 | 1/2/0 |" in md
    assert "| ioweather 0.1 | 0.40 | 0.25 | 1.00 | 0.50 | 0 of 1 |" in md
    assert "| drishti | not scored: no network |" in md
    assert "| c1 | a | a (M01) |" in md


def test_the_mount_point_under_a_path_gives_its_file_system_type(tmp_path):
    from ioweather.services.lab.run import fs_type

    mounts = tmp_path / "mounts"
    mounts.write_text("/dev/vda / ext4 rw 0 0\nlus@o2ib:/scratch /scratch lustre rw 0 0\n"
                      "tmpfs /scratch/my\\040tmp tmpfs rw 0 0\n")
    assert fs_type(Path("/scratch/me/lab"), mounts) == "lustre"
    assert fs_type(Path("/scratchy"), mounts) == "ext4"          # a prefix of the name is not a mount above it
    assert fs_type(Path("/scratch/my tmp/x"), mounts) == "tmpfs"
    assert fs_type(Path("/x"), tmp_path / "no-mounts") is None


def test_costless_labels_are_patterns_on_a_local_disk_and_causes_elsewhere(tmp_path):
    """A case whose planted label costs nothing on one machine's disk (catalogue.Case.costless_local): on an
    ext4 lab neither found nor missed, and counted apart; on Lustre a label like any other."""
    from ioweather.services.lab.run import CaseRun
    from ioweather.services.lab.score import _tool_score

    def case(name, labels, costless):
        return CaseRun(name, "", labels, [], not labels, 2, True, "", ["x"], 1.0, "ok", None, costless)

    cases = [case("misaligned", ["misaligned-file", "small-writes"], ["misaligned-file"]),
             case("random", ["random-reads"], ["random-reads"])]
    # the tool names small-writes in the first case and random-reads in the second
    readings = {"misaligned": [(["P06"], "x")], "random": [(["P11"], "x")]}
    local = _tool_score("ioweather", "0", cases, readings, local=True)
    rows = {r.label: r for r in local.labels}
    assert (rows["small-writes"].tp, rows["misaligned-file"].fn, rows["misaligned-file"].tp) == (1, 0, 0)
    assert (rows["random-reads"].tp, rows["random-reads"].fp, rows["random-reads"].fn) == (0, 0, 0)
    assert (local.costless_planted, local.costless_named) == (2, 1) and local.micro_recall == 1.0
    assert local.cases[0].costless == ["misaligned-file"] and local.cases[1].costless_named == ["random-reads"]
    site = _tool_score("ioweather", "0", cases, readings, local=False)
    rows = {r.label: r for r in site.labels}
    assert (rows["misaligned-file"].fn, rows["random-reads"].tp, site.costless_planted) == (1, 1, 0)
    assert site.micro_recall == pytest.approx(2 / 3)
    md = scores_markdown({"logs_dir": "/x", "cases": 2, "fs_type": "ext4", "local": True,
                          "tools": [{**local.__dict__, "labels": [r.__dict__ for r in local.labels],
                                     "cases": [c.__dict__ for c in local.cases]}]})
    assert "(ext4), 2 planted labels cost less than the advisor's bar" in md and "ioweather 1." in md
    assert "| misaligned | misaligned-file (*costless here*), small-writes | small-writes |" in md
