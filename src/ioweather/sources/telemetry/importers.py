"""The one interface of `ioweather import KIND ...` (the recorded-history twin of base.Source).

An importer reads one SOURCE (a file, an archive, a database URL) and yields raw chunks. What the
chunks are is its `target`:
- "telemetry": base.Wide or base.Long chunks of a file system's data set (`import KIND SOURCE...
  --fs FS [--timezone] --since --until`). Counters stay cumulative; the service
  (services/telemetry/imports.py) turns the chunks into rows, filters --since/--until, writes them through
  the store and rolls back on failure.
- "jobs": lists of scheduler job rows, the columns of the store's `sched_jobs` (`import KIND
  [FILE]`, sources/scheduler.py). The service (services/jobs/scheduler.py) stores them in one
  transaction and summarises. Such a kind declares its own --since/--until/--timezone among its
  `options` (their help is its own: sacct's local times, its default window), and reads live
  when `live` and no FILE is given.
What an importer owes the user: a UserError of one line for anything wrong with its input
(files opened with files.open_regular, OS errors worded by errors.from_os_error, library
errors of a damaged file caught where they happen), and notes for what it left out or changed.

A new importer is one module: a subclass of `Importer` with its `kind` and `open`/`chunks`/`close`;
plus its `Kind` in KINDS below (help, options, target), which the class takes as attributes. The
`import` command makes a click sub-command of each kind from its `Kind`: this module stays light (no
pandas), so that neither starting the command line nor `import KIND --help` imports a reader.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

@dataclass(frozen=True)
class Option:
    """An option of one importer kind, beyond those its target gives every kind (telemetry: --fs,
    --timezone, --since, --until)."""

    flag: str                 # "--interval"
    dest: str                 # keyword argument of the importer's constructor
    help: str
    # "duration" (seconds), "time" (unix ns), "since" (unix ns; also a duration ago), "flag" (bool) or "text"
    type: str = "text"
    default: str | None = None  # as typed on the command line ("120s"), shown in --help
    metavar: str | None = None


@dataclass(frozen=True)
class Kind:
    """One importer kind as `ioweather import` shows it (its sub-command's help and options), apart from
    its reader: the reader's module (numpy, pandas, h5py at its top) is imported only when the kind runs,
    so `import KIND --help` loads none of them. The reader class takes these as class attributes."""

    name: str
    reader: str               # "module in ioweather.sources:class"
    help: str                 # the sub-command's help; its first line is the short help
    options: tuple[Option, ...] = ()
    timezone: bool = True     # whether --timezone (times written without offset) applies
    target: str = "telemetry"  # what the chunks are: "telemetry" or "jobs" (module docstring)
    live: bool = False        # "jobs": reads live (sacct) when no FILE is given


#: How long a live `import slurm` waits for sacct (its --timeout default).
SACCT_TIMEOUT_S = 120.0

KINDS = (
    Kind("lmt", "telemetry.lmt:LmtImporter", """LMT (Lustre Monitoring Tool) databases: a MySQL/MariaDB URL or an SQLite copy.

    LMT stores the server's local time: --timezone (default UTC for a copy, the server's zone for a URL)."""),
    Kind("iostat", "telemetry.iostat_json:IostatImporter", """sysstat's `iostat -x -t -o JSON` output (a file, or - for standard input).

    Rates become amounts per report interval; the first (since boot) report gives no row."""),
    Kind("tts", "telemetry.tts:TtsImporter",
         """pytokio's TOKIO Time Series HDF5 files (datatargets, mdtargets, fullness, ...).""",
         timezone=False),  # unix seconds
    Kind("csv", "telemetry.csv_long:CsvImporter", """The generic long CSV, time,target,metric,value[,interval_s] (docs/telemetry.md).

    Values are amounts per interval (or gauges); with --cumulative, counters.""", options=(
        Option("--interval", "interval", "Interval of each row when there is no interval_s column.", "duration"),
        Option("--cumulative", "cumulative", "Values are cumulative counters, not per-interval amounts.", "flag"),
    )),
    Kind("mmperfmon", "telemetry.mmperfmon:MmperfmonImporter", """GPFS `mmperfmon query` output: text, .gz, .tgz or a directory of them.

    Times are the collector's local time without a zone: give --timezone."""),
    Kind("lfsdf", "telemetry.lfsdf:LfsdfImporter", """Archived `lfs df` / `lfs df -i` runs (text, .gz, tar/.tgz or a directory), each after a
    `BEGIN <unix seconds>` line, as pytokio's collectors write them.""",
         options=(Option("--at", "at_ns", "Time of `lfs df` output that has no `BEGIN <unix seconds>` line.", "time"),),
         timezone=False),
    Kind("lctl", "telemetry.lctl:LctlImporter",
         """Archived `lctl dl -t` runs (target state and failover), each after a `BEGIN <unix seconds>` line.""",
         options=(Option("--at", "at_ns", "Time of `lctl dl -t` output that has no `BEGIN <unix seconds>` line.", "time"),),
         timezone=False),
    Kind("lctl-params", "telemetry.lctl_source:LctlParamsImporter", """Captures of `lctl get_param` (a file, .gz, tar/.tgz or a directory of them), each dated by its
    snapshot_time (or --at). Counters become amounts between consecutive captures of one SOURCE: give
    a directory or an archive of captures; a single capture stores its gauges (capacity, recovery, clients).""",
         options=(Option("--at", "at_ns", "Time of a capture that has no snapshot_time (memused, capacity only).", "time"),),
         timezone=False),
    Kind("slurm", "scheduler:SlurmImporter", """Import Slurm jobs: run `sacct` for the jobs running between --since and --until, or read
    FILE, a saved `sacct --parsable2` output with its header line (or pytokio's JSON cache of one).

    Only allocations are stored (steps are skipped), one row per cluster and job id; importing
    a job again replaces it. A job still running is stored without an end and updated by the
    next import. sacct prints local times without a zone: they are read in --timezone.""", options=(
        Option("--since", "since_ns", "Jobs running from this time on (ISO 8601, unix seconds or a duration such "
               "as 2h; default 24h).", type="since"),
        Option("--until", "until_ns", "Jobs running up to this time (default now).", type="time"),
        Option("--cluster", "cluster", "Cluster to ask sacct about (--clusters), and the name for a FILE without a "
               "Cluster column.", metavar="NAME"),
        Option("--timezone", "tz", "IANA zone of sacct's local times (the cluster's zone; default this machine's).",
               metavar="ZONE"),
        Option("--timeout", "timeout_s", "Give up on sacct after this long.", type="duration",
               default=f"{SACCT_TIMEOUT_S:g}s"),
    ), timezone=False, target="jobs", live=True),  # a kind with local times declares its own --timezone
    Kind("nersc-jobsdb", "scheduler:NerscJobsdbImporter", """Import jobs from a copy of the NERSC jobs database (SQLite, table `summary`: stepid,
    hostname, start, completion, numnodes; pytokio's cache format). Opened read-only.""",
         timezone=False, target="jobs"),
)
REGISTRY = {k.name: k for k in KINDS}


class Importer:
    """Base of importers. Use as a context manager: `with cls(source, ...) as imp: imp.chunks(...)`."""

    kind: ClassVar[str] = "importer"
    # its Kind's, set by __init_subclass__ from KINDS (one place, read by --help without this class)
    help: ClassVar[str] = ""
    options: ClassVar[tuple[Option, ...]] = ()
    timezone: ClassVar[bool] = True
    target: ClassVar[str] = "telemetry"
    live: ClassVar[bool] = False

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if "kind" not in cls.__dict__:  # a shared base (scheduler's JobsImporter), not a kind
            return
        face = REGISTRY[cls.kind]
        module, name = face.reader.split(":")
        if (cls.__module__, cls.__name__) != (f"ioweather.sources.{module}", name):
            raise TypeError(f"importer kind {cls.kind!r} is {face.reader} in KINDS, not {cls.__module__}:{cls.__name__}")
        cls.help, cls.options, cls.timezone, cls.target, cls.live = (
            face.help, face.options, face.timezone, face.target, face.live)

    def __init__(self, source: str | None, *, tz: str | None = None, since_ns: int | None = None,
                 until_ns: int | None = None, fs: str | None = None, **options: Any):
        for opt in self.options:
            setattr(self, opt.dest, options.get(opt.dest))
        # after the kind's own options: a kind that declares --since or --timezone itself fills these
        self.source = source
        self.tz = tz
        self.since_ns = since_ns
        self.until_ns = until_ns
        self.fs = fs
        self.notes: list[str] = []
        self.bad_lines = 0

    @classmethod
    def option_names(cls) -> set[str]:
        return {o.dest for o in cls.options}

    def ident(self) -> str:
        """What names this source across imports (its writer name derives from it)."""
        return self.source if "://" in self.source else os.path.abspath(self.source)

    def display(self) -> str:
        """The source as reports show it (a URL without its password)."""
        return self.source

    def label(self) -> str:
        return f"{self.kind} {Path(self.source).name}"

    def open(self) -> None:
        """Check and open the source; raise UserError when it cannot be read."""

    def total(self) -> int | None:
        """Units of progress `chunks` will report (None: unknown until the end)."""
        return None

    def chunks(self, advance: Callable[[int], None]) -> Iterator[Any]:
        """Chunks of the target's kind (Wide or Long; lists of job rows), in any order; `advance(n)`
        reports progress."""
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self) -> Importer:
        try:
            self.open()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def kinds() -> list[str]:
    return list(REGISTRY)


def face(kind: str) -> Kind:
    """What `import KIND --help` shows of `kind` (KeyError for an unknown kind), its reader not imported."""
    return REGISTRY[kind]


def importer(kind: str) -> type[Importer]:
    """The importer class of `kind` (KeyError for an unknown kind)."""
    module, cls = REGISTRY[kind].reader.split(":")
    return getattr(importlib.import_module(f"ioweather.sources.{module}"), cls)
