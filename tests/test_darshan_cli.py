"""`ioweather job LOG` as a user runs it: JSON contract, human report, HTML, bad inputs."""

from __future__ import annotations

import json
import shutil

import pytest

from darshan_support import DATA_LOGS, TESTDATA_LOGS, rename_records, need_darshan_logs  # noqa: F401 (autouse fixture)
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)

IMBALANCED = TESTDATA_LOGS / "imbalanced-io.darshan"
JOB_KEYS = {"verdict", "job", "interfaces", "totals", "sharing", "access", "perf", "mounts", "findings"}
FINDING_KEYS = {"code", "level", "message", "evidence", "threshold", "cost_s", "cost_share", "cost_share_of_runtime",
                "cost_model", "cost_core_hours", "worth", "combined_s"}
#: a number as Python or JavaScript write it in scientific notation (5.25e+05, 1e-05)
SCI = r"\d(?:\.\d+)?[eE][+-]?\d"


def test_job_json_contract(cli, home):
    r = cli("job", str(IMBALANCED), "--json", home=home)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert JOB_KEYS <= set(rep)
    assert set(rep["job"]) == {"jobid", "uid", "exe", "nprocs", "nnodes", "start", "end", "runtime_s", "log_version",
                               "partial_modules"}
    assert rep["job"]["start"].endswith("Z") and rep["job"]["nnodes"] is None
    assert rep["job"]["partial_modules"] == ["POSIX"]
    for mod in ("POSIX", "MPI-IO", "STDIO"):
        it = rep["interfaces"][mod]
        assert {"bytes_read", "bytes_written", "reads", "writes", "opens", "read_time_s", "write_time_s", "meta_time_s",
                "files", "agg_perf_by_slowest_mibps"} <= set(it)
    # read_bytes/write_bytes: the keys every command shares; bytes_read/bytes_written kept one release (docs/darshan.md)
    assert set(rep["totals"]) == {"bytes_read", "bytes_written", "read_bytes", "write_bytes", "files", "read_time_s",
                                  "write_time_s", "meta_time_s"}
    assert rep["totals"]["read_bytes"] == rep["totals"]["bytes_read"]
    assert set(rep["sharing"]) == {"unique", "shared", "partially_shared", "unique_bytes", "shared_bytes",
                                   "partially_shared_bytes"}
    assert {"read_histogram", "write_histogram", "common_sizes", "seq_fraction", "consec_fraction",
            "file_not_aligned_fraction", "mem_not_aligned_fraction"} <= set(rep["access"])
    assert {"agg_perf_by_slowest_mibps", "io_time_s", "io_fraction_of_runtime", "mibps_per_node", "slowest_rank",
            "imbalance"} <= set(rep["perf"])
    assert rep["mounts"][0]["mount"] == "/lus/theta-fs0" and rep["mounts"][0]["lustre"]["stripe_count"] == 1
    assert all(FINDING_KEYS <= set(f) <= FINDING_KEYS | {"action", "fix", "overlaps", "overlapped_by"}
               for f in rep["findings"])
    # the I/O time at the top layer (MPI-IO here), and which layer it comes from
    assert rep["perf"]["io_time_layer"] == "MPI-IO" and set(rep["perf"]["layers"]) == {"MPI-IO", "POSIX"}
    assert rep["perf"]["io_time_s"] >= rep["perf"]["layers"]["POSIX"]["io_time_s"] == rep["perf"]["fs_io_time_s"]
    assert 0 < rep["verdict_saving_s"] <= rep["perf"]["io_time_s"]
    # ranked by cost; the verdict opens the document and names the striping of the single-writer file
    assert next(iter(rep)) == "verdict" and rep["verdict_actions"][0] == "L01"
    costs = [f["cost_s"] for f in rep["findings"]]
    assert costs == sorted(costs, reverse=True) and rep["findings"][0]["code"] == "L01"
    assert "lfs setstripe -c" in rep["findings"][0]["fix"]
    # totals at POSIX + STDIO, not MPI-IO on top
    it = rep["interfaces"]
    assert rep["totals"]["bytes_written"] == it["POSIX"]["bytes_written"] + it["STDIO"]["bytes_written"]


def test_cores_per_node_gives_mibps_per_node(cli, home):
    rep = json.loads(cli("job", str(IMBALANCED), "--json", "--cores-per-node", "64", home=home, check=True).stdout)
    assert rep["job"]["nnodes"] == 8
    assert rep["perf"]["mibps_per_node"] == pytest.approx(rep["perf"]["mibps"] / 8)


def test_thresholds_option(cli, home, tmp_path):
    t = tmp_path / "th.toml"
    t.write_text("metadata_time_rank_s = 0.05\n")
    rep = json.loads(cli("job", str(IMBALANCED), "--json", "--thresholds", str(t), home=home, check=True).stdout)
    assert any(f["code"] == "P17" for f in rep["findings"])
    t.write_text("nonsense = 1\n")
    r = cli("job", str(IMBALANCED), "--thresholds", str(t), home=home)
    assert r.returncode == 2 and "unknown threshold" in r.stderr


def test_human_report(cli, home):
    r = cli("job", str(IMBALANCED), home=home, env={"COLUMNS": "160"})
    assert r.returncode == 0, r.stderr
    for text in ("partial modules: POSIX", "findings", "P18", "/lus/theta-fs0", "--cores-per-node"):
        assert text in r.stdout


@pytest.mark.parametrize("content,message", [
    (b"", "empty file"),
    (b"\x00\x01garbage" * 300, "not a Darshan log"),
    ("half", "truncated Darshan log"),
])
def test_bad_logs_one_line_error(cli, home, tmp_path, content, message):
    bad = tmp_path / "bad.darshan"
    bad.write_bytes(IMBALANCED.read_bytes()[:35000] if content == "half" else content)
    r = cli("job", str(bad), "--json", home=home)
    assert r.returncode == 1 and r.stdout == ""  # 1: a file that is not a readable log; 2: usage, a missing file
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ioweather: error:") and message in lines[0]
    assert "Traceback" not in r.stderr


def test_missing_file(cli, home, tmp_path):
    r = cli("job", str(tmp_path / "nope.darshan"), home=home)
    assert r.returncode == 2 and "no such file" in r.stderr


def test_log_path_with_spaces_and_unicode(cli, home, tmp_path):
    d = tmp_path / "dossier à logs" / "ジョブ"
    d.mkdir(parents=True)
    p = d / "run one ✓.darshan"
    shutil.copy(IMBALANCED, p)
    rep = json.loads(cli("job", str(p), "--json", home=home, check=True).stdout)
    assert rep["job"]["nprocs"] == 496


@pytest.fixture
def script_log(tmp_path):
    """A real log whose file name holds a <script> tag, spaces and non-ASCII characters."""
    src = DATA_LOGS / "release_logs" / "mpi-io-test-x86_64-3.2.1.darshan"
    dst = tmp_path / "xss.darshan"
    rename_records(src, dst, {"/tmp/test/mpi-io-test.tmp.dat": "/tmp/<script>alert(1)</script> dir/jöb ü.dat"})
    return dst


def test_html_escapes_file_names(cli, home, tmp_path, script_log):
    from click.testing import CliRunner

    from ioweather.cli import cli as main

    out = tmp_path / "report.html"
    r = CliRunner().invoke(main, ["--home", str(home), "job", str(script_log), "--html", str(out)])
    assert r.exit_code == 0, r.output
    page = out.read_text(encoding="utf-8")
    assert "<script" not in page.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt; dir/jöb ü.dat" in page
    rep = json.loads(cli("job", str(script_log), "--json", home=home, check=True).stdout)
    assert rep["totals"]["files"] == 2


@pytest.mark.slow
@pytest.mark.browser
def test_html_renders_in_chromium_without_running_the_name(cli, home, tmp_path, script_log, browser):
    from browser import visit

    out = tmp_path / "report.html"
    cli("job", str(script_log), "--html", str(out), home=home, check=True)
    dxt_out = tmp_path / "dxt.html"
    cli("job", str(TESTDATA_LOGS / "nonmpi_dxt_anonymized.darshan"), "--html", str(dxt_out), home=home, check=True)
    with visit(browser, out.as_uri(), plots_ready=False) as v:
        assert "<script>alert(1)</script>" in v.page.inner_text("body")
        assert v.page.locator("svg").count() >= 2
        assert v.errors == []  # no alert() dialog: the name was not run
    with visit(browser, dxt_out.as_uri(), plots_ready=False) as v:
        assert "timeline" in v.page.inner_text("body")
        assert v.errors == []


@pytest.mark.slow
def test_html_plots_per_rank_and_dxt(cli, home, tmp_path):
    out = tmp_path / "r.html"
    cli("job", str(TESTDATA_LOGS / "treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan"),
        "--html", str(out), home=home, check=True)
    page = out.read_text(encoding="utf-8")
    for caption in ("I/O time by interface", "access sizes", "file sharing", "per rank", "timeline"):
        assert caption in page
    # self-contained: nothing fetched from elsewhere
    assert not any(x in page for x in ('src="http', "src='http", 'href="http', "<link", "@import"))


def test_human_report_opens_with_the_verdict_and_no_scientific_notation(cli, home):
    import re

    r = cli("job", str(IMBALANCED), home=home, env={"COLUMNS": "200"}, check=True)
    # 94.0 %: the slowest rank's MPI-IO time (49.4 % at POSIX alone, before issue 27)
    assert r.stdout.startswith("verdict: I/O is 94.0 % of the run time; stripe the 49.3 GiB file")
    assert "9.9 min" in r.stdout  # the saving, in minutes (it printed 5.9e+02 s-style numbers before)
    assert not re.search(SCI, r.stdout)


def test_damaged_dxt_region_leaves_the_timeline_out(cli, home, tmp_path):
    """Bytes in the middle of the DXT_POSIX region overwritten: the report stands, with a note."""
    from ioweather.sources.darshan_log import check_layout

    src = TESTDATA_LOGS / "nonmpi_dxt_anonymized.darshan"
    data = bytearray(src.read_bytes())
    regions = {what: (off, ln) for what, off, ln in check_layout(src).regions}
    off, ln = max(regions.values(), key=lambda r: r[1])  # the DXT trace is this log's largest region
    data[off + ln // 4: off + ln // 4 + 4000] = b"\xab" * 4000
    bad = tmp_path / "dxt-damaged.darshan"
    bad.write_bytes(bytes(data))
    out = tmp_path / "r.html"
    r = cli("job", str(bad), "--html", str(out), home=home)
    assert r.returncode == 0, r.stderr
    page = out.read_text(encoding="utf-8")
    assert "DXT_POSIX timeline left out" in page and "Verdict:" in page and "per rank" not in page
    assert "access sizes" in page  # the rest of the report is there
    assert "DXT_POSIX: corrupt Darshan log: cannot read DXT_POSIX records; left out" in page  # the warnings list
    rep = json.loads(cli("job", str(bad), "--json", home=home, check=True).stdout)  # --json does not read DXT
    assert rep["verdict"].endswith("nothing worth changing")


@pytest.mark.slow
@pytest.mark.browser
def test_html_report_in_chromium_has_the_verdict_and_human_numbers(cli, home, tmp_path, browser):
    import re

    from browser import visit

    out = tmp_path / "imb.html"
    cli("job", str(IMBALANCED), "--html", str(out), home=home, check=True)
    with visit(browser, out.as_uri(), plots_ready=False) as v:
        verdict = v.page.locator("#verdict").inner_text()
        assert verdict.startswith("Verdict: I/O is 94.0 % of the run time; stripe the 49.3 GiB file")
        body = v.page.inner_text("body")
        assert not re.search(SCI, body), re.search(SCI, body)
        # every tick label of every plot is a human number
        ticks = v.page.eval_on_selector_all("svg text", "els => els.map(e => e.textContent || \"\")")
        assert ticks and not [t for t in ticks if re.search(SCI, t)]
        assert "shared files split by Darshan's slowest/fastest-rank counters" in body
        # the hand-made SVG charts: each laid out at a real size with marks drawn, ticks in human units
        charts = v.page.eval_on_selector_all("figure svg", """els => els.map(e => {
            const r = e.getBoundingClientRect();
            return [e.querySelector('title').textContent, r.width, r.height, e.querySelectorAll('rect, path').length]; })""")
        assert [c[0] for c in charts] == ["I/O time by interface, layers side by side (never added up)",
                                          "POSIX access sizes (bytes)", "files", "bytes moved", "bytes per rank",
                                          "I/O time per rank"]
        assert all(w > 200 and h > 100 and n > 0 for _t, w, h, n in charts), charts
        assert "50.0 GiB" in ticks and "4.0 d" in ticks and "40,000" in ticks
        assert v.errors == []
