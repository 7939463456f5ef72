"""Lustre server and client statistics from /proc/fs/lustre and /sys/fs/lustre.

Server side, per target (what LMT reads, see ../shared/data/lustre/*/outputs):
  obdfilter/<OST>/stats      read_bytes / write_bytes lines: samples = operations, sum = bytes
  mdt/<MDT>/md_stats         metadata operations (mds/<MDT>/stats on Lustre 1.8)
  */<target>/job_stats       per job, when jobstats is enabled
  kbytestotal, kbytesfree, kbytesavail, filestotal, filesfree
                             in obdfilter/, mdt/, mds/ or osd-*/ under /proc or /sys
                             (Lustre moved them to /sys over 2.x; both are searched)
Client side: llite/<fs>-<sb>/stats (the mount) and osc/<OST>-osc-<sb>/stats (per OST).

lprocfs stats lines read `name count samples [unit] min max sum [sumsq]`. Lustre 2.15 adds
`start_time`/`elapsed_time` lines; the fixture tree has `statfs` twice in one file, which is
summed (two counters with one name would be two sources of the same operation).

job_stats is YAML, parsed by hand: it is one regular line per operation, PyYAML is not a
dependency, and a pure-Python YAML load of thousands of jobs every 5 s would cost more CPU than
everything else the collector does.
"""

from __future__ import annotations

import os
import re

from ioweather.errors import os_error_reason
from ioweather.sources.telemetry.base import COUNTER, GAUGE, Sample, Source, SourceError, lustre_fsname, read_text

LUSTRE_DIRS = ("proc/fs/lustre", "sys/fs/lustre", "sys/kernel/debug/lustre")
# Metadata operations kept as md_<op>; the rest of md_stats (samedir_rename, parallel_rename_*,
# *_hits) repeats or refines these and would double count.
MD_OPS = ("open", "close", "mknod", "link", "unlink", "mkdir", "rmdir", "rename", "getattr", "setattr",
          "getxattr", "setxattr", "listxattr", "removexattr", "statfs", "sync", "fsync", "readdir", "create",
          "symlink", "truncate", "lookup")
OST_OPS = ("create", "destroy", "punch", "setattr", "getattr", "sync", "statfs", "get_info", "set_info",
           "quotactl")
CAPACITY_FILES = (("kbytestotal", "capacity_bytes", 1024), ("kbytesfree", "free_bytes", 1024),
                  ("kbytesavail", "avail_bytes", 1024), ("filestotal", "files_total", 1),
                  ("filesfree", "files_free", 1))
REPROBE_TICKS = 12
_JOB_OP = re.compile(r"^\s+(\w+):\s*\{(.*)\}\s*$")
_JOB_FIELD = re.compile(r"(\w+):\s*([^,\s]+)")


def parse_stats(text: str) -> dict[str, tuple[int, int | None]]:
    """lprocfs stats -> {name: (samples, sum or None)}; duplicate names are added."""
    out: dict[str, tuple[int, int | None]] = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) < 3 or f[2] != "samples":
            continue  # snapshot_time, start_time, elapsed_time, blank lines
        try:
            count = int(f[1])
            total = int(f[6]) if len(f) >= 7 else None
        except ValueError:
            continue
        if f[0] in out:
            c0, s0 = out[f[0]]
            count += c0
            total = None if total is None and s0 is None else (total or 0) + (s0 or 0)
        out[f[0]] = (count, total)
    return out


def parse_job_stats(text: str) -> dict[str, dict[str, tuple[int, int | None]]]:
    """job_stats -> {job_id: {op: (samples, sum or None)}}."""
    jobs: dict[str, dict[str, tuple[int, int | None]]] = {}
    current: dict | None = None
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("- job_id:"):
            job = s.split(":", 1)[1].strip().strip("'\"")
            current = jobs.setdefault(job, {})
            continue
        if current is None:
            continue
        m = _JOB_OP.match(line)
        if not m:
            continue
        fields = dict(_JOB_FIELD.findall(m.group(2)))
        try:
            samples = int(fields.get("samples", ""))
        except ValueError:
            continue
        total = fields.get("sum")
        current[m.group(1)] = (samples, int(total) if total is not None and total.isdigit() else None)
    return jobs


def _bytes_and_ops(stats: dict[str, tuple[int, int | None]], prefix: str = "") -> list[tuple[str, int]]:
    out = []
    for kind in ("read", "write"):
        if f"{kind}_bytes" in stats:
            count, total = stats[f"{kind}_bytes"]
            out.append((f"{prefix}{kind}_ops", count))
            out.append((f"{prefix}{kind}_bytes", total or 0))
        else:
            # An idle OST has no read_bytes line at all: the counter is 0, not unknown.
            out.append((f"{prefix}{kind}_ops", 0))
            out.append((f"{prefix}{kind}_bytes", 0))
    return out


def osc_samples(host: str, name: str, stats: dict[str, tuple[int, int | None]]) -> list[Sample]:
    """A client's stats of one OST connection (osc `<OST>-osc-<sb>`) -> its bytes, RPCs and RPC wait."""
    target = f"{host}:{name.split('-osc-')[0]}"
    out = [Sample(target, f"osc_{kind}_bytes", stats[f"{kind}_bytes"][1] or 0)
           for kind in ("read", "write") if f"{kind}_bytes" in stats]
    if "req_waittime" in stats:
        count, usec = stats["req_waittime"]
        out.append(Sample(target, "osc_rpcs", count))
        if usec is not None:
            out.append(Sample(target, "osc_rpc_wait_s", usec / 1e6))
    return out


class Lustre(Source):
    name = "lustre"
    description = "Lustre servers (obdfilter, mdt, job_stats, capacity) and clients (llite, osc)"

    def __init__(self, *args, jobs: bool = True, **kw):
        super().__init__(*args, **kw)
        self.jobs = jobs
        self._bases = [str(self.path(d)) for d in LUSTRE_DIRS]
        self._where: dict[tuple[str, str], str] = {}
        self._ticks = 0

    def available(self) -> bool:
        return any(os.path.isdir(b) for b in self._bases)

    # -- discovery ----------------------------------------------------------------------------
    # Plain strings and os.scandir rather than pathlib and stat(): a tick reads hundreds of
    # files, and the path objects and extra stat calls cost several times the reads themselves.
    def _dirs(self, kind: str) -> dict[str, list[str]]:
        """{name: [dir, ...]} of `kind` (obdfilter, mdt, ...) across /proc and /sys."""
        out: dict[str, list[str]] = {}
        for base in self._bases:
            d = os.path.join(base, kind)
            try:
                with os.scandir(d) as it:
                    for e in it:
                        if e.is_dir():
                            out.setdefault(e.name, []).append(e.path)
            except (FileNotFoundError, NotADirectoryError):
                continue
            except PermissionError:
                self.warn(f"cannot list {d}: permission denied")
        return out

    def _read(self, dirs: list[str], filename: str) -> str | None:
        """The first `filename` found in `dirs`; None when there is none or it cannot be read.

        Where a file was found (or that it was found nowhere) is remembered, so that a tick does
        not retry the /proc and /sys locations that never have it; absent files are looked for
        again every REPROBE_TICKS ticks (job_stats appears when jobstats is switched on)."""
        key = (dirs[0], filename) if dirs else None
        where = self._where.get(key)
        if where is not None:
            if where == "":
                if self._ticks % REPROBE_TICKS:
                    return None
            else:
                try:
                    return read_text(where)
                except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
                    pass  # moved or unmounted: search again
                except OSError as e:
                    self.warn(f"cannot read {where}: {os_error_reason(e, where)}")
                    return None
        for d in dirs:
            path = os.path.join(d, filename)
            try:
                text = read_text(path)
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
                continue  # not in this directory (or the target was unmounted meanwhile)
            except OSError as e:
                self.warn(f"cannot read {path}: {os_error_reason(e, path)}")
            else:
                self._where[key] = path
                return text
            return None
        self._where[key] = ""
        return None

    # -- collection ------------------------------------------------------------------------
    def collect(self) -> list[Sample]:
        if not self.available():
            raise SourceError(f"no Lustre tree under {self.root} (looked for {', '.join(LUSTRE_DIRS)})")
        self._ticks += 1
        if len(self._where) > 100_000:
            self._where.clear()  # targets come and go over months: do not grow without bound
        out: list[Sample] = []
        osd: dict[str, list[str]] = {}
        for base in self._bases:
            try:
                kinds = [k for k in os.listdir(base) if k.startswith("osd-")]
            except OSError:
                continue
            for k in kinds:
                for name, dirs in self._dirs(k).items():
                    osd.setdefault(name, []).extend(dirs)

        for name, dirs in self._dirs("obdfilter").items():
            fs = lustre_fsname(name)
            text = self._read(dirs, "stats")
            if text is not None:
                stats = parse_stats(text)
                out += [Sample(name, m, v, COUNTER, fs) for m, v in _bytes_and_ops(stats)]
                out += [Sample(name, f"ost_{op}", stats[op][0], COUNTER, fs) for op in OST_OPS if op in stats]
            out += self._capacity(name, dirs + osd.get(name, []), fs)
            if self.jobs:
                out += self._job_stats(name, dirs, fs, server="ost")

        mdt = self._dirs("mdt")
        for name, dirs in list(mdt.items()) + [(n, d) for n, d in self._dirs("mds").items() if n not in mdt]:
            if "-MDT" not in name:
                continue  # mds/MDS is the service directory, not a target
            fs = lustre_fsname(name)
            text = self._read(dirs, "md_stats")
            if text is None:
                text = self._read(dirs, "stats")  # Lustre 1.8: mds/<MDT>/stats
            if text is not None:
                stats = parse_stats(text)
                out += [Sample(name, f"md_{op}", stats[op][0], COUNTER, fs) for op in MD_OPS if op in stats]
            out += self._capacity(name, dirs + osd.get(name, []), fs)
            if self.jobs:
                out += self._job_stats(name, dirs, fs, server="mdt")

        for name, dirs in self._dirs("llite").items():
            text = self._read(dirs, "stats")
            if text is None:
                continue
            stats = parse_stats(text)
            target = f"{self.host}:{name.rsplit('-', 1)[0]}"
            out += [Sample(target, m, v) for m, v in _bytes_and_ops(stats)]
            out += [Sample(target, f"md_{op}", stats[op][0]) for op in MD_OPS if op in stats]

        for name, dirs in self._dirs("osc").items():
            if "-osc-" not in name or "-osc-MDT" in name:
                continue  # osc-MDTxxxx are the MDT's connections to OSTs, not a client mount
            text = self._read(dirs, "stats")
            if text is not None:
                out += osc_samples(self.host, name, parse_stats(text))
        return out

    def _capacity(self, name: str, dirs: list[str], fs: str | None) -> list[Sample]:
        out = []
        for filename, metric, scale in CAPACITY_FILES:
            text = self._read(dirs, filename)
            if text is None:
                continue
            try:
                out.append(Sample(name, metric, int(text.split()[0]) * scale, GAUGE, fs))
            except (ValueError, IndexError):
                self.warn(f"unexpected content in {name}/{filename}: {text[:40]!r}")
        return out

    def _job_stats(self, name: str, dirs: list[str], fs: str | None, server: str) -> list[Sample]:
        text = self._read(dirs, "job_stats")
        if not text:
            return []
        out = []
        for job, ops in parse_job_stats(text).items():
            target = f"{name}/{job}"
            if server == "ost":
                out += [Sample(target, m, v, COUNTER, fs) for m, v in _bytes_and_ops(ops, prefix="job_")]
            else:
                out += [Sample(target, f"job_md_{op}", ops[op][0], COUNTER, fs) for op in MD_OPS if op in ops]
        return out
