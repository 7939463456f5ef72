"""Issue 41, the collector's part: items 2, 3 and 8 to 13 (and 16 to 18 where done).

2. the collector's state and the import markers were written with a plain open() of a fixed
   `NAME.tmp`: a link planted there (or at the final name) wrote into a file outside the store;
3. `<home>/fs-map` was read with none of the input rules (a FIFO hung `why` and every `/api/job`,
   a link's target was printed, /dev/zero a MemoryError, a bad byte a UnicodeDecodeError, a bad
   entry echoed whole), and dataset names from `--fs` and the map were not checked;
8-13. the Lustre collector (real `lctl get_param` captures, tests/lctl_captures.py): a target
   listed twice, an unreadable value, u64 counters past 2^63, a target with a bad name, a state
   file of the wrong shape, an impossible jump.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from lctl_captures import SUM_ADD

from ioweather.config import Settings
from ioweather.errors import StoreError, UserError
from ioweather.sources.telemetry.base import Source
from ioweather.sources.telemetry.lctl_params import parse_capture
from ioweather.sources.telemetry.lctl_source import capture_samples

S = 1_000_000_000
T0 = 1_700_000_040 * S
SECRET = "root:$6$SECRET-HASH-DO-NOT-PRINT:19000:0:99999:7:::"


def _victim(tmp_path: Path) -> tuple[Path, bytes, int]:
    v = tmp_path / "outside" / "victim"
    v.parent.mkdir(parents=True, exist_ok=True)
    v.write_bytes(b"precious, outside the store\n")
    os.utime(v, ns=(1_000_000_000 * S // S, 1_000_000_000 * S // S))
    return v, v.read_bytes(), v.stat().st_mtime_ns


def _unchanged(victim: Path, data: bytes, mtime: int) -> None:
    assert victim.read_bytes() == data and victim.stat().st_mtime_ns == mtime


def _one_line(message: str, limit: int = 400) -> None:
    assert "\n" not in message.strip() and len(message) < limit and "Traceback" not in message, message[:500]


def _within(seconds: float, fn, *args, unblock: Path | None = None, **kw):
    """fn(*args, **kw) in a thread; fails (and opens the FIFO `unblock` for writing, which lets a
    reader stuck on it go) when it has not returned within `seconds`."""
    out: dict = {}

    def run():
        try:
            out["value"] = fn(*args, **kw)
        except BaseException as e:  # noqa: BLE001 (handed to the test)
            out["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        if unblock is not None:
            fd = os.open(unblock, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
        t.join(5)
        raise AssertionError(f"{getattr(fn, '__name__', fn)} did not return within {seconds} s (blocked)")
    if "error" in out:
        raise out["error"]
    return out["value"]


# ------------------------------------------------------------------ 2. state and marker files

def _collect_home(tmp_path):
    """(synthetic Lustre tree, home, its telemetry directory (made), this host's name) for `collect`."""
    from ioweather.sources.telemetry.base import short_hostname
    from ioweather.sources.telemetry.synthetic import make_tree
    from ioweather.store import telemetry_layout as layout

    make_tree(tmp_path / "tree", 2, fs="k", n_mdts=0)
    home = tmp_path / "home"
    tdir = layout.telemetry_dir(Settings(home=home))
    tdir.mkdir(parents=True)
    return tmp_path / "tree", home, tdir, short_hostname()


def _collect(home, root, logs, **kw):
    from ioweather.services.telemetry import collect

    opts = dict(interval=0.1, source_names="lustre", root=str(root), fs="k", duration=0.35, flush_s=0.1,
                timeout=None, install_signals=False, say=logs.append, quiet=True)
    return collect.run_collect(Settings(home=home), **{**opts, **kw})


@pytest.mark.slow
def test_collect_never_writes_its_state_through_a_planted_link(tmp_path):
    root, home, tdir, host = _collect_home(tmp_path)
    victim, data, mtime = _victim(tmp_path)
    # the fixed temporary names the state and its intent were written through, and the state itself
    planted = [tdir / f".collect-{host}.intent.json.tmp", tdir / f".collect-{host}.state.json.tmp",
               tdir / f".collect-{host}.state.json"]
    for p in planted:
        p.symlink_to(victim)
    logs: list[str] = []
    summary = _collect(home, root, logs)
    _unchanged(victim, data, mtime)
    assert summary.rows_written > 0
    state = json.loads((tdir / f".collect-{host}.state.json").read_text())  # written, the link replaced
    assert state["prev"] and not (tdir / f".collect-{host}.state.json").is_symlink()
    # the link at the state's name was read as no state, said once, and set aside (never followed)
    said = [m for m in logs if "collector state" in m]
    assert len(said) == 1 and "leads outside" in said[0] and "set aside" in said[0], logs
    assert data.decode().strip() not in " ".join(logs)


def test_state_and_marker_writers_refuse_links_at_their_names(tmp_path):
    from ioweather.services.telemetry.collector import Collector
    from ioweather.store.telemetry_imports import write_marker

    victim, data, mtime = _victim(tmp_path)
    d = tmp_path / "home" / "parquet" / "telemetry"
    d.mkdir(parents=True)
    col = Collector([], 5.0, "k")
    col.prev[("k", "t", "write_bytes")] = (T0, 2**64 - 1)
    state = d / ".collect-h.intent.json"
    Path(f"{state}.tmp").symlink_to(victim)
    col.save_state(state, {"k": ["fs=k/date=2026-01-01/x.parquet"]})
    assert json.loads(state.read_text())["prev"] == [["k", "t", "write_bytes", T0, 2**64 - 1]]
    state.unlink()
    state.symlink_to(victim)
    with pytest.raises(StoreError) as e:
        col.save_state(state)
    _one_line(str(e.value))
    assert "symlink" in str(e.value)
    _unchanged(victim, data, mtime)

    base = d / "fs=k"
    (base / "_imports").mkdir(parents=True)
    (base / "_imports" / ".csv-1.json.tmp").symlink_to(victim)
    write_marker(base, "csv-1", ["r1"], [base / "date=2026-01-01" / "csv-1-r1-a.parquet"])
    assert json.loads((base / "_imports" / "csv-1.json").read_text())["runs"] == ["r1"]
    (base / "_imports" / "csv-2.json").symlink_to(victim)
    with pytest.raises(StoreError) as e:
        write_marker(base, "csv-2", ["r2"], [])
    _one_line(str(e.value))
    _unchanged(victim, data, mtime)


# ------------------------------------------------------------------------------- 3. the fs-map

def _hostile_maps(tmp_path, home):
    """(label, make) for every hostile fs-map: make() plants it at home/fs-map."""
    secret = tmp_path / "shadow"
    secret.write_text(SECRET + "\n")

    def fifo():
        os.mkfifo(home / "fs-map")

    def link_out():
        (home / "fs-map").symlink_to(secret)

    def device():
        (home / "fs-map").symlink_to("/dev/zero")

    def not_utf8():
        (home / "fs-map").write_bytes(b"/lus/theta-fs0 theta\n/scratch scr\xffatch\n")

    def huge():
        (home / "fs-map").write_bytes(b"/lus " + b"x" * (10 << 20) + b"\n")

    def long_entry():  # under the size cap, one entry of 900 KB
        (home / "fs-map").write_bytes(b"/lus/theta-fs0 theta\n" + b"y" * 900_000 + b"\n")

    def bad_name():
        (home / "fs-map").write_text("/lus/theta-fs0 ../../etc\n")

    def link_in_bad():  # a link inside the home is followed, but its content is never quoted
        (home / "elsewhere").write_text(SECRET + "\n")
        (home / "fs-map").symlink_to(home / "elsewhere")

    return [("FIFO", fifo, "FIFO"), ("link out of the home", link_out, "leads outside"),
            ("device", device, None), ("not UTF-8", not_utf8, "not UTF-8 text (byte 33)"),
            ("10 MB", huge, "larger than 1,048,576 bytes"), ("long entry", long_entry, "(900,000 characters)"),
            ("bad dataset name", bad_name, "dataset name"), ("link in the home", link_in_bad, "entry 1:")]


def _reset(home):
    for p in (home / "fs-map", home / "elsewhere"):
        if p.is_symlink() or p.exists():
            p.unlink()


def test_the_fs_map_is_read_like_an_input(tmp_path):
    from ioweather.config import load_fs_map

    home = tmp_path / "home"
    home.mkdir()
    for label, make, says in _hostile_maps(tmp_path, home):
        _reset(home)
        make()
        with pytest.raises(UserError) as e:
            _within(10, load_fs_map, home, unblock=home / "fs-map")
        msg = str(e.value)
        _one_line(msg)
        assert "SECRET" not in msg and "yyyyyyyyyy" * 9 not in msg, (label, msg)
        assert says is None or says in msg, (label, msg)
    _reset(home)
    (home / "fs-map").write_text("/lus/theta-fs0 theta\n")
    assert load_fs_map(home) == [("/lus/theta-fs0", "theta")]


def _invoke(home, *args):
    from ioweather.cli import cli as main

    return CliRunner().invoke(main, ["--home", str(home), *args])


def test_why_and_probe_run_refuse_a_hostile_fs_map_in_one_line(tmp_path, testdata):
    log = testdata / "darshan" / "imbalanced-io.darshan"
    home = tmp_path / "home"
    home.mkdir()
    probe_dir = tmp_path / "probe"
    probe_dir.mkdir()
    for label, make, says in _hostile_maps(tmp_path, home):
        if label in ("long entry", "not UTF-8", "device"):
            continue  # the reader's own test covers them; one command run each is enough
        _reset(home)
        make()
        for args in (("why", str(log)), ("probe", "run", str(probe_dir), "--duration", "1s")):
            r = _within(60, _invoke, home, *args, unblock=home / "fs-map")
            assert r.exit_code == 2, (label, args, r.exit_code, r.output[-500:], r.exception)
            _one_line(r.stderr)
            assert "SECRET" not in r.output and (says is None or says in r.stderr), (label, args, r.stderr)
    _reset(home)
    r = _invoke(home, "why", str(log), "--fs", "../etc")
    assert r.exit_code == 2 and "invalid file system name '../etc'" in r.stderr, r.stderr


@pytest.mark.slow
def test_umami_and_api_job_answer_with_a_fifo_as_fs_map(tmp_path, testdata):
    from starlette.testclient import TestClient

    from ioweather.web.app import create_app

    home = tmp_path / "home"
    r = _invoke(home, "jobs", "ingest", str(testdata / "darshan" / "imbalanced-io.darshan"), "--workers", "1")
    assert r.exit_code == 0, r.output
    os.mkfifo(home / "fs-map")
    # umami: the fourth command the FIFO hung (why and probe run are above; watch runs probe run's code)
    r = _within(60, _invoke, home, "umami", "1452113755", unblock=home / "fs-map")
    assert r.exit_code == 2 and "is a FIFO" in r.stderr, (r.exit_code, r.output[-500:])
    _one_line(r.stderr)
    c = TestClient(create_app(Settings.resolve(home), warm=False), base_url="http://127.0.0.1")
    jobs = _within(60, c.get, "/api/jobs").json()
    h = jobs["list"]["rows"][0]["id"]
    for _ in range(3):  # each request used to hold a server thread forever
        resp = _within(30, c.get, f"/api/job?id={h}", unblock=home / "fs-map")
        assert resp.status_code in (200, 400, 404), resp.status_code
        assert "FIFO" in json.dumps(resp.json())
    assert _within(30, c.get, "/metrics").status_code == 200


# ----------------------------------------------------------------- 8-13. the Lustre collector

class Captures(Source):
    """A live `lustre` source that reads the given `lctl get_param` outputs, one a tick, through the
    real parser and the real readings (lctl_source.capture_samples)."""

    name = "lustre"

    def __init__(self, texts):
        super().__init__("/", host="oss1")
        self.texts = list(texts)

    def collect(self):
        cap = parse_capture(self.texts.pop(0))
        for note in cap.notes:
            self.warn(note)
        return capture_samples(cap, self.host)


def _real(testdata) -> str:
    return (testdata / "lustrefs-exporter" / "valid.txt").read_text()


def _set_line(text: str, param: str, name: str, line: str | None) -> str:
    """`text` with the row `name` of the block `param=` replaced by `line` (added when absent, removed
    when None)."""
    lines = text.split("\n")
    i = lines.index(f"{param}=")
    j = i + 1
    while j < len(lines) and "=" not in lines[j]:
        j += 1
    block = [x for x in lines[i + 1:j] if x.split()[:1] != [name]] + ([line] if line else [])
    return "\n".join(lines[:i + 1] + block + lines[j:])


def _write_bytes(samples: int, total: int) -> str:
    return f"write_bytes               {samples} samples [bytes] 98304 4194304 {total} 4398038385562"


def _ticks(texts, interval_s=60.0, **kw):
    from ioweather.services.telemetry.collector import Collector

    logs: list[str] = []
    col = Collector([Captures(texts)], interval_s, "oss1", log=logs.append, **kw)
    for i in range(len(texts)):
        col.tick(T0 + i * int(interval_s * S))
    rows = {}
    for fs, parts in col.pending.items():
        for keys, start, vals, length in parts:
            for k, st, v, ln in zip(keys, start, vals, length):
                rows.setdefault((k[1], k[2]), []).append((int(st), float(v), float(ln)))
    return col, rows, logs


OST0, OST1 = "obdfilter.ai400-OST0000.stats", "obdfilter.ai400-OST0001.stats"


def test_a_target_listed_twice_is_left_out_of_its_tick_with_a_note(testdata):
    real = _real(testdata)
    a = _set_line(real, OST1, "write_bytes", _write_bytes(10, 1000))
    b = _set_line(real, OST1, "write_bytes", _write_bytes(20, 5000))
    twice = b + f"{OST1}=\n" + "\n".join(b.split(f"{OST1}=\n")[1].split("\n")[:4]) + "\n" + \
        _write_bytes(30, 9000) + "\n"
    c = _set_line(real, OST1, "write_bytes", _write_bytes(40, 12000))
    col, rows, logs = _ticks([a, twice, c])
    w = rows[("ai400-OST0001", "write_bytes")]
    # the tick that listed it twice has no reading of it: the two intervals around it are missing (a
    # gap, stats/counters.py), never 4000 + 4000 bytes or a zero-length interval
    assert [(st, ln) for st, _, ln in w] == [(T0, 60.0), (T0 + 60 * S, 60.0)] and np.isnan([v for _, v, _ in w]).all()
    assert all(ln > 0 for vs in rows.values() for _, _, ln in vs)  # no zero-length interval
    assert rows[("ai400-OST0000", "write_bytes")][0][1] == 0.0  # the other targets stored as read
    assert any("printed more than once" in m and OST1 in m for m in logs), logs


def test_a_series_read_twice_in_one_tick_by_the_collector_is_left_out(testdata):
    from ioweather.services.telemetry.collector import Collector
    from ioweather.sources.telemetry.base import Sample, Source

    class Twice(Source):
        name = "twice"
        n = 0

        def collect(self):
            self.n += 1
            v = 100 * self.n
            return [Sample("x-OST0000", "read_bytes", v, fs="x"), Sample("x-OST0000", "read_bytes", v + 7, fs="x"),
                    Sample("x-OST0001", "read_bytes", v, fs="x")]

    logs: list[str] = []
    col = Collector([Twice("/")], 5.0, "x", log=logs.append)
    col.tick(T0)
    col.tick(T0 + 5 * S)
    keys = [k for parts in col.pending["x"] for k in parts[0]]
    assert keys == [("x", "x-OST0001", "read_bytes")]
    assert len(logs) == 1 and "read twice in one tick" in logs[0]


def test_an_unreadable_value_is_missing_not_zero(testdata):
    real = _real(testdata)
    nan = "read_bytes                nan samples [bytes] 4096 1048576 nan 0"
    a = _set_line(real, OST0, "read_bytes", "read_bytes                5 samples [bytes] 4096 1048576 20480 0")
    b = _set_line(real, OST0, "read_bytes", nan)
    c = _set_line(real, OST0, "read_bytes", "read_bytes                9 samples [bytes] 4096 1048576 40960 0")
    col, rows, logs = _ticks([a, b, c])
    for metric in ("read_bytes", "read_ops"):
        got = rows[("ai400-OST0000", metric)]
        assert [st for st, _, _ in got] == [T0, T0 + 60 * S] and all(math.isnan(v) for _, v, _ in got), got
    assert rows[("ai400-OST0001", "read_bytes")] == [(T0, 0.0, 60.0), (T0 + 60 * S, 0.0, 60.0)]  # idle: 0
    # the importer: the same capture gives a missing reading, not 0
    from ioweather.services.telemetry.ingest import wide_to_long

    wide = {w.metric: w for w in _import([a, b, c])}
    long = wide_to_long(wide["read_bytes"])
    v = long[long.target == "ai400-OST0000"].value.to_numpy()
    assert v.size == 2 and np.isnan(v).all()


def _import(texts, tmp=None):
    import tempfile

    from ioweather.sources.telemetry.lctl_source import read_captures
    from lctl_captures import later

    with tempfile.TemporaryDirectory() as d:
        for i, t in enumerate(texts):
            Path(d, f"c{i}.txt").write_text(later(t, 60 * i) if i else t)
        return read_captures(d, None, None).chunks


def test_u64_counters_past_2_63_keep_exact_deltas(testdata):
    real = _real(testdata)
    base = 2**63 + 12345
    texts = [_set_line(real, OST1, "write_bytes", _write_bytes(10 + i, base + 1000 * i)) for i in range(4)]
    col, rows, logs = _ticks(texts)
    assert [v for _, v, _ in rows[("ai400-OST0001", "write_bytes")]] == [1000.0, 1000.0, 1000.0]
    assert col.prev[("ai400", "ai400-OST0001", "write_bytes")][1] == base + 3000  # an int, as read
    # and `import lctl-params` (a Wide of integers, rebased per target)
    from ioweather.services.telemetry.ingest import wide_to_long

    wide = {w.metric: w for w in _import(texts)}
    long = wide_to_long(wide["write_bytes"])
    # lctl_captures.later() adds SUM_ADD to every sum of the captures after the first
    assert long[long.target == "ai400-OST0001"].value.tolist() == [1000.0 + SUM_ADD, 1000.0, 1000.0]


def test_an_impossible_jump_is_missing_with_a_note(testdata):
    real = _real(testdata)
    texts = [_set_line(real, OST1, "write_bytes", _write_bytes(5, v)) for v in (500, 2**64 - 10, 2**64 - 10)]
    texts.append(_set_line(real, OST1, "write_bytes", _write_bytes(6, 2**64 - 9)))
    col, rows, logs = _ticks(texts)
    got = [v for _, v, _ in rows[("ai400-OST0001", "write_bytes")]]
    assert math.isnan(got[0]) and got[1:] == [0.0, 1.0], got
    assert sum("jumped by 1.84e+19" in m for m in logs) == 1, logs


def test_a_target_with_a_bad_dataset_name_is_skipped_and_the_others_stored(testdata, tmp_path):
    from ioweather.store import telemetry_layout as layout

    real = _real(testdata)
    bad = real + "obdfilter._bad@fs-OST0009.stats=\n" + "\n".join(
        real.split(f"{OST0}=\n")[1].split("\n")[:5]) + "\n"
    settings = Settings(home=tmp_path / "home")
    col, rows, logs = _ticks([bad, _set_line(bad, OST1, "write_bytes", _write_bytes(1, 1))])
    assert ("_bad@fs-OST0009", "write_bytes") not in rows
    assert sum("'_bad@fs'" in m and "left out" in m for m in logs) == 1, logs
    n = col.flush(lambda fs, frame: layout.write_rows(settings, fs, frame, writer="collect-t"))
    assert n > 0 and layout.list_fs(settings) == ["ai400", "oss1"]
    assert layout.read_frame(settings, "ai400").query("target == 'ai400-OST0001' and metric == 'write_bytes'") \
        .value.tolist() == [1.0]


@pytest.mark.parametrize("body", [
    {"interval_s": 0.1, "prev": [[1, 2]]},
    {"interval_s": 0.1, "prev": {"k": 1}},
    {"interval_s": 0.1, "prev": [["k", "t", "m", "x", 1]]},
    [1, 2, 3],
    "a string",
])
def test_a_state_file_of_the_wrong_shape_is_set_aside(tmp_path, body):
    from ioweather.services.telemetry import collect
    from ioweather.services.telemetry.collector import Collector
    from ioweather.sources.telemetry.base import short_hostname
    from ioweather.store import telemetry_layout as layout

    tdir = layout.telemetry_dir(Settings(home=tmp_path / "home"))
    tdir.mkdir(parents=True)
    host = short_hostname()
    state, intent = tdir / f".collect-{host}.state.json", tdir / f".collect-{host}.intent.json"
    outside = tmp_path / "keep.parquet"
    outside.write_bytes(b"PAR1")
    for path in (state, intent):
        path.write_text(json.dumps(body))
        col = Collector([], 0.1, "k")
        restored = collect.recover(col, state, intent, tdir)
        restored = restored if restored is not None else col.load_state(state)
        assert restored == 0 and col.prev == {}
        assert not path.exists() and len(list(tdir.glob(f"{path.name}.damaged-*"))) == 1
        for p in tdir.glob(f"{path.name}.damaged-*"):
            p.unlink()
    # an intent naming files outside the day directories is no intent: nothing of it is removed
    intent.write_text(json.dumps({"interval_s": 0.1, "prev": [], "files": {"k": [str(outside), "../../../keep.parquet"]}}))
    assert collect.recover(Collector([], 0.1, "k"), state, intent, tdir) is None
    assert outside.exists() and not intent.exists()


@pytest.mark.slow
def test_collect_starts_over_a_damaged_state_with_one_warning(tmp_path):
    root, home, tdir, host = _collect_home(tmp_path)
    state = tdir / f".collect-{host}.state.json"
    state.write_text(json.dumps({"interval_s": 0.1, "prev": [[1, 2]]}))
    for run in range(2):  # it used to be a traceback at every start
        logs: list[str] = []
        assert _collect(home, root, logs).rows_written > 0
        assert json.loads(state.read_text())["prev"]
        assert sum("is not usable" in m for m in logs) == (1 - run), logs
    assert len(list(tdir.glob(f"{state.name}.damaged-*"))) == 1


# ------------------------------------------------------------------ 16. an lctl without end

def test_an_lctl_that_prints_without_end_is_cut_at_the_cap(tmp_path, monkeypatch, testdata):
    from ioweather.sources.telemetry.base import SourceError
    from ioweather.sources.telemetry.lctl_source import LctlLustre

    d = tmp_path / "bin"
    d.mkdir()
    (d / "cap.txt").write_text(_real(testdata))
    (d / "lctl").write_text(f"#!/bin/sh\nwhile :; do cat {d}/cap.txt; done\n")
    (d / "lctl").chmod(0o755)
    monkeypatch.setenv("PATH", f"{d}:{os.environ['PATH']}")
    src = LctlLustre("/", timeout_s=20)
    src.max_output_bytes = 2 << 20
    t0 = time.monotonic()
    with pytest.raises(SourceError, match=r"^lctl get_param printed more than 2 MiB, the most read of it \(killed\)$"):
        src.collect()
    assert time.monotonic() - t0 < 10  # the cap, not the deadline
    src.max_output_bytes = 64 << 20
    (d / "lctl").write_text(f"#!/bin/sh\ncat {d}/cap.txt\n")  # a whole output under the cap is read as before
    assert {s.metric for s in src.collect()} >= {"write_bytes", "capacity_bytes"}


# ------------------------------------------------------- 17. a CSV header checked before its body

@pytest.mark.parametrize("fields, says", [(40_000, "missing column(s) time, target, metric, value"),
                                          (40_000, "columns, more than 256"),
                                          (600_000, "header line is longer than 1,048,576 bytes")])
def test_a_one_line_csv_of_many_fields_fails_fast(tmp_path, fields, says):
    path = tmp_path / "wide.csv"
    names = [f"c{i}" for i in range(fields)] if "missing" in says else ["time", "target", "metric", "value"] + \
        [f"x{i}" for i in range(fields)]
    if "missing" in says:
        path.write_text(",".join(f"{i % 10}" for i in range(fields)) + "\n")  # 80 KB of one-digit fields
    else:
        path.write_text(",".join(names) + "\n")
    t0 = time.monotonic()
    r = _invoke(tmp_path / "home", "import", "csv", str(path), "--fs", "x")
    took = time.monotonic() - t0
    assert r.exit_code == 2 and says in r.stderr, r.stderr[:300]
    _one_line(r.stderr)
    assert took < 5, took  # 17.6 s before, for 40,000 fields


# ------------------------------------------------------------ 18. a scraper that hangs up at once

def test_a_scraper_that_hangs_up_is_one_log_line_not_a_traceback(tmp_path, capfd):
    import socket
    import struct

    import pandas as pd

    from ioweather.services.telemetry.exporter import TelemetryExporter, make_server
    from ioweather.store import telemetry_layout as layout

    settings = Settings(home=tmp_path / "home")
    t = T0 + np.arange(2000, dtype=np.int64) * 5 * S
    layout.write_rows(settings, "scr", pd.DataFrame({"time_ns": t, "target": "scr-OST0000", "metric": "write_bytes",
                                                      "value": 1.0, "interval_s": 5.0}))
    logs: list[str] = []
    exp = TelemetryExporter(settings, say=logs.append)
    exp.exposition(wait_s=60)
    server = make_server(exp, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        for _ in range(5):
            s = socket.create_connection(server.server_address[:2], timeout=10)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # a reset, not a FIN
            s.close()
        s = socket.create_connection(server.server_address[:2], timeout=10)  # and it still answers
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        answer = b""
        while chunk := s.recv(65536):  # the whole answer: closing with bytes unread would be a hang-up too
            answer += chunk
        assert answer.startswith(b"HTTP/1.0 200") and b"/metrics" in answer
        s.close()
    finally:
        server.shutdown()
        server.server_close()
    err = capfd.readouterr().err
    assert "Traceback" not in err, err[:2000]
    assert len(logs) <= 5 and all("hung up" in m and "\n" not in m for m in logs), logs
