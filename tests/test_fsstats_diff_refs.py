"""Issue 20, item 14: `fsstats diff` takes the ids `fsstats list` prints, says when A and B are the same
snapshot, says which of a directory/file and a label of the same name it used, and `--label` picks the label."""

from __future__ import annotations

import json

import pytest
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)


def said(proc) -> str:
    """stderr with rich's line wrapping undone."""
    return " ".join(proc.stderr.split())


@pytest.fixture()
def stored(tmp_path, cli):
    home = tmp_path / "home"
    tree = tmp_path / "tree"
    (tree / "d").mkdir(parents=True)
    (tree / "d" / "f").write_bytes(b"x" * 5000)
    cli("fsstats", str(tree), "--label", "tree", "-q", home=home, check=True)
    (tree / "d" / "g").write_bytes(b"y" * 7000)
    cli("fsstats", str(tree), "--label", "tree", "-q", home=home, check=True)
    cli("fsstats", str(tree / "d"), "--label", "other-root", "-q", home=home, check=True)
    listing = json.loads(cli("fsstats", "list", "--json", home=home, check=True).stdout)
    return home, tmp_path, listing


def test_diff_accepts_the_ids_fsstats_list_prints(stored, cli):
    home, _, listing = stored
    first, second = [r["id"] for r in listing if r["label"] == "tree"]
    p = cli("fsstats", "diff", str(first), str(second), "--json", home=home, check=True)
    g = json.loads(p.stdout)
    assert g["total"]["files_a"] == 1 and g["total"]["files_b"] == 2
    assert f"comparing stored snapshot id {first} (label 'tree') with stored snapshot id {second} (label 'tree')" in said(p)
    # An older snapshot of a label is reachable by its id; the label is its newest.
    by_label = json.loads(cli("fsstats", "diff", str(first), "tree", "--json", home=home, check=True).stdout)
    assert by_label["total"] == g["total"]


def test_diff_of_a_snapshot_with_itself_says_so(stored, cli):
    home, _, listing = stored
    p = cli("fsstats", "diff", "tree", "tree", home=home, check=True)
    newest = max(r["id"] for r in listing if r["label"] == "tree")
    assert f"note: A and B are the same snapshot (stored label 'tree' (id {newest})): every change is zero" in said(p)


def test_different_roots_warn(stored, cli):
    home, _, _ = stored
    p = cli("fsstats", "diff", "tree", "other-root", home=home, check=True)
    assert "warning: comparing different roots:" in said(p)


def test_a_directory_named_like_a_label_says_which_was_used(stored, cli, monkeypatch):
    home, cwd, listing = stored  # cwd holds the directory "tree" and the store the label "tree"
    monkeypatch.chdir(cwd)
    p = cli("fsstats", "diff", "tree", "other-root", home=home, check=True)
    assert "note: 'tree' is a directory here, not a snapshot file: using the stored label 'tree'" in said(p)
    snap = cwd / "other-root"
    cli("fsstats", str(cwd / "tree"), "--out", str(snap), "-q", home=home, check=True)
    p = cli("fsstats", "diff", "tree", "other-root", home=home, check=True)
    assert "note: 'other-root' is the file ./other-root; a stored label 'other-root' exists too: add --label" in said(p)
    same_root = json.loads(cli("fsstats", "diff", "tree", "other-root", "--json", home=home, check=True).stdout)
    labels = json.loads(cli("fsstats", "diff", "--label", "tree", "other-root", "--json", home=home, check=True).stdout)
    assert same_root["b"]["root"] != labels["b"]["root"]  # the file (of tree) vs the label (of tree/d)
    p = cli("fsstats", "diff", "--label", "tree", "nope", home=home)
    assert p.returncode == 2 and p.stderr.strip() == "ioweather: error: no stored label 'nope' (see 'ioweather fsstats list')"
