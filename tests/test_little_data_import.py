"""issue 30: `import lmt -q` prints nothing on success, and the count of recomputed jobs it says is that of
the jobs the imported telemetry overlaps (the shared Darshan logs ran years away from the 2018 LMT day)."""

from __future__ import annotations

import json

import test_job_weather
from conftest import run_cli
from test_job_weather import planted  # noqa: F401 (fixture)

from ioweather.store import telemetry_layout as layout

LMT = "lmt/snx11025_2018-01-28.sqlite3"
TZ = ("--timezone", "America/Los_Angeles")


def test_quiet_import_prints_nothing_and_counts_only_overlapped_jobs(testdata, tmp_path):
    home = tmp_path / "home"
    env = {"IOWEATHER_FS_MAP": "/=snx11025"}  # every job's files map to the imported dataset
    run_cli("jobs", "ingest", str(testdata / "darshan"), "-q", home=home, env=env, check=True)
    quiet = run_cli("import", "lmt", str(testdata / LMT), "--fs", "snx11025", *TZ, "-q", home=home, env=env,
                    check=True)
    assert (quiet.stdout, quiet.stderr) == ("", "")  # before: "import: recomputed the weather of 13 jobs ..."
    doc = json.loads(run_cli("import", "lmt", str(testdata / LMT), "--fs", "snx11025", *TZ, "--json",
                             home=home, env=env, check=True).stdout)
    assert doc["job_weather"]["overlapped"] == 0
    loud = run_cli("import", "lmt", str(testdata / LMT), "--fs", "snx11025", *TZ, home=home, env=env, check=True)
    assert "imported into file system" in loud.stdout and "recomputed" not in loud.stdout + loud.stderr


def test_overlapped_counts_the_jobs_in_the_imported_span(planted):
    """13 planted jobs a day apart, all without weather: the first refresh computes all 13, and with the
    span of the last job's window only that job is counted as overlapped; a span on another file
    system or between the jobs overlaps none."""
    from umami_planted import S, T0

    from ioweather.services.jobs import weather as job_weather

    settings, store = planted
    last = T0 + 12 * 86_400 * S
    res = job_weather.refresh_all(store, span=("scratch", last, last + 60 * S))
    assert (res.computed, res.overlapped) == (13, 1)
    extra = test_job_weather._telemetry(last, last + 60 * S, 0, 4 * (1 << 20), targets=1)
    extra["target"] = "fs-OST0009"
    layout.write_rows(settings, "scratch", extra)  # new telemetry in the last job's window: it is recomputed
    assert job_weather.refresh_all(store, span=("other", last, last + 60 * S)).overlapped == 0
    layout.write_rows(settings, "scratch", extra.assign(target="fs-OST0010"))
    gap = last - 43_200 * S
    assert job_weather.refresh_all(store, span=("scratch", gap, gap + 60 * S)).to_json() == {
        "jobs": 13, "computed": 1, "kept": 12, "skipped": 0, "overlapped": 0}
