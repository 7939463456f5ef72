"""Issue 28's small contradictions, each at its cause, on real inputs: the Darshan logs of the shared
test data and the LMT database of docs/workload.md's example.

- nodes come from the scheduler or the log's host names, never from its process count;
- whole numbers are printed whole ("335", not "335.00");
- every command a page names exists;
- the Workload page takes the options the command takes and finds the same events;
- `events` prints 5-second events to the second."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from urllib.parse import quote

import click
import pytest
from click.testing import CliRunner

from ioweather.cli import cli as ioweather_cli
from ioweather.config import Settings
from web_server import Server, api

ROOT = Path(__file__).resolve().parents[1]
LMT = "lmt/snx11025_2018-01-28.sqlite3"
# docs/workload.md's example: five minutes of LMT at 5 s
EXAMPLE = ["--resample", "5s", "--smooth", "30s", "--min-amplitude", "100MiB/s"]


def run(*args: str, home: Path) -> str:
    """`ioweather ARGS` in this process (click's runner): stdout; fails the test on any error."""
    r = CliRunner().invoke(ioweather_cli, ["--home", str(home), *args])
    assert r.exit_code == 0, (r.output, r.exception)
    return r.stdout


@pytest.fixture(scope="module")
def darshan_home(testdata, tmp_path_factory):
    logs = tmp_path_factory.mktemp("logs")
    # 496 and 128 processes, no host names
    for name in ("imbalanced-io.darshan", "darshan-apmpi-2nodes-64mpi.darshan"):
        shutil.copy(testdata / "darshan" / name, logs / name)
    home = tmp_path_factory.mktemp("dj") / "home"
    doc = json.loads(run("jobs", "ingest", str(logs), "--json", home=home))
    assert doc["ingested"] == 2
    return home


def test_nodes_never_from_processes(darshan_home):
    from ioweather.services.jobs import weather as jw
    from ioweather.store import open_store

    store = open_store(Settings.resolve(darshan_home))
    try:
        jobs = json.loads(run("jobs", "list", "--json", home=darshan_home))
        by_procs = {j["nprocs"]: j for j in jobs}
        for nprocs in (496, 128):
            job = jw.find_job(store, by_procs[nprocs]["id"][:12])
            assert job.nnodes is None
            assert " / ? nodes / " in job.motif("fs") and f"{nprocs} nodes" not in job.motif("fs")
    finally:
        store.dispose()


@pytest.mark.parametrize("value, text", [(335.0, "335"), (496, "496"), (12_345.0, "12,345"), (0.0, "0"),
                                         (12.5, "12.50"), (0.25, "0.250"), (1234.5, "1,234"), (None, "-")])
def test_whole_numbers_print_whole(value, text):
    from ioweather.views.umami_report import number_text

    assert number_text(value) == text


def _named_commands() -> set[str]:
    """`ioweather WORD WORD...` named in the dashboard's templates and pages' hints: the leading words that
    look like a command (lower case), up to the first option, placeholder or template expression."""
    web = ROOT / "src" / "ioweather" / "web"
    text = "\n".join(p.read_text() for p in [*web.glob("templates/*.html"), *web.glob("pages/*.py")])
    named = set()
    for m in re.finditer(r"(?:<code>|`)ioweather ([^<`]+)", text):
        words = []
        for w in m.group(1).split():
            if not re.fullmatch(r"[a-z][a-z-]*", w):
                break
            words.append(w)
        named.add(" ".join(words))
    return named


def test_every_command_a_page_names_exists():
    named = _named_commands()
    assert "import slurm" in named and "collect" in named  # the Talkers hint, the telemetry hint
    ctx = click.Context(ioweather_cli)
    for words in sorted(named):
        cmd = ioweather_cli
        for w in words.split():
            if not isinstance(cmd, click.Group):
                break  # an argument of the command (`fsstats DIR`)
            sub = cmd.get_command(ctx, w)
            assert sub is not None, f"`ioweather {words}` named on a page: no command {w!r}"
            cmd = sub


@pytest.fixture(scope="module")
def lmt_home(testdata, tmp_path_factory):
    home = tmp_path_factory.mktemp("lmt") / "home"
    run("import", "lmt", str(testdata / LMT), "--fs", "snx11025", "--timezone", "America/Los_Angeles", "-q", home=home)
    return home


def test_workload_page_takes_what_the_cli_takes(lmt_home):
    cli_doc = json.loads(run("workload", "--fs", "snx11025", *EXAMPLE, "--json", home=lmt_home))
    assert len(cli_doc["events"]) == 4  # docs/workload.md
    window = f"since={cli_doc['start']}&until={cli_doc['end']}"
    with Server(__import__("ioweather.web.app", fromlist=["create_app"]).create_app(Settings.resolve(lmt_home))) as s:
        code, web = api(s, f"/api/workload?fs=snx11025&{quote(window, safe='=&')}&resample=5s&smooth=30s"
                           f"&min_amplitude=100MiB/s")
    assert code == 200, web
    assert web["result"] == cli_doc


def test_events_of_5s_data_print_to_the_second(lmt_home):
    out = run("events", "--fs", "snx11025", "--since", "2018-01-28T08:00:00Z", *EXAMPLE, home=lmt_home)
    # docs/workload.md's first event: 08:00:05 to 08:01:15
    assert "2018-01-28 08:00:05" in out and "2018-01-28 08:01:15" in out, out
