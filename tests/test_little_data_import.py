"""issue 30: `import lmt -q` prints nothing on success, and the count of recomputed jobs it says is that of
the jobs the imported telemetry overlaps (the shared Darshan logs ran years away from the 2018 LMT day)."""

from __future__ import annotations

import json

from conftest import run_cli

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
