"""Stores for the tests of the Jobs, Workload, Contents and Factors pages, filled the way users fill them
(the CLI on real Darshan logs, generated trees, synthetic telemetry), plus labels built to break HTML."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pyarrow as pa
import pytest

from ioweather.config import Settings
from ioweather.store import open_store
from ioweather.store import jobs as jobs_store

#: A label that breaks naive HTML, JSON-in-HTML and Plotly text if it is not escaped.
NASTY = """<script>window.__xss=1</script><img src=x onerror="window.__xss=2"> 'q' & "x\\"""
#: The same without '/', for file names.
NASTY_NAME = """<img src=x onerror="window.__xss=3"> 'q' & "x"""
#: A small real log the NASTY job is made from.
NASTY_SOURCE = "treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan"


#: As a site would pass it: Darshan logs without DXT do not name their nodes.
CORES_PER_NODE = 16


def nasty_hash() -> str:
    return hashlib.sha256(NASTY.encode()).hexdigest()


def fill_jobs(home: Path, darshan: Path, run_cli, work: Path) -> None:
    """Every real log through `ioweather jobs ingest`, a truncated copy named NASTY_NAME (a real failure),
    and one job whose executable and file names are NASTY (a real log's extraction, relabelled)."""
    from ioweather.services.jobs.ingest import extract

    work.mkdir(parents=True, exist_ok=True)
    bad = work / f"{NASTY_NAME}.darshan"
    bad.write_bytes((darshan / NASTY_SOURCE).read_bytes()[:700])
    run_cli("jobs", "ingest", str(darshan), str(bad), "--workers", "2", "--cores-per-node", str(CORES_PER_NODE),
            home=home, check=True)

    kind, row, table = extract(str(darshan / NASTY_SOURCE), frozenset(), CORES_PER_NODE)
    assert kind == "ok"
    h = nasty_hash()
    row.update(log_hash=h, exe=NASTY + " --input " + NASTY, path=f"/archive/{NASTY}.darshan",
               path_hash=jobs_store.path_hash(f"/archive/{NASTY}.darshan"), top_file=f"/scratch/{NASTY}")
    names = [f"/scratch/{NASTY}/{i}" for i in range(table.num_rows)]
    table = table.set_column(table.schema.get_field_index("log_hash"), "log_hash", pa.array([h] * table.num_rows))
    table = table.set_column(table.schema.get_field_index("name"), "name", pa.array(names, pa.string()))
    settings = Settings.resolve(home)
    store = open_store(settings)
    jobs_store.write_batch(store, settings.parquet_dir, [row], [table], [])
    store.dispose()


#: The CSV file system: 6 hours at 60 s on 3 targets, a quiet floor and one 20-minute burst of 3 GiB/s
#: (read 2, write 1) starting at CSV_BURST_MIN.
CSV_FS = "csv-fs"
CSV_T0 = 1_700_000_000  # unix seconds, 2023-11-14T22:13:20Z
CSV_BURST_MIN = 150


def csv_telemetry(path: Path, minutes: int = 360, burst_min: int = CSV_BURST_MIN) -> None:
    gib = 1 << 30
    lines = ["time,target,metric,value"]
    for m in range(minutes):
        burst = burst_min <= m < burst_min + 20
        for k in range(3):
            read = (2 * gib * 60 // 3) if burst else 1_000_000 * (k + 1)
            write = (gib * 60 // 3) if burst else 500_000 * (k + 1)
            t = CSV_T0 + 60 * m
            lines.append(f"{t},csv-OST{k:04d},read_bytes,{read}")
            lines.append(f"{t},csv-OST{k:04d},write_bytes,{write}")
    path.write_text("\n".join(lines) + "\n")


def fill_workload(home: Path, run_cli, work: Path) -> None:
    """The workload tests' synthetic file system with known truth (`write_rows`, as `collect` stores it)
    and a small one through `ioweather import csv`."""
    import workload_synthetic as syn
    from ioweather.store.telemetry_layout import write_rows

    write_rows(Settings.resolve(home), "syn", syn.frame())
    work.mkdir(parents=True, exist_ok=True)
    csv_telemetry(work / "telemetry.csv")
    run_cli("import", "csv", str(work / "telemetry.csv"), "--fs", CSV_FS, "--interval", "60s", home=home, check=True)


#: The content tree: (directory, file name, size, age in days) before and after it grows.
TREE_V1 = [("proj_a", "empty", 0, 0.5), ("proj_a", "small", 100, 3.2), ("proj_a", "mid", 5000, 20.5),
           ("proj_b", "big", 3 << 20, 400.2), ("proj_b", "k70", 70_000, 9.7), (NASTY_NAME, "f1", 1500, 1.5),
           (NASTY_NAME, NASTY_NAME, 12_345, 70.1)]
TREE_V2_ADD = [("proj_b", "bigger", 9 << 20, 0.2), ("proj_c", "new", 2048, 0.1), (NASTY_NAME, "f2", 300, 2.5)]
TREE_V2_DEL = [("proj_a", "mid")]


def _make_file(root: Path, d: str, name: str, size: int, age_days: float, now_ns: int) -> None:
    p = root / d / name
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p, "wb") as f:
        f.truncate(size)  # sparse: st_size is what the statistics weigh
    t = now_ns - int(age_days * 86_400e9)
    os.utime(p, ns=(t, t))


def tree_v2() -> list[tuple]:
    gone = {(d, n) for d, n in TREE_V2_DEL}
    return [x for x in TREE_V1 if (x[0], x[1]) not in gone] + TREE_V2_ADD


def fill_contents(home: Path, run_cli, work: Path) -> None:
    """`ioweather fsstats DIR --label L` on a generated tree: labels v1 and weekly, the tree grows, then
    labels NASTY and weekly again (so `weekly` resolves to its newer snapshot)."""
    root = work / "tree"
    now = time.time_ns()
    for d, name, size, age in TREE_V1:
        _make_file(root, d, name, size, age, now)
    for label in ("v1", "weekly"):
        run_cli("fsstats", str(root), "--label", label, "--quiet", home=home, check=True)
    for d, name in TREE_V2_DEL:
        (root / d / name).unlink()
    for d, name, size, age in TREE_V2_ADD:
        _make_file(root, d, name, size, age, now)
    for label in (NASTY, "weekly"):
        run_cli("fsstats", str(root), "--label", label, "--quiet", home=home, check=True)


#: The probe target whose density has two modes: every op 20x slower for the last 2 hours of a day.
BIMODAL = "bimodal"
SLOW_FACTOR = 20.0


def fill_probe(home: Path) -> int:
    """Probe samples for the Factors page, written through the store's bulk insert as the probe writes
    them: BIMODAL (a day every 5 s) and NASTY (an hour every 10 s). Returns the end of the samples (ns)."""
    from web_synthetic import Episode, add_target

    t0 = (time.time_ns() // 10**9) * 10**9
    h = 3600 * 10**9
    store = open_store(Settings.resolve(home))
    add_target(store, BIMODAL, t0 - 24 * h, t0, period_s=5, seed=3, episodes=[Episode(t0 - 2 * h, t0, SLOW_FACTOR)])
    add_target(store, NASTY, t0 - h, t0, period_s=10, seed=4)
    store.dispose()
    return t0


_HOMES: dict[str, Path] = {}
# Where the probe samples end: the store is built once per session, so by the time a later module
# asks for "the last 6 hours" the clock may be many minutes past the data.
PROBE_END_NS: list[int] = []


@pytest.fixture(scope="module")
def pages_home(tmp_path_factory, testdata) -> Path:
    """One store with the data of every page, built once per test session (read-only for the tests)."""
    from conftest import run_cli

    if "all" not in _HOMES:
        root = tmp_path_factory.mktemp("webpages")
        fill_jobs(root / "home", testdata / "darshan", run_cli, root / "work")
        fill_workload(root / "home", run_cli, root / "work")
        fill_contents(root / "home", run_cli, root / "work")
        PROBE_END_NS.append(fill_probe(root / "home"))
        _HOMES["all"] = root / "home"
    return _HOMES["all"]


@pytest.fixture(scope="module")
def pages_server(pages_home):
    from ioweather.web.app import create_app
    from web_server import Server

    with Server(create_app(Settings.resolve(pages_home), warm=False)) as s:
        yield s
