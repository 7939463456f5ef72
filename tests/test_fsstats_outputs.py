"""`fsstats DIR --out/--html` never write through a symlink planted at the output path (issue 19
item 3): one line, non-zero exit, the symlink's target untouched, and refused before the walk."""

from __future__ import annotations

import json
import os

import pytest
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)


@pytest.fixture
def tree(tmp_path):
    d = tmp_path / "tree"
    (d / "sub").mkdir(parents=True)
    (d / "a.dat").write_bytes(b"x" * 1000)
    (d / "sub" / "b.dat").write_bytes(b"y" * 10)
    return d


@pytest.mark.parametrize("option", ["--out", "--html"])
def test_symlink_at_the_output_is_refused(cli, home, tree, tmp_path, option):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    link = tmp_path / "report"
    link.symlink_to(victim)
    r = cli("fsstats", str(tree), option, str(link), "--label", "l1", "-q", home=home)
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    what = "write snapshot" if option == "--out" else "write HTML report"
    assert r.stderr.strip().splitlines() == [(f"ioweather: error: cannot {what} {link}: it is a symlink, "
                                              "which ioweather never follows")]
    assert victim.read_text() == "precious\n" and os.path.islink(link)
    assert json.loads(cli("fsstats", "list", "--json", home=home, check=True).stdout) == []
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_outputs_are_checked_before_anything_is_written(cli, home, tree, tmp_path):
    """A symlink at --html: the --out snapshot is not written either (before, it was, and then the HTML failed)."""
    link = tmp_path / "r.html"
    link.symlink_to(tmp_path / "elsewhere.html")
    out = tmp_path / "snap.json"
    r = cli("fsstats", str(tree), "--out", str(out), "--html", str(link), "-q", home=home)
    assert r.returncode != 0 and "it is a symlink" in r.stderr
    assert not out.exists() and not (tmp_path / "elsewhere.html").exists()


def test_dangling_symlink_at_the_output_is_refused(cli, home, tree, tmp_path):
    link = tmp_path / "out.html"
    link.symlink_to(tmp_path / "created-through-the-link.html")
    r = cli("fsstats", str(tree), "--html", str(link), "-q", home=home)
    assert r.returncode != 0 and "it is a symlink" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "created-through-the-link.html").exists()


def test_regular_outputs_are_replaced_whole(cli, home, tree, tmp_path):
    out, html = tmp_path / "snap.json", tmp_path / "snap.html"
    out.write_text("old")
    html.write_text("old")
    r = cli("fsstats", str(tree), "--out", str(out), "--html", str(html), "-q", "--json", home=home)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc == json.loads(r.stdout)
    assert html.read_text().lstrip().lower().startswith("<!doctype html")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "home") == ["snap.html", "snap.json", "tree"]
