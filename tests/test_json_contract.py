"""The `--json` contract: every command's JSON on the shared test data, compared with golden files.

Issue 12 (the services layer) allows no behaviour change except the keys it renames, so this
module records what each command prints now and fails on any drift: a key added, lost,
renamed or reordered, a type changed (1 vs 1.0, false vs 0), a value changed, floats compared
exactly (bit for bit: the same code on the same input gives the same numbers). Each case runs
the real command in a subprocess (`run_cli`), on the real files in ../shared (the module is
skipped when they are absent), or on inputs built here at fixed times.

Goldens: tests/golden/CASE.json = {"args": [...], "exit_code": N, "json": <normalised stdout>}.
Rewrite them from the current code (after an intended change, e.g. a renamed key) with

    .venv/bin/python -m pytest tests/test_json_contract.py --update-golden
    IOWEATHER_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_json_contract.py

and review `git diff tests/golden` before committing: that diff IS the behaviour change.

Normalisations (what legitimately differs between two runs of the same code; nothing else):
- strings (values and keys): this run's temporary directory -> "<tmp>", the shared test data
  directories -> "<testdata>" / "<data>" (a checkout elsewhere has other absolute paths).
- durations measured in this run and the rates derived from them: `import` sources[*].seconds,
  sources[*].rows_per_s; `fsstats DIR` walk_s, entries_per_s -> "<measured>".
- wall-clock "now": `fsstats DIR` snapshot_time, `fsstats list` [*].snapshot_time (walk start),
  `jobs failed` [*].failed_at (ingest time) -> "<now>".
- `fsstats DIR` age histograms (atime/mtime/ctime_age_days): min, max, mean and each bucket's sum
  and byte_days -> "<age from now>". These are sums of (walk start - timestamp) in float days, so
  they move with the instant the walk starts (measured: they differed in the 6th significant
  digit between two runs), and a test cannot set a ctime at all. Each bucket's bounds, count and
  bytes stay exact, and `fsstats diff` (which reads the snapshots) is compared whole.
- this machine: `fsstats DIR` / `fsstats list` host (== socket.gethostname()) -> "<host>";
  `probe init` memory_bytes (physical memory) -> "<memory>".
A normalised field is replaced only when it has the expected type (a number >= 0, an ISO time,
this host's name), so a type change still fails. Computed statistics are never normalised.

Inputs made deterministic instead of normalising outputs:
- probe samples: tests/web_synthetic.add_target at fixed nanosecond times with fixed seeds, and
  `probe stats` / `slowdown` with explicit --since/--until/--baseline (no "now").
- fsstats trees: fixed sizes and contents, fixed owners (chown: needs root), and fixed mtimes/atimes
  decades back, each in the middle of its log2 age bucket (ages are counted from the walk's
  start, so a bucket changes only when the calendar crosses 2^k days: the first crossing is
  2032-06, after which the goldens must be regenerated). On /dev/shm (tmpfs), so allocated
  bytes do not depend on the disk file system. `fsstats diff` reads the two snapshot files with
  their snapshot_time set to fixed instants 7 days apart (it computes per-day growth from them).
- jobs: the shared Darshan logs copied to a temp archive, plus broken files with fixed bytes,
  ingested with --workers 1. Found while writing this: `jobs summary` reads the jobs with no
  ORDER BY (store/jobs.py::load_jobs), so its per-project float means depend on the order the
  logs were stored, which with a pool of workers is the order they finish: ingesting the same 14
  logs in reverse order changed projects[0].meta_time_share_mean from 0.3945802315900323 to
  0.39458023159003225 (and io_fraction_mean likewise). Fixed: load_jobs orders by log_hash
  (tests/test_jobs_order.py); one worker still keeps the ingest's own output stable.
- csv: a long CSV written here from the real LMT database (cumulative counters), and a small one
  with out-of-order rows, a duplicate, a naive time zone and a missing file; iostat: a sysstat
  JSON document written here (there is no iostat output in the shared data).

Not covered: `ioweather job LOG --json` (its JSON is being changed on purpose), `iomodel`
(timings), `probe run`/`collect`/`watch`/`serve` (long-running), `slowdown --check` and
`probe archive` (they take "now" with no option to fix it), `factors fit/classify`.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import shutil
import socket
import sqlite3
import tempfile
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path

import pytest
from conftest import DATA, TESTDATA, run_cli

pytestmark = pytest.mark.slow

GOLDEN = Path(__file__).parent / "golden"
LA = "America/Los_Angeles"
S = 10**9
DAY = 86_400 * S


def _t(iso: str) -> int:
    return int(datetime.fromisoformat(iso).replace(tzinfo=UTC).timestamp()) * S


@pytest.fixture(scope="module", autouse=True)
def _shared_data_present():
    for d in (TESTDATA, DATA):
        if not d.is_dir():
            pytest.skip(f"shared test data not found at {d}")


def update_requested(config) -> bool:
    return bool(config.getoption("--update-golden")) or os.environ.get("IOWEATHER_UPDATE_GOLDEN") == "1"


# ------------------------------------------------------------------------------------ normalising

def _is_measured(v) -> bool:
    return type(v) in (int, float) and v >= 0


def _is_iso(v) -> bool:
    if not isinstance(v, str) or not v.endswith("Z"):
        return False
    try:
        datetime.fromisoformat(v[:-1])
    except ValueError:
        return False
    return True


KINDS = {  # placeholder, and the check a value must pass to be replaced
    "measured": ("<measured>", _is_measured),
    "now": ("<now>", _is_iso),
    "host": ("<host>", lambda v: v == socket.gethostname()),
    "memory": ("<memory>", lambda v: type(v) is int and v > 0),
    "age": ("<age from now>", _is_measured),
    # a uid that has a name on this machine is shown by its name (one name per uid, issue 38): the golden
    # keeps the uid, whatever this machine's passwd says
    "user": (lambda v: str(_uid_of(v)), lambda v: _uid_of(v) is not None),
    # a user's default project is named as the user ("user:<name>"): the golden keeps "user:<uid>" likewise
    "project": (lambda v: f"user:{_uid_of(v[5:])}", lambda v: isinstance(v, str) and v.startswith("user:")
                and _uid_of(v[5:]) is not None),
}


def _uid_of(name) -> int | None:
    import pwd

    try:
        return pwd.getpwnam(name).pw_uid if isinstance(name, str) and not name.isdigit() else None
    except KeyError:
        return None


def _replace_fields(obj, pattern: tuple, kind: str):
    """Replace the values at `pattern` (keys; "*" = every list item or dict value) by the kind's placeholder."""
    if not pattern:
        placeholder, ok = KINDS[kind]
        return (placeholder(obj) if callable(placeholder) else placeholder) if ok(obj) else obj
    head, rest = pattern[0], pattern[1:]
    if head == "*" and isinstance(obj, list):
        return [_replace_fields(v, rest, kind) for v in obj]
    if isinstance(obj, dict):
        return {k: _replace_fields(v, rest, kind) if head in ("*", k) else v for k, v in obj.items()}
    return obj  # the shape changed: left as is, so the comparison reports it


def _replace_text(obj, subs: list[tuple[str, str]]):
    if isinstance(obj, str):
        for old, new in subs:
            obj = obj.replace(old, new)
        return obj
    if isinstance(obj, list):
        return [_replace_text(v, subs) for v in obj]
    if isinstance(obj, dict):
        return {_replace_text(k, subs): _replace_text(v, subs) for k, v in obj.items()}
    return obj


def normalise(doc, subs: list[tuple[str, str]], fields: dict[tuple, str]):
    for pattern, kind in fields.items():
        doc = _replace_fields(doc, pattern, kind)
    return _replace_text(doc, sorted(subs, key=lambda s: -len(s[0])))


# ------------------------------------------------------------------------------------ comparing

def differences(want, got, path: str = "$", out: list | None = None, limit: int = 25) -> list[str]:
    """Every place where `got` differs from `want`: keys (and their order), types, values; floats to nine digits."""
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if type(want) is not type(got):
        out.append(f"{path}: {type(want).__name__} {want!r:.80} -> {type(got).__name__} {got!r:.80}")
    elif isinstance(want, dict):
        lost, new = [k for k in want if k not in got], [k for k in got if k not in want]
        if lost or new:
            out.append(f"{path}: keys lost {lost}, keys new {new}")
        elif list(want) != list(got):
            out.append(f"{path}: key order {list(want)} -> {list(got)}")
        for k in want:
            if k in got:
                differences(want[k], got[k], f"{path}.{k}", out, limit)
    elif isinstance(want, list):
        if len(want) != len(got):
            out.append(f"{path}: length {len(want)} -> {len(got)}")
        for i, (a, b) in enumerate(zip(want, got)):
            differences(a, b, f"{path}[{i}]", out, limit)
    elif isinstance(want, float):
        # Nine significant digits, not the last bit: a density's FFT and numpy's SIMD sums change
        # the order of additions between builds and CPUs. The sign (-0.0 vs 0.0), zero, inf and
        # NaN are still compared exactly.
        same = want.hex() == got.hex() or (
            math.isfinite(want) and want != 0.0 and math.copysign(1.0, want) == math.copysign(1.0, got)
            and math.isclose(want, got, rel_tol=1e-9, abs_tol=0.0))
        if not same:
            out.append(f"{path}: {want!r} -> {got!r}")
    elif want != got:
        out.append(f"{path}: {want!r:.120} -> {got!r:.120}")
    return out


# ------------------------------------------------------------------------------------ inputs

def _lmt_as_long_csv(db: Path, out: Path) -> None:
    """The LMT database's cumulative per-OST byte counters as time,target,metric,value (local times)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        rows = c.execute("SELECT t.TIMESTAMP, o.OST_NAME, d.READ_BYTES, d.WRITE_BYTES FROM OST_DATA d "
                         "JOIN TIMESTAMP_INFO t USING (TS_ID) JOIN OST_INFO o USING (OST_ID) "
                         "ORDER BY t.TIMESTAMP, o.OST_NAME").fetchall()
    with open(out, "w") as f:
        f.write("time,target,metric,value\n")
        f.writelines(f"{ts},{ost},read_bytes,{rd}\n{ts},{ost},write_bytes,{wr}\n" for ts, ost, rd, wr in rows)


EDGE_CSV = ("time,target,metric,value\n"
            "2024-03-01T10:00:10Z,ost1,read_bytes,30\n"
            "2024-03-01T10:00:00Z,ost1,read_bytes,10\n"
            "2024-03-01T12:00:05+02:00,ost1,read_bytes,20\n"
            "1709287200,ost2,read_bytes,5\n"
            "1709287205.0,ost2,read_bytes,\n"
            "2024-03-01 05:00:10,ost2,read_bytes,7\n"
            "2024-03-01T10:00:10Z,ost1,read_bytes,33\n"
            "2024-03-01T10:00:15Z,ost2,read_bytes,-4\n")


def _iostat_doc() -> dict:
    def disk(dev, k):
        return {"disk_device": dev, "r/s": 10.0 * k, "w/s": 5.0 + k, "rkB/s": 1024.0 * k, "wkB/s": 300.5 * k,
                "rrqm/s": 0.0, "wrqm/s": 1.0, "%rrqm": 0.0, "%wrqm": 2.0, "r_await": 0.5, "w_await": 1.25,
                "aqu-sz": 0.1, "rareq-sz": 4.0, "wareq-sz": 60.1, "util": 3.5 * k}

    def cpu(idle):
        return {"user": 1.5, "nice": 0.0, "system": 2.0, "iowait": 0.5, "steal": 0.0, "idle": idle}

    stats = [{"timestamp": f"2024-05-02T09:00:{10 * i:02d}+0200", "avg-cpu": cpu(96.0 - i),
              "disk": [disk("sda", i + 1), disk("nvme0n1", 2 * i + 3)]} for i in range(4)]
    return {"sysstat": {"hosts": [{"nodename": "oss3", "sysname": "Linux", "release": "6.1.0", "machine": "x86_64",
                                   "number-of-cpus": 8, "date": "2024-05-02", "statistics": stats}]}}


# fsstats tree: mtimes in the middle of the log2 age buckets 13 (4096-8191 days), 14 and 15 until 2032-06
OLD = {"2010": _t("2010-01-01T12:00:00"), "1995": _t("1995-01-01T12:00:00"), "1975": _t("1975-01-01T12:00:00")}
TREE_FILES = [  # path, size (bytes; > 1 MiB written sparse), uid, mtime, atime
    (b"proj_a/f0", 0, 51001, "2010", "2010"),
    (b"proj_a/f1", 1, 51001, "2010", "2010"),
    (b"proj_a/sub/f1023", 1023, 51001, "1995", "2010"),
    (b"proj_a/sub/f1024", 1024, 51002, "1995", "1995"),
    (b"proj_a/sub/deeper/f4096", 4096, 51002, "1975", "1995"),
    (b"proj_b/f65536", 65536, 4242, "1975", "1975"),
    (b"proj_b/f100000", 100_000, 51001, "2010", "2010"),
    (b"proj_b/sparse_1g", 2**30, 51001, "1995", "2010"),
    (b"top_file", 10, 0, "2010", "2010"),
    ("proj_c/données.txt".encode(), 7, 51002, "1975", "2010"),
    (b"proj_c/bad\xff\xfe", 9, 51002, "1995", "1995"),
    (b"caf\xe9/inner", 123, 51001, "2010", "2010"),
    (b"proj_a/hl_a", 3000, 51001, "1995", "1995"),
]
TREE_B_CHANGES = [  # B = A plus these files, minus proj_b/f65536, with f100000 grown
    (b"proj_b/new_1m", 2**20, 4242, "2010", "2010"),
    (b"proj_d/x", 5000, 51003, "2010", "2010"),
    (b"proj_d/y", 70_000, 51003, "1995", "1995"),
]


def _put(root: bytes, rel: bytes, size: int, uid: int, mtime: str, atime: str) -> None:
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        if size > 2**20:
            f.truncate(size)
        else:
            f.write(bytes(i % 251 for i in range(size)))
    os.chown(p, uid, uid)
    os.utime(p, ns=(OLD[atime], OLD[mtime]))


def _fix_dir_times(root: bytes) -> None:
    for d, _, _ in os.walk(root, topdown=False):
        os.utime(d, ns=(OLD["2010"], OLD["2010"]))
        os.chown(d, 0, 0)


def build_tree_a(root: bytes) -> None:
    for item in TREE_FILES:
        _put(root, *item)
    os.link(os.path.join(root, b"proj_a/hl_a"), os.path.join(root, b"proj_a/hl_b"))
    os.link(os.path.join(root, b"proj_a/hl_a"), os.path.join(root, b"proj_b/hl_c"))
    for name, target in ((b"proj_c/dangling", b"does-not-exist"), (b"proj_c/todir", b"../proj_a")):
        os.symlink(target, os.path.join(root, name))
        os.lchown(os.path.join(root, name), 51002, 51002)
        os.utime(os.path.join(root, name), ns=(OLD["1995"], OLD["1995"]), follow_symlinks=False)
    os.mkfifo(os.path.join(root, b"proj_c/fifo"))
    os.utime(os.path.join(root, b"proj_c/fifo"), ns=(OLD["1995"], OLD["1995"]))
    _fix_dir_times(root)


def change_tree_to_b(root: bytes) -> None:
    os.unlink(os.path.join(root, b"proj_b/f65536"))
    for item in TREE_B_CHANGES:
        _put(root, *item)
    _put(root, b"proj_b/f100000", 400_000, 51001, "2010", "2010")
    _fix_dir_times(root)


def _pin_snapshot_time(src: Path, dst: Path, iso: str) -> None:
    doc = json.loads(src.read_text())
    doc["snapshot_time"] = iso
    dst.write_text(json.dumps(doc))


def _broken_logs(d: Path) -> None:
    d.mkdir()
    (d / "empty.darshan").write_bytes(b"")
    (d / "noise.darshan").write_bytes(bytes((7 * i + 3) % 256 for i in range(3000)))
    half = TESTDATA / "darshan" / "imbalanced-io.darshan"
    (d / "half.darshan").write_bytes(half.read_bytes()[: half.stat().st_size // 2])
    (d / "v2.darshan").write_bytes(gzip.compress(b"2.06\0\0\0\0" + bytes(2000), mtime=0))


# ------------------------------------------------------------------------------------ runs

class Runs:
    """Homes, inputs and command runs shared by the cases; each built once, on first use."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.cleanup: list = []
        self.subs = [(str(tmp), "<tmp>"), (str(TESTDATA), "<testdata>"), (str(DATA), "<data>")]

    def run(self, *args: str, home: Path, timeout: float = 120):
        return run_cli(*args, home=home, timeout=timeout)

    # -- telemetry
    @cached_property
    def tele(self) -> Path:
        return self.tmp / "tele"

    @cached_property
    def import_lmt(self):
        return self.run("import", "lmt", str(TESTDATA / "lmt/snx11025_2018-01-28.sqlite3"), "--fs", "snx",
                        "--timezone", LA, "--json", home=self.tele)

    @cached_property
    def import_mmperfmon(self):
        return self.run("import", "mmperfmon", str(TESTDATA / "pytokio/mmperfmon.2019-05-15-micro.tgz"), "--fs", "gpfs",
                        "--json", home=self.tele)

    @cached_property
    def import_csv_lmt(self):
        src = self.tmp / "inputs" / "lmt-counters.csv"
        src.parent.mkdir(exist_ok=True)
        _lmt_as_long_csv(TESTDATA / "lmt/snx11025_2018-01-28.sqlite3", src)
        return self.run("import", "csv", str(src), "--fs", "csv", "--cumulative", "--timezone", LA, "--json",
                        home=self.tele)

    # -- probe
    @cached_property
    def probe(self) -> Path:
        from web_synthetic import Episode, add_target

        from ioweather.config import Settings
        from ioweather.store import open_store

        home = self.tmp / "probe"
        store = open_store(Settings.resolve(home))
        t0 = _t("2024-03-01T00:00:00")
        add_target(store, "scratch", t0, t0 + 2 * DAY, period_s=30, seed=1,
                   episodes=[Episode(t0 + DAY + 3 * 3600 * S, t0 + DAY + 4 * 3600 * S, 6.0, ("data_read", "data_write"))])
        add_target(store, "home", t0 + DAY // 2, t0 + 2 * DAY, period_s=60, seed=2, error_rate=0.01)
        store.dispose()
        return home

    # -- fsstats
    @cached_property
    def fs(self) -> dict:
        if os.geteuid() != 0:
            pytest.skip("the fsstats tree needs fixed owners (chown), which needs root")
        if not os.path.isdir("/dev/shm") or os.statvfs("/dev/shm").f_bsize != 4096:
            pytest.skip("no tmpfs at /dev/shm to build the fsstats tree on")
        shm = Path(tempfile.mkdtemp(prefix="ioweather-json-contract-", dir="/dev/shm"))
        self.subs.append((str(shm), "<shm>"))
        self.cleanup.append(lambda: shutil.rmtree(shm, ignore_errors=True))
        root = shm / "tree"
        root.mkdir()
        home, a, b = self.tmp / "fs", self.tmp / "a.json", self.tmp / "b.json"
        build_tree_a(os.fsencode(root))
        walk_a = self.run("fsstats", "walk", str(root), "--threads", "4", "--quiet", "--out", str(a), "--label", "a",
                          "--json", home=home)
        change_tree_to_b(os.fsencode(root))
        walk_b = self.run("fsstats", "walk", str(root), "--threads", "4", "--quiet", "--out", str(b), "--label", "b",
                          "--json", home=home)
        pinned_a, pinned_b = self.tmp / "a-pinned.json", self.tmp / "b-pinned.json"
        if a.exists() and b.exists():
            _pin_snapshot_time(a, pinned_a, "2026-01-05T06:00:00.000Z")
            _pin_snapshot_time(b, pinned_b, "2026-01-12T06:00:00.000Z")
        return {"home": home, "walk_a": walk_a, "walk_b": walk_b, "a": pinned_a, "b": pinned_b}

    # -- jobs
    @cached_property
    def jobs(self) -> dict:
        home, archive = self.tmp / "jobs", self.tmp / "archive"
        (archive / "real").mkdir(parents=True)
        for p in sorted((TESTDATA / "darshan").glob("*.darshan")):
            shutil.copy(p, archive / "real" / p.name)
        _broken_logs(archive / "broken")
        (archive / "notes.txt").write_text("not a log")
        # one worker: rows are stored in path order (see the docstring)
        ingest = self.run("jobs", "ingest", str(archive), "--workers", "1", "--json", home=home, timeout=300)
        return {"home": home, "ingest": ingest}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    r = Runs(tmp_path_factory.mktemp("json-contract"))
    yield r
    for f in r.cleanup:
        f()


# ------------------------------------------------------------------------------------ cases

MEASURED_IMPORT = {("sources", "*", "seconds"): "measured", ("sources", "*", "rows_per_s"): "measured"}
WALK = {("walk_s",): "measured", ("entries_per_s",): "measured", ("snapshot_time",): "now", ("host",): "host",
        **{("histograms", h, *key): "age" for h in ("atime_age_days", "mtime_age_days", "ctime_age_days")
           for key in (("min",), ("max",), ("mean",), ("buckets", "*", "sum"), ("buckets", "*", "byte_days"))}}


def _import(*args):
    return lambda r: r.run("import", *args, "--json", home=r.tele), MEASURED_IMPORT


def _workload(fs, after, *extra):
    def go(r):
        getattr(r, after)
        return r.run("workload", "--fs", fs, *extra, "--json", home=r.tele)
    return go, {}


def _probe(*args):
    return lambda r: r.run(*args, "--json", home=r.probe), {}


def _iostat(r):
    src = r.tmp / "inputs" / "iostat.json"
    src.parent.mkdir(exist_ok=True)
    src.write_text(json.dumps(_iostat_doc(), indent=2))
    return r.run("import", "iostat", str(src), "--fs", "iostat", "--json", home=r.tele)


def _csv_edges(r):
    src = r.tmp / "inputs" / "edges.csv"
    src.parent.mkdir(exist_ok=True)
    src.write_text(EDGE_CSV)
    return r.run("import", "csv", str(src), str(r.tmp / "inputs" / "missing.csv"), "--fs", "edges",
                 "--timezone", "America/New_York", "--json", home=r.tele)


def _fs_diff(r, *extra):
    fs = r.fs
    return r.run("fsstats", "diff", str(fs["a"]), str(fs["b"]), *extra, "--json", home=fs["home"])


def _jobs(*args):
    def go(r):
        j = r.jobs
        return r.run("jobs", *args, "--json", home=j["home"])
    return go


def _probe_init(r):
    return r.run("probe", "init", str(r.tmp / "probe-dir"), "--file-size", "1MiB", "--pool", "4", "--block", "64KiB",
                 "--json", home=r.tmp / "init")


SINCE, UNTIL = "2024-03-02T00:00:00Z", "2024-03-02T08:00:00Z"

JOBS_SUMMARY_NAMES = {("top_users", "*", "*", "user"): "user", ("top_projects", "*", "*", "project"): "project",
                      ("projects", "*", "project"): "project",
                      ("mibps_per_node_by_project", "projects", "*", "project"): "project",
                      ("per_node_bps_by_project", "projects", "*", "project"): "project"}

CASES = {  # name: (run(runs) -> CompletedProcess, {field pattern: normalisation kind})
    "import_lmt": (lambda r: r.import_lmt, MEASURED_IMPORT),
    "workload_lmt": _workload("snx", "import_lmt"),
    "workload_lmt_5s": _workload("snx", "import_lmt", "--resample", "5s", "--smooth", "30s", "--min-amplitude", "1MiB/s",
                                 "--acf-max-lag", "2m"),
    "import_lmt_reset": _import("lmt", str(TESTDATA / "lmt/lmtdb-reset.sqlite3"), "--fs", "reset", "--timezone", LA),
    "import_csv": (lambda r: r.import_csv_lmt, MEASURED_IMPORT),
    "import_csv_edges_and_missing": (_csv_edges, MEASURED_IMPORT),
    "import_iostat": (_iostat, MEASURED_IMPORT),
    "import_tts": _import("tts", str(TESTDATA / "pytokio/sample_tokiots.hdf5"), "--fs", "tts"),
    "import_mmperfmon": (lambda r: r.import_mmperfmon, MEASURED_IMPORT),
    "workload_mmperfmon": _workload("gpfs", "import_mmperfmon", "--resample", "10m"),
    "import_lfsdf_fullness": _import("lfsdf", str(TESTDATA / "pytokio/sample_ost-fullness.txt.gz"), "--fs", "snx11035"),
    "import_lfsdf_undated": _import("lfsdf", str(TESTDATA / "pytokio/lfs-df.txt.gz"), "--fs", "snx11025",
                                    "--at", "2017-03-20T08:30:00Z"),
    "probe_stats": _probe("probe", "stats", "--interval", "1h", "--since", SINCE, "--until", UNTIL),
    "probe_stats_scratch_10m": _probe("probe", "stats", "--target", "scratch", "--since", "2024-03-02T02:50:00Z",
                                      "--until", "2024-03-02T04:10:00Z"),
    "slowdown": _probe("slowdown", "--interval", "1h", "--baseline", "1d", "--since", SINCE, "--until", UNTIL),
    "slowdown_p99_scratch": _probe("slowdown", "--target", "scratch", "--stat", "p99", "--interval", "30m",
                                   "--baseline", "12h", "--since", SINCE, "--until", UNTIL),
    "probe_init": (_probe_init, {("memory_bytes",): "memory"}),
    "fsstats_walk_a": (lambda r: r.fs["walk_a"], WALK),
    "fsstats_walk_b": (lambda r: r.fs["walk_b"], WALK),
    "fsstats_diff": (_fs_diff, {}),
    "fsstats_diff_movers_2": (lambda r: _fs_diff(r, "--movers", "2"), {}),
    "fsstats_list": (lambda r: r.run("fsstats", "list", "--json", home=r.fs["home"]),
                     {("*", "snapshot_time"): "now", ("*", "host"): "host"}),
    "factors_density": (lambda r: r.run("factors", "density", str(TESTDATA / "r-density/toy_obs.csv"), "--json",
                                        home=r.tmp / "factors"), {}),
    "factors_density_by_cls": (lambda r: r.run("factors", "density", str(TESTDATA / "r-density/toy_obs.csv"),
                                               "--by", "cls", "--split", "mean", "--json", home=r.tmp / "factors"), {}),
    "jobs_ingest": (lambda r: r.jobs["ingest"], {}),
    "jobs_summary": (_jobs("summary"), JOBS_SUMMARY_NAMES),
    "jobs_summary_all_sizes": (_jobs("summary", "--min-procs", "0", "--min-bytes", "0", "--top", "3",
                                     "--cores-per-node", "32"), JOBS_SUMMARY_NAMES),
    "jobs_failed": (_jobs("failed"), {("*", "failed_at"): "now"}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_json_matches_golden(name, runs, request):
    go, fields = CASES[name]
    proc = go(runs)
    assert proc.stdout.strip(), f"{name}: no JSON on stdout (exit {proc.returncode}): {proc.stderr[-2000:]}"
    assert "Traceback" not in proc.stderr, f"{name}: {proc.stderr[-2000:]}"
    got = {"args": normalise(list(proc.args[3:]), runs.subs, {}), "exit_code": proc.returncode,
           "json": normalise(json.loads(proc.stdout), runs.subs, fields)}
    path = GOLDEN / f"{name}.json"
    if update_requested(request.config):
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(f"no golden file {path.name}: record it with --update-golden (or IOWEATHER_UPDATE_GOLDEN=1)")
    want = json.loads(path.read_text(encoding="utf-8"))
    diffs = differences(want, got)
    assert not diffs, f"{name}: the JSON differs from {path.name} ({len(diffs)} shown):\n" + "\n".join(diffs)


def test_every_golden_file_has_a_case():
    """A golden left behind by a removed or renamed case would silently stop being checked."""
    if not GOLDEN.is_dir():
        pytest.skip("no golden files recorded yet")
    assert sorted(p.stem for p in GOLDEN.glob("*.json")) == sorted(CASES)


def test_the_comparison_catches_each_kind_of_drift():
    """differences() is the whole test: check that it sees what issue 12 must not change."""
    want = {"a": 1, "b": [0.1, 2.0], "c": {"x": None, "y": "s"}}
    assert differences(want, json.loads(json.dumps(want))) == []
    assert differences(want, {**want, "a": 1.0}) == ["$.a: int 1 -> float 1.0"]
    assert differences(want, {**want, "b": [0.1000000002, 2.0]}) == ["$.b[0]: 0.1 -> 0.1000000002"]
    assert differences(want, {**want, "b": [math.nextafter(0.1, 1), 2.0]}) == []  # the last bit: summation order
    assert differences({"z": 0.0}, {"z": -0.0}) == ["$.z: 0.0 -> -0.0"]
    assert differences(want, {"b": want["b"], "a": 1, "c": want["c"]}) == ["$: key order ['a', 'b', 'c'] -> ['b', 'a', 'c']"]
    assert differences(want, {"a": 1, "b": [0.1, 2.0], "c": {"x": None, "z": "s"}}) == ["$.c: keys lost ['y'], keys new ['z']"]
    assert differences({"v": 0.0}, {"v": -0.0}) == ["$.v: 0.0 -> -0.0"]
    assert differences([1, 2], [1, 2, 3]) == ["$: length 2 -> 3"]
    assert differences({"f": False}, {"f": 0}) == ["$.f: bool False -> int 0"]


def test_normalise_replaces_only_values_of_the_expected_kind():
    subs = [("/tmp/x", "<tmp>")]
    doc = {"sources": [{"seconds": 1.5, "rows_per_s": "fast", "source": "/tmp/x/a.csv"}], "snapshot_time": "soon"}
    got = normalise(doc, subs, {**MEASURED_IMPORT, ("snapshot_time",): "now"})
    assert got == {"sources": [{"seconds": "<measured>", "rows_per_s": "fast", "source": "<tmp>/a.csv"}],
                   "snapshot_time": "soon"}


def test_a_default_project_named_as_a_user_of_this_machine_is_kept_as_its_uid():
    """'user:root' here is 'user:0' in the golden, as the user 'root' is '0': a name only this machine's passwd
    knows must not decide the golden; a project or user name this machine does not know is compared as is."""
    doc = {"projects": [{"project": p} for p in ("user:root", "user:1843105048", "user:no-such-user-here", "climate")]}
    got = normalise(doc, [], {("projects", "*", "project"): "project"})
    assert [p["project"] for p in got["projects"]] == ["user:0", "user:1843105048", "user:no-such-user-here", "climate"]
