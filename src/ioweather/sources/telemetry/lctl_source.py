"""`lctl get_param` as a live source (`collect`'s `lustre` where lctl is installed), as readings for the
store, and as an importer (`import lctl-params`); the parsing is lctl_params.py."""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ioweather.errors import UserError
from ioweather.sources.telemetry.base import COUNTER, GAUGE, Sample, SourceError, Wide, lustre_fsname
from ioweather.sources.telemetry.importers import Importer
from ioweather.sources.telemetry.lctl_params import PARAMS, Capture, Stat, connected_clients, parse_capture
from ioweather.sources.telemetry.lustre import MD_OPS, OST_OPS, Lustre, _bytes_and_ops, osc_samples
from ioweather.sources.telemetry.textfiles import read_members

# ------------------------------------------------------------------------ readings for the store

def capture_samples(cap: Capture, host: str) -> list[Sample]:
    """The store's raw readings of a capture, under the names the /proc reader (lustre.py) uses
    where it reads the same thing, so that the two sources fill the same series:

      OST stats -> read_bytes, write_bytes, read_ops, write_ops, ost_<op>; md_stats -> md_<op>;
      osd -> capacity_bytes, free_bytes, avail_bytes, files_total, files_free (gauges);
      job_stats -> <target>/<job> job_*; llite -> <host>:<fs>, osc -> <host>:<OST> as the /proc reader;
    and what only lctl gives: brw_stats buckets as counters `brw_<hist>:<read|write>:<bucket>`,
    recovery_status (the code above) and its client counts, connected_clients, num_exports,
    lock_count, lock_timeouts (a counter), the host's lustre_memused_bytes."""
    out: list[Sample] = []
    scale = {"kbytestotal": ("capacity_bytes", 1024), "kbytesfree": ("free_bytes", 1024),
             "kbytesavail": ("avail_bytes", 1024), "filestotal": ("files_total", 1), "filesfree": ("files_free", 1),
             "num_exports": ("num_exports", 1), "lock_count": ("lock_count", 1)}
    seen: set[tuple[str, str]] = set()
    for target, param, value in cap.values:
        fs = lustre_fsname(target)
        if param in scale:
            metric, k = scale[param]
            if (target, metric) not in seen:
                seen.add((target, metric))
                out.append(Sample(target, metric, value * k, GAUGE, fs))
        elif param == "lock_timeouts":  # contended_locks and contention_seconds are tunables, not readings
            out.append(Sample(target, "lock_timeouts", value, COUNTER, fs))
    for st in cap.stats:
        rows = _summed(st.rows)
        fs = lustre_fsname(st.target)
        first = len(out)
        if st.kind == "obdfilter":
            out += [Sample(st.target, m, v, COUNTER, fs) for m, v in _bytes_and_ops(rows)]
            out += [Sample(st.target, f"ost_{op}", rows[op][0], COUNTER, fs) for op in OST_OPS if op in rows]
        elif st.kind == "mdt":
            out += [Sample(st.target, f"md_{op}", rows[op][0], COUNTER, fs) for op in MD_OPS if op in rows]
        elif st.kind == "llite":
            target = f"{host}:{st.target.rsplit('-', 1)[0]}"
            out += [Sample(target, m, v) for m, v in _bytes_and_ops(rows)]
            out += [Sample(target, f"md_{op}", rows[op][0]) for op in MD_OPS if op in rows]
        elif st.kind == "osc" and "-osc-MDT" not in st.target:  # an MDT's own connections to OSTs: no client's
            out += osc_samples(host, st.target, rows)
        if st.unreadable:
            out[first:] = _unknown(out[first:], st.unreadable)
    seen.clear()
    for brw in cap.brw:
        if brw.target in seen:
            continue  # the same target listed twice (osd-* and obdfilter.*): its first table
        seen.add(brw.target)
        fs = lustre_fsname(brw.target)
        for hist, buckets in brw.hists.items():
            for bucket, read, write in buckets:
                out.append(Sample(brw.target, f"brw_{hist}:read:{bucket}", read, COUNTER, fs))
                out.append(Sample(brw.target, f"brw_{hist}:write:{bucket}", write, COUNTER, fs))
    for job in cap.jobs:
        rows = _summed(job.rows)
        target = f"{job.target}/{job.job}"
        fs = lustre_fsname(job.target)
        first = len(out)
        if job.component == "ost":
            out += [Sample(target, m, v, COUNTER, fs) for m, v in _bytes_and_ops(rows, prefix="job_")]
        else:
            out += [Sample(target, f"job_md_{op}", rows[op][0], COUNTER, fs) for op in MD_OPS if op in rows]
        if job.unreadable:
            out[first:] = _unknown(out[first:], job.unreadable)
    for target, n in connected_clients(cap).items():
        out.append(Sample(target, "connected_clients", n, GAUGE, lustre_fsname(target)))
    for _kind, target, fields in cap.recovery:
        fs = lustre_fsname(target)
        for key, value in fields.items():
            if key == "status" or key.endswith("_clients"):
                out.append(Sample(target, "recovery_status" if key == "status" else f"recovery_{key}", value, GAUGE, fs))
    if "memused" in cap.host:
        out.append(Sample(host, "lustre_memused_bytes", cap.host["memused"], GAUGE))
    return out


def _unknown(samples: list[Sample], unreadable: list[str]) -> list[Sample]:
    """`samples` of one stats block with the readings of its unreadable rows NaN (stored as missing):
    _bytes_and_ops reads an absent read_bytes row as 0 (an idle OST), which a row that is there
    but unreadable ("nan samples") is not."""
    names = set()
    for row in unreadable:
        kind = row[:-len("_bytes")] if row.endswith("_bytes") else None
        names |= {f"{kind}_bytes", f"{kind}_ops", f"osc_{kind}_bytes"} if kind else {f"ost_{row}", f"md_{row}"}
        if row == "req_waittime":
            names |= {"osc_rpcs", "osc_rpc_wait_s"}
    names |= {f"job_{n}" for n in names}
    return [Sample(s.target, s.metric, float("nan"), s.kind, s.fs) if s.metric in names else s for s in samples]


def _summed(rows: list[Stat]) -> dict[str, tuple[int, int | None]]:
    """{name: (samples, sum)}, a name listed twice added (as lustre.parse_stats does)."""
    out: dict[str, tuple[int, int | None]] = {}
    for r in rows:
        if r.name in out:
            c0, s0 = out[r.name]
            out[r.name] = (c0 + r.samples, None if r.sum is None and s0 is None else (r.sum or 0) + (s0 or 0))
        else:
            out[r.name] = (r.samples, r.sum)
    return out


# ------------------------------------------------------------------------------ the live source

#: The most of one `lctl get_param` output read: a big OSS with job_stats of thousands of jobs prints
#: tens of MB; an lctl that printed without end grew `collect` to 9 GB in 11 s.
LCTL_MAX_OUTPUT_BYTES = 256 << 20
_STDERR_KEPT = 64 << 10


def run_capped(argv: list[str], *, timeout_s: float, max_bytes: int, what: str) -> tuple[bytes, bytes, int]:
    """(stdout, the first 64 KiB of stderr, exit code) of `argv`, in its own session with LC_ALL=C.
    SourceError, the process group killed, when it prints more than `max_bytes` or has not finished
    within `timeout_s` (the runner's deadline cannot stop a stuck process)."""
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                env={**os.environ, "LC_ALL": "C"}, start_new_session=True)
    except OSError as e:
        raise SourceError(f"cannot run {argv[0]}: {e.strerror}") from None
    out, err = bytearray(), bytearray()
    deadline = time.monotonic() + timeout_s
    problem = None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ, out)
        sel.register(proc.stderr, selectors.EVENT_READ, err)
        while sel.get_map() and problem is None:
            left = deadline - time.monotonic()
            if left <= 0:
                problem = f"{what} gave no answer within {timeout_s:g} s (killed)"
                break
            for key, _ in sel.select(left):
                chunk = os.read(key.fd, 1 << 20)
                if not chunk:
                    sel.unregister(key.fileobj)
                    key.fileobj.close()
                elif key.data is out:
                    out += chunk
                    if len(out) > max_bytes:
                        problem = f"{what} printed more than {max_bytes / 2**20:g} MiB, the most read of it (killed)"
                elif len(err) < _STDERR_KEPT:
                    err += chunk[:_STDERR_KEPT - len(err)]
    if problem is None:
        try:
            return bytes(out), bytes(err), proc.wait(max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:  # closed its output but goes on
            problem = f"{what} gave no answer within {timeout_s:g} s (killed)"
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    for f in (proc.stdout, proc.stderr):
        f.close()
    raise SourceError(problem)


class LctlLustre(Lustre):
    """The `lustre` source through one `lctl get_param` per tick; the /proc and /sys reader
    (lustre.Lustre) where there is no `lctl` on PATH."""

    description = "Lustre through `lctl get_param` (servers, clients, brw_stats, recovery); /proc, /sys without lctl"

    def __init__(self, *args, timeout_s: float = 30.0, **kw):
        super().__init__(*args, **kw)
        self.timeout_s = timeout_s
        self.max_output_bytes = LCTL_MAX_OUTPUT_BYTES
        # --proc-root names a tree to read: lctl would read the machine's own Lustre instead
        self.lctl = shutil.which("lctl") if str(self.root) == "/" else None

    def available(self) -> bool:
        return self.lctl is not None or super().available()

    def collect(self) -> list[Sample]:
        if self.lctl is None:
            return super().collect()
        params = PARAMS if self.jobs else tuple(p for p in PARAMS if "job_stats" not in p)
        out, err, returncode = run_capped([self.lctl, "get_param", *params], timeout_s=self.timeout_s,
                                          max_bytes=self.max_output_bytes, what="lctl get_param")
        text = out.decode("utf-8", "replace")
        if returncode != 0 and not text.strip():
            lines = err.decode("utf-8", "replace").strip().splitlines()
            raise SourceError(f"lctl get_param failed (exit {returncode}): {lines[0][:200] if lines else 'no message'}")
        # a parameter missing on this node (no MDT on an OSS) makes lctl exit 2 and print the others
        cap = parse_capture(text)
        for note in cap.notes:
            self.warn(note)
        return capture_samples(cap, self.host)


# ------------------------------------------------------------------------------------- importer

@dataclass
class Captures:
    """The readings of every capture of one SOURCE, a `Wide` chunk per metric, and what was not read."""

    chunks: list[Wide] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    bad_lines: int = 0


def read_captures(source: str, at_ns: int | None, fs: str | None,
                  advance: Callable[[int], None] | None = None) -> Captures:
    """Every capture in `source` (a file, .gz, tar/.tgz, directory) -> its readings on the captures'
    times: gauges where a capture has them, counters as read (ingest makes them amounts between
    consecutive captures)."""
    notes: list[str] = []
    taken: list[tuple[int, list[Sample]]] = []
    undated = bad = 0
    for member in read_members(source):
        if member.damage:
            notes.append(f"{member.name}: {member.damage}: the rest is lost")
        cap = parse_capture(member.text)
        bad += cap.stray
        notes += [f"{member.name}: {n}" for n in cap.notes]
        t = cap.snapshot_ns or at_ns
        # a capture with no parameter has nothing to date: asking it for --at would send the user after a time
        if cap.params and t is None:
            undated += 1
        elif cap.params:
            taken.append((t, capture_samples(cap, "capture")))
        if advance:
            advance(1)
    if undated:
        if not taken:
            raise UserError(f"{source}: a capture without snapshot_time (no stats or brw_stats): give --at TIME "
                            "(when it was taken)")
        notes.append(f"{undated} captures without snapshot_time skipped (give --at TIME to date them)")
    if not taken:
        why = f" ({bad} unreadable lines)" if bad else ""
        raise UserError(f"{source}: holds no `lctl get_param` parameter{why}")
    taken.sort(key=lambda x: x[0])
    times = np.array([t for t, _ in taken], np.int64)
    step = float(np.median(np.diff(times))) / 1e9 if len(times) > 1 else None
    series: dict[tuple[str, str], dict[str, dict[int, float]]] = {}
    for i, (_, samples) in enumerate(taken):
        for s in samples:
            series.setdefault((s.metric, s.kind), {}).setdefault(s.target, {})[i] = s.value
    chunks = []
    for (metric, kind), by_target in series.items():
        targets = sorted(by_target)
        values, missing = _grid(by_target, targets, len(times), exact=kind == COUNTER)
        chunks.append(Wide(metric, kind, times, targets, values, step_s=step, missing=missing, sparse=True))
    if len(times) == 1:
        notes.append("one capture: its gauges are stored; counters need two captures or more in one SOURCE")
    return Captures(chunks, notes, bad_lines=bad)


def _grid(by_target: dict[str, dict[int, int | float]], targets: list[str], n: int, exact: bool):
    """(values, missing) of one metric: capture i, target j. With `exact` (counters) the readings are
    kept integers, each target's less its smallest reading, so that a u64 counter past 2^63 still
    fits int64 and its differences stay exact (through float64, 1000 came out 4096, 0 or 2048); the
    differences are all ingest takes of a counter. An unreadable reading (NaN) is missing."""
    cols = [{i: v for i, v in by_target[t].items() if v == v} for t in targets]  # NaN != NaN
    missing = np.ones((n, len(targets)), dtype=bool)
    whole = exact and all(type(v) is int for c in cols for v in c.values()) \
        and all(max(c.values()) - min(c.values()) < 2**63 for c in cols if c)
    values = np.zeros((n, len(targets)), dtype=np.int64 if whole else np.float64)
    for j, c in enumerate(cols):
        base = min(c.values()) if whole and c else 0
        for i, v in c.items():
            values[i, j] = v - base
            missing[i, j] = False
    return values, missing


class LctlParamsImporter(Importer):
    kind = "lctl-params"

    def chunks(self, advance: Callable[[int], None]):
        captures = read_captures(self.source, self.at_ns, self.fs, advance=advance)
        self.notes += captures.notes
        self.bad_lines = captures.bad_lines
        yield from captures.chunks
