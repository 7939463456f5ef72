"""issue 38: a center's real mix in one store — the shared LMT day of snx11025 (5 minutes at 5 s), one
`lctl get_param` capture of ai400 (gauges only), an `lfs df` of snx11025 taken at 00:05, a CSV of `arch`
spanning 2020 and 2026, and the public Darshan log of job 1452113755 on /lus/theta-fs0 (no telemetry
there). Built once, in-process (click's CliRunner), served in this process, looked at in one Chromium.

Every number is recounted here from the stored rows (store.telemetry_layout.read_frame), never read
back from the answer under test."""

from __future__ import annotations

import json
import re
import time
from datetime import datetime, timezone

import numpy as np
import pytest

from browser import visit

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LMT = "lmt/snx11025_2018-01-28.sqlite3"
CAPTURE = "lustrefs-exporter/valid.txt"
LFSDF = "pytokio/lfs-df.txt.gz"
JOB_LOG = "darshan/imbalanced-io.darshan"  # job 1452113755, on /lus/theta-fs0
FS_PAGES = ("workload", "servers", "metadata", "capacity", "report", "talkers")
#: Every plot's axes: type, range and tick labels as drawn.
AXES = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).flatMap(el =>
  Object.keys(el._fullLayout).filter(k => /^[xy]axis\\d*$/.test(k)).map(k => {
    const a = el._fullLayout[k];
    return {plot: el.id, axis: k, type: a.type, range: a.range,
            ticks: Array.from(el.querySelectorAll('.' + a._id + 'tick text')).map(t => t.textContent)};
  }))"""


def invoke(home, *args: str, code: int = 0):
    """`ioweather --home HOME ARGS` in this process; its result (exit code `code` checked)."""
    from click.testing import CliRunner

    from ioweather.cli import cli

    r = CliRunner().invoke(cli, ["--home", str(home), *args], catch_exceptions=False)
    assert r.exit_code == code, (args, r.exit_code, r.output)
    return r


def _csv(path):
    """arch: 30 minutes at 60 s on 1 March 2020 and 1 March 2026, two OSTs and an MDT."""
    lines = ["time,target,metric,value"]
    for year in (2020, 2026):
        t0 = int(datetime(year, 3, 1, tzinfo=timezone.utc).timestamp())
        for m in range(30):
            for k in range(2):
                lines.append(f"{t0 + 60 * m},arch-OST000{k},read_bytes,{(m + 1) * 1_000_000 * (k + 1)}")
                lines.append(f"{t0 + 60 * m},arch-OST000{k},write_bytes,{(m + 2) * 500_000}")
            lines.append(f"{t0 + 60 * m},arch-MDT0000,md_open,{100 + m}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def mix(tmp_path_factory, testdata):
    base = tmp_path_factory.mktemp("mix")
    home = base / "home"
    invoke(home, "import", "lmt", str(testdata / LMT), "--fs", "snx11025", "-q")
    invoke(home, "import", "lctl-params", str(testdata / CAPTURE), "--fs", "ai400", "-q")
    invoke(home, "import", "lfsdf", str(testdata / LFSDF), "--fs", "snx11025", "--at", "2018-01-28T00:05:00Z", "-q")
    invoke(home, "import", "csv", str(_csv(base / "span.csv")), "--fs", "arch", "--interval", "60s", "-q")
    invoke(home, "jobs", "ingest", str(testdata / JOB_LOG), "--workers", "1", "-q")
    return home


@pytest.fixture(scope="module")
def server(mix):
    from web_server import Server, frozen_app

    with Server(frozen_app(mix, time.time_ns())) as s:
        yield s


def api(server, path):
    code, _, body = server.get(path)
    assert code == 200, (path, code, body[:300])
    return json.loads(body)


def rows(home, fs):
    from ioweather.config import Settings
    from ioweather.store import telemetry_layout as layout

    df = layout.read_frame(Settings(home=home), fs)
    return df[np.isfinite(df["value"]) & (df["value"] >= 0)]


def _years(home) -> set[int]:
    years = set()
    for fs in ("snx11025", "ai400", "arch"):
        years |= {datetime.fromtimestamp(t / 1e9, timezone.utc).year for t in rows(home, fs)["time_ns"]}
    return years


def test_every_nav_page_with_and_without_fs(server, browser, mix):
    """No 4xx/5xx, no console error, every page names its file system and window, no time axis outside the
    data's years (one capture drew Jan-Nov 2000)."""
    index = api(server, "/api")
    nav = [p["slug"] for p in index["pages"] if p["available"] and p["slug"] != "job"]
    assert set(FS_PAGES) <= set(nav), nav
    years = _years(mix)
    urls = [f"/{s}" for s in nav] + [f"/{s}?fs={fs}" for s in FS_PAGES for fs in ("snx11025", "ai400", "arch")]
    for url in urls:
        with visit(browser, server.url + url) as v:
            assert v.response.status == 200 and v.errors == [], (url, v.errors)
            for a in v.page.evaluate(AXES):
                if a["type"] == "date":
                    shown = {int(str(x)[:4]) for x in a["range"]}
                    assert shown <= years, (url, a)
            if url.split("?")[0].strip("/") in FS_PAGES:
                text = v.page.locator("#fs-span").inner_text()
                fs = url.split("fs=")[1] if "fs=" in url else v.page.locator("#fs-name").inner_text()
                assert text.startswith(f"{fs}:") and " – " in text, (url, text)


def test_default_fs_has_the_pages_data(server):
    """Workload and Report answered 400 for ai400 (no byte counters): the default is one that has them, and
    ai400 asked for says why and which do."""
    for page in ("workload", "report", "servers", "metadata"):
        d = api(server, f"/api/{page}")
        assert d.get("no_data") is None and d["span"]["covered_s"] > 0, (page, d.get("no_data"))
    d = api(server, "/api/servers?fs=ai400")
    assert "single capture" in d["no_data"] and "rates need two captures" in d["no_data"]
    assert d["span"]["fs_with_data"] == ["arch", "snx11025"]
    cap = api(server, "/api/capacity?fs=ai400")
    assert {t["target"] for t in cap["targets"]} >= {"ai400-OST0000", "ai400-OST0001", "ai400-MDT0000"}


def test_metadata_and_servers_over_the_covered_span(server, mix):
    """Mean and peak recounted from the stored rows over the time they cover (6,015,659 ops / 300 s =
    20,052/s, peak 27,814/s; over the default week it said 10,026/s for both); the heatmap's colour top is
    the table's peak; a target is seen until the data's end (00:05, not 00:20)."""
    df = rows(mix, "snx11025")
    md = df[df["metric"].str.startswith("md_")]
    span_s = (md["time_ns"] + md["interval_s"] * 1e9).max() / 1e9 - md["time_ns"].min() / 1e9
    per_t = md.groupby("time_ns")["value"].sum() / md.groupby("time_ns")["interval_s"].first()
    d = api(server, "/api/metadata?fs=snx11025")
    assert d["total_ops"] == md["value"].sum() == 6_015_659
    assert span_s == 300.0 and d["span"]["covered_s"] == span_s
    assert d["mean_ops_per_s"] == pytest.approx(md["value"].sum() / span_s) and round(d["mean_ops_per_s"]) == 20_052
    assert d["peak_ops_per_s"] == pytest.approx(per_t.max()) and round(d["peak_ops_per_s"]) == 27_814

    io = df[df["metric"].isin(["read_bytes", "write_bytes"])]
    peak = (io["value"] / io["interval_s"]).max()
    s = api(server, "/api/servers?fs=snx11025")
    assert s["heatmap"]["top_bps"] == pytest.approx(peak)
    assert max(t["peak_bps"] for t in s["targets"]) == pytest.approx(peak)
    for key in ("read", "write"):  # each map's colour scale ends at the table's highest peak of its direction
        d = io[io["metric"] == f"{key}_bytes"]
        top = (d["value"] / d["interval_s"]).max()
        assert s["heatmap"][f"top_{key}_bps"] == pytest.approx(top)
        assert max(t[f"peak_{key}_bps"] for t in s["targets"]) == pytest.approx(top)
    end = (io["time_ns"] + io["interval_s"] * 1e9).max()
    assert {t["last_seen"] for t in s["targets"]} == {datetime.fromtimestamp(end / 1e9, timezone.utc)
                                                      .isoformat(timespec="milliseconds").replace("+00:00", "Z")}


def test_lfs_df_drawn_at_its_time(server):
    """The `lfs df` of 00:05 (the only avail_bytes readings) was drawn at 22:59 the day before."""
    c = api(server, "/api/capacity?fs=snx11025&since=2018-01-21T00:00:00Z&until=2018-01-28T00:10:00Z")
    f = c["fs_fullness"]["fullness"]
    last = max(i for i, v in enumerate(f) if v is not None)
    assert c["time"][last].startswith("2018-01-28T00:05:00")


def test_report_text_says_what_its_json_holds(mix):
    doc = json.loads(invoke(mix, "report", "--fs", "snx11025", "--json").output)
    top = doc["fullness"]["fullest"][0]
    assert round(100 * doc["fullness"]["fullness"], 1) == 72.4 and top["target"] == "snx11025-OST0007"
    assert round(100 * top["fullness"], 1) == 82.8
    text = invoke(mix, "report", "--fs", "snx11025").output
    assert "72.4 % full" in text and re.search(r"snx11025-OST0007 +│ +82\.8 %", text), text


def test_api_equals_cli_json(server, mix):
    """/api answers and the commands' --json, the same window."""
    q = "fs=snx11025&since=2018-01-27T00:00:00Z&until=2018-01-28T00:10:00Z"
    page = api(server, f"/api/report?{q}")["report"]
    cli = json.loads(invoke(mix, "report", "--fs", "snx11025", "--since", page["query"].split("since=")[1].split("&")[0],
                            "--until", page["query"].split("until=")[1], "--json").output)
    assert cli == page
    summary = json.loads(invoke(mix, "jobs", "summary", "--json").output)
    assert api(server, "/api/jobs")["summary"] == summary
    w = api(server, "/api/workload?fs=snx11025")  # the page's default window: the data's 5 minutes
    assert json.loads(invoke(mix, "workload", "--fs", "snx11025", "--since", w["result"]["start"], "--until",
                             w["result"]["end"], "--json").output) == w["result"]
    h = api(server, "/api/jobs")["list"]["rows"][0]["id"]
    why = json.loads(invoke(mix, "why", "1452113755", "--json").output)
    assert api(server, f"/api/job?id={h[:12]}")["why"] == why


def test_one_user_name_per_uid(server, mix):
    listed = json.loads(invoke(mix, "jobs", "list", "--json").output)
    summary = json.loads(invoke(mix, "jobs", "summary", "--json").output)
    page = api(server, "/api/jobs")["list"]["rows"]
    names = {listed[0]["user"], summary["top_users"]["by_bytes_read"][0]["user"], page[0]["user"]}
    assert names == {str(listed[0]["uid"])}, names  # uid 534865696 has no passwd entry here: its number, everywhere


def test_job_names_one_file_system(server, mix, monkeypatch):
    """why, umami and the job page's two boxes: one resolver, one name; the unknown system share is null
    and 'unknown', never '0 s, 0.0 %'."""
    h = api(server, "/api/jobs")["list"]["rows"][0]["id"][:12]
    d = api(server, f"/api/job?id={h}")
    assert d["why"]["fs"] is None and d["why"]["system_s"] is None and d["umami"]["available"] is False
    _, _, html = server.get(f"/job?id={h}")
    budget = html.decode().split('id="why-verdict"')[1].split("</table>")[0]
    assert "unknown" in budget and "0.0%" not in budget and ">0 s<" not in budget
    monkeypatch.setenv("IOWEATHER_FS_MAP", "/lus/theta-fs0=snx11025")
    d = api(server, f"/api/job?id={h}")
    named = {d["why"]["fs"], d["umami"].get("fs"), *(b["fs"] for b in d["why"]["logs"])}
    assert named == {"snx11025"}, named
    why = json.loads(invoke(mix, "why", "1452113755", "--json").output)
    umami = json.loads(invoke(mix, "umami", "1452113755", "--json").output)
    assert why["fs"] == umami["fs"] == "snx11025"
    # a weather stored on another file system (an explicit --fs): the Jobs page shows the resolver's
    invoke(mix, "umami", "1452113755", "--fs", "arch", "--json")
    verdict = api(server, "/api/jobs")["list"]["rows"][0]["weather_verdict"]
    assert "snx11025" in verdict and "arch" not in verdict, verdict


def test_unknown_fs_refused(mix):
    for cmd in (("why", "1452113755"), ("umami", "1452113755")):
        r = invoke(mix, *cmd, "--fs", "nosuch", code=2)
        lines = [x for x in r.output.splitlines() if x.strip()]
        assert len(lines) == 1 and "nosuch" in lines[0] and "ai400, arch, snx11025" in lines[0], r.output


def test_report_default_window_is_the_pages(server, mix):
    """`report` with no window took the week before the data's end, the page the byte counters' own span:
    two windows, 72.4 % against 56.4 % full (the `lfs df` of 00:05 fell outside the page's). One window now,
    the file system's data of every kind; its text names the window its JSON and page hold."""
    doc = json.loads(invoke(mix, "report", "--fs", "snx11025", "--json").output)
    page = api(server, "/api/report?fs=snx11025")
    assert page["report"] == doc
    assert (page["span"]["since"], page["span"]["until"]) == (doc["start"], doc["end"])
    assert (doc["start"], doc["end"]) == ("2018-01-28T00:00:00.000Z", "2018-01-28T00:05:05.000Z")
    assert doc["query"] == f"fs=snx11025&since={doc['start']}&until={doc['end']}"
    assert round(100 * doc["fullness"]["fullness"], 1) == 72.4
    text = invoke(mix, "report", "--fs", "snx11025").output
    assert text.splitlines()[0] == f"Report of snx11025, {doc['start']} – {doc['end']}", text.splitlines()[0]
