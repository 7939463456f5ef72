"""Issue 20, item 11, in headless Chromium: the Contents page opens any stored snapshot by the id
`fsstats list` prints (an older one of a label), warns in the command's words on a growth between
different roots and offers none from its list, and draws the growth in the tables' binary units."""

from __future__ import annotations

import json
import os

import pytest

from browser import json_twin, visit
from web_server import Server

from ioweather.config import Settings
from ioweather.web.app import create_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]

MiB = 1 << 20


def _sparse(path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(size)


@pytest.fixture(scope="module")
def snaps(tmp_path_factory):
    """`tree` twice (it grows by 10 MiB in proj_b and 3 MiB in proj_c in between) and `usr`, another root."""
    from inprocess import run_cli

    base = tmp_path_factory.mktemp("snaps")
    home, tree, usr = base / "home", base / "tree", base / "usr-share"
    _sparse(tree / "proj_a" / "a", 5 * MiB)
    _sparse(tree / "proj_b" / "b", 1000)
    run_cli("fsstats", str(tree), "--label", "tree", "--quiet", home=home, check=True)
    _sparse(usr / "doc" / "x", 40 * MiB)
    run_cli("fsstats", str(usr), "--label", "usr", "--quiet", home=home, check=True)
    _sparse(tree / "proj_b" / "big", 10 * MiB)
    _sparse(tree / "proj_c" / "c", 3 * MiB)
    run_cli("fsstats", str(tree), "--label", "tree", "--quiet", home=home, check=True)
    listed = json.loads(run_cli("fsstats", "list", "--json", home=home, check=True).stdout)
    with Server(create_app(Settings.resolve(home), warm=False)) as s:
        yield home, s, listed


def _ids(listed, label):
    return [r["id"] for r in listed if r["label"] == label]  # oldest first


def test_an_older_snapshot_of_a_label_opens_by_its_id(browser, snaps):
    home, server, listed = snaps
    old, new = _ids(listed, "tree")
    with visit(browser, f"{server.url}/contents?label=tree") as v:
        assert v.page.inner_text("#snapshot-id") == str(new)
        assert v.page.locator("#older-snapshot").count() == 0
        v.page.click(f"#snapshot-{old} td:first-child a")  # the list's id link
        v.page.wait_for_url(f"**/contents?id={old}")
        assert v.page.inner_text("#snapshot-id") == str(old)
        assert v.page.locator("#older-snapshot").count() == 1
        twin = json_twin(v.page, f"/contents?id={old}")
        row = next(r for r in listed if r["id"] == old)
        assert twin["snapshot"]["files"] == row["files"] == 2 and twin["snapshot"]["bytes"] == row["bytes"]
        assert twin["label"] == "tree" and twin["snapshot_id"] == old and not twin["newest_of_label"]
        assert v.errors == []


def test_growth_between_ids_equals_fsstats_diff_in_binary_units(browser, snaps, cli):
    home, server, listed = snaps
    old, new = _ids(listed, "tree")
    path = f"/contents?id={new}&compare_id={old}"
    with visit(browser, server.url + path) as v:
        twin = json_twin(v.page, path)
        p = cli("fsstats", "diff", str(old), str(new), "--json", home=home, check=True)
        assert twin["diff"] == json.loads(p.stdout) and twin["diff_warnings"] == []
        assert v.page.locator(".diff-warning").count() == 0
        plot = v.page.evaluate("""() => { const el = document.getElementById('contents-diff');
            return {title: el.layout.xaxis.title.text, x: el.data[0].x,
                    ticks: Array.from(el.querySelectorAll('.xtick text')).map(t => t.textContent)}; }""")
        changed = [r["bytes_change"] for r in twin["diff"]["top_dirs"] if r["bytes_change"]][:15]
        assert sorted(changed) == [3 * MiB, 10 * MiB]
        assert plot["title"] == "change of data (MiB)"
        assert [x * MiB for x in plot["x"]] == changed
        assert plot["ticks"] and not any("M" in t or "k" in t for t in plot["ticks"]), plot["ticks"]
        assert v.errors == []


def test_growth_between_roots_is_warned_and_not_offered(browser, snaps, cli):
    home, server, listed = snaps
    (usr,), (old, new) = _ids(listed, "usr"), _ids(listed, "tree")
    path = "/contents?label=tree&compare=usr"
    with visit(browser, server.url + path) as v:
        shown = [t.strip() for t in v.page.locator(".diff-warning").all_inner_texts()]
        p = cli("fsstats", "diff", "usr", "tree", "--label", "--json", home=home, check=True)
        said = " ".join(p.stderr.split())  # rich wraps long lines
        assert len(shown) == 1 and shown[0].startswith("warning: comparing different roots: ")
        assert " ".join(shown[0].split()) in said and os.fspath(home.parent / "usr-share") in shown[0]
        # the list offers a growth only between snapshots of the same root
        links = v.page.evaluate("""() => Array.from(document.querySelectorAll('#snapshot-list a.growth-since'))
                                         .map(a => a.getAttribute('href'))""")
        assert links == [f"?id={new}&compare_id={old}#growth"]
        assert v.page.inner_text(f"#snapshot-{usr} td:last-child") == "other root"
        assert v.errors == []
