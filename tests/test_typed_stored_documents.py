"""The stored documents of the answers typed to their leaves still load as main's code wrote them: a job's
weather (with the climate `update_climates` keeps beside it) and an fsstats snapshot, each a row written
by main 8cd062a (tests/data/job_weather_doc_main.json, tests/data/fsstats_snapshot_main.json: the weather
of job 1012 of tests/umami_planted.py's motif after `umami 1012`, a snapshot of a 6-file tree).

Read back through the store and typed, each gives its document again, byte for byte in the one JSON
encoding (the stored weather is what the Jobs list and `umami` read; the snapshot what `fsstats diff`,
the Contents page and `--json` read)."""

from __future__ import annotations

import json
from pathlib import Path

from ioweather.config import Settings
from ioweather.encoding import to_json
from ioweather.services.content.fsstats import SNAPSHOT_FIELDS, DirTotal, Snapshot, SnapshotHeader
from ioweather.services.jobs.weather import Climate, Weather
from ioweather.store import job_weather as wstore
from ioweather.store import open_store

DATA = Path(__file__).parent / "data"


def _main_row(name: str) -> dict:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def test_a_weather_stored_by_main_reads_back_typed(home):
    row = _main_row("job_weather_doc_main.json")
    text = row["doc"]
    store = open_store(Settings.resolve(home, None))
    try:
        wstore.put_many(store, [{"job_key": row["job_key"], "fs": row["fs"], "motif": "m", "start_ns": 0, "end_ns": 1,
                                 "telemetry_sig": "s", "doc": json.loads(text)}])
        [stored] = wstore.of_motif(store, row["fs"], "m")
    finally:
        store.dispose()
    w = Weather.from_json(stored["doc"])
    doc = json.loads(text)
    assert isinstance(w.climate, Climate)
    assert (w.climate.sig, w.climate.history_n, w.climate.n, w.climate.r, w.climate.p) == \
        tuple(doc["climate"][k] for k in ("sig", "history_n", "n", "r", "p"))
    assert [(s.op, s.slowdown) for s in w.probe_slowdown_by_op] == list(doc["probe_slowdown_by_op"].items())
    assert w.verdict == doc["verdict"]
    # every contention, flag and all-targets factor of the document is one kind's, typed
    kinds = {f.kind: f for f in w.coverage_factors.kinds}
    assert kinds and all(doc[f"contention_{k}"] == f.contention and doc[f"coverage_factor_{k}_flagged"] == f.flagged
                         and f.has_all_targets == (f"coverage_factor_{k}_all_targets" in doc) for k, f in kinds.items())
    assert {k for k in doc if k.startswith("contention_")} == {f"contention_{k}" for k in kinds}
    assert to_json(w.to_json()) == to_json(doc)  # the document as main wrote it, key order included
    assert "climate" not in w.answer_json() and "verdict" not in w.answer_json()


def test_a_stored_climate_that_is_not_one_is_recomputed_not_a_crash():
    doc = json.loads(_main_row("job_weather_doc_main.json")["doc"])
    for bad in ("x", {"sig": "s"}, None):
        w = Weather.from_json({**doc, "climate": bad})
        assert w.climate is None and "climate" not in w.to_json()


def test_a_snapshot_stored_by_main_reads_back_typed():
    doc = json.loads(_main_row("fsstats_snapshot_main.json")["document"])
    snap = Snapshot.of(doc)
    assert to_json(snap.to_json()) == to_json(doc)
    assert [d.name for d in snap.top_dirs] == [d["name"] for d in doc["top_dirs"]]
    assert all(isinstance(d, DirTotal) for d in snap.top_dirs)
    assert snap.histograms.file_size.count == doc["histograms"]["file_size"]["count"]
    assert [b.byte_days for b in snap.histograms.mtime_age_days.buckets] == \
        [b["byte_days"] for b in doc["histograms"]["mtime_age_days"]["buckets"]]
    header = SnapshotHeader.of(doc)
    assert [getattr(header, k) for k in SNAPSHOT_FIELDS] == [doc[k] for k in SNAPSHOT_FIELDS]
    # an older snapshot lacks the keys newer walks add: the Contents page's header says None for them
    older = {k: v for k, v in doc.items() if k not in ("skipped_mounts", "notes")}
    assert (SnapshotHeader.of(older).skipped_mounts, SnapshotHeader.of(older).notes) == (None, None)
