"""Issue 40 item 4: page answers kept across a restart (store/kept_answers.py, web/context.py `WebContext.kept`).

The file is a derived cache: a restarted dashboard reads back the Workload answer and the telemetry pages'
coverage an earlier process computed for the same window and telemetry files instead of computing them again,
byte for byte the same answers. An entry
that is truncated, has a flipped byte, was written for another store, key or data version, or sits behind a
planted symbolic link is not used; new telemetry makes the page compute again; `store prune` removes them."""

from __future__ import annotations

import json
import os

import pytest

from ioweather.config import Settings
from ioweather.services.runtime import stores
from ioweather.store import cache_files
from ioweather.store import kept_answers as ka
from ioweather.web.app import create_app
from ioweather.web.pages import workload as workload_page
from web_pages_data import csv_telemetry
from web_server import Server, api

DOC = json.dumps({"a": [1.5, None, "x\u00e9"], "b": 0.1 + 0.2})


def _files(home):
    d = ka.dir_of(home)
    return sorted(d.glob("*.bin")) if d.is_dir() else []


def test_round_trip_and_what_is_refused(tmp_path):
    home = tmp_path / "home"
    assert ka.load(home, "s1", "k", "v") is None  # nothing yet, nothing created
    assert not (home / "cache").exists()
    assert ka.save(home, "s1", "k", "v", DOC)
    (path,) = _files(home)
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert ka.load(home, "s1", "k", "v") == DOC
    assert ka.load(home, "s1", "k", "v2") is None, "another version of the data"
    assert ka.load(home, "s2", "k", "v") is None, "another store"
    assert ka.load(home, "s1", "k2", "v") is None, "another key"
    # another store's entry copied under this store's name: its header says which store wrote it
    other = ka.encode("s2", "k", "v", DOC)
    path.write_bytes(other)
    assert ka.load(home, "s1", "k", "v") is None
    whole = ka.encode("s1", "k", "v", DOC)
    for size in (len(whole) - 1, len(whole) // 2, 12, 0):
        path.write_bytes(whole[:size])
        assert ka.load(home, "s1", "k", "v") is None, size
    for at in (-1, -5, len(whole) - 10):  # the CRC, the payload
        data = bytearray(whole)
        data[at] ^= 0x01
        path.write_bytes(bytes(data))
        assert ka.load(home, "s1", "k", "v") is None, at
    path.write_bytes(whole)
    assert ka.load(home, "s1", "k", "v") == DOC


def test_symbolic_links_are_not_followed(tmp_path):
    home = tmp_path / "home"
    assert ka.save(home, "s", "k", "v", DOC)
    (path,) = _files(home)
    elsewhere = tmp_path / "elsewhere.bin"
    os.replace(path, elsewhere)
    os.symlink(elsewhere, path)
    assert ka.load(home, "s", "k", "v") is None, "read through a link at the entry"
    before = elsewhere.read_bytes()
    assert ka.save(home, "s", "k", "v", DOC.replace("x", "y"))
    assert not path.is_symlink() and elsewhere.read_bytes() == before, "written through the link"
    # a link in place of the answers directory, then of the cache directory
    for d in (ka.dir_of(home), ka.dir_of(home).parent):
        moved = tmp_path / f"moved-{d.name}"
        os.replace(d, moved)
        os.symlink(moved, d)
        assert ka.load(home, "s", "k", "v") is None, d
        snapshot = {p: p.read_bytes() for p in moved.rglob("*") if p.is_file()}
        assert not ka.save(home, "s", "k", "v", DOC)
        assert ka.remove(home) == 0
        assert {p: p.read_bytes() for p in moved.rglob("*") if p.is_file()} == snapshot
        os.unlink(d)
        os.replace(moved, d)


def test_a_stale_temporary_file_does_not_block_the_writes(tmp_path):
    """A crash leaves `.NAME.<pid>.tmp` behind; a process of the same id later (PID 1 in every container start)
    still saves, and a failed write leaves no temporary file and the previous entry as it was."""
    home = tmp_path / "home"
    assert ka.save(home, "s", "k", "v", DOC)
    d, name = ka.dir_of(home), ka._name("s", "k")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_bytes(b"not ours")
    (d / f".{name}.{os.getpid()}.tmp").write_bytes(b"left by a crash")
    os.symlink(elsewhere, d / f".{name}.{os.getpid() + 1}.tmp")
    assert ka.save(home, "s", "k", "v2", DOC.replace("x", "y"))
    assert ka.load(home, "s", "k", "v2") == DOC.replace("x", "y") and elsewhere.read_bytes() == b"not ours"

    def failing():
        yield b"half"
        raise OSError("disk full")
    before = sorted(p.name for p in d.iterdir())
    dfd = cache_files.open_dir(d, create=False)
    try:
        with pytest.raises(OSError, match="disk full"):
            cache_files.write_in(dfd, name, failing())
    finally:
        os.close(dfd)
    assert sorted(p.name for p in d.iterdir()) == before
    assert ka.load(home, "s", "k", "v2") == DOC.replace("x", "y")


def test_bounded(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setattr(ka, "MAX_FILES", 3)
    for i in range(6):
        assert ka.save(home, "s", f"k{i}", "v", DOC)
        os.utime(ka.dir_of(home) / ka._name("s", f"k{i}"), ns=(i * 10**9, i * 10**9))  # written in this order
    assert len(_files(home)) == 3
    assert [ka.load(home, "s", f"k{i}", "v") is not None for i in range(6)] == [False] * 3 + [True] * 3
    monkeypatch.setattr(ka, "MAX_BYTES", 100)
    assert not ka.save(home, "s", "big", "v", json.dumps(["x" * 200]))
    assert ka.load(home, "s", "big", "v") is None


@pytest.fixture()
def tele_home(tmp_path, cli):
    home = tmp_path / "home"
    csv_telemetry(tmp_path / "a.csv", minutes=240, burst_min=30)
    cli("import", "csv", str(tmp_path / "a.csv"), "--fs", "one", "--interval", "60s", home=home, check=True)
    return home


def _get(home, paths):
    with Server(create_app(Settings.resolve(home), warm=False)) as s:
        return {p: s.get(p)[2] for p in paths}


def test_workload_after_a_restart_is_read_back_the_same(tele_home, tmp_path, cli, monkeypatch):
    from ioweather.services.telemetry import fsview

    calls, spans = [], []
    real = workload_page.workload_view
    monkeypatch.setattr(workload_page, "workload_view", lambda *a: calls.append(a) or real(*a))
    real_cov = fsview.coverage
    monkeypatch.setattr(fsview, "coverage", lambda *a: spans.append(a) or real_cov(*a))
    paths = ["/api/workload", "/workload", "/api/workload?fs=one&resample=5m", "/api/servers"]
    first = _get(tele_home, paths)
    assert len(calls) == 2 and len(spans) == 1 and len(_files(tele_home)) == 3  # two windows, one coverage
    second = _get(tele_home, paths)  # a restart: a new process's context, read back
    assert len(calls) == 2 and len(spans) == 1, "computed again after the restart"
    assert second == first
    # the reference: the same requests with nothing kept
    for p in _files(tele_home):
        p.unlink()
    assert _get(tele_home, paths) == first and len(calls) == 4 and len(spans) == 2
    # a damaged entry is computed again (and rewritten)
    for p in _files(tele_home):
        data = bytearray(p.read_bytes())
        data[-7] ^= 0x40
        p.write_bytes(bytes(data))
    assert _get(tele_home, paths) == first and len(calls) == 6 and len(spans) == 3
    # new telemetry: another fingerprint, computed again, the new hour in the answer
    csv_telemetry(tmp_path / "b.csv", minutes=300, burst_min=250)
    cli("import", "csv", str(tmp_path / "b.csv"), "--fs", "one", "--interval", "60s", home=tele_home, check=True)
    after = _get(tele_home, ["/api/workload"])["/api/workload"]
    assert len(calls) == 7 and json.loads(after)["result"]["samples"] == 300
    assert json.loads(first["/api/workload"])["result"]["samples"] == 240


def test_store_prune_removes_them(tele_home, cli):
    _get(tele_home, ["/api/workload"])
    assert _files(tele_home)
    stores.keep_answer(Settings.resolve(tele_home), "k", "v", DOC)
    cli("store", "prune", "--older-than", "3650d", "--yes", home=tele_home, check=False)
    assert not _files(tele_home)
