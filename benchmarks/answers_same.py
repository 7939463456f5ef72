"""No answer changes (issue 40): the `--json` of every command, run by two trees on the same store, diffed.

Each tree (BEFORE: `--before-src DIR`, e.g. `git archive BASE src | tar -x -C /tmp/base` with
src/ioweather/_native/*.so copied in; AFTER: this checkout's src/, or `--after-src`) builds its own
store from ../shared with its own code (`python -m ioweather` as a user runs it, PYTHONPATH = that
tree's src), then every command with a `--json` runs on it; the two documents of each case are
compared after the normalisations below, and a table says: case, same/different, the first differing
path (JSON path, `$` = the document; or the exit code / stderr when a run failed).

The store (one per tree, ~1-2 min each on 2 cores):
- `jobs ingest` of the public Darshan logs (../shared/testdata/darshan, one worker: rows in path order);
- telemetry: the LMT day (`import lmt`, Los Angeles times), pytokio's `lfs df` / `lctl dl -t` samples,
  the mmperfmon sample, the TOKIO time series (hdf5), a sysstat iostat document, and a CSV of
  cumulative counters over imbalanced-io's run (4 servers, a storm in the middle) so that `why` has
  telemetry in its window; scheduler rows from pytokio's Slurm and NERSC jobs-db samples;
- tokio-abc's first 400 Edison rows as benchmark runs (`bench import`) and as job features;
- probe samples: tests/web_synthetic.add_target at fixed times and seeds (what the JSON contract test
  uses: a real `probe run` measures this machine now, and no two runs agree);
- fsstats: two walks of a small tree with fixed sizes and times (made once, walked by both trees), each
  snapshot's time then pinned (a: 2026-01-05, b: 7 days on) so that `fsstats diff`'s growth per day is fixed;
- factors: an io-model-shaped Parquet of the paper's Table 3 lines (tests/factors_synthetic.py, fixed seed).
The inputs are made once, under the same path, for both trees; the two trees run side by side.

Commands are listed from the click CLI of both trees: a command with no case here and no reason to skip
it is reported as NO CASE and fails the run, so a new command is not forgotten. Skipped (reason printed):
what has no --json or serves forever (serve, watch, probe run), what measures this machine now or runs
live I/O (collect, iomodel run, bench run, bench submit, lab build/run/storm), and `lab score` when
there are no lab logs.

Normalised (what differs between two runs of the same code on the same inputs, nothing else):
- strings: each tree's temporary home -> "<home>", the shared inputs directory -> "<inputs>";
- durations measured in the run: `import` sources[*].seconds and rows_per_s, `fsstats walk` walk_s
  and entries_per_s, `jobs ingest` seconds and logs_per_s;
- the wall clock: `fsstats walk` snapshot_time and the age statistics counted from it (min/max/mean,
  buckets' sum and byte_days of the atime/mtime/ctime age histograms), `fsstats list` snapshot_time,
  `jobs failed` failed_at, `jobs show` ingested_at, `probe targets` last_sample_age_s, `store prune`
  kinds[*].cutoff (now less --older-than), `factors fit` created;
- this machine: `probe init` memory_bytes.
The list is VOLATILE below; `--show-volatile` prints it.

    python benchmarks/answers_same.py --before-src /tmp/base/src [--after-src SRC] [--keep DIR]
                                      [--only CASE ...] [--list]

Exit status 0 when every case is the same, 1 otherwise (a difference, a NO CASE, a case failing in one tree
only). A case that fails the same way in both trees (same exit code, no JSON) is "same (both failed)".
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
sys.path.insert(0, str(TESTS))

from darshan_support import SHARED  # noqa: E402

TESTDATA, DATA = SHARED / "testdata", SHARED / "data"
LOGS = TESTDATA / "darshan"
LMT_DAY = TESTDATA / "lmt/snx11025_2018-01-28.sqlite3"
PYTOKIO = TESTDATA / "pytokio"
ABC = TESTDATA / "tokio-abc"
LA = "America/Los_Angeles"
WHY_LOG = LOGS / "imbalanced-io.darshan"   # jobid 1452113755, /lus/theta-fs0
WHY_JOB = "1452113755"
MULTI_JOB = "3116902"                      # two logs of one job (snyder_python3_*)
S = 10**9
DAY = 86_400 * S

#: Commands not run, and why. A command listed by the CLI that is neither here nor in cases() fails the run.
SKIPPED = {
    "serve": "a web server: runs until stopped, no --json (bench_web*.py and the web tests measure its pages)",
    "watch": "probes and serves until stopped, no --json",
    "probe run": "measures this machine now (no two runs agree), no --json; the store's probe samples are synthetic",
    "collect": "samples this machine's /proc and /sys counters at the present time: no two runs agree",
    "iomodel run": "times reads and writes on this machine: no two runs agree",
    "bench run": "runs IOR/mdtest benchmarks (live I/O, minutes)",
    "bench submit": "submits benchmark jobs to a Slurm cluster (a live server)",
    "lab build": "builds the lab's software (minutes, network-free but long)",
    "lab run": "runs the lab's instrumented jobs (live I/O, minutes)",
    "lab storm": "runs jobs against a loaded disk (live I/O, minutes)",
}

#: Fields replaced before comparing, per case prefix: {case name prefix: {field path pattern: why}}.
#: A pattern is a tuple of keys; "*" matches any key or list index.
MEASURED = "measured in this run (a duration or a rate)"
NOW = "the wall clock of this run"
AGE = "an age counted from the walk's start (moves with the wall clock)"
VOLATILE: dict[str, dict[tuple, str]] = {
    "import ": {("sources", "*", "seconds"): MEASURED, ("sources", "*", "rows_per_s"): MEASURED},
    "fsstats walk": {("walk_s",): MEASURED, ("entries_per_s",): MEASURED, ("snapshot_time",): NOW,
                     **{("histograms", h, *k): AGE for h in ("atime_age_days", "mtime_age_days", "ctime_age_days")
                        for k in (("min",), ("max",), ("mean",), ("buckets", "*", "sum"),
                                  ("buckets", "*", "byte_days"))}},
    "fsstats list": {("*", "snapshot_time"): NOW},
    "jobs ingest": {("seconds",): MEASURED, ("logs_per_s",): MEASURED},
    "jobs failed": {("*", "failed_at"): NOW},
    "jobs show": {("ingested_at",): "the wall clock of the ingest"},
    "probe targets": {("*", "last_sample_age_s"): "an age counted from now"},
    "store prune": {("kinds", "*", "cutoff"): "now less --older-than"},
    "factors fit": {("created",): "the wall clock of the fit"},
    "probe init": {("memory_bytes",): "this machine's physical memory"},
}


# ------------------------------------------------------------------------------------------- inputs

def _t(iso: str) -> int:
    return int(datetime.fromisoformat(iso).replace(tzinfo=UTC).timestamp()) * S


def make_inputs(d: Path) -> None:
    """The files both trees read, made once (the same bytes at the same path for both)."""
    d.mkdir(parents=True)
    # tokio-abc's first 400 Edison rows, beside its config (the file's name says the preset)
    with gzip.open(ABC / "edison-summaries_2017-02-14-2018-02-15.csv.gz", "rt") as f:
        head = [next(f) for _ in range(401)]
    (d / "edison-summaries_head.csv").write_text("".join(head))
    shutil.copy(ABC / "abcconfig.json", d / "abcconfig.json")
    # iostat: a sysstat JSON document (the shared data has none)
    (d / "iostat.json").write_text(json.dumps(_iostat_doc(), indent=2))
    # cumulative counters on 4 servers over the why job's run, with a storm in its middle
    (d / "why-telemetry.csv").write_text(_why_csv())
    # fsstats: two trees with fixed sizes and times (B = A changed)
    for name, files in (("tree-a", TREE_A), ("tree-b", TREE_B)):
        for rel, size, mtime in files:
            p = d / name / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            with open(p, "wb") as f:
                f.truncate(size)
            os.utime(p, ns=(_t(mtime), _t(mtime)))
    # factors: an io-model-shaped Parquet of the paper's Table 3 lines (tests/factors_synthetic.py, fixed seed)
    from factors_synthetic import TABLE3, iomodel_frame

    models = ("discard-R-off0", "cached-R-off0", "discard-W-rnd", "cached-W-off0")
    iomodel_frame({k: TABLE3[k] for k in models}, sizes=[1, 1024, 65536], repeats=200).to_parquet(
        d / "train.parquet", index=False)


TREE_A = [("proj_a/f0", 0, "2010-01-01T12:00:00"), ("proj_a/sub/f1024", 1024, "1995-01-01T12:00:00"),
          ("proj_b/f65536", 65536, "1975-01-01T12:00:00"), ("top", 10, "2010-01-01T12:00:00")]
TREE_B = TREE_A[:2] + [("proj_b/f100000", 100_000, "2010-01-01T12:00:00"), ("proj_d/x", 5000, "1995-01-01T12:00:00")]


def _iostat_doc() -> dict:
    def disk(dev, k):
        return {"disk_device": dev, "r/s": 10.0 * k, "w/s": 5.0 + k, "rkB/s": 1024.0 * k, "wkB/s": 300.5 * k,
                "rrqm/s": 0.0, "wrqm/s": 1.0, "%rrqm": 0.0, "%wrqm": 2.0, "r_await": 0.5, "w_await": 1.25,
                "aqu-sz": 0.1, "rareq-sz": 4.0, "wareq-sz": 60.1, "util": 3.5 * k}

    stats = [{"timestamp": f"2024-05-02T09:00:{10 * i:02d}+0200",
              "avg-cpu": {"user": 1.5, "nice": 0.0, "system": 2.0, "iowait": 0.5, "steal": 0.0, "idle": 96.0 - i},
              "disk": [disk("sda", i + 1), disk("nvme0n1", 2 * i + 3)]} for i in range(4)]
    return {"sysstat": {"hosts": [{"nodename": "oss3", "sysname": "Linux", "release": "6.1.0", "machine": "x86_64",
                                   "number-of-cpus": 8, "date": "2024-05-02", "statistics": stats}]}}


def _why_csv() -> str:
    """Cumulative read/write byte counters every 5 s on 4 servers, from an hour before the why job to an hour
    after: 100 MB/s each, 4 GiB/s each from 5 to 15 minutes into the job (a storm)."""
    import darshan

    with darshan.DarshanReport(str(WHY_LOG), read_all=False) as r:
        start, end = int(r.metadata["job"]["start_time_sec"]), int(r.metadata["job"]["end_time_sec"])
    lines = ["time,target,metric,value"]
    total = [0] * 4
    for t in range(start - 3600, end + 3600, 5):
        storm = start + 300 <= t < start + 900
        for k in range(4):
            total[k] += (4 << 30 if storm else 100_000_000) * 5 // 4
            lines += [f"{t},oss{k},read_bytes,{total[k]}", f"{t},oss{k},write_bytes,{total[k] // 2}"]
    return "\n".join(lines) + "\n"


def _pin_snapshot_time(snapshot: Path) -> None:
    """A walk's snapshot at a fixed instant (a: 2026-01-05, b: 7 days on): `fsstats diff` computes the growth
    per day from the two, and the walks ran at this run's times (as tests/test_json_contract.py does)."""
    if snapshot.exists():
        doc = json.loads(snapshot.read_text())
        doc["snapshot_time"] = {"a": "2026-01-05T06:00:00.000Z", "b": "2026-01-12T06:00:00.000Z"}[snapshot.stem[-1]]
        snapshot.write_text(json.dumps(doc))


# ------------------------------------------------------------------------------------------- running

class Tree:
    """One tree's store and its runs of `python -m ioweather`."""

    def __init__(self, name: str, src: Path, root: Path, inputs: Path):
        self.name, self.src, self.home, self.inputs = name, src, root / f"home-{name}", inputs
        self.env = {**{k: v for k, v in os.environ.items() if not k.startswith("IOWEATHER_")},
                    "PYTHONPATH": str(src), "IOWEATHER_HOME": str(self.home), "NO_COLOR": "1", "COLUMNS": "200",
                    "TZ": "UTC"}

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "ioweather", *args], env=self.env, capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL, cwd=self.inputs)

    def commands(self) -> dict[str, bool]:
        """{command path: has --json} of this tree's CLI (hidden ones too)."""
        code = ("import click, json\nfrom ioweather.cli import cli\nout = {}\n"
                "def walk(c, p):\n"
                "    if isinstance(c, click.Group):\n"
                "        ctx = click.Context(c)\n"
                "        for n in c.list_commands(ctx):\n"
                "            walk(c.get_command(ctx, n), p + [n])\n"
                "    else:\n"
                "        out[' '.join(p)] = any('--json' in getattr(o, 'opts', ()) for o in c.params)\n"
                "walk(cli, [])\nprint(json.dumps(out))\n")
        return json.loads(subprocess.run([sys.executable, "-c", code], env=self.env, capture_output=True, text=True,
                                         check=True).stdout)

    def probe_samples(self) -> None:
        """Synthetic probe samples at fixed times (tests/web_synthetic.py, as tests/test_json_contract.py)."""
        code = ("import sys\nsys.path.insert(0, sys.argv[1])\n"
                "from web_synthetic import Episode, add_target\n"
                "from ioweather.config import Settings\nfrom ioweather.store import open_store\n"
                f"S, DAY, t0 = {S}, {DAY}, {_t('2024-03-01T00:00:00')}\n"
                "store = open_store(Settings.resolve(sys.argv[2]))\n"
                "add_target(store, 'scratch', t0, t0 + 2 * DAY, period_s=30, seed=1, episodes=[Episode(t0 + DAY + "
                "3 * 3600 * S, t0 + DAY + 4 * 3600 * S, 6.0, ('data_read', 'data_write'))])\n"
                "add_target(store, 'home', t0 + DAY // 2, t0 + 2 * DAY, period_s=60, seed=2, error_rate=0.01)\n"
                "store.dispose()\n")
        subprocess.run([sys.executable, "-c", code, str(TESTS), str(self.home)], env=self.env, check=True,
                       capture_output=True, text=True)


#: The first case that asks rather than builds: the probe samples are written just before it.
FIRST_QUESTION = "job LOG"


def cases(inputs: Path) -> list[tuple[str, tuple[str, ...]]]:
    """(case name, args) in the order they run: the store is built by the first ones (their JSON compared too),
    the commands that change it (archive, prune --yes, retire) run last. A case's name starts with its command."""
    i = str(inputs)
    since, until = "2024-03-02T00:00:00Z", "2024-03-02T08:00:00Z"
    every = ("--since", "2000-01-01T00:00:00Z", "--until", "2030-01-01T00:00:00Z")
    # the probe's two synthetic days, tokio-abc's year, the LMT day: `changes` resamples its whole window
    probe_days = ("--since", "2024-02-29T00:00:00Z", "--until", "2024-03-04T00:00:00Z")
    abc_year = ("--since", "2017-02-01T00:00:00Z", "--until", "2018-03-01T00:00:00Z")
    lmt_days = ("--since", "2018-01-20T00:00:00Z", "--until", "2018-02-05T00:00:00Z")
    theta_days = ("--since", "2021-04-14T00:00:00Z", "--until", "2021-04-16T00:00:00Z")  # the why job's run
    logs = [str(p) for p in sorted(LOGS.glob("*.darshan"))]
    e3sm = str(LOGS / "e3sm_io_heatmap_only.darshan")
    multi = sorted(str(p) for p in LOGS.glob("snyder_python3_*.darshan"))
    return [
        # -- building the store
        ("jobs ingest", ("jobs", "ingest", str(LOGS), "--workers", "1")),
        ("import lmt", ("import", "lmt", str(LMT_DAY), "--fs", "snx11025", "--timezone", LA)),
        ("import lfsdf", ("import", "lfsdf", str(PYTOKIO / "sample_ost-fullness.txt.gz"), "--fs", "snx11035")),
        ("import lctl", ("import", "lctl", str(PYTOKIO / "sample_ost-map.txt.gz"), "--fs", "snx11035")),
        ("import mmperfmon", ("import", "mmperfmon", str(PYTOKIO / "mmperfmon.2019-05-15-micro.tgz"), "--fs", "gpfs")),
        ("import tts", ("import", "tts", str(PYTOKIO / "sample_tokiots.hdf5"), "--fs", "tts")),
        ("import iostat", ("import", "iostat", f"{i}/iostat.json", "--fs", "iostat")),
        ("import csv", ("import", "csv", f"{i}/why-telemetry.csv", "--fs", "theta", "--cumulative")),
        ("import lctl-params", ("import", "lctl-params", str(TESTDATA / "lustrefs-exporter/2.14.0_ddn145_stats.txt"),
                                "--fs", "ddn", "--at", "2024-01-01T00:00:00Z")),
        ("import slurm", ("import", "slurm", str(PYTOKIO / "sample.slurm"))),
        ("import nersc-jobsdb", ("import", "nersc-jobsdb", str(PYTOKIO / "sample_nersc_jobsdb.sqlite3"))),
        ("import job-features", ("import", "job-features", f"{i}/edison-summaries_head.csv", "--preset", "tokio-abc",
                                 "--config", f"{i}/abcconfig.json")),
        ("bench import", ("bench", "import", f"{i}/edison-summaries_head.csv")),
        ("fsstats walk a", ("fsstats", "walk", f"{i}/tree-a", "--threads", "2", "--quiet", "--out", "snap-a.json",
                            "--label", "a")),
        ("fsstats walk b", ("fsstats", "walk", f"{i}/tree-b", "--threads", "2", "--quiet", "--out", "snap-b.json",
                            "--label", "b")),
        ("probe init", ("probe", "init", "probe-dir", "--file-size", "1MiB", "--pool", "4", "--block", "64KiB")),
        # -- questions
        (FIRST_QUESTION, ("job", str(WHY_LOG))),
        ("job LOG e3sm", ("job", e3sm)),
        ("job diff", ("job", "diff", *multi)),
        ("jobs list", ("jobs", "list", *every, "--limit", "100")),
        ("jobs show", ("jobs", "show", WHY_JOB)),
        ("jobs summary", ("jobs", "summary")),
        ("jobs summary all sizes", ("jobs", "summary", "--min-procs", "0", "--min-bytes", "0", "--top", "3",
                                    "--cores-per-node", "32")),
        ("jobs failed", ("jobs", "failed")),
        ("why", ("why", WHY_JOB, "--fs", "theta")),
        ("why multi-log job", ("why", MULTI_JOB)),
        ("umami", ("umami", WHY_JOB, "--fs", "theta")),
        ("correlations", ("correlations",)),
        ("correlations edison", ("correlations", "--system", "edison")),
        ("workload lmt", ("workload", "--fs", "snx11025")),
        ("workload theta", ("workload", "--fs", "theta", *theta_days, "--resample", "5s", "--smooth", "30s",
                            "--min-amplitude", "1MiB/s")),
        ("events lmt", ("events", "--fs", "snx11025", "--since", "2018-01-01T00:00:00Z")),
        ("events theta cost", ("events", "--fs", "theta", *theta_days, "--resample", "5s",
                               "--smooth", "30s", "--min-amplitude", "1MiB/s", "--cost")),
        ("report lmt", ("report", "--fs", "snx11025", "--since", "2018-01-01T00:00:00Z")),
        ("export list", ("export", "--list")),
        ("export capture", ("export", "--capture", str(TESTDATA / "lustrefs-exporter/2.14.0_ddn145_stats.txt"),
                            "--list")),
        ("changes probe", ("changes", "--kind", "probe", *probe_days)),
        ("changes bench", ("changes", "--kind", "bench", *abc_year)),
        ("changes jobs", ("changes", "--kind", "jobs", *abc_year)),
        ("changes workload", ("changes", "--kind", "workload", "--target", "snx11025", *lmt_days)),
        ("bench summary", ("bench", "summary")),
        ("bench check", ("bench", "check")),
        ("probe targets", ("probe", "targets")),
        ("probe stats", ("probe", "stats", "--interval", "1h", "--since", since, "--until", until)),
        ("probe stats scratch", ("probe", "stats", "--target", "scratch", "--since", "2024-03-02T02:50:00Z",
                                 "--until", "2024-03-02T04:10:00Z")),
        ("slowdown", ("slowdown", "--interval", "1h", "--baseline", "1d", "--since", since, "--until", until)),
        ("slowdown p99 scratch", ("slowdown", "--target", "scratch", "--stat", "p99", "--interval", "30m",
                                  "--baseline", "12h", "--since", since, "--until", until)),
        ("slowdown --check", ("slowdown", "--check")),
        ("factors density", ("factors", "density", str(TESTDATA / "r-density/toy_obs.csv"))),
        ("factors density by cls", ("factors", "density", str(TESTDATA / "r-density/toy_obs.csv"), "--by", "cls",
                                    "--split", "mean")),
        ("factors fit", ("factors", "fit", f"{i}/train.parquet", "--out", "model.json")),
        ("factors classify", ("factors", "classify", f"{i}/train.parquet", "--model", "model.json")),
        ("factors classify store", ("factors", "classify", "--from-store", "--op", "data_read", "--target", "scratch",
                                    "--since", since, "--until", until, "--size", "1MiB", "--model", "model.json")),
        ("fsstats list", ("fsstats", "list")),
        ("fsstats diff", ("fsstats", "diff", "snap-a.json", "snap-b.json")),
        ("lab list", ("lab", "list")),
        ("lab score", ("lab", "score", str(Path.home() / ".cache/ioweather-lab/logs"))),
        ("store check", ("store", "check")),
        ("store prune", ("store", "prune", "--older-than", "30d")),
        # -- what changes the store, last
        ("probe archive", ("probe", "archive", "--keep-days", "1")),
        ("store prune --yes probe", ("store", "prune", "--older-than", "30d", "--kind", "probe", "--yes")),
        ("probe retire", ("probe", "retire", "home")),
    ]


# ------------------------------------------------------------------------------------------- comparing

def _match(path: tuple, pattern: tuple) -> bool:
    return len(path) == len(pattern) and all(p == "*" or p == k for k, p in zip(path, pattern))


def normalise(doc, subs: list[tuple[str, str]], fields: dict[tuple, str], path: tuple = ()):
    """`doc` with the substrings of `subs` replaced in every string and the `fields` replaced by '<volatile>'."""
    if any(_match(path, p) for p in fields):
        return "<volatile>"
    if isinstance(doc, dict):
        return {_sub(k, subs): normalise(v, subs, fields, (*path, k)) for k, v in doc.items()}
    if isinstance(doc, list):
        return [normalise(v, subs, fields, (*path, n)) for n, v in enumerate(doc)]
    return _sub(doc, subs) if isinstance(doc, str) else doc


def _sub(s: str, subs: list[tuple[str, str]]) -> str:
    for a, b in subs:
        s = s.replace(a, b)
    return s


def first_difference(a, b, path: str = "$") -> str | None:
    """The JSON path where `a` and `b` first differ (types compared too: 1 is not 1.0, nor True), or None."""
    if type(a) is not type(b):
        return f"{path} ({type(a).__name__} vs {type(b).__name__})"
    if isinstance(a, dict):
        if list(a) != list(b):
            extra = [k for k in a if k not in b] or [k for k in b if k not in a]
            return f"{path} keys" + (f" ({extra[0]!r} in one only)" if extra else " (order)")
        for k in a:
            if (d := first_difference(a[k], b[k], f"{path}.{k}")):
                return d
        return None
    if isinstance(a, list):
        for n, (x, y) in enumerate(zip(a, b)):
            if (d := first_difference(x, y, f"{path}[{n}]")):
                return d
        return None if len(a) == len(b) else f"{path} (length {len(a)} vs {len(b)})"
    if a != a and b != b:  # NaN both
        return None
    return None if a == b else f"{path} ({a!r} vs {b!r})"


def _document(proc, tree: Tree, fields) -> tuple:
    """(exit code, the normalised JSON or None, the last stderr line when there is no JSON)."""
    subs = [(str(tree.home), "<home>"), (str(tree.inputs), "<inputs>")]
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        err = (proc.stderr.strip().splitlines() or [""])[-1]
        return proc.returncode, None, _sub(err, subs)
    return proc.returncode, normalise(doc, subs, fields), None


def compare(name: str, pa, pb, ta: Tree, tb: Tree) -> tuple[str, str]:
    fields = {p: why for prefix, fs in VOLATILE.items() if name.startswith(prefix) for p, why in fs.items()}
    (ca, da, ea), (cb, db, eb) = _document(pa, ta, fields), _document(pb, tb, fields)
    if ca != cb:
        return "different", f"exit code {ca} vs {cb}" + (f" ({ea or eb})" if (ea or eb) else "")
    if da is None and db is None:
        return ("same (both failed)", f"exit {ca}: {ea}") if ea == eb else ("different", f"stderr: {ea!r} vs {eb!r}")
    if da is None or db is None:
        return "different", "JSON in one tree only"
    d = first_difference(da, db)
    return ("same", "") if d is None else ("different", d)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before-src", type=Path, required=True, help="the base tree's src/ (with _native/*.so)")
    ap.add_argument("--after-src", type=Path, default=ROOT / "src", help="default: this checkout's src/")
    ap.add_argument("--keep", type=Path, help="build here and keep the stores and outputs (default: a temp dir)")
    ap.add_argument("--only", nargs="*", help="only the cases whose names start with these (the store is built)")
    ap.add_argument("--list", action="store_true", help="list the cases, the skipped commands and the volatile fields")
    args = ap.parse_args()
    for src in (args.before_src, args.after_src):
        if not (src / "ioweather" / "cli.py").is_file():
            ap.error(f"{src} is not a src/ directory holding ioweather")
        if not list((src / "ioweather" / "_native").glob("*.so")):
            ap.error(f"{src}/ioweather/_native has no compiled extension: copy the *.so in")
    if args.list:
        for name, a in cases(Path("<inputs>")):
            print(f"case  {name:28s} ioweather {' '.join(a)} --json")
        for c, why in SKIPPED.items():
            print(f"skip  {c:28s} {why}")
        for prefix, fs in VOLATILE.items():
            for p, why in fs.items():
                print(f"volatile  {prefix:14s} {'.'.join(map(str, p)):40s} {why}")
        return 0
    root = args.keep or Path(tempfile.mkdtemp(prefix="answers-same-"))
    root.mkdir(parents=True, exist_ok=True)
    inputs = root / "inputs"
    all_cases = cases(inputs)
    trees = [Tree("before", args.before_src.resolve(), root, inputs), Tree("after", args.after_src.resolve(), root, inputs)]
    t0 = time.perf_counter()
    if not inputs.exists():
        make_inputs(inputs)
    # commands of both trees: a command either tree has is checked
    listed: dict[str, bool] = {}
    for t in trees:
        for c, has_json in t.commands().items():
            listed[c] = listed.get(c, False) or has_json
    covered = {c for c in listed if any(n == c or n.startswith(c + " ") for n, _ in all_cases)}
    rows: list[tuple[str, str, str]] = []
    for c in sorted(listed):
        if c in SKIPPED:
            rows.append((c, "skipped", SKIPPED[c]))
        elif c == "job log":  # `ioweather job LOG`: the hidden name of the first form
            covered.add(c)
        elif c not in covered:
            rows.append((c, "NO CASE", "a command with no case here and no reason to skip it: add one"))
    lab_logs = Path.home() / ".cache/ioweather-lab/logs"
    build = {n for n, _ in all_cases[:[n for n, _ in all_cases].index(FIRST_QUESTION)]}
    wanted = [(n, a) for n, a in all_cases if not args.only or n in build or any(n.startswith(o) for o in args.only)]
    procs: dict[str, dict[str, subprocess.CompletedProcess]] = {n: {} for n, _ in wanted}
    took: dict[str, dict[str, float]] = {n: {} for n, _ in wanted}

    def build_and_ask(t: Tree) -> None:
        """One tree's store and answers, in `wanted`'s order (the trees run side by side: 2 cores)."""
        tt = time.perf_counter()
        shutil.rmtree(t.home, ignore_errors=True)  # a kept directory's store of an earlier run
        t.home.mkdir()
        (t.home / "probe-dir").mkdir()
        for n, a in wanted:
            if n == "lab score" and not lab_logs.is_dir():
                continue
            if n == FIRST_QUESTION:
                t.probe_samples()  # the store built, before the questions
            # files a case writes: in the tree's home (the trees run at the same time)
            a = tuple(str(t.home / x) if x in ("snap-a.json", "snap-b.json", "model.json", "probe-dir") else x
                      for x in a)
            tc = time.perf_counter()
            procs[n][t.name] = t.run(*a, "--json")
            took[n][t.name] = time.perf_counter() - tc
            if n.startswith("fsstats walk"):
                _pin_snapshot_time(t.home / f"snap-{n[-1]}.json")
        print(f"{t.name}: {len(wanted)} runs in {time.perf_counter() - tt:.0f} s ({t.src})", file=sys.stderr)

    with ThreadPoolExecutor(len(trees)) as pool:
        list(pool.map(build_and_ask, trees))
    procs = {n: v for n, v in procs.items() if v}
    slow = sorted(took.items(), key=lambda kv: -sum(kv[1].values()))[:8]
    print("slowest cases (s, before/after): " + ", ".join(
        f"{n} {'/'.join(f'{v[t.name]:.1f}' for t in trees if t.name in v)}" for n, v in slow), file=sys.stderr)
    if "lab score" not in procs:
        rows.append(("lab score", "skipped", f"no lab logs at {lab_logs} (`ioweather lab run` makes them)"))
    bad = sum(r[1] == "NO CASE" for r in rows)
    for n, _ in wanted:
        if n not in procs:
            continue
        same, where = compare(n, procs[n]["before"], procs[n]["after"], *trees)
        rows.append((n, same, where))
        bad += same == "different"
    width = max(len(r[0]) for r in rows)
    print(f"{'case':{width}s}  {'result':18s}  first differing path / reason")
    for n, same, where in rows:
        print(f"{n:{width}s}  {same:18s}  {where}")
    print(f"{sum(r[1].startswith('same') for r in rows)} same, {sum(r[1] == 'different' for r in rows)} different, "
          f"{sum(r[1] == 'NO CASE' for r in rows)} without a case, {sum(r[1] == 'skipped' for r in rows)} skipped; "
          f"{time.perf_counter() - t0:.0f} s; before {args.before_src}, after {args.after_src}"
          + (f"; kept in {root}" if args.keep else ""))
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
