"""stats.job.assign_mounts (issue 40: each name and each directory looked up once) against the walk it replaced
(the distinct names sorted with np.unique, each one's parents walked up to the root), kept here as the
reference: the same mount point and type for every record name of every public log, with and without a root
mount and a nested one, and for the names a damaged log may hold (none, empty, relative, doubled slashes)."""

from __future__ import annotations

import numpy as np
import pytest

from darshan_support import all_real_logs, need_darshan_logs  # noqa: F401
from ioweather.sources.darshan_log import read_log
from ioweather.stats.job import assign_mounts


def assign_mounts_reference(names, mounts):
    table = {point.rstrip("/") or "/": (point, fstype) for point, fstype in mounts}
    keys = np.array(["" if n is None else n for n in names], dtype=object)
    if not len(keys):
        return keys.copy(), keys.copy()
    uniq, inv = np.unique(keys, return_inverse=True)
    mp = np.full(len(uniq), "", dtype=object)
    ft = np.full(len(uniq), "", dtype=object)
    for i, n in enumerate(uniq):
        if not n.startswith("/"):
            continue
        path = n
        while True:
            hit = table.get(path)
            if hit is not None:
                mp[i], ft[i] = hit
                break
            if path == "/":
                break
            path = path.rsplit("/", 1)[0] or "/"
    return mp[inv], ft[inv]


ODD = np.array([None, "", "/", "/a", "/a/b", "/a/b/c", "rel/x", "//x", "/a//b/c", "/a/b/", "/lus/x"], dtype=object)


@pytest.mark.parametrize("path", all_real_logs(), ids=lambda p: p.name)
def test_same_mounts_as_the_walk_it_replaced(path):
    log = read_log(path, dxt=False, heatmaps=False)
    tables = [log.mounts, log.mounts + [("/", "rootfs"), ("/a/b/", "nested"), ("/a", "outer")], []]
    for rec in log.records.values():
        for names in (rec.names, np.concatenate([rec.names, ODD])):
            for mounts in tables:
                want, got = assign_mounts_reference(names, mounts), assign_mounts(names, mounts)
                for w, g in zip(want, got):
                    assert g.dtype == w.dtype == object
                    assert list(g) == list(w)


def test_the_odd_names_reach_every_branch():
    mp, ft = assign_mounts(ODD, [("/", "rootfs"), ("/a/b/", "nested"), ("/a", "outer")])
    assert list(mp) == ["", "", "/", "/a", "/a/b/", "/a/b/", "", "/", "/a", "/a/b/", "/"]
    assert list(assign_mounts(ODD, [])[0]) == [""] * len(ODD)
