"""issue 38: a center's real mix in one store — the shared LMT day of snx11025 (5 minutes at 5 s), one
`lctl get_param` capture of ai400 (gauges only), an `lfs df` of snx11025 taken at 00:05, a CSV of `arch`
spanning 2020 and 2026, and the public Darshan log of job 1452113755 on /lus/theta-fs0 (no telemetry
there). Built once, in-process (click's CliRunner), served in this process, looked at in one Chromium.

Every number is recounted here from the stored rows (store.telemetry_layout.read_frame), never read
back from the answer under test."""

from __future__ import annotations

import contextlib
import json
import re
import time
from datetime import datetime, timezone

import numpy as np
import pytest

from browser import json_twin, visit

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LMT = "lmt/snx11025_2018-01-28.sqlite3"
CAPTURE = "lustrefs-exporter/valid.txt"
LFSDF = "pytokio/lfs-df.txt.gz"
JOB_LOG = "darshan/imbalanced-io.darshan"  # job 1452113755, on /lus/theta-fs0
FS_PAGES = ("workload", "servers", "metadata", "capacity", "report", "talkers")
FSES = ("snx11025", "ai400", "arch")
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


#: (page, file system) that several tests read in Chromium: drawn once (seconds each) and kept open for the module.
SHARED = {("metadata", "snx11025"), ("metadata", "arch"), ("servers", "snx11025"), ("servers", "arch"),
          ("workload", "snx11025")}


def _shown_fs(page) -> str | None:
    """The file system a page names (None on a page of none)."""
    return page.locator("#fs-name").inner_text() if page.locator("#fs-name").count() else None


class Drawn:
    """The module's pages in Chromium: `visit(url)` draws URL; a page of SHARED is kept (`get` hands it on)."""

    def __init__(self, server, browser, stack: contextlib.ExitStack):
        self.server, self.browser, self.stack, self.kept = server, browser, stack, {}

    @contextlib.contextmanager
    def visit(self, url: str):
        with contextlib.ExitStack() as own:
            v = own.enter_context(visit(self.browser, self.server.url + url))
            yield v
            key = (url.split("?")[0].strip("/"), _shown_fs(v.page))
            if key in SHARED and key not in self.kept:
                self.kept[key] = v
                self.stack.enter_context(own.pop_all())  # closed with the module

    def get(self, slug: str, fs: str):
        """The page of `slug` showing `fs`, drawn already or now from /slug?fs=fs."""
        assert (slug, fs) in SHARED, (slug, fs)
        if (slug, fs) not in self.kept:
            with self.visit(f"/{slug}?fs={fs}"):
                pass
        v = self.kept[(slug, fs)]
        assert _shown_fs(v.page) == fs and v.errors == [], (slug, fs, v.errors)
        return v


@pytest.fixture(scope="module")
def drawn(server, browser):
    with contextlib.ExitStack() as stack:
        yield Drawn(server, browser, stack)


def api(server, path):
    code, _, body = server.get(path)
    assert code == 200, (path, code, body[:300])
    return json.loads(body)


def rows(home, fs):
    from ioweather.config import Settings
    from ioweather.store import telemetry_layout as layout

    df = layout.read_frame(Settings(home=home), fs)
    return df[np.isfinite(df["value"]) & (df["value"] >= 0)]


def _years(home, fs: str | None = None) -> set[int]:
    """The years of the stored rows of `fs` (of every file system without one)."""
    years = set()
    for name in FSES if fs is None else (fs,):
        years |= {datetime.fromtimestamp(t / 1e9, timezone.utc).year for t in rows(home, name)["time_ns"]}
    return years


def _nav(server) -> list[str]:
    """The pages the navigation bar links to (the job page is reached from the Jobs page, not the bar)."""
    index = api(server, "/api")
    return [p["slug"] for p in index["pages"] if p["available"] and p["slug"] != "job"]


def test_every_nav_page_with_and_without_fs(server, drawn, mix):
    """No 4xx/5xx (the page's own fetches too), no console error, every file-system page names its file
    system and window, no time axis outside the years of the file system it shows (one capture drew
    Jan-Nov 2000; an axis of arch's 2020 on snx11025's page passed the union of the store's years).
    A page asked for the file system it shows without one is that page (its /api twin is the same): it is
    checked over HTTP, not drawn again."""
    nav = _nav(server)
    urls = [f"/{s}" for s in nav] + [f"/{s}?fs={fs}" for s in nav if s in FS_PAGES for fs in FSES]
    named, default = set(), {}
    for url in urls:
        slug = url.split("?")[0].strip("/")
        asked = url.split("fs=")[1] if "fs=" in url else None
        if asked is not None and default.get(slug) == asked:
            code, _, body = server.get(url)
            assert code == 200 and f'id="fs-name">{asked}</b>' in body.decode(), (url, code)
            assert api(server, f"/api{url}") == api(server, f"/api/{slug}"), url
            continue
        with drawn.visit(url) as v:
            assert v.response.status == 200 and v.errors == [] and v.bad_statuses == [], \
                (url, v.errors, v.bad_statuses)
            fs = _shown_fs(v.page)
            if fs is not None:
                named.add(slug)
                default.setdefault(slug, fs)
                assert fs == (asked or fs) and fs in FSES, (url, fs)
                text = v.page.locator("#fs-span").inner_text()
                assert text.startswith(f"{fs}:") and " – " in text, (url, text)
                assert v.page.locator("select[name=fs]").count() == 1, url  # the selector, on every one
            years = _years(mix, fs)
            for a in v.page.evaluate(AXES):
                if a["type"] == "date":
                    shown = {int(str(x)[:4]) for x in a["range"]}
                    assert shown <= years, (url, fs, a)
    assert named == set(FS_PAGES), named  # a telemetry page added to the bar is checked here too


def test_the_pages_without_a_file_system_take_fs(server):
    """Status and Jobs answered 400 ("unknown parameter 'fs'") to ?fs=: they show the probe targets and the
    jobs on that file system (none here: job 1452113755 ran on /lus/theta-fs0, which has no telemetry),
    say so, and the page says what its /api twin says."""
    assert {"status", "jobs"} <= set(_nav(server)) - set(FS_PAGES)
    for slug in set(_nav(server)) - set(FS_PAGES):
        for fs in FSES:
            code, _, body = server.get(f"/{slug}?fs={fs}")
            assert code == 200, (slug, fs, code, body[:200])
            d = api(server, f"/api/{slug}?fs={fs}")
            assert d["fs"] == fs and d["fs_note"].split(" (")[0] in body.decode(), (slug, d.get("fs_note"))
    jobs = api(server, "/api/jobs?fs=snx11025")
    assert jobs["list"]["total"] == 0 and jobs["fs_note"].startswith("0 of 1 jobs ran on snx11025 ")
    code, _, body = server.get("/jobs?fs=nosuch")
    assert code == 400 and "unknown file system &#39;nosuch&#39;; known: ai400, arch, snx11025" in body.decode(), body[:300]


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


def _window(home, fs: str, span: dict, kind: str):
    """The stored rows of `fs` of `kind` ("md": md_*; "io": read and write bytes) in the page's window."""
    df = rows(home, fs)
    t0, t1 = (int(datetime.fromisoformat(span[k].replace("Z", "+00:00")).timestamp() * 1e9) for k in ("since", "until"))
    df = df[(df["time_ns"] >= t0) & (df["time_ns"] < t1)]
    return df[df["metric"].str.startswith("md_")] if kind == "md" else df[df["metric"].isin(["read_bytes", "write_bytes"])]


def _covered_s(df) -> float:
    return float((df["time_ns"] + df["interval_s"] * 1e9).max() / 1e9 - df["time_ns"].min() / 1e9)


def _peak(df) -> float:
    """The highest rate of the stored samples: each reading time's sum over targets ÷ its interval."""
    g = df.groupby("time_ns")
    return float((g["value"].sum() / g["interval_s"].first()).max())


def _cells(page, selector: str) -> list[list[str]]:
    return [r.locator("td").all_inner_texts() for r in page.locator(selector).all()]


@pytest.mark.parametrize("fs", FSES[::2])
def test_metadata_page_means_and_counts_recounted(drawn, mix, fs):
    """As the page shows them in Chromium: the mean over the time the data of the window covers, each
    operation's count and mean, recounted from the stored rows."""
    from ioweather.units import format_number

    v = drawn.get("metadata", fs)
    span = json_twin(v.page, f"/metadata?fs={fs}")["span"]
    md = _window(mix, fs, span, "md")
    covered = _covered_s(md)
    assert span["covered_s"] == covered and covered in {300.0, 1800.0}
    peak_mean = v.page.locator("#md-summary tr").first.locator("td").inner_text()
    assert peak_mean.endswith(f" / {format_number(md['value'].sum() / covered)}/s"), (peak_mean, covered)
    shown = {r[0]: r for r in _cells(v.page, "#md-ops tbody tr")}
    for metric, g in md.groupby("metric"):
        row = shown[metric.removeprefix("md_")]
        assert row[1] == f"{g['value'].sum():,.0f}" and row[3] == f"{format_number(g['value'].sum() / covered)}/s", row
        assert (row[4] == "–") == (g["value"].sum() == 0), row  # no share of time below the peak of nothing


#: arch: 60 s samples drawn in 5-minute columns; its peaks were the columns' means (metadata 2.117/s for a
#: sample's 2.15/s; the read colour scale 911.5 KiB/s for the table's 976.6 KiB/s).
@pytest.mark.parametrize("fs", FSES[::2])
def test_metadata_page_peaks_recounted(drawn, mix, fs):
    """The peaks the page shows are the highest rates of the stored samples (of every operation, and of each)."""
    from ioweather.units import format_number

    v = drawn.get("metadata", fs)
    md = _window(mix, fs, json_twin(v.page, f"/metadata?fs={fs}")["span"], "md")
    peak_mean = v.page.locator("#md-summary tr").first.locator("td").inner_text()
    assert peak_mean.startswith(f"{format_number(_peak(md))}/s / "), peak_mean
    shown = {r[0]: r for r in _cells(v.page, "#md-ops tbody tr")}
    for metric, g in md.groupby("metric"):
        assert shown[metric.removeprefix("md_")][2] == f"{format_number(_peak(g))}/s", (metric, shown[metric[3:]])


@pytest.mark.parametrize("fs", FSES[::2])
def test_servers_table_recounted(drawn, mix, fs):
    """Each target's bytes and peaks in the page's table, recounted from its stored rows over the window."""
    from ioweather.units import format_bytes

    v = drawn.get("servers", fs)
    io = _window(mix, fs, json_twin(v.page, f"/servers?fs={fs}")["span"], "io")
    table = {r[0]: r for r in _cells(v.page, "#target-table tbody tr")}
    assert set(table) == set(io["target"]), table.keys()
    for target, g in io.groupby("target"):
        want = []
        for key in ("read_bytes", "write_bytes"):
            d = g[g["metric"] == key]
            want.append((format_bytes(d["value"].sum()), f"{format_bytes((d['value'] / d['interval_s']).max())}/s"))
        assert table[target][1:5] == [want[0][0], want[1][0], want[0][1], want[1][1]], (target, table[target])


@pytest.mark.parametrize("fs", FSES[::2])
def test_servers_colour_scales_end_at_the_table_peaks(drawn, fs):
    """Each map's colour bar ends at the highest peak of its direction in the table, as its caption says."""
    v = drawn.get("servers", fs)
    table = _cells(v.page, "#target-table tbody tr")
    twin = json_twin(v.page, f"/servers?fs={fs}")
    for key, col in (("read", 3), ("write", 4)):
        top = max(twin["targets"], key=lambda t: t[f"peak_{key}_bps"])
        shown = next(r[col] for r in table if r[0] == top["target"])
        ticks = v.page.locator(f"#servers-heat-{key} .cbaxis text, #servers-heat-{key} .colorbar text") \
            .all_text_contents()
        assert shown in ticks, (key, shown, ticks)


def test_the_write_map_darkens_with_the_rate(drawn):
    """The read map ran from grey to dark red, the write map from dark blue to grey (Plotly's "Blues"):
    the busiest writers were drawn palest. Both darken as the rate rises."""
    v = drawn.get("servers", "snx11025")
    for key in ("read", "write"):
        scale = v.page.evaluate(f"document.getElementById('servers-heat-{key}')._fullData[0].colorscale")
        lum = [sum(int(c) for c in re.findall(r"\d+", colour)[:3]) for _, colour in (scale[0], scale[-1])]
        assert lum[0] > lum[1], (key, scale)


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
    assert api(server, "/api/jobs")["list"]["rows"] == json.loads(invoke(mix, "jobs", "list", "--json").output)
    # umami: the job's file system has no telemetry; the page's reason is the command's one-line error
    umami = invoke(mix, "umami", "1452113755", "--json", code=2).output.strip().removeprefix("ioweather: error: ")
    assert api(server, f"/api/job?id={h[:12]}")["umami"] == {"available": False, "reason": umami}
    # every file system with byte counters, in each page's default window: the page's JSON is the command's
    for fs in ("arch", "snx11025"):
        w = api(server, f"/api/workload?fs={fs}")["result"]
        assert json.loads(invoke(mix, "workload", "--fs", fs, "--since", w["start"], "--until", w["end"],
                                 "--json").output) == w, fs
        assert api(server, f"/api/report?fs={fs}")["report"] == \
            json.loads(invoke(mix, "report", "--fs", fs, "--json").output), fs


def test_api_equals_cli_json_with_a_site_map(server, mix, monkeypatch):
    """With the fs-map naming the job's file system, the job page's why and umami are the commands'."""
    monkeypatch.setenv("IOWEATHER_FS_MAP", "/lus/theta-fs0=snx11025")
    h = api(server, "/api/jobs")["list"]["rows"][0]["id"][:12]
    page = api(server, f"/api/job?id={h}")
    assert page["why"] == json.loads(invoke(mix, "why", "1452113755", "--json").output)
    umami = json.loads(invoke(mix, "umami", "1452113755", "--json").output)
    # the page's panel is the answer drawn (views/umami_report.figure): its words beside each number, and the
    # window's raw weather and start left out; every number the command gives is the page's
    shown = page["umami"]
    assert shown["available"] and shown["fs"] == umami["fs"] == "snx11025"
    assert {k: shown[k] for k in umami if k not in ("weather", "start", "metrics")} == \
        {k: v for k, v in umami.items() if k not in ("weather", "start", "metrics")}
    assert [{k: m[k] for k in cli} for m, cli in zip(shown["metrics"], umami["metrics"])] == umami["metrics"]


def test_job_page_names_one_file_system_in_chromium(server, browser, monkeypatch):
    """The job page's budget (why) and weather box, as drawn: both name the job's /lus/theta-fs0 as without
    telemetry (the weather box named snx11025 before); with the fs-map, both name snx11025 and nothing else."""
    h = api(server, "/api/jobs")["list"]["rows"][0]["id"][:12]
    others = re.compile(r"\b(ai400|arch)\b")
    with visit(browser, f"{server.url}/job?id={h}") as v:
        assert v.errors == [] and v.bad_statuses == []
        why, weather = (v.page.locator(f"#{i}").inner_text() for i in ("why-verdict", "weather-verdict"))
        assert "system's share is unknown" in why and "/lus/theta-fs0" in why and "snx11025" not in why, why
        assert "/lus/theta-fs0" in weather and "no weather verdict" in weather, weather
        assert "no telemetry for snx11025" not in weather and "0 s" not in v.page.locator("#why-budget").inner_text()
    monkeypatch.setenv("IOWEATHER_FS_MAP", "/lus/theta-fs0=snx11025")
    with visit(browser, f"{server.url}/job?id={h}") as v:
        assert v.errors == [] and v.bad_statuses == []
        texts = [v.page.locator(f"#{i}").inner_text() for i in ("why-verdict", "weather-verdict", "umami-panel")]
        for text in texts:
            assert "snx11025" in text and not others.search(text), text


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
    # five minutes of data are no week: "no probe data this week", "the week of snx11025" said the page and text
    _, _, html = server.get("/report?fs=snx11025")
    assert "week" not in text and "week" not in html.decode().split("<main>")[1], text
    assert "no probe data in this window" in text and "no probe data in this window" in html.decode()


def test_jobs_page_at_1280_px(server, browser):
    """Issue 38 item 7: the Jobs table was 1,452 px wide in a 1,242 px box (the verdict cut, rows ~400 px tall);
    the scatter's byte axis ticked "100GB" at a decade and "90G" between (no unit), in powers of ten beside a
    table in GiB. At 1,280 px the table fits its box and every tick carries its unit."""
    from playwright.sync_api import expect

    page = browser.new_page()
    try:
        page.set_viewport_size({"width": 1280, "height": 800})  # before the plots are drawn at the context's 1,400
        page.goto(f"{server.url}/jobs")
        expect(page.locator("body")).to_have_attribute("data-plots-ready", "1", timeout=30_000)
        box = page.evaluate("""() => { const t = document.getElementById('job-list');
            return {table: t.scrollWidth, box: t.parentElement.clientWidth, page: document.documentElement.scrollWidth,
                    rows: Array.from(t.querySelectorAll('tbody tr')).map(r => r.getBoundingClientRect().height)}; }""")
        assert box["table"] <= box["box"] and box["page"] <= 1280 and max(box["rows"]) < 150, box
        ticks = page.locator("#jobs-scatter .ytick text").all_text_contents()
        assert ticks and all(re.fullmatch(r"\d+ (B|KiB|MiB|GiB|TiB|PiB)", t) for t in ticks), ticks
        moved = api(server, "/api/jobs")["list"]["rows"][0]["moved_bytes"]  # 99.4 GiB: between two ticks shown
        units = {"B": 0, "KiB": 10, "MiB": 20, "GiB": 30, "TiB": 40, "PiB": 50}
        at = sorted(int(t.split()[0]) * 2 ** units[t.split()[1]] for t in ticks)
        assert at[0] < moved < at[-1], (ticks, moved)
    finally:
        page.close()


@pytest.fixture(scope="module")
def root_job(tmp_path_factory):
    """A store holding the lab's one-rank log, run as uid 0 ("root" on every machine); the commands' JSON and
    the Jobs page's (in this process)."""
    from pathlib import Path

    from starlette.testclient import TestClient

    from web_server import frozen_app

    home = tmp_path_factory.mktemp("root") / "home"
    invoke(home, "jobs", "ingest", str(Path(__file__).parent / "data" / "lab" / "one-rank.darshan"), "--workers", "1",
           "-q")
    with TestClient(frozen_app(home, time.time_ns()), base_url="http://127.0.0.1") as client:
        page = client.get("/api/jobs").json()
    return (json.loads(invoke(home, "jobs", "list", "--json").output),
            json.loads(invoke(home, "jobs", "summary", "--json").output), page)


def test_one_user_name_per_uid_for_a_user_of_this_machine(root_job):
    """The mix's uid has no name here, so its number everywhere proves nothing of the defect ("cloudsdk" in
    `jobs list`, "1000" in `jobs summary` and on the Jobs page): uid 0 is "root" on all three."""
    listed, summary, page = root_job
    assert {r["uid"]: r["user"] for r in listed} == {0: "root"}
    assert {r["uid"]: r["user"] for r in page["list"]["rows"]} == {0: "root"}
    assert {u["user"] for k in ("by_bytes_read", "by_bytes_written") for u in summary["top_users"][k]} <= {"root"}
    assert page["summary"]["top_users"] == summary["top_users"]


def test_a_users_default_project_is_named_as_the_user(root_job):
    """A job no project rule claims is its user's project, named as its user is named beside it: 'user:0'
    beside the user 'root' was one user under two names."""
    _, summary, page = root_job
    assert [p["project"] for p in summary["projects"]] == ["user:root"]
    assert {p["project"] for k in ("by_bytes_read", "by_bytes_written") for p in summary["top_projects"][k]} \
        <= {"user:root"}
    assert page["summary"]["projects"] == summary["projects"]


def test_autocorrelation_lags_in_minutes_for_short_data(drawn):
    """Five minutes of snx11025 ticked its lags 0.01 ... 0.06 "lag (hours)": up to two hours of lags are minutes,
    the last tick at most the longest lag."""
    v = drawn.get("workload", "snx11025")
    lags = json_twin(v.page, "/workload?fs=snx11025")["result"]["acf"]["lags_s"]
    title = v.page.locator("#workload-acf .xtitle").text_content()
    ticks = [float(t.replace("\u2212", "-")) for t in v.page.locator("#workload-acf .xtick text").all_text_contents()]
    assert max(lags) < 7200 and title == "lag (minutes)", title
    assert ticks and max(ticks) <= max(lags) / 60 and max(ticks) >= 1, ticks
