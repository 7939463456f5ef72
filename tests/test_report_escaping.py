"""The CLI's HTML reports render through the shared Jinja environment (views/templating.py): a hostile
name reaches the page escaped, never as markup. `fsstats --html` with a hostile directory name is in
tests/test_fsstats_cli.py; here `jobs summary --html` (project names from a mapping, real Darshan
logs) and `workload --html` (a name in the document: the store refuses such file-system names)."""

from __future__ import annotations

import shutil

import pytest
from darshan_support import TESTDATA_LOGS

import workload_synthetic as syn
from ioweather.config import Settings
from ioweather.store.telemetry_layout import write_rows

HOSTILE = "<script>alert(1)</script>&<img/src=x/onerror=alert(2)>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;&amp;&lt;img/src=x/onerror=alert(2)&gt;"


def _no_markup_from(page: str) -> None:
    assert "<script" not in page and "<img/src" not in page and "onerror=alert(2)>" not in page


def test_jobs_summary_html_escapes_project_names(cli, home, tmp_path):
    logs = tmp_path / "a"
    logs.mkdir()
    for name in ("mpi-io-test-x86_64-3.0.0.darshan", "imbalanced-io.darshan", "partial_data_stdio.darshan"):
        if not (TESTDATA_LOGS / name).exists():
            pytest.skip(f"{name} not in the shared test data")
        shutil.copy(TESTDATA_LOGS / name, logs / name)
    cli("jobs", "ingest", str(logs), "--workers", "1", "-q", home=home, check=True)
    mapping = tmp_path / "projects.txt"
    mapping.write_text(f"/ {HOSTILE}\n")  # every file's path: every job is the hostile project's
    out = tmp_path / "summary.html"
    r = cli("jobs", "summary", "--projects", str(mapping), "--html", str(out), home=home)
    assert r.returncode == 0, r.stderr
    page = out.read_text()
    _no_markup_from(page)
    assert f"<code>{ESCAPED}</code>" in page  # in the top-projects and projects tables
    assert page.lower().startswith("<!doctype html>") and page.count("<svg") >= 3


def test_workload_html_escapes_the_name_it_shows(tmp_path):
    from ioweather.services.telemetry.workload import compute
    from ioweather.views.workload_report import render

    settings = Settings.resolve(tmp_path / "home")
    write_rows(settings, "syn", syn.frame())
    result, data = compute(settings, "syn", None, None, 60.0, 0.05, 600.0, float(1 << 30), 86400.0)
    page = render({**result.to_json(), "fs": HOSTILE}, data)
    _no_markup_from(page)
    assert f"<title>ioweather workload: {ESCAPED}</title>" in page and f"<h1>ioweather workload: {ESCAPED}</h1>" in page
    assert page.count('src="data:image/png;base64,') == 7
    assert f"<td>{len(result.events)}</td>" in page  # the summary's event count
