"""The Contents page over snapshots stored by `ioweather fsstats DIR --label L` of a generated tree:
CDFs checked against the sizes and ages the tree was built with, the growth equal to `ioweather fsstats
diff --json`, escaping of labels and paths, bad input, hidden without snapshots."""

from __future__ import annotations

import json
from urllib.parse import quote

import numpy as np
import pytest

from ioweather.config import Settings
from ioweather.store import open_store
from ioweather.store import probe as probe_store
from ioweather.web.app import create_app
from web_pages_data import (  # noqa: F401  (fixtures)
    NASTY, NASTY_NAME, TREE_V1, tree_v2, pages_home, pages_server)
from web_server import Server, api, assert_bad_request, escaped_page
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)



def _cdf_expected(values, weights, bounds):
    """Share of items (or of weight) strictly below each bucket's upper bound, from the raw values."""
    v, w = np.asarray(values, float), np.asarray(weights, float)
    return [w[v < b].sum() / w.sum() for b in bounds]


def test_default_is_the_newest_label_and_cdfs_follow_the_tree(pages_server):
    code, d = api(pages_server, "/api/contents")
    assert code == 200
    assert d["labels"] == ["weekly", NASTY, "v1"]  # newest first; a label resolves to its newest snapshot
    assert d["label"] == "weekly"
    tree = tree_v2()
    assert d["snapshot"]["files"] == len(tree) and d["snapshot"]["bytes"] == sum(x[2] for x in tree)
    sizes = [x[2] for x in tree]
    c = d["cdfs"]["file_size"]
    assert c["by_count"] == pytest.approx(_cdf_expected(sizes, np.ones(len(sizes)), c["upper_bound"]), abs=1e-12)
    assert c["by_bytes"] == pytest.approx(_cdf_expected(sizes, sizes, c["upper_bound"]), abs=1e-12)
    whole_days = [int(x[3]) for x in tree]
    m = d["cdfs"]["mtime_age_days"]
    assert m["by_count"] == pytest.approx(_cdf_expected(whole_days, np.ones(len(tree)), m["upper_bound"]), abs=1e-12)
    assert m["by_bytes"] == pytest.approx(_cdf_expected(whole_days, sizes, m["upper_bound"]), abs=1e-12)
    below = [s for s in sizes if s < 2**20]
    assert d["highlights"]["files_below_1mib"] == pytest.approx(len(below) / len(sizes))
    assert d["highlights"]["bytes_in_files_below_1mib"] == pytest.approx(sum(below) / sum(sizes))
    # Per project: the first-level directories with their files and bytes.
    projects = {p["name"]: p for p in d["projects"]}
    for name in ("proj_a", "proj_b", "proj_c", NASTY_NAME):
        mine = [x for x in tree if x[0] == name]
        assert (projects[name]["files"], projects[name]["bytes"]) == (len(mine), sum(x[2] for x in mine)), name


def test_snapshot_list_and_older_label(pages_server, pages_home, cli):
    code, d = api(pages_server, "/api/contents?label=v1")
    assert d["label"] == "v1" and d["snapshot"]["files"] == len(TREE_V1)
    proc = cli("fsstats", "list", "--json", home=pages_home, check=True)
    assert d["snapshots"] == json.loads(proc.stdout)


def test_growth_equals_fsstats_diff(pages_server, pages_home, cli):
    code, d = api(pages_server, f"/api/contents?label={quote(NASTY)}&compare=v1")
    assert code == 200
    proc = cli("fsstats", "diff", "v1", NASTY, "--json", home=pages_home, check=True)
    assert d["diff"] == json.loads(proc.stdout)
    t = d["diff"]["total"]
    assert t["files_change"] == len(tree_v2()) - len(TREE_V1)
    rows = {r["name"]: r for r in d["diff"]["top_dirs"]}
    assert rows["proj_c"]["status"] == "new" and rows["proj_b"]["bytes_change"] == 9 << 20
    assert rows["proj_a"]["files_change"] == -1


@pytest.mark.parametrize("path", ["/contents", "/contents?label=%s", "/contents?label=weekly&compare=%s"])
def test_labels_and_paths_are_escaped(pages_server, path):
    html, data = escaped_page(pages_server, path.replace("%s", quote(NASTY)))
    assert "&lt;img src=x onerror=&#34;window.__xss=3&#34;&gt;" in html  # the directory, shown as text
    assert NASTY in data["labels"] and NASTY_NAME in [p["name"] for p in data["projects"]]


BAD = [
    ("/api/contents?label=nope", "unknown label"),
    ("/api/contents?label=" + quote("<script>"), "unknown label"),
    ("/api/contents?compare=nope", "unknown compare"),
    ("/api/contents?label=v1&label=weekly", "given 2 times"),
    ("/api/contents?root=/etc", "unknown parameter 'root'"),
    ("/api/contents?label=" + "x" * 400, "longer than"),
    ("/api/contents?id=%C2%B2", "must be a snapshot id"),          # '²' is a digit to str.isdigit
    ("/api/contents?id=99999999999999999999", "must be a snapshot id"),  # beyond SQLite's integers
    ("/api/contents?id=424242", "no stored snapshot with id 424242"),
    ("/api/contents?label=v1&id=1", "give label or id, not both"),
    ("/api/contents?compare_id=x", "compare_id must be a snapshot id"),
]


@pytest.mark.parametrize("path,message", BAD)
def test_bad_parameters_are_400_with_a_message(pages_server, path, message):
    assert_bad_request(pages_server, path, message)


def test_hidden_without_snapshots_and_nothing_created(tmp_path):
    settings = Settings.resolve(tmp_path / "home")
    store = open_store(settings)
    store.require(probe_store.COMPONENT)
    before = store.versions()
    with Server(create_app(settings, warm=False)) as s:
        assert {p["slug"]: p["available"] for p in api(s, "/api")[1]["pages"]}["contents"] is False
        code, d = api(s, "/api/contents")
        assert code == 404 and "fsstats DIR --label" in d["error"]
        assert 'href="/contents"' not in s.get("/status")[2].decode()
    assert store.versions() == before
    store.dispose()
