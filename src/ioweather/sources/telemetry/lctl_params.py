"""`lctl get_param` output -> raw Lustre readings (the interface the maintained exporters read).

`lctl get_param PARAM...` prints each parameter as `path=value`, or as `path=` followed by a block of
lines (stats, brw_stats tables, YAML of job_stats and quota, export UUID lists); a block may also start
on the `path=` line itself (`ost.OSS.ost_io.stats=snapshot_time ...`). Raw `/proc` and `/sys` paths
moved in Lustre 2.12 and broke LMT and the older exporters; `lctl get_param` names did not.

What is read (the kinds of whamcloud/lustrefs-exporter's lustre-collector):

    memused, memused_max, lnet_memused, health_check            the host
    osd-*.T.{kbytes*,files*,brw_stats,quota_slave.acct_*}          capacity, histograms, quota usage
    obdfilter|mdt|mgs.T.{stats,md_stats,job_stats,num_exports,tot_*,recovery_status,brw_stats}
    obdfilter|mdt|mgs.T.exports.NID.{uuid,stats}                   connected clients, per-client stats
    ost.OSS.SVC.stats, mds.MDS.SVC.stats, mgs.MGS.mgs.stats,       service (RPC) stats
    ldlm.namespaces.NS.*, ldlm.services.SVC.stats                  lock counts, contention, LDLM services
    llite.FS-SB.stats, osc.OST-osc-SB.stats                        a client mount, its OST connections
    mdd.T.changelog_users                                          changelog index and users
    qmt.T.POOL.glb-{usr,grp,prj}                                   quota limits
    lnet.stats (or /sys/kernel/debug/lnet/stats' one line), `lnetctl net show -v` / `stats show` YAML

A parameter of another name is counted in `Capture.unknown` and skipped; a line that belongs to
no parameter is counted in `Capture.stray`. A capture that stops in the middle (no final newline,
a table cut short) gives what it holds and a note. Everything is raw: counters are the kernel's
cumulative values, nothing is differenced here (stats/counters.py does that for `collect`).
This module imports nothing heavy (`export --capture` is a textfile-collector's cron job); the
live source, the store's readings and the importer are in lctl_source.py.

The parsing is by hand (no PyYAML): the YAML parts are one regular line per record, and a scrape of
a big server must stay in milliseconds (benchmarks/bench_lctl_export.py).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

# The parameter list of one live call (`collect`): what the store keeps (lctl_source.capture_samples),
# one process per interval. Per-client export stats, quota, LDLM services and changelog users are
# left out: their label sets (clients, user ids) grow with the site and nothing stores them.
PARAMS = (
    "memused", "memused_max", "lnet_memused", "health_check",
    "osd-*.*.kbytesavail", "osd-*.*.kbytesfree", "osd-*.*.kbytestotal", "osd-*.*.filesfree",
    "osd-*.*.filestotal", "osd-*.*.brw_stats",
    "obdfilter.*.stats", "obdfilter.*.brw_stats", "obdfilter.*.job_stats", "obdfilter.*.num_exports",
    "obdfilter.*.recovery_status", "obdfilter.*.exports.*.uuid",
    "mdt.*.md_stats", "mdt.*.job_stats", "mdt.*.num_exports", "mdt.*.recovery_status", "mdt.*.exports.*.uuid",
    "ldlm.namespaces.*.lock_count", "ldlm.namespaces.*.lock_timeouts", "llite.*.stats", "osc.*.stats",
)

BRW_NAMES = {  # the table titles of brw_stats -> lustre-collector's histogram names
    "pages per bulk r/w": "pages", "discontiguous pages": "discont_pages",
    "discontiguous blocks": "discont_blocks", "disk fragmented I/Os": "dio_frags",
    "disk I/Os in flight": "rpc_hist", "I/O time (1/1000s)": "io_time", "disk I/O size": "disk_iosize",
    "block maps msec": "block_maps_msec",
}
RECOVERY_CODES = {"COMPLETE": 0, "INACTIVE": 1, "WAITING": 2, "WAITING_FOR_CLIENTS": 3, "RECOVERING": 4}
RECOVERY_UNKNOWN = 5

_PARAM = re.compile(r"^([A-Za-z][A-Za-z0-9_.@:*\[\]-]*)=(.*)$")
_UNHEALTHY = re.compile(r"^device (\S+) reported unhealthy")
_CLIENT_UUID = re.compile(r"^[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*$")
_BUCKET = re.compile(r"^\s*([0-9]+[KMGT]?):\s+(\d+)\s+\d+\s+\d+\s*\|\s*(\d+)\s+\d+\s+\d+\s*$")
_YAML_FIELD = re.compile(r"(\w+):\s*([^,}\s]+)")
_ACCOUNTING = {"usr": "user", "grp": "group", "prj": "project"}


def component_of(target: str) -> str:
    """lustrefs-exporter's `component` label: mdt, ost, or mgt (the MGS and anything else)."""
    if "-MDT" in target:
        return "mdt"
    if "-OST" in target:
        return "ost"
    return "mgt"


@dataclass(slots=True)
class Stat:
    """One line of an lprocfs stats block: `name samples [unit] min max sum [sumsq]`."""

    name: str
    samples: int
    units: str
    min: int | None = None
    max: int | None = None
    sum: int | None = None


@dataclass(slots=True)
class Stats:
    """One stats block: where it came from, its start time (when the counters were last reset)."""

    kind: str                 # obdfilter, mdt, mgs, export, service, ldlm, llite, osc
    target: str               # the target, the service (ost, ost_io, mdt_fld...), the llite mount
    rows: list[Stat]
    start_time: int | None = None
    snapshot_ns: int | None = None
    nid: str | None = None    # exports: the client's NID
    group: str | None = None  # service: OSS or MDS; export: obdfilter/mdt/mgs
    param: str = ""           # the parameter it was printed as
    unreadable: list[str] = field(default_factory=list)  # rows whose numbers could not be read ("nan samples")


@dataclass(slots=True)
class Brw:
    target: str
    start_time: int | None
    snapshot_ns: int | None
    hists: dict[str, list[tuple[str, int, int]]]   # lustre-collector name -> [(bucket, read, write)]


class Job:
    """One job's record in one target's job_stats. Its rows are kept as one shape (the row names and
    units, shared by every record printed alike) and one flat tuple of numbers (samples, min, max,
    sum per row; None where the row has none): 10,000 jobs on 100 OSTs are ~30,000 records, and
    the Stat objects of them all were most of a scrape's memory and time. `rows` makes them on demand."""

    __slots__ = ("component", "target", "job", "shape", "nums", "unreadable")

    def __init__(self, component: str, target: str, job: str, rows: list[Stat] | None = None,
                 unreadable: list[str] | None = None, shape: tuple = (), nums: tuple = ()):
        self.component, self.target, self.job = component, target, job
        if rows is not None:
            shape = tuple((r.name, r.units) for r in rows)
            nums = tuple(x for r in rows for x in (r.samples, r.min, r.max, r.sum))
        self.shape, self.nums = shape, nums
        self.unreadable = unreadable if unreadable is not None else []

    @property
    def rows(self) -> list[Stat]:
        n = self.nums
        return [Stat(name, n[4 * i], unit, n[4 * i + 1], n[4 * i + 2], n[4 * i + 3])
                for i, (name, unit) in enumerate(self.shape)]


@dataclass
class Capture:
    """Everything one `lctl get_param` output holds, raw."""

    host: dict[str, int] = field(default_factory=dict)       # memused, memused_max, lnet_memused
    healthy: bool | None = None
    unhealthy: list[str] = field(default_factory=list)        # targets health_check names as unhealthy
    values: list[tuple[str, str, int]] = field(default_factory=list)  # (target, param, value): osd, num_exports, tot_*, ldlm
    stats: list[Stats] = field(default_factory=list)
    brw: list[Brw] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)
    clients: dict[tuple[str, str], int] = field(default_factory=dict)  # (target, nid) -> client UUIDs
    recovery: list[tuple[str, str, dict[str, int]]] = field(default_factory=list)  # (kind, target, fields)
    quota_limits: list[tuple[str, str, str, str, dict[str, int]]] = field(default_factory=list)
    # (target, pool param, accounting, id, {hard, soft, granted})
    quota_usage: list[tuple[str, str, str, int, int]] = field(default_factory=list)
    # (target, accounting, id, inodes, kbytes)
    changelog: list[tuple[str, int, list[tuple[str, int, int]]]] = field(default_factory=list)
    lnet_nid: list[tuple[str, str, int]] = field(default_factory=list)   # (nid, send_count|recv_count|drop_count, v)
    lnet: dict[str, int] = field(default_factory=dict)                   # send_length, recv_length, drop_length, ...
    snapshot_ns: int | None = None        # the latest snapshot_time of its blocks
    params: int = 0
    unknown: Counter = field(default_factory=Counter)
    stray: int = 0
    notes: list[str] = field(default_factory=list)
    parsing: str = field(default="", repr=False)  # the parameter being parsed (Stats.param)


_U64 = 2**64


def _int(s: str) -> int | None:
    """A Lustre counter or gauge (an unsigned 64-bit number, kept a Python int: a float64 has no room
    for a counter past 2^53); None for anything else ("-1", "1e3", " 7", "nan", 2^64 or more)."""
    if not (s.isascii() and s.isdigit() and len(s) <= 20):
        return None
    n = int(s)
    return n if n < _U64 else None


def _add_value(cap, target: str, param: str, value: str) -> int:
    """A target's single-number parameter into `cap.values`; 1 (a bad line) when it is no integer."""
    n = _int(value)
    if n is None:
        return 1
    cap.values.append((target, param, n))
    return 0


def _ns(line: str) -> int | None:
    """`snapshot_time  1688603042.553844832 secs.nsecs` (or with a colon) -> unix ns, exactly (a
    float has no room for the nanoseconds)."""
    f = line.replace(":", " ").split()
    if len(f) < 2:
        return None
    whole, _, frac = f[1].partition(".")
    if not whole.isdigit() or frac and not frac.isdigit():
        return None
    return int(whole) * 1_000_000_000 + int((frac + "000000000")[:9])


def _whole(ns: int | None) -> int | None:
    return None if ns is None else ns // 1_000_000_000


def parse_stats_block(lines: list[str], unreadable: list[str] | None = None
                      ) -> tuple[list[Stat], int | None, float | None, int]:
    """An lprocfs stats block -> (rows, start time, snapshot time, unreadable lines). The names of
    rows whose numbers could not be read (`read_bytes nan samples ...`) are added to `unreadable`:
    their readings are unknown this time, which is not the same as a row that is absent (an idle
    OST has no read_bytes line: nothing read)."""
    rows: list[Stat] = []
    start = snap = None
    bad = 0
    for line in lines:
        f = line.split()
        if not f:
            continue
        if f[0] in ("snapshot_time", "snapshot_time:"):
            snap = _ns(line)
            continue
        if f[0] in ("start_time", "start_time:"):
            start = _whole(_ns(line))
            continue
        if f[0] in ("elapsed_time", "elapsed_time:"):
            continue
        samples = _int(f[1]) if len(f) > 1 else None
        nums = [_int(x) for x in f[4:7]]
        if len(f) < 3 or f[2] != "samples" or samples is None or any(n is None for n in nums):
            bad += 1
            if unreadable is not None and len(f) >= 3 and f[2] == "samples":
                unreadable.append(f[0])
            continue
        units = f[3].strip("[]") if len(f) > 3 else ""
        nums += [None] * (3 - len(nums))
        rows.append(Stat(f[0], samples, units, nums[0], nums[1], nums[2]))
    return rows, start, snap, bad


def parse_brw(target: str, lines: list[str]) -> tuple[Brw, int]:
    hists: dict[str, list[tuple[str, int, int]]] = {}
    current: list | None = None
    start = snap = None
    bad = 0
    for line in lines:
        s = line.strip()
        if not s:
            continue
        if s.startswith("snapshot_time"):
            snap = _ns(s)
            continue
        if s.startswith("start_time"):
            start = _whole(_ns(s))
            continue
        if s.startswith("elapsed_time") or s.startswith("read") and "|" in s and "write" in s:
            continue
        m = _BUCKET.match(line)
        if m:
            if current is None:
                bad += 1
            else:
                current.append((m.group(1), int(m.group(2)), int(m.group(3))))
            continue
        title = re.split(r"\s{2,}", s, maxsplit=1)[0]
        if title in BRW_NAMES:
            current = hists.setdefault(BRW_NAMES[title], [])
        elif "|" in s:  # a table of a later Lustre: keep reading, its rows go nowhere
            current = hists.setdefault(title, [])
        else:
            bad += 1
    return Brw(target, start, snap, hists), bad


def parse_job_stats(component: str, target: str, lines: list[str]) -> tuple[list[Job], int]:
    reader = JobStatsReader(component, target)
    reader.feed(lines)
    return reader.done()


def _num(x: str) -> int | None:
    """_int of a YAML number, its comma cut: the common case (digits, below 2^64) without a call."""
    if x[-1:] == ",":
        x = x[:-1]
    return int(x) if x.isdigit() and len(x) < 20 and x.isascii() else _int(x)


class JobStatsReader:
    """One target's job_stats YAML, some lines at a time (the capture is not held whole): each record
    becomes a Job whose shape is shared with the records printed alike. A scrape of a big server
    is this loop over hundreds of thousands of lines: it reads the common layout by position."""

    def __init__(self, component: str, target: str):
        self.component, self.target = component, target
        self.jobs: list[Job] = []
        self.bad = 0
        self._job: str | None = None
        self._names: list[tuple[str, str]] = []
        self._nums: list = []
        self._unreadable: list[str] = []
        self._shapes: dict[tuple, tuple] = {}

    def _end(self) -> None:
        if self._job is not None:
            shape = tuple(self._names)
            shape = self._shapes.setdefault(shape, shape)
            self.jobs.append(Job(self.component, self.target, self._job, None, self._unreadable, shape,
                                 tuple(self._nums)))
        self._job, self._names, self._nums, self._unreadable = None, [], [], []

    def feed(self, lines: list[str]) -> None:
        names, nums = self._names, self._nums
        for line in lines:
            f = line.split()
            n = len(f)
            # `name: { samples: N, unit: U }` and `name: { samples: N, unit: U, min: A, max: B, sum: C[, sumsq: D] }`
            if n >= 7 and f[2] == "samples:" and f[1] == "{" and f[4] == "unit:" and f[-1] == "}" \
                    and self._job is not None:
                x = f[3][:-1] if f[3][-1:] == "," else f[3]
                samples = int(x) if x.isdigit() and len(x) < 20 and x.isascii() else _int(x)
                if n == 7:
                    mmm = (None, None, None)
                elif n >= 13 and f[6] == "min:" and f[8] == "max:" and f[10] == "sum:":
                    mmm = (_num(f[7]), _num(f[9]), _num(f[11]))
                else:
                    name, samples, unit, mmm = self._fields(line)
                    self._row(name, samples, unit, mmm)
                    continue
                if samples is None:
                    self._row(f[0][:-1], samples, "", mmm)
                    continue
                u = f[5]
                names.append((f[0][:-1], u[:-1] if u[-1:] == "," else u))
                nums += (samples, *mmm)
                continue
            if not f or f[0] == "job_stats:":
                continue
            if f[0] == "-" and n > 1 and f[1] == "job_id:":
                self._end()
                names, nums = self._names, self._nums
                self._job = line.partition(":")[2].strip().strip("'\"")
                continue
            if self._job is None or ":" not in line:
                self.bad += 1
                continue
            name, _, rest = line.strip().partition(":")
            if rest.strip().startswith("{"):
                self._row(*self._fields(line))
            # else snapshot_time, start_time, elapsed_time of the job

    def _row(self, name: str, samples: int | None, unit: str, mmm: tuple) -> None:
        if samples is None:
            self.bad += 1
            self._unreadable.append(name)
            return
        self._names.append((name, unit))
        self._nums += (samples, *mmm)

    @staticmethod
    def _fields(line: str):
        name, _, rest = line.strip().partition(":")
        fields = dict(_YAML_FIELD.findall(rest))
        return (name, _int(fields.get("samples", "")), fields.get("unit", ""),
                (_int(fields.get("min", "x")), _int(fields.get("max", "x")), _int(fields.get("sum", "x"))))

    def done(self) -> tuple[list[Job], int]:
        self._end()
        return self.jobs, self.bad


def _recovery(lines: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in lines:
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        if key == "status":
            out["status"] = RECOVERY_CODES.get(value, RECOVERY_UNKNOWN)
        elif key in ("completed_clients", "connected_clients", "evicted_clients", "recovery_duration",
                     "recovery_start", "time_remaining", "replayed_requests", "last_transno", "queued_requests"):
            n = _int(value.split("/")[0])
            if n is not None:
                out[key] = n
    return out


def _quota_records(lines: list[str], key: str) -> list[tuple[str, dict[str, int]]]:
    """The `- id: N` records of quota YAML with their `key: { a: 1, b: 2 }` map (limits or usage)."""
    out = []
    ident = None
    for line in lines:
        s = line.strip()
        if s.startswith("- id:"):
            ident = s[5:].strip()
        elif s.startswith(key + ":") and ident is not None:
            out.append((ident, {k: int(v) for k, v in _YAML_FIELD.findall(s[len(key) + 1:]) if v.isdigit()}))
    return out


def _changelog(lines: list[str]) -> tuple[int | None, list[tuple[str, int, int]]]:
    current = None
    users = []
    for line in lines:
        f = line.split()
        if not f:
            continue
        if f[0] == "current_index:" and len(f) > 1:
            current = _int(f[1])
        elif f[0] == "ID":
            continue
        elif len(f) >= 3 and f[1].isdigit() and f[2].startswith("(") and f[2].endswith(")"):
            idle = _int(f[2][1:-1])
            users.append((f[0], int(f[1]), idle or 0))
    return current, users


# /sys/kernel/debug/lnet/stats (`lctl get_param -n stats` on some versions): one line of 11 numbers
_LNET_STATS = ("msgs_alloc", "msgs_max", "errors", "send_count", "recv_count", "route_count", "drop_count",
               "send_length", "recv_length", "route_length", "drop_length")


def _lnet_yaml(lines: list[str], cap: Capture) -> None:
    """`lnetctl net show -v` (per NI: `- nid:` then `send_count:` ... under `statistics:`) and
    `lnetctl stats show` (one `statistics:` map of the node)."""
    nid = None
    for line in lines:
        s = line.strip()
        if s.startswith("- nid:"):
            nid = s[6:].strip()
            continue
        key, sep, value = s.partition(":")
        n = _int(value.strip()) if sep else None
        if n is None:
            continue
        if nid is not None and key in ("send_count", "recv_count", "drop_count"):
            cap.lnet_nid.append((nid, key, n))
        elif nid is None:
            cap.lnet[key] = n


_JOB_STATS = re.compile(r"^(obdfilter|mdt)\.([^.]+)\.job_stats$")


def _batches(chunks: Iterable[str], cap: Capture) -> Iterator[list[str]]:
    """The lines of the text given in `chunks` (any split), a chunk's lines at a time; a last line
    without its newline is left out with a note (the capture was cut short)."""
    tail = ""
    for chunk in chunks:
        lines = chunk.split("\n")
        lines[0] = tail + lines[0]
        tail = lines.pop()
        yield lines
    if tail:
        cap.notes.append("the capture ends in the middle of a line (cut short?): its last line was left out")


def _blocks(batches: Iterable[list[str]]) -> Iterator[tuple[str, list[str] | JobStatsReader, int]]:
    """(param path, value lines, unclaimed lines before it) for each parameter of the output. The
    lines of a job_stats parameter (most of a big server's output) go to its JobStatsReader as they
    come, a run of them at a time, and the reader is given in place of the lines."""
    name = None
    lines_: list[str] = []
    reader: JobStatsReader | None = None
    stray = 0
    for batch in batches:
        i, n = 0, len(batch)
        while i < n:
            if reader is not None:
                # a parameter's name starts with a letter: the YAML lines (indented, `- `) are none
                j = i
                while j < n and batch[j][:1] in (" ", "-", ""):
                    j += 1
                reader.feed(batch[i:j])
                if j == n:
                    break
                i = j
            line = batch[i]
            i += 1
            m = None if line[:1] in (" ", "-", "") else _PARAM.match(line)
            lnet = line in ("net:", "statistics:")  # `lnetctl net show -v` / `stats show` appended to the capture
            if m or lnet:
                if name is not None:
                    yield name, (reader if reader is not None else lines_), stray
                    stray = 0
                name, lines_ = ("lnetctl", [line]) if lnet else (m.group(1), [m.group(2)] if m.group(2) else [])
                j = None if lnet else _JOB_STATS.match(name)
                reader = JobStatsReader("ost" if j.group(1) == "obdfilter" else "mdt", j.group(2)) if j else None
                if reader is not None:
                    reader.feed(lines_)
            elif reader is not None:
                reader.feed([line])
            elif name is not None:
                lines_.append(line)
            elif line.strip():
                stray += 1
    if name is not None:
        yield name, (reader if reader is not None else lines_), stray
    elif stray:
        yield "", [], stray


def _add_stats(cap: Capture, lines: list[str], kind: str, target: str, nid: str | None = None,
               group: str | None = None) -> int:
    """Parse one stats block into `cap.stats`; returns its unreadable lines."""
    unreadable: list[str] = []
    rows, start, snap, bad = parse_stats_block(lines, unreadable)
    cap.stats.append(Stats(kind, target, rows, start, snap, nid=nid, group=group, param=cap.parsing,
                           unreadable=unreadable))
    return bad


# The readers of one parameter's lines, one per kind of parameter: each takes the Capture, the match of
# its path against the kind's pattern (the table below) and the lines of its value, and returns the
# number of lines it could not read.

def _value(lines: list[str]) -> str:
    return lines[0].strip() if lines else ""


def _skip(cap: Capture, m: re.Match, lines: list[str]) -> int:
    return 0


def _host(cap: Capture, m: re.Match, lines: list[str]) -> int:
    n = _int(_value(lines))
    if n is None:
        return 1
    cap.host[m.group(0)] = n
    return 0


def _health(cap: Capture, m: re.Match, lines: list[str]) -> int:
    # `health_check=NOT HEALTHY` may come with a second block naming the targets at fault
    cap.healthy = _value(lines) == "healthy" and cap.healthy is not False
    cap.unhealthy += [u.group(1) for u in map(_UNHEALTHY.match, lines) if u]
    return 0


def _lnet(cap: Capture, m: re.Match, lines: list[str]) -> int:
    if m.group(0) == "lnetctl" or ":" in "".join(lines):
        _lnet_yaml(lines, cap)
        return 0
    f = _value(lines).split()
    if len(f) != len(_LNET_STATS) or not all(x.isdigit() for x in f):
        return 1
    cap.lnet.update(zip(_LNET_STATS, map(int, f)))
    return 0


def _number(target: int, param: int):
    """A target's single number, its target and parameter name the match's groups `target`, `param`."""
    def read(cap: Capture, m: re.Match, lines: list[str]) -> int:
        return _add_value(cap, m.group(target), m.group(param), _value(lines))
    return read


def _stats(kind: str):
    """A stats block of `kind` whose target is the match's first group."""
    def read(cap: Capture, m: re.Match, lines: list[str]) -> int:
        return _add_stats(cap, lines, kind, m.group(1))
    return read


def _target_stats(cap: Capture, m: re.Match, lines: list[str]) -> int:
    group, target, param = m.groups()
    return _add_stats(cap, lines, "mdt" if param == "md_stats" else group, target)


def _mgs_stats(cap: Capture, m: re.Match, lines: list[str]) -> int:
    return _add_stats(cap, lines, "mgs", "MGS")


def _service_stats(cap: Capture, m: re.Match, lines: list[str]) -> int:
    return _add_stats(cap, lines, "service", m.group(2), group=m.group(1).split(".")[1])


def _export_stats(cap: Capture, m: re.Match, lines: list[str]) -> int:
    group, target, nid = m.groups()
    return _add_stats(cap, lines, "export", target, nid=nid, group=group)


def _clients(cap: Capture, m: re.Match, lines: list[str]) -> int:
    # a repeated parameter (the same export listed twice) replaces, never adds
    cap.clients[(m.group(2), m.group(3))] = sum(1 for x in lines if _CLIENT_UUID.match(x.strip()))
    return 0


def _osd_brw(cap: Capture, m: re.Match, lines: list[str]) -> int:
    brw, bad = parse_brw(m.group(1), lines)
    cap.brw.append(brw)
    if brw.snapshot_ns:  # the latest so far; parse_chunks joins the stats blocks' at the end
        cap.snapshot_ns = max(cap.snapshot_ns or 0, brw.snapshot_ns)
    return bad


def _target_brw(cap: Capture, m: re.Match, lines: list[str]) -> int:
    brw, bad = parse_brw(m.group(2), lines)
    cap.brw.append(brw)
    return bad


def _streamed_jobs(cap: Capture, m: re.Match, reader: JobStatsReader) -> int:
    """An OST's or MDT's job_stats: its lines went to a JobStatsReader as they came (_blocks)."""
    jobs, bad = reader.done()
    cap.jobs += jobs
    return bad


def _jobs(cap: Capture, m: re.Match, lines: list[str]) -> int:
    """An MGS's or MDS's job_stats (small), read as those of an MDT."""
    jobs, bad = parse_job_stats("mdt", m.group(2), lines)
    cap.jobs += jobs
    return bad


def _recovery_status(cap: Capture, m: re.Match, lines: list[str]) -> int:
    group, target = m.groups()
    cap.recovery.append(({"obdfilter": "OST", "mdt": "MDT"}.get(group, group.upper()), target, _recovery(lines)))
    return 0


def _namespace(cap: Capture, m: re.Match, lines: list[str]) -> int:
    ns, param = m.groups()
    for prefix in ("mdt-", "filter-"):
        if ns.startswith(prefix) and ns.endswith("_UUID"):
            return _add_value(cap, ns[len(prefix):-5], param, _value(lines))
    return 0  # a client's namespace (FS-OST0000-osc-SB): `ldlm.namespaces.*` names them too; not a target's


def _changelog_users(cap: Capture, m: re.Match, lines: list[str]) -> int:
    current, users = _changelog(lines)
    if current is None:
        return 1
    cap.changelog.append((m.group(1), current, users))
    return 0


def _quota_usage(cap: Capture, m: re.Match, lines: list[str]) -> int:
    for ident, f in _quota_records(lines, "usage"):
        cap.quota_usage.append((m.group(1), m.group(2), ident, f.get("inodes", 0), f.get("kbytes", 0)))
    return 0


def _quota_limits(cap: Capture, m: re.Match, lines: list[str]) -> int:
    target, pool, acct = m.groups()
    for ident, limits in _quota_records(lines, "limits"):
        cap.quota_limits.append((target, pool, _ACCOUNTING[acct], ident, limits))
    return 0


_T = r"^(obdfilter|mdt|mgs|mds)\.([^.]+)"  # a server target's parameters: obdfilter.ai400-OST0000.stats

#: Every kind of parameter `lctl get_param` prints: its path's pattern -> its reader; the first match
#: wins. A path no pattern matches is an unknown kind (`Capture.unknown`). `lnetctl` is the name _blocks
#: gives the YAML of `lnetctl net show -v` / `stats show` appended to a capture; `lnet.stats` (or `stats`)
#: is that YAML or lnet's one line of numbers. OST and MDT job_stats come already read (_blocks streams
#: their lines to a JobStatsReader).
LINE_KINDS = tuple((re.compile(pattern), read) for pattern, read in (
    (r"^(memused|memused_max|lnet_memused)$",                                   _host),
    (r"^version$",                                                              _skip),  # 2.16.0_ddn56b
    (r"^health_check$",                                                         _health),
    (r"^(lnetctl|lnet\.stats|stats)$",                                          _lnet),
    (r"^osd-[a-z]+\.([^.]+)\.(kbytesavail|kbytesfree|kbytestotal|filesfree|filestotal)$", _number(1, 2)),
    (r"^osd-[a-z]+\.([^.]+)\.fstype$",                                          _skip),
    (r"^osd-[a-z]+\.([^.]+)\.brw_stats$",                                       _osd_brw),
    (r"^osd-[a-z]+\.([^.]+)\.quota_slave\.acct_(user|group|project)$",          _quota_usage),
    (r"^(obdfilter|mdt|mgs)\.([^.]+)\.exports\.(.+)\.uuid$",                    _clients),
    (r"^(obdfilter|mdt|mgs)\.([^.]+)\.exports\.(.+)\.stats$",                   _export_stats),
    (r"^mgs\.MGS\.mgs\.stats$",                                                 _mgs_stats),
    (r"^mgs\.MGS\.mgs\.threads_(max|min|started)$",                             _skip),
    (_JOB_STATS.pattern,                                                        _streamed_jobs),
    (_T + r"\.job_stats$",                                                      _jobs),
    (_T + r"\.(stats|md_stats)$",                                               _target_stats),
    (_T + r"\.brw_stats$",                                                      _target_brw),
    (_T + r"\.recovery_status$",                                                _recovery_status),
    (_T + r"\.(num_exports|tot_dirty|tot_granted|tot_pending)$",                _number(2, 3)),
    (_T + r"\.threads_(max|min|started)$",                                      _skip),
    (r"^(ost\.OSS|mds\.MDS)\.([A-Za-z0-9_]+)\.stats$",                          _service_stats),
    (r"^ldlm\.namespaces\.(.+)\.([a-z_]+)$",                                    _namespace),
    (r"^ldlm\.services\.([A-Za-z0-9_]+)\.stats$",                               _stats("ldlm")),
    (r"^llite\.([^.]+)\.stats$",                                                _stats("llite")),
    (r"^osc\.([^.]+-osc-[^.]+)\.stats$",                                        _stats("osc")),
    (r"^mdd\.([^.]+)\.changelog_users$",                                        _changelog_users),
    (r"^qmt\.([^.]+)\.([^.]+)\.glb-(usr|grp|prj)$",                             _quota_limits),
))


def parse_capture(text: str) -> Capture:
    """One `lctl get_param` output (any parameters, any order) -> Capture."""
    return parse_chunks((text,))


def parse_chunks(chunks: Iterable[str]) -> Capture:
    """An `lctl get_param` output given in pieces (a file read a MiB at a time) -> Capture; no
    more of it is held than one parameter's lines (a job_stats parameter: one record's)."""
    cap = Capture()
    bad = 0
    printed: Counter = Counter()
    for name, lines, stray in _blocks(_batches(chunks, cap)):
        cap.stray += stray
        if not name:
            continue
        cap.params += 1
        printed[name] += 1
        cap.parsing = name
        for pattern, read in LINE_KINDS:
            m = pattern.match(name)
            if m:
                bad += read(cap, m, lines)
                break
        else:
            cap.unknown[_generic(name)] += 1
    _reject_repeated(cap, {name for name, n in printed.items() if n > 1})
    if bad:
        cap.notes.append(f"{bad} unreadable lines or values skipped")
    if cap.unknown:
        cap.notes.append(f"{sum(cap.unknown.values())} parameters of {len(cap.unknown)} unknown kinds skipped "
                         f"(first: {next(iter(cap.unknown))})")
    if cap.stray:
        cap.notes.append(f"{cap.stray} lines before the first parameter skipped")
    snaps = [st.snapshot_ns for st in cap.stats if st.snapshot_ns]
    if snaps:  # the parameters are read one after the other: the capture is as recent as its latest
        cap.snapshot_ns = max(snaps + [cap.snapshot_ns or 0])
    return cap


def _reject_repeated(cap: Capture, repeated: set[str]) -> None:
    """A stats block whose parameter the output prints twice (a target listed twice: two devices
    given one name, a broken lctl) tells no single reading: both are left out, with a note. They
    used to be added up, and the second one made a zero-length interval."""
    dropped = {st.param for st in cap.stats if st.param in repeated}
    if dropped:
        cap.stats = [st for st in cap.stats if st.param not in dropped]
        first = sorted(dropped)[0]
        cap.notes.append(f"{len(dropped)} parameters printed more than once, their readings left out this time "
                         f"(first: {first[:80]})")


def _generic(name: str) -> str:
    """A parameter path with its target part replaced by *, so that unknown kinds count once each."""
    parts = name.split(".")
    return ".".join([parts[0], "*", *parts[2:]] if len(parts) > 2 else parts)


def connected_clients(cap: Capture) -> dict[str, int]:
    """{target: client UUIDs over its exports} (UUIDs ending in _UUID are servers' connections)."""
    out: dict[str, int] = {}
    for (target, _nid), n in cap.clients.items():
        out[target] = out.get(target, 0) + n
    return out
