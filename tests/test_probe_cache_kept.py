"""Issue 40 item 4: the dashboard's probe baselines kept across a restart (store/probe_baselines_file.py).

A restarted dashboard serves the baselines its predecessor computed (as any baseline past its TTL, refreshed
in the background one target at a time), not a minute of recomputing them; a file written for another store,
another baseline window or too long ago is ignored, and an unreadable one is no error.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np
import pytest

from ioweather.config import Settings
from ioweather.services.probe import cache as cache_mod
from ioweather.services.probe.cache import ProbeCache
from ioweather.store import open_store
from ioweather.store import probe_baselines_file

from web_synthetic import Episode, add_target

DAY = 86_400 * 10**9
H = 3_600 * 10**9


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    home = tmp_path_factory.mktemp("kept") / "home"
    store = open_store(Settings.resolve(home))
    now = time.time_ns()
    add_target(store, "scratch", now - 2 * DAY, now, period_s=60, seed=1,
               episodes=[Episode(now - DAY, now - DAY + 3 * H, 5.0)])
    add_target(store, "home", now - DAY, now, period_s=60, seed=2)
    store.dispose()
    return home


def _cache(home, clock=time.time_ns, **kw) -> ProbeCache:
    return ProbeCache(open_store(Settings.resolve(home)), persist=True, warm_rollups=False, clock=clock, **kw)


def _same(a, b) -> None:
    assert (a.since_ns, a.until_ns, a.computed_ns) == (b.since_ns, b.until_ns, b.computed_ns)
    np.testing.assert_array_equal(a.samples, b.samples)
    np.testing.assert_array_equal(a.first_ns, b.first_ns)
    assert set(a.stat_s) == set(b.stat_s)
    for st in a.stat_s:
        np.testing.assert_array_equal(a.stat_s[st], b.stat_s[st])  # bit for bit: JSON floats round-trip


def test_restart_serves_the_kept_baselines_then_refreshes(home, monkeypatch):
    first = _cache(home)
    first.warm()
    before = {t: first.baseline(t) for t in ("scratch", "home")}
    first.close()
    path = probe_baselines_file.path_of(first.store)
    assert path.is_file() and oct(path.stat().st_mode & 0o777) == "0o600"
    assert set(json.loads(path.read_text())["targets"]) == {"scratch", "home"}

    second = _cache(home)
    scans = []
    real = second._scan
    monkeypatch.setattr(second, "_scan", lambda *a, **k: scans.append(a[3]) or real(*a, **k))
    for t in ("scratch", "home"):
        tc = second._t(t)
        with tc.lock:
            second._ensure_warm(t, tc)
        _same(tc.baseline, before[t])
    assert scans == [], "a kept baseline was computed again at the restart"
    # within their TTL (as the process before would have), the warm-up serves them as they are
    monkeypatch.setattr(cache_mod, "TTL_COST_FACTOR", 1e9)  # TTL_MAX_S
    second.warm()
    assert [b for b in scans if b is not None] == []
    # past it, the warm-up refreshes them, one after another
    monkeypatch.setattr(cache_mod, "TTL_COST_FACTOR", 0.0)  # TTL_MIN_S: 1 s
    time.sleep(cache_mod.TTL_MIN_S + 0.1)
    second.warm()
    assert len([b for b in scans if b is not None]) == 2
    for t in ("scratch", "home"):
        b = second._t(t).baseline
        assert b.computed_ns > before[t].computed_ns
        np.testing.assert_array_equal(b.samples >= before[t].samples, True)
    second.close()


def test_a_file_of_another_window_or_too_old_is_ignored(home):
    c = _cache(home)
    c.warm()
    c.close()
    assert _cache(home)._restore()
    assert _cache(home, baseline_s=7 * 86400.0)._restore() == {}
    later = time.time_ns() + int((cache_mod.TTL_MAX_S + 60) * 1e9)
    assert _cache(home, clock=lambda: later)._restore() == {}
    path = probe_baselines_file.path_of(c.store)
    path.write_text("{not json")
    assert _cache(home)._restore() == {}
    # without `persist` (slowdown --check, the tests' caches) no file is read or written
    path.unlink()
    plain = ProbeCache(open_store(Settings.resolve(home)), warm_rollups=False)
    plain.warm()
    plain.close()
    assert not path.exists()


def test_a_symlink_at_its_path_or_its_directory_is_not_followed(home, tmp_path):
    """The file is derived: a link planted at its name (or at the cache directory) is neither read, which would
    serve another file's baselines, nor written through, which would overwrite what it points at
    (store/cache_files.py)."""
    first = _cache(home)
    first.warm()
    first.close()
    path = probe_baselines_file.path_of(first.store)
    elsewhere = tmp_path / "elsewhere.json"
    os.replace(path, elsewhere)
    before = elsewhere.read_bytes()
    os.symlink(elsewhere, path)
    # the linked file is valid and in its window: read through the link it would be served
    assert probe_baselines_file.load(elsewhere, first._file_key(), time.time_ns(), cache_mod.TTL_MAX_S)
    second = _cache(home)
    assert second._restore() == {}
    second.warm()
    second.close()
    assert not path.is_symlink() and path.is_file(), "the link was not replaced by the rename"
    assert elsewhere.read_bytes() == before, "written through the link"
    assert set(json.loads(path.read_bytes())["targets"]) == {"scratch", "home"}
    cache_dir, moved = path.parent, tmp_path / "moved-cache"
    os.replace(cache_dir, moved)
    os.symlink(moved, cache_dir)
    try:
        kept = (moved / path.name).read_bytes()
        third = _cache(home)
        assert third._restore() == {}
        third.warm()
        third.close()
        assert (moved / path.name).read_bytes() == kept, "written through the linked directory"
    finally:
        os.unlink(cache_dir)
        os.replace(moved, cache_dir)
