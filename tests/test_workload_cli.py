"""`ioweather workload` end to end: the synthetic file system with known truth, the real LMT fixture, bad input."""

from __future__ import annotations

import json
import re
import sqlite3

import numpy as np
import pandas as pd
import pytest

import workload_synthetic as syn
from ioweather.config import Settings
from ioweather.store.telemetry_layout import write_rows


def run(*args, home):
    """In-process `ioweather --home HOME ARGS` (the imports are paid once; the subprocess tests below
    check the real command line). Returns (exit code, stdout, stderr)."""
    from click.testing import CliRunner

    from ioweather.cli import cli

    r = CliRunner().invoke(cli, ["--home", str(home), *args])
    if r.exception and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r.exit_code, r.stdout, r.stderr


def run_json(*args, home) -> dict:
    code, out, err = run(*args, "--json", home=home)
    assert code == 0, err
    return json.loads(out)

KEYS = ["fs", "start", "end", "interval_s", "samples", "missing_samples", "read_bytes", "write_bytes", "daily",
        "monthly", "peak_read_bps", "peak_write_bps", "peak_total_bps", "mean_total_bps", "burstiness",
        "idle_periods", "power_spectrum", "acf", "events"]


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    home = tmp_path_factory.mktemp("wl") / "home"
    df = syn.frame()
    write_rows(Settings.resolve(home), "syn", df)
    return home, df


@pytest.fixture(scope="module")
def report(synthetic):
    from conftest import run_cli

    home, _ = synthetic
    proc = run_cli("workload", "--fs", "syn", "--json", home=home, check=True)
    return json.loads(proc.stdout)


def _minute(iso: str) -> float:
    return (pd.Timestamp(iso).value - syn.T0) / 60e9


def test_json_has_the_contract_keys(report):
    for key in KEYS:
        assert key in report, key
    assert set(report["burstiness"]) >= {"frac_time_below_33pct_peak", "cdf_bps", "cdf_frac"}
    assert set(report["power_spectrum"]) == {"read", "write"}
    assert set(report["power_spectrum"]["read"]) == {"bin_edges_bytes", "bytes", "centroid_bytes"}
    assert set(report["acf"]) == {"lags_s", "read", "write"}
    assert all(set(e) == {"start", "end", "peak_time", "peak_bps", "bytes"} for e in report["events"])
    assert report["start"] == "2024-03-01T00:00:00.000Z" and report["end"] == "2024-03-03T00:00:00.000Z"
    assert report["interval_s"] == 60


def test_totals_are_exact(report, synthetic):
    _, df = synthetic
    for metric in ("read_bytes", "write_bytes"):
        assert report[metric] == df.loc[df["metric"] == metric, "value"].sum()  # pandas skips the NaN reset
    day = pd.to_datetime(df["time_ns"], unit="ns").dt.strftime("%Y-%m-%d")
    ref = df.assign(date=day).groupby(["date", "metric"])["value"].sum().unstack()
    assert [d["date"] for d in report["daily"]] == list(ref.index)
    for d in report["daily"]:
        assert d["read_bytes"] == ref.loc[d["date"], "read_bytes"]
        assert d["write_bytes"] == ref.loc[d["date"], "write_bytes"]
    assert report["monthly"] == [{"date": "2024-03", "read_bytes": report["read_bytes"],
                                  "write_bytes": report["write_bytes"]}]


def test_samples_missing_interval_and_counter_reset(report):
    assert report["samples"] == syn.MINUTES - 1 and report["missing_samples"] == 1
    per_minute = 60 // syn.STEP_S
    expected = syn.MINUTES * per_minute * syn.TARGETS * 2
    lost = per_minute * syn.TARGETS * 2 + 2  # the missing minute's rows and the reset's read and write
    assert report["observations"] == expected - lost and report["missing_observations"] == lost
    assert report["targets"] == syn.TARGETS and report["sample_interval_s"] == syn.STEP_S


def test_peaks_are_exact(report, synthetic):
    _, df = synthetic
    minute = df["time_ns"] // 60_000_000_000
    per = df.groupby([minute, "metric"])["value"].sum().unstack() / 60
    assert report["peak_read_bps"] == per["read_bytes"].max()
    assert report["peak_write_bps"] == per["write_bytes"].max()
    assert report["peak_total_bps"] == pytest.approx((per["read_bytes"] + per["write_bytes"]).max(), rel=1e-15)
    assert report["mean_total_bps"] == pytest.approx((report["read_bytes"] + report["write_bytes"]) / (report["samples"] * 60))
    assert 5 * syn.GIB <= report["peak_total_bps"] <= 5 * syn.GIB + syn.FLOOR_BPS


def test_idle_table_and_burstiness_are_exact(report):
    got = [(r["bin"], r["count"], r["minutes"]) for r in report["idle_periods"]]
    assert got == syn.EXPECTED_IDLE
    for r in report["idle_periods"]:
        assert r["frac_time"] == pytest.approx(r["minutes"] / syn.OBSERVED_MINUTES)
    assert report["burstiness"]["frac_time_below_33pct_peak"] == pytest.approx(syn.BELOW_33PCT_MINUTES / syn.OBSERVED_MINUTES)


def test_events_recover_the_scheduled_bursts(report):
    """Within half the 600 s smoothing window plus one interval (6 min) for start and end;
    bytes between the burst's own bytes and that plus the floor over the event (<= 1.6 MB/s)."""
    truth = syn.bursts()
    assert len(report["events"]) == len(truth)
    for e, b in zip(report["events"], truth):
        start, end, peak = _minute(e["start"]), _minute(e["end"]), _minute(e["peak_time"])
        assert b.start_min - 6 <= start <= b.start_min
        assert b.end_min <= end <= b.end_min + 6
        assert b.start_min <= peak < b.end_min
        assert b.total_bps <= e["peak_bps"] <= b.total_bps + syn.FLOOR_BPS
        assert b.bytes <= e["bytes"] <= b.bytes + syn.FLOOR_BPS * (end - start) * 60


def test_power_spectrum_matches_numpy_and_centroid_sits_in_the_known_bin(report, synthetic):
    _, df = synthetic
    for key in ("read", "write"):
        v = df.loc[df["metric"] == f"{key}_bytes", "value"].dropna().to_numpy()
        ref, edges = np.histogram(v, bins=100, range=(0, v.max()), weights=v)
        got = report["power_spectrum"][key]
        np.testing.assert_allclose(got["bin_edges_bytes"], edges, rtol=1e-15)
        np.testing.assert_allclose(got["bytes"], ref, rtol=1e-12)
    # Written bytes by observation size: floor < 1 MB, spikes 0.625 GiB, bursts 1.25, 2.5, 3.75 and 5 GiB per
    # target and interval; the 3.75 GiB observations (60 min x 3 GiB/s) hold the middle byte.
    w = report["power_spectrum"]["write"]
    i = int(np.searchsorted(w["bin_edges_bytes"], 3.75 * syn.GIB, side="right")) - 1
    assert w["bin_edges_bytes"][i] <= w["centroid_bytes"] <= w["bin_edges_bytes"][i + 1]


def test_acf_runs_to_24h(report):
    assert report["acf"]["lags_s"][-1] == 86400 and len(report["acf"]["read"]) == 1441
    assert report["acf"]["read"][0] == 1.0 and report["acf"]["write"][0] == 1.0


def test_since_until_select_one_day(synthetic):
    home, df = synthetic
    r = run_json("workload", "--fs", "syn", "--since", "2024-03-02", "--until", "2024-03-03T00:00Z", home=home)
    assert r["start"] == "2024-03-02T00:00:00.000Z" and r["samples"] == 1440 and r["missing_samples"] == 0
    day2 = df[df["time_ns"] >= syn.T0 + 86_400 * 10**9]
    assert r["write_bytes"] == day2.loc[day2["metric"] == "write_bytes", "value"].sum()
    assert len(r["events"]) == 1 and len(r["daily"]) == 1
    # the same range written with a time-zone offset and as unix seconds
    same = run_json("workload", "--fs", "syn", "--since", "2024-03-02T01:00:00+01:00", "--until", "1709424000",
                    home=home)
    assert (same["start"], same["end"], same["write_bytes"]) == (r["start"], r["end"], r["write_bytes"])


def test_resample_5s_and_a_resample_that_does_not_divide_a_day(synthetic):
    home, df = synthetic
    r = run_json("workload", "--fs", "syn", "--resample", "5s", "--acf-max-lag", "1h", home=home)
    assert r["samples"] == syn.MINUTES * 12 - 12 and r["read_bytes"] == df.loc[df["metric"] == "read_bytes", "value"].sum()
    assert len(r["acf"]["lags_s"]) == 721
    code, out, err = run("workload", "--fs", "syn", "--resample", "37s", "--json", home=home)
    r = json.loads(out)
    assert code == 0 and "not a multiple of the sampling interval" in err
    ref = df.assign(date=pd.to_datetime(df["time_ns"], unit="ns").dt.strftime("%Y-%m-%d")).groupby(
        ["date", "metric"])["value"].sum().unstack()
    assert [(d["date"], d["write_bytes"]) for d in r["daily"]] == list(zip(ref.index, ref["write_bytes"]))


def test_human_table(synthetic):
    home, _ = synthetic
    code, out, _ = run("workload", "--fs", "syn", home=home)
    assert code == 0
    assert "idle periods" in out and ">60" in out and "events" in out and "2304" in out


def test_html_report_is_self_contained(synthetic, tmp_path):
    home, _ = synthetic
    out = tmp_path / "report.html"
    assert run("workload", "--fs", "syn", "--html", str(out), home=home)[0] == 0
    text = out.read_text()
    assert text.count("data:image/png;base64,") == 7  # daily, CDF, spectrum, ACF, events, spectrogram, study
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)
    for title in ("Daily mean rates", "Burstiness", "Idle periods", "power spectrum", "Autocorrelation",
                  "Events over the signal", "Spectrogram", "Events versus smoothing window"):
        assert title in text


# --------------------------------------------------------------------------- the real LMT fixture
def lmt_deltas(path) -> pd.DataFrame:
    """A tiny LMT converter for this test: cumulative OST counters to per-interval deltas,
    a counter that goes backwards becomes NaN (timestamps taken as UTC)."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        raw = pd.read_sql("SELECT i.OST_NAME AS target, t.TIMESTAMP AS ts, d.READ_BYTES AS read_bytes, "
                          "d.WRITE_BYTES AS write_bytes FROM OST_DATA d JOIN TIMESTAMP_INFO t USING (TS_ID) "
                          "JOIN OST_INFO i USING (OST_ID)", con)
    raw["t"] = pd.to_datetime(raw["ts"], utc=True).dt.as_unit("ns").astype("int64")
    raw = raw.sort_values(["target", "t"])
    out = []
    for metric in ("read_bytes", "write_bytes"):
        g = raw.groupby("target")
        delta = g[metric].diff()
        prev_t = g["t"].shift()
        ok = prev_t.notna()
        out.append(pd.DataFrame({"time_ns": prev_t[ok].astype("int64"), "target": raw["target"][ok], "metric": metric,
                                 "value": delta[ok].where(delta[ok] >= 0).astype(float),
                                 "interval_s": ((raw["t"] - prev_t)[ok] / 1e9).astype(float)}))
    return pd.concat(out, ignore_index=True)


def sql_delta_sum(path, column: str) -> int:
    """The reference: a direct SQL sum of non-negative counter deltas in the LMT database itself."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        return con.execute(f"""
            SELECT sum(d) FROM (
              SELECT d.{column} - lag(d.{column}) OVER (PARTITION BY d.OST_ID ORDER BY t.TIMESTAMP) AS d
              FROM OST_DATA d JOIN TIMESTAMP_INFO t USING (TS_ID)) WHERE d >= 0""").fetchone()[0]


@pytest.mark.parametrize("name", ["snx11025_2018-01-28.sqlite3", "lmtdb-reset.sqlite3"])
def test_real_lmt_totals_equal_sql_sum_of_deltas(testdata, tmp_path, name):
    path = testdata / "lmt" / name
    home = tmp_path / "home"
    write_rows(Settings.resolve(home), "lmt", lmt_deltas(path))
    r = run_json("workload", "--fs", "lmt", "--resample", "5s", home=home)
    assert r["read_bytes"] == sql_delta_sum(path, "READ_BYTES")
    assert r["write_bytes"] == sql_delta_sum(path, "WRITE_BYTES")
    assert r["read_bytes"] > 0 and r["peak_total_bps"] > 0
    assert all(d["read_bytes"] >= 0 and d["write_bytes"] >= 0 for d in r["daily"])
    if name.startswith("lmtdb-reset"):
        # the reset (counter back to 0 after a 200 s gap) is one missing observation, not a negative one;
        # the gap's 39 absent 5 s slots are missing too
        assert r["missing_observations"] == 2 * 40
        assert r["missing_samples"] > 0
    else:
        assert r["targets"] == 24 and r["missing_observations"] == 0 and r["observations"] == 24 * 60 * 2


# --------------------------------------------------------------------------- bad input
def _line(code, out, err) -> str:
    assert code == 2, err
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ioweather: error: "), err
    return lines[0]


def test_range_without_data_is_a_clear_message(cli, synthetic):
    home, _ = synthetic
    proc = cli("workload", "--fs", "syn", "--since", "2023-01-01", "--until", "2023-02-01", "--json", home=home)
    line = _line(proc.returncode, proc.stdout, proc.stderr)
    assert "no read/write telemetry for 'syn' between 2023-01-01" in line and "data covers 2024-03-01" in line


@pytest.mark.parametrize("args, message", [
    (["--fs", "nope"], "no telemetry for file system 'nope'"),
    (["--fs", "../etc"], "invalid file system name"),
    (["--fs", "syn", "--resample", "1s"], "shorter than the sampling interval"),
    (["--fs", "syn", "--resample", "0"], "--resample must be positive"),
    (["--fs", "syn", "--since", "2024-03-02", "--until", "2024-03-01"], "must be before --until (2024-03-01 00:00:00 UTC)"),
    (["--fs", "syn", "--json", "--html", "x.html"], "choose one of --json and --html"),
    (["--fs", "syn", "--min-amplitude", "fast"], "malformed size"),
    (["--fs", "syn", "--idle-threshold", "1.5"], "idle-threshold"),
    (["--fs", "syn", "--until", "yesterday-ish"], "malformed time"),
    (["--fs", "syn", "--smooth", "-5m"], "duration"),
])
def test_bad_options(synthetic, args, message):
    home, _ = synthetic
    assert message in _line(*run("workload", *args, home=home))


def test_fs_without_byte_metrics(tmp_path):
    home = tmp_path / "home"
    write_rows(Settings.resolve(home), "cpuonly", pd.DataFrame({
        "time_ns": [syn.T0], "target": ["oss1"], "metric": ["cpu_pct"], "value": [12.0], "interval_s": [5.0]}))
    assert "has no read_bytes or write_bytes rows" in _line(*run("workload", "--fs", "cpuonly", home=home))


def test_help(cli):
    proc = cli("workload", "--help")
    assert proc.returncode == 0
    for opt in ("--fs", "--since", "--until", "--resample", "--idle-threshold", "--smooth", "--min-amplitude",
                "--acf-max-lag", "--json", "--html"):
        assert opt in proc.stdout


@pytest.mark.browser
@pytest.mark.slow
def test_html_report_renders_in_chromium(synthetic, tmp_path, browser):
    """Every figure decodes and nothing is requested from the network."""
    from browser import visit

    home, _ = synthetic
    out = tmp_path / "report.html"
    assert run("workload", "--fs", "syn", "--html", str(out), home=home)[0] == 0
    with visit(browser, out.as_uri(), plots_ready=False) as v:
        widths = v.page.eval_on_selector_all("img", "imgs => imgs.map(i => i.naturalWidth)")
        rows = v.page.eval_on_selector_all("section:nth-of-type(4) tbody tr", "rs => rs.length")
        assert v.errors == []
    assert len(widths) == 7 and all(w > 300 for w in widths)
    assert rows == 9  # the idle table's bins
    assert all(u.startswith(("file:", "data:")) for u in v.requests), v.requests


def test_too_many_intervals_is_refused_before_scanning(synthetic, monkeypatch):
    from ioweather.services.telemetry import workload as cmd

    home, _ = synthetic
    monkeypatch.setattr(cmd, "MAX_BINS", 1000)
    assert "choose a longer --resample" in _line(*run("workload", "--fs", "syn", "--resample", "60s", home=home))
