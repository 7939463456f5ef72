"""The admin's file-system pages (/servers, /metadata, /capacity, /talkers) against independent computations:
direct SQL on the LMT test database (sums of counter deltas), a plain reading of the `lctl dl -t` archive,
exact job_stats bytes added to a live mock procfs tree while `collect` samples it; bad input and hostile
job ids."""

from __future__ import annotations

import gzip
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from ioweather.config import Settings
from ioweather.web.app import create_app
from collect_growth import collect_with_growth
from lmt_reference import lmt_deltas
from shared_stores import built_once, copy_home, pytokio_telemetry
from web_pages_data import NASTY
from web_server import Server, api, assert_bad_request, escaped_page

LMT = "lmt/snx11025_2018-01-28.sqlite3"
WINDOW = "since=2018-01-27T23:00:00Z&until=2018-01-28T01:00:00Z"
ODD_LCTL = """BEGIN 1700000000
  0 UP mgc MGC10.0.0.1@tcp 3547302e-74a0 5
  3 UP osc odd-OST0000-osc-ffff885f81a64000 8dbdc7f6 5 10.0.0.10@tcp
  4 XY osc odd-OST0001-osc-ffff885f81a64000 8dbdc7f6 5 10.0.0.11@tcp
  5 IN osc odd-OST0002-osc-ffff885f81a64000 8dbdc7f6 5 10.0.0.12@tcp
"""
ODD_DF = """BEGIN 1700000000
UUID                   1K-blocks        Used   Available Use% Mounted on
odd-OST0000_UUID       1000000      250000      750000  25% /odd[OST:0]
odd-OST0001_UUID       1000000      900000      100000  90% /odd[OST:1]
BEGIN 1700086400
UUID                   1K-blocks        Used   Available Use% Mounted on
odd-OST0000_UUID       1000000      350000      650000  35% /odd[OST:0]
odd-OST0001_UUID       1000000      900000      100000  90% /odd[OST:1]
"""
JOB_ADD = {"1001": 7 * (1 << 20), "dd.4242": 3 * (1 << 20), NASTY: 5 * (1 << 20)}


def _job_stats(jobs: dict[str, int]) -> str:
    out = ["job_stats:"]
    for job, written in jobs.items():
        out += [f"- job_id:          {job}", "  snapshot_time:   1510782606",
                "  read_bytes:      { samples:           0, unit: bytes, min:       0, max:       0, sum:               0 }",
                f"  write_bytes:     {{ samples:       {written // 4096}, unit: bytes, min:    4096, max: 4194304, sum:    {written} }}",
                "  punch:           { samples:           1, unit:  reqs }"]
    return "\n".join(out) + "\n"


def _build(root: Path, tmp_path_factory, testdata: Path) -> None:
    from conftest import run_cli

    home = copy_home(pytokio_telemetry(tmp_path_factory), root / "home")
    work = root / "odd"
    work.mkdir()
    (work / "lctl.txt").write_text(ODD_LCTL)
    (work / "df.txt").write_text(ODD_DF)
    run_cli("import", "lctl", str(work / "lctl.txt"), "--fs", "odd", home=home, check=True)
    run_cli("import", "lfsdf", str(work / "df.txt"), "--fs", "odd", home=home, check=True)
    _collect_jobs(home, testdata, work)


@pytest.fixture(scope="module")
def home(tmp_path_factory, testdata):
    """The pages' store, built once per run (its `collect` of 8 s is most of it) for this module and the two
    that import this fixture (test_web_fsview_browser, test_little_data_talkers): each serves its own copy."""
    built = built_once(tmp_path_factory, "fsview", lambda root: _build(root, tmp_path_factory, testdata))
    return copy_home(built / "home", tmp_path_factory.mktemp("fsview") / "home")


def _collect_jobs(home: Path, testdata: Path, work: Path) -> None:
    """`collect` on a copy of the mock tree whose OST0000 job_stats grow by JOB_ADD mid-run."""
    root = work / "tree"
    shutil.copytree(testdata / "lustre-procfs", root)
    js = root / "proc/fs/lustre/obdfilter/lustrefs-OST0000/job_stats"
    js.write_text(_job_stats({j: 0 for j in JOB_ADD}))

    def grow():
        tmp = js.with_suffix(".tmp")
        tmp.write_text(_job_stats(JOB_ADD))
        tmp.replace(js)

    collect_with_growth(home, root, grow)


@pytest.fixture(scope="module")
def server(home):
    with Server(create_app(Settings.resolve(home))) as s:
        yield s


def test_servers_bytes_equallmt_deltas(server, testdata):
    code, d = api(server, f"/api/servers?fs=snx11025&{WINDOW}")
    assert code == 200
    db = testdata / LMT
    for col, key in (("READ_BYTES", "read_bytes"), ("WRITE_BYTES", "write_bytes")):
        want = lmt_deltas(db, f"""
            SELECT i.OST_NAME, d.{col} - LAG(d.{col}) OVER (PARTITION BY d.OST_ID ORDER BY t.TIMESTAMP)
            FROM OST_DATA d JOIN OST_INFO i USING (OST_ID) JOIN TIMESTAMP_INFO t USING (TS_ID)""")
        got = {t["target"]: t[key] for t in d["targets"]}
        assert len(got) == len(want) == 24
        assert got == {f"snx11025-{k}" if not k.startswith("snx") else k: float(v) for k, v in want.items()}
    total = sum(t["bytes"] for t in d["targets"])
    assert [t["share"] for t in d["targets"]] == pytest.approx([t["bytes"] / total for t in d["targets"]], rel=1e-12)
    assert [t["bytes"] for t in d["targets"]] == sorted((t["bytes"] for t in d["targets"]), reverse=True)
    # Heatmap: integers 0..levels of the highest rate, one row per target, one column per time bin.
    h = d["heatmap"]
    assert len(h["read"]) == 24 and {len(r) for r in h["read"]} == {len(d["time"])}
    assert max(v for r in h["read"] + h["write"] for v in r if v is not None) == h["levels"]


def test_target_series_and_sorts(server):
    code, d = api(server, f"/api/servers?fs=snx11025&{WINDOW}&sort=peak&target=snx11025-OST0003")
    assert code == 200 and d["target"] == "snx11025-OST0003"
    row = next(t for t in d["targets"] if t["target"] == "snx11025-OST0003")
    s = d["series"]
    assert np.nansum(np.array(s["read_bps"], dtype=float)) * s["step_s"] == pytest.approx(row["read_bytes"], rel=1e-12)
    assert [t["peak_bps"] for t in d["targets"]] == sorted((t["peak_bps"] for t in d["targets"]), reverse=True)
    code, d = api(server, f"/api/servers?fs=snx11025&{WINDOW}&sort=name")
    assert [t["target"] for t in d["targets"]] == sorted(t["target"] for t in d["targets"])


def test_metadata_ops_equallmt_deltas(server, testdata):
    code, d = api(server, f"/api/metadata?fs=snx11025&{WINDOW}")
    assert code == 200
    want = lmt_deltas(testdata / LMT, """
        SELECT o.OPERATION_NAME, d.SAMPLES - LAG(d.SAMPLES) OVER (PARTITION BY d.MDS_ID, d.OPERATION_ID ORDER BY t.TIMESTAMP)
        FROM MDS_OPS_DATA d JOIN OPERATION_INFO o USING (OPERATION_ID) JOIN TIMESTAMP_INFO t USING (TS_ID)""")
    got = {o["op"]: o["ops"] for o in d["ops"]}
    assert got == {k: float(v) for k, v in want.items() if k in got}
    assert set(got) <= set(want) and len(got) == 12
    assert d["total_ops"] == sum(got.values())
    series_total = np.nansum(np.array(d["total_ops_per_s"], dtype=float)) * d["step_s"]
    assert series_total == pytest.approx(d["total_ops"], rel=1e-12)


def test_capacity_equals_lmt_and_lfs_df(server, testdata):
    code, d = api(server, f"/api/capacity?fs=snx11025&{WINDOW}")
    assert code == 200
    con = sqlite3.connect(testdata / LMT)
    rows = con.execute("""SELECT i.OST_NAME, d.KBYTES_USED, d.KBYTES_FREE FROM OST_DATA d JOIN OST_INFO i USING (OST_ID)
                          WHERE d.TS_ID = (SELECT max(TS_ID) FROM OST_DATA)""").fetchall()
    con.close()
    got = {t["target"]: t for t in d["targets"]}
    for name, used, free in rows:
        t = got[name if name.startswith("snx") else f"snx11025-{name}"]
        assert t["used_bytes"] == used * 1024.0
        assert t["fullness"] == pytest.approx(used / (used + free), rel=1e-12)
    full = sorted((t for t in d["targets"] if "-OST" in t["target"]), key=lambda t: -t["fullness"])
    assert d["fullest"] == [t["target"] for t in full[:10]]
    mdt = got["snx11025-MDT0000"]
    assert 0 < mdt["inode_use"] < 1 and mdt["files_used"] == mdt["files_total"] * mdt["inode_use"]


def test_capacity_lctl_failover_from_the_archive(server, testdata):
    text = gzip.decompress((testdata / "pytokio/sample_ost-map.txt.gz").read_bytes()).decode()
    last = text.split("BEGIN ")[-1].splitlines()[1:]
    nid = {}
    for line in last:
        f = line.split()
        if f[2] == "osc" and f[3].startswith("snx11035-"):
            nid[f[3][:16]] = f[6]
    per = {}
    for t, n in nid.items():
        per.setdefault(n, []).append(t)
    usual = max(set(map(len, per.values())), key=list(map(len, per.values())).count)
    want = sorted(t for ts in per.values() if len(ts) > usual for t in ts)
    code, d = api(server, "/api/capacity?fs=snx11035&since=2017-03-01T00:00:00Z&until=2017-03-22T00:00:00Z")
    assert code == 200 and d["lctl"]["imported"]
    assert d["lctl"]["failover"]["overloaded"] == want and want  # the archive has a failed-over pair
    assert {t: v["nid"] for t, v in d["lctl"]["targets"].items() if "-OST" in t} == nid
    # Days until full: the fitted growth over the last 7 days of the window, checked against numpy's polyfit.
    f = d["fs_fullness"]
    assert f["days_until_full"] == pytest.approx(f["room_bytes"] / f["growth_bps"] / 86400, rel=1e-12)


def test_unknown_lctl_state_and_missing_capacity(server):
    code, d = api(server, "/api/capacity?fs=odd&since=2023-11-13T00:00:00Z&until=2023-11-17T00:00:00Z")
    assert code == 200
    states = {t: v["state_label"] for t, v in d["lctl"]["targets"].items()}
    assert states == {"odd-OST0000": "UP (set up)", "odd-OST0001": "unknown state 'XY'", "odd-OST0002": "IN (inactive)"}
    assert d["no_capacity_data"] == ["odd-OST0002"]
    ost0 = next(t for t in d["targets"] if t["target"] == "odd-OST0000")
    assert ost0["growth_bps"] == pytest.approx(100000 * 1024 / 86400, rel=1e-12)
    assert ost0["days_until_full"] == pytest.approx(650000 * 1024 / (100000 * 1024 / 86400) / 86400, rel=1e-12)
    html, twin = escaped_page(server, "/capacity?fs=odd&since=2023-11-13T00:00:00Z&until=2023-11-17T00:00:00Z")
    assert "unknown state &#39;XY&#39;" in html and "odd-OST0002" in html


def test_talkers_bytes_are_what_was_added(server):
    code, d = api(server, "/api/talkers?fs=lustrefs&since=1d")
    assert code == 200
    got = {r["job"]: r["write_bytes"] for r in d["by_bytes"]}
    for job, added in JOB_ADD.items():
        assert got[job] == float(added)
    assert {r["job"]: r["user"] for r in d["by_bytes"]}["dd.4242"] == "uid 4242"
    assert all(r["write_bytes"] >= 0 for r in d["by_bytes"])  # counter resets are missing, never negative


def test_hostile_job_id_is_text(server):
    html, twin = escaped_page(server, "/talkers?fs=lustrefs&since=1d")
    assert NASTY in [r["job"] for r in twin["by_bytes"]]


def test_bad_requests(server):
    assert_bad_request(server, "/api/servers?fs=nope", "unknown file system")
    assert_bad_request(server, f"/api/servers?fs=snx11025&{WINDOW}&sort=size", "sort must be one of")
    assert_bad_request(server, f"/api/servers?fs=snx11025&{WINDOW}&target=%3Cb%3E", "unknown target")
    assert_bad_request(server, f"/api/servers?fs=snx11025&{WINDOW}&target=snx11025-OST0000&min_amplitude=fast",
                       "min_amplitude must be a rate")
    assert_bad_request(server, "/api/metadata?fs=snx11025&min_amplitude=-3", "min_amplitude must be")
    assert_bad_request(server, "/api/capacity?fs=snx11025&since=2018-01-29T00:00:00Z&until=2018-01-28T00:00:00Z",
                       "must be before until")


def test_lctl_import_bad_input(cli, tmp_path, home):
    p = tmp_path / "garbage.txt"
    p.write_text("this is not lctl output\n")
    r = cli("import", "lctl", str(p), "--fs", "odd", "--at", "2023-11-14T00:00:00Z", home=tmp_path)
    assert r.returncode == 2 and "no osc or mdc lines" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
