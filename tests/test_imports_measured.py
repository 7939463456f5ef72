"""Short commands start light, measured (issue 37 item 4, issue 40 item 2).

A `# lazy:` reason beside an import says what it keeps off a path; this test checks that it does. One
fresh interpreter runs, through click's main with standalone_mode=False, `ioweather --help`, every
`COMMAND --help` of the click tree and `slowdown --check` on an empty home (first, and without rich either),
then reports the heavy libraries in `sys.modules`; then it runs `job LOG` on a shared Darshan log (its forked reader run
inline, so that its imports are seen) and reports them again, then `why LOG --json` on the same log and home (no
store: the log's answer alone). One subprocess: the fast tier pays one interpreter start, and a library loaded by any
step shows in the cumulative set, named by its step. `why JOB` on a store with telemetry is measured by
tests/test_why.py (test_why_loads_only_what_it_answers_with), beside the store it builds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ioweather.commands.web import pages_help
from ioweather.web.pages import load_pages

HEAVY = ("numpy", "pandas", "pyarrow", "sqlalchemy", "scipy", "duckdb", "jinja2")
LOG = Path("/work/shared/testdata/darshan/imbalanced-io.darshan")

_PROBE = textwrap.dedent("""
    import contextlib, io, json, sys
    import click
    HEAVY = set(sys.argv[1].split(","))
    from ioweather.cli import cli, COMMANDS

    def heavy():
        return sorted({m.split(".")[0] for m in sys.modules} & HEAVY)

    first = {}  # heavy library -> the first step that had it loaded

    def run(step, args):
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                rv = cli.main(args, prog_name="ioweather", standalone_mode=False)
            except SystemExit as e:
                rv = e.code
        for lib in heavy():
            first.setdefault(lib, step)
        return rv

    def walk(path, cmd):
        yield path
        if isinstance(cmd, click.Group):
            ctx = click.Context(cmd)
            for name in cmd.list_commands(ctx):
                yield from walk(path + [name], cmd.get_command(ctx, name))

    ctx = click.Context(cli)
    helps = 0

    def helps_of(names):
        global helps
        for name in names:
            for path in walk([name], cli.get_command(ctx, name)):
                run(" ".join(path) + " --help", path + ["--help"])
                helps += 1

    check_rc = run("slowdown --check", ["slowdown", "--check", "--json"])
    check_rich = "rich" in sys.modules  # first: cron runs it every minute, and rich's tables take 0.1-0.3 s
    run("--help", ["--help"])
    helps_of(sorted(COMMANDS))
    light = dict(first)
    import ioweather.services.jobs.darshan_child as child
    child.call_isolated = lambda fn, *a, **kw: fn(*a, **kw)
    job_rc = run("job LOG", ["job", sys.argv[2]])
    job = heavy()
    why_rc = run("why LOG", ["why", sys.argv[2], "--json"])
    print(json.dumps({"light": light, "job": job, "helps": helps, "check_rc": check_rc,
                      "check_rich": check_rich, "job_rc": job_rc, "why": heavy(), "why_rc": why_rc}))
""")


def _measure(tmp_path) -> dict:
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "IOWEATHER_HOME": str(home)}
    env.pop("IOWEATHER_DB", None)
    out = subprocess.run([sys.executable, "-c", _PROBE, ",".join(HEAVY), str(LOG)],
                         capture_output=True, text=True, env=env, timeout=120, check=True).stdout
    return json.loads(out.splitlines()[-1])


@pytest.mark.skipif(not LOG.exists(), reason="shared Darshan logs not present")
def test_help_check_and_job_load_only_what_they_need(tmp_path):
    got = _measure(tmp_path)
    assert got["helps"] > 60  # the walk reached the sub-commands, not only the top level
    assert got["check_rc"] == 3  # UNKNOWN: no store
    assert not got["check_rich"], "`slowdown --check --json` loaded rich (views.output): its JSON is views.json_output's"
    assert got["light"] == {}, f"heavy libraries loaded by --help or `slowdown --check` (first step): {got['light']}"
    assert got["job_rc"] in (0, None)
    assert "sqlalchemy" not in got["job"], f"`job LOG` loaded {got['job']}"
    # the report ran (numpy), and libdarshan-util is reached without PyDarshan's package (sources/darshan_cffi.py),
    # which imports pandas: the text report needs none
    assert "darshan" not in HEAVY and set(got["job"]) == {"numpy"}, f"`job LOG` loaded {got['job']}"
    # `why LOG` without a store: the log's report and nothing of a store's (SQLAlchemy came with the probe
    # baselines' module, imported before asking whether there was a store), no telemetry reader, no page
    assert got["why_rc"] in (0, None)
    assert got["why"] == got["job"], f"`why LOG` loaded {got['why']}; `job LOG` {got['job']}"


_HTML_PROBE = textwrap.dedent("""
    import contextlib, io, json, sys
    from ioweather.cli import cli
    LIBS = ("numpy", "pandas", "pyarrow", "sqlalchemy", "scipy", "rich", "jinja2", "matplotlib")

    def run(out):
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                cli.main(["job", sys.argv[1], "--html", out], prog_name="ioweather", standalone_mode=False)
            except SystemExit:
                pass
        return sorted({m.split(".")[0] for m in sys.modules} & set(LIBS))

    parent = run(sys.argv[2])  # the report made in the forked child, as a user runs it
    import ioweather.services.jobs.darshan_child as child
    child.call_isolated = lambda fn, *a, **kw: fn(*a, **kw)
    both = run(sys.argv[3])  # the child's work inline: what it loads shows here
    print(json.dumps({"parent": parent, "child": both}))
""")


@pytest.mark.skipif(not LOG.exists(), reason="shared Darshan logs not present")
def test_job_html_parent_loads_nothing_heavy_and_the_page_no_terminal_library(tmp_path):
    """`job LOG --html OUT` (issue 40): the parent forks, waits and writes the page: it imports no numpy (the
    report it unpickles holds Python numbers only) and no rich (nothing to draw); the child renders the page
    with Jinja and hand-made SVG, no rich, no matplotlib, no SQLAlchemy. Both runs write the same page."""
    env = {**os.environ, "IOWEATHER_HOME": str(tmp_path / "home")}
    env.pop("IOWEATHER_DB", None)
    forked, inline = tmp_path / "forked.html", tmp_path / "inline.html"
    out = subprocess.run([sys.executable, "-c", _HTML_PROBE, str(LOG), str(forked), str(inline)],
                         capture_output=True, text=True, env=env, timeout=120, check=True).stdout
    got = json.loads(out.splitlines()[-1])
    assert got["parent"] == [], f"`job LOG --html`'s parent loaded {got['parent']}"
    assert {"numpy", "pandas", "jinja2"} <= set(got["child"]), got  # the child did make the page
    assert not {"rich", "matplotlib", "sqlalchemy"} & set(got["child"]), got
    assert forked.read_bytes() == inline.read_bytes() and b"<svg" in forked.read_bytes()


def test_serve_help_lists_the_registry_pages():
    """commands/web.py's list, written out to keep --help light, names every navigable page as its module does."""
    assert pages_help() == "\n".join(f"/{p.slug:<9} {p.title}: {p.description}" for p in load_pages() if p.in_nav)


def test_each_import_kind_face_is_its_readers():
    """`import KIND --help` reads the kind's face in importers.KINDS; the reader class the kind runs takes
    the same help and options (one place), and a class claiming a kind the face does not name fails."""
    from ioweather.sources.telemetry.importers import KINDS, Importer, importer

    for face in KINDS:
        cls = importer(face.name)
        assert (cls.kind, cls.help, cls.options, cls.timezone, cls.target, cls.live) == (
            face.name, face.help, face.options, face.timezone, face.target, face.live)
    with pytest.raises(TypeError, match="telemetry.lmt:LmtImporter in KINDS"):
        type("Stray", (Importer,), {"kind": "lmt"})


_WHY_PROBE = textwrap.dedent("""
    import contextlib, io, json, sys
    from ioweather.cli import cli
    LIBS = set(sys.argv[1].split(",")) | {"darshan", "cffi"}

    def run(args):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            try:
                rv = cli.main(args, prog_name="ioweather", standalone_mode=False)
            except SystemExit as e:
                rv = e.code
        return rv, out.getvalue()

    rc_json, doc = run(["why", sys.argv[2], "--json"])
    rc_text, text = run(["why", sys.argv[3]])  # the text answer too (a hash prefix): the terminal table is rich's
    print(json.dumps({"loaded": sorted({m.split(".")[0] for m in sys.modules} & LIBS),
                      "rc": [rc_json, rc_text], "why": json.loads(doc), "text": text}))
""")


@pytest.mark.skipif(not LOG.exists(), reason="shared Darshan logs not present")
def test_why_on_a_sqlite_store_with_stored_facts_loads_no_heavy_library(tmp_path):
    """`why JOB` on an SQLite store that ingested the job's log (its facts stored, darshan schema 4) and holds
    no telemetry for its file system (issue 40): nothing of its answer needs numpy, pandas, pyarrow, DuckDB,
    SQLAlchemy or PyDarshan. The content hash (is the log unchanged?) and the telemetry datasets' listing came
    with pandas and pyarrow (sources.darshan_log, store.job_telemetry): ~0.4 s of CPU of a 0.5 s answer. Now
    sources.darshan_header and store.telemetry_names; the answer is the stored facts' (the code's saving, no
    system share)."""
    home = tmp_path / "home"
    env = {**os.environ, "IOWEATHER_HOME": str(home)}
    env.pop("IOWEATHER_DB", None)
    subprocess.run([sys.executable, "-m", "ioweather", "jobs", "ingest", str(LOG), "--workers", "1"],
                   capture_output=True, text=True, env=env, timeout=300, check=True)
    listed = json.loads(subprocess.run([sys.executable, "-m", "ioweather", "jobs", "list", "--json"], capture_output=True,
                                       text=True, env=env, timeout=120, check=True).stdout)
    (job,) = listed
    out = subprocess.run([sys.executable, "-c", _WHY_PROBE, ",".join(HEAVY), str(job["jobid"]), job["id"][:12]],
                         capture_output=True, text=True, env=env, timeout=120, check=True).stdout
    got = json.loads(out.splitlines()[-1])
    assert got["rc"] == [0, 0] or got["rc"] == [None, None], got["rc"]
    assert got["loaded"] == [], f"`why JOB` on an SQLite store with stored facts loaded {got['loaded']}"
    (log,) = got["why"]["logs"]
    assert log["id"] == job["id"][:16] and log["io_time_s"] > 0 and log["code_s"] > 0  # the stored facts' answer
    assert log["system_model"] == "unknown" and "no telemetry or probe" in got["text"]
