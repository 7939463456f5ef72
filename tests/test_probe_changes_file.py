"""The kept level-change searches' file (store/probe_changes_file.py) given what a shared home can hold instead of
it: each is read as "nothing kept" (the searches run again), never an error that stops the dashboard, never read or
written through a link, and another store's, version's or a damaged file's entries are never taken back."""

from __future__ import annotations

import json

import pytest

from ioweather.store import probe_changes_file as pcf

ENTRIES = {"ab" * 20: [[["data_read", 1_700_000_000_000_000_000, 0.01, 0.03, 3.0]], [["meta_open", "too short"]]]}


@pytest.fixture
def path(tmp_path):
    p = tmp_path / "home" / "cache" / pcf.NAME
    assert pcf.save(p, "store-a", ENTRIES)
    return p


def test_round_trip_for_its_own_store_only(path):
    assert pcf.load(path, "store-a") == ENTRIES
    assert pcf.load(path, "store-b") == {}


@pytest.mark.parametrize("damage", ["truncated", "empty", "not json", "a list", "entries not an object",
                                    "another version", "another ioweather"])
def test_a_damaged_or_foreign_file_keeps_nothing(path, damage):
    body = path.read_bytes()
    doc = json.loads(body)
    bad = {"truncated": body[: len(body) // 2], "empty": b"", "not json": b"\x00\xff garbage",
           "a list": b"[1, 2]", "entries not an object": json.dumps({**doc, "entries": [1]}).encode(),
           "another version": json.dumps({**doc, "version": pcf.VERSION + 1}).encode(),
           "another ioweather": json.dumps({**doc, "ioweather": "0.0.1"}).encode()}[damage]
    path.write_bytes(bad)
    assert pcf.load(path, "store-a") == {}


def test_a_file_over_the_bound_is_not_read_whole(path, monkeypatch):
    monkeypatch.setattr(pcf, "MAX_BYTES", 64)
    assert pcf.load(path, "store-a") == {}


def test_a_link_is_neither_read_nor_written_through(path, tmp_path):
    victim = tmp_path / "victim.json"
    victim.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(victim)
    assert pcf.load(path, "store-a") == {}  # a planted copy of a valid file, behind a link: not read
    before = victim.read_bytes()
    assert pcf.save(path, "store-a", {})
    assert victim.read_bytes() == before and not path.is_symlink()  # the link replaced, its target untouched


def test_a_linked_cache_directory_is_refused(path, tmp_path):
    real = tmp_path / "elsewhere"
    (path.parent).rename(real)
    path.parent.symlink_to(real)
    assert pcf.load(path, "store-a") == {}
    assert not pcf.save(path, "store-a", ENTRIES)
    assert json.loads((real / pcf.NAME).read_bytes())["entries"] == ENTRIES  # the real file as it was


def test_a_cache_path_that_cannot_be_a_directory_is_false_not_an_error(tmp_path):
    """A home where the file cannot be written (here `cache` is a file, which root cannot write through either)."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "cache").write_bytes(b"not a directory")
    p = home / "cache" / pcf.NAME
    assert pcf.save(p, "store-a", ENTRIES) is False
    assert pcf.load(p, "store-a") == {}
    assert (home / "cache").read_bytes() == b"not a directory"


def test_a_value_json_cannot_hold_is_not_written(path):
    assert pcf.save(path, "store-a", {"x": [[["data_read", 0, float("nan"), 1.0, 1.0]], []]}) is False
    assert pcf.load(path, "store-a") == ENTRIES  # the file as it was
