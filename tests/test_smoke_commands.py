"""Every command as a user runs it: `python -m ioweather ...` in a real process, not click's CliRunner.

The command list is the click tree itself, walked from `ioweather.cli`: a new command without an entry in
RUNS fails `test_every_command_has_a_smoke_run`. Each command gets `--help` (exit 0, its usage line) and one
real invocation: on small real data where that takes about a second, else the one-line error it gives for
missing data, a missing file or a refused option (the servers `serve` and `watch`: a port out of range).
"""

from __future__ import annotations

import re
from typing import NamedTuple

import click
import pytest

from conftest import TESTDATA, run_cli
from ioweather.cli import cli as root


def _walk(cmd: click.Command, path: tuple[str, ...], ctx: click.Context):
    yield path
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _walk(sub, (*path, name), click.Context(sub, parent=ctx, info_name=name))


COMMANDS = [" ".join(p) for p in _walk(root, (), click.Context(root, info_name="ioweather"))]


class Run(NamedTuple):
    args: str          # split on spaces after {data} (the shared test data) and {tmp} are filled in
    code: int          # the exit status expected
    says: str          # a regular expression its stdout + stderr must match
    slow: bool = False  # 1.3 s of CPU or more here (measured with RUSAGE_CHILDREN): out of the fast tier
    first: str = ""     # a command run before it, in the same home (a probe directory to probe)


ONE_LINE_ERROR = r"\Aioweather: error: [^\n]*\n\Z"

#: One real invocation per command; a group's are its commands', so it has None. An empty home is a store
#: with no data: the commands that read one say so in one line.
RUNS: dict[str, Run | None] = {
    "": Run("--version", 0, r"ioweather, version \S+"),
    "bench": None,
    "bench check": Run("bench check", 3, r"UNKNOWN"),
    "bench import": Run("bench import {tmp}/missing.json", 2, ONE_LINE_ERROR),
    "bench run": Run("bench run no-such-motif --dir {tmp}", 2, ONE_LINE_ERROR),
    "bench submit": Run("bench submit no-such-motif --dir {tmp}", 2, ONE_LINE_ERROR),
    "bench summary": Run("bench summary", 2, ONE_LINE_ERROR),
    "changes": Run("changes", 0, r"no change of level in 0 series", slow=True),
    "collect": Run("collect --proc-root {data}/lustre-procfs --sources lustre --interval 1s --duration 3s "
                   "--fs lustrefs --json -q", 0, r'"rows_written": [1-9]', slow=True),
    "correlations": Run("correlations", 2, ONE_LINE_ERROR, slow=True),
    "events": Run("events --fs lustrefs", 2, ONE_LINE_ERROR, slow=True),
    "export": Run("export --once", 0, r"# HELP ioweather_", slow=True),
    "factors": None,
    "factors classify": Run("factors classify {tmp}/missing.csv", 2, ONE_LINE_ERROR),
    "factors density": Run("factors density {data}/r-density/toy_obs.csv --json", 0, r'"bandwidth"'),
    "factors fit": Run("factors fit {tmp}/missing.parquet", 2, ONE_LINE_ERROR),
    "fsstats": Run("fsstats {tmp}/tree --json", 0, r'"files": 2'),
    "fsstats diff": Run("fsstats diff a b", 2, ONE_LINE_ERROR),
    "fsstats list": Run("fsstats list --json", 0, r"\[\]"),
    "fsstats walk": Run("fsstats walk {tmp}/tree --json", 0, r'"files": 2'),
    "import": None,
    "import csv": Run("import csv {tmp}/t.csv --fs x --json", 0, r'"rows": 10', slow=True),
    "import iostat": Run("import iostat {tmp}/missing.json --fs x", 2, ONE_LINE_ERROR),
    "import job-features": Run("import job-features --preset tokio-abc "
                                "{data}/tokio-abc/mira-summaries_2017-02-14_2018-02-15.csv.gz --json", 0,
                                r'"rows": 2533', slow=True),
    "import lctl": Run("import lctl {data}/pytokio/lctl-dl-t.txt.gz --at 2019-05-15T00:00:00 --fs snx11025 --json", 0,
                        r'"rows": [1-9]', slow=True),
    "import lctl-params": Run("import lctl-params {data}/lustrefs-exporter/valid.txt --fs x --json", 0,
                              r'"rows": [1-9]', slow=True),
    "import lfsdf": Run("import lfsdf {data}/pytokio/lfs-df.txt.gz --at 2019-05-15T00:00:00 --fs snx11025 --json", 0,
                         r'"rows": [1-9]', slow=True),
    "import lmt": Run("import lmt {data}/lmt/snx11025_2018-01-28.sqlite3 --fs x --json", 0, r'"rows": [1-9]',
                      slow=True),
    "import mmperfmon": Run("import mmperfmon {data}/pytokio/mmperfmon.2019-05-15-micro.tgz --fs x --json", 0,
                            r'"rows": [1-9]', slow=True),
    "import nersc-jobsdb": Run("import nersc-jobsdb {data}/pytokio/sample_nersc_jobsdb.sqlite3 --json", 0,
                               r'"jobs": [1-9]', slow=True),
    "import slurm": Run("import slurm {data}/pytokio/sample.slurm --json", 0, r'"jobs": [1-9]', slow=True),
    "import tts": Run("import tts {data}/pytokio/sample_tokiots.hdf5 --fs x --json", 0, r'"rows": [1-9]', slow=True),
    "iomodel": None,
    "iomodel run": Run("iomodel run --dir {tmp} --cache cached --op R --sizes 4096 --repeats 10 --file-size 1MiB "
                       "--mem-size 1MiB --out {tmp}/io.parquet --json", 0, r'"rows": 10', slow=True),
    "job": Run("job {data}/darshan/mpi-io-test-x86_64-3.0.0.darshan --json", 0, r'"nprocs"', slow=True),
    "job diff": Run("job diff {data}/darshan/mpi-io-test-x86_64-3.0.0.darshan "
                    "{data}/darshan/mpi-io-test-ppc64-3.1.8.darshan --json", 0, r'"io_time_change_s"', slow=True),
    "jobs": None,
    "jobs failed": Run("jobs failed --json", 0, r"\[\]", slow=True),
    "jobs ingest": Run("jobs ingest {data}/darshan/mpi-io-test-x86_64-3.0.0.darshan --workers 1 --json", 0,
                       r'"ingested": 1', slow=True),
    "jobs list": Run("jobs list --json", 0, r"\[\]"),
    "jobs show": Run("jobs show 12345", 2, ONE_LINE_ERROR, slow=True),
    "jobs summary": Run("jobs summary", 0, r"no jobs in the store", slow=True),
    "lab": None,
    "lab build": Run("lab build --sources {tmp}/none --force", 2, ONE_LINE_ERROR),
    "lab list": Run("lab list --json", 0, r'"small-writes"'),
    "lab run": Run("lab run --dir {tmp}/none", 2, ONE_LINE_ERROR),
    "lab score": Run("lab score {tmp}/none", 2, ONE_LINE_ERROR),
    "lab storm": Run("lab storm --dir {tmp}/none", 2, ONE_LINE_ERROR),
    "probe": None,
    "probe archive": Run("probe archive --json", 0, r"\{"),
    "probe init": Run("probe init {tmp}/p --file-size 1MiB --pool 4", 0, r"1\.0 MiB data file, 4 pool files"),
    "probe retire": Run("probe retire nobody", 2, ONE_LINE_ERROR),
    "probe run": Run("probe run {tmp}/p --interval 0.1s --duration 0.5s --block 64k -q", 0, r"\A\Z",
                     first="probe init {tmp}/p --file-size 1MiB --pool 4"),
    "probe stats": Run("probe stats", 0, r"no probe samples in this window"),
    "probe targets": Run("probe targets", 2, ONE_LINE_ERROR),
    "report": Run("report --fs x", 2, ONE_LINE_ERROR, slow=True),
    "serve": Run("serve --port 70000", 2, ONE_LINE_ERROR),
    "slowdown": Run("slowdown", 0, r"no probe samples in this window"),
    "store": None,
    "store check": Run("store check --json", 0, r'"ok": true', slow=True),
    "store prune": Run("store prune --older-than 30d --yes", 2, ONE_LINE_ERROR),
    "umami": Run("umami no-such-job", 2, ONE_LINE_ERROR, slow=True),
    "watch": Run("watch {tmp}/p --port 70000", 2, ONE_LINE_ERROR),
    "why": Run("why {tmp}/missing.darshan", 2, ONE_LINE_ERROR),
    "workload": Run("workload --fs x", 2, ONE_LINE_ERROR),
}

CSV = "time,target,metric,value\n" + "".join(f"{t},sda,read_bytes,{t * 3}\n" for t in range(0, 50, 5))


def test_every_command_has_a_smoke_run():
    """A command added to the tree needs its line in RUNS (and one removed, its line gone)."""
    assert sorted(RUNS) == sorted(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c or "ioweather")
def test_help(command, tmp_path):
    p = run_cli(*command.split(), "--help", home=tmp_path / "home")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"Usage: ioweather {command}".rstrip() + " [OPTIONS]"), p.stdout[:300]
    assert p.stderr == "", p.stderr


RUN_PARAMS = [pytest.param(c, RUNS[c], id=c or "ioweather", marks=[pytest.mark.slow] if RUNS[c].slow else [])
              for c in COMMANDS if RUNS.get(c) is not None]


@pytest.mark.parametrize("command, run", RUN_PARAMS)
def test_one_real_run(command, run, tmp_path):
    if "{data}" in run.args and not TESTDATA.is_dir():
        pytest.skip(f"shared test data not found at {TESTDATA}")
    (tmp_path / "t.csv").write_text(CSV)
    (tmp_path / "tree").mkdir()
    for name in ("a.txt", "b.txt"):
        (tmp_path / "tree" / name).write_text(name)
    if run.first:
        run_cli(*run.first.format(tmp=tmp_path).split(), home=tmp_path / "home", check=True)
    p = run_cli(*run.args.format(data=TESTDATA, tmp=tmp_path).split(), home=tmp_path / "home")
    said = p.stdout + p.stderr
    assert p.returncode == run.code, f"exit {p.returncode}, wanted {run.code}:\n{said[-2000:]}"
    assert re.search(run.says, said if run.says != ONE_LINE_ERROR else p.stderr), said[-2000:]
    assert "Traceback" not in said, said[-2000:]
