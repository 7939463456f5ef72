"""Scheduler jobs: Slurm's `sacct` (live or a saved `--parsable2` file, or pytokio's JSON cache of
one) and the NERSC jobs database. Parsing only; the rows go to store/scheduler.py.

Every reader returns `Parsed`: rows with the keys of the `sched_jobs` table (cluster, jobid,
user, account, name, partition, start_ns, end_ns, nnodes, ncpus, nodelist, state, exit_code)
and notes for people (columns ignored, steps and never-started jobs skipped).

Time zones: sacct prints local times without an offset, in the zone of the machine sacct ran
on. Live, we run sacct with `TZ=<zone>` so that it both reads `--starttime` and prints in the
zone we then parse with; a saved file is read in the zone the caller names. The NERSC jobs
database holds unix seconds and needs no zone.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import sqlite3
import subprocess
import urllib.parse
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from ioweather.errors import UserError, from_os_error
from ioweather.files import check_input, read_regular_bytes
from ioweather.sources.telemetry.base import check_timezone

#: What the live import asks sacct for (-X: allocations only, no steps).
SACCT_FORMAT = ("JobID", "Cluster", "User", "Account", "JobName", "Partition", "Start", "End", "Elapsed",
                "NNodes", "NCPUS", "NodeList", "State", "ExitCode")
SACCT_TIMEOUT_S = 120.0

#: sacct column (lower case) -> our field; the first present of several wins (JobID before JobIDRaw).
_COLUMNS = {
    "jobid": "jobid", "jobidraw": "jobid", "cluster": "cluster", "user": "user", "account": "account",
    "jobname": "name", "partition": "partition", "start": "start", "end": "end", "elapsed": "elapsed",
    "nnodes": "nnodes", "ncpus": "ncpus", "alloccpus": "ncpus", "nodelist": "nodelist", "state": "state",
    "exitcode": "exit_code",
}
#: Values sacct prints for "no value".
_EMPTY = {"", "unknown", "none", "none assigned", "n/a", "nan", "(null)"}
_STEP = re.compile(r"^[^.]+\.")  # 123.batch, 123.0, 123_4.extern


@dataclass
class Parsed:
    rows: list[dict]
    notes: list[str] = field(default_factory=list)
    timezone: str | None = None


# -- zones and values ------------------------------------------------------------------------
def local_zone() -> str:
    """This machine's IANA zone name: $TZ, else /etc/localtime's target, else /etc/timezone, else UTC."""
    tz = os.environ.get("TZ", "").lstrip(":")
    if tz and _known_zone(tz):
        return tz
    try:
        target = os.readlink("/etc/localtime")
        if "zoneinfo/" in target and _known_zone(name := target.split("zoneinfo/", 1)[1]):
            return name
    except OSError:
        pass
    try:
        name = Path("/etc/timezone").read_text().strip()
        if _known_zone(name):
            return name
    except OSError:
        pass
    return "UTC"


def _known_zone(name: str) -> bool:
    try:
        check_timezone(name)
        return True
    except UserError:
        return False


def _blank(value) -> bool:
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    return str(value).strip().lower() in _EMPTY


def local_time_ns(text, tz: ZoneInfo) -> int | None:
    """`2026-11-23T16:22:58` in zone `tz` -> unix ns; None for Unknown/None/empty. In the autumn hour
    that occurs twice, the first (summer) reading is taken (sacct gives no way to tell)."""
    if _blank(text):
        return None
    try:
        dt = datetime.fromisoformat(str(text).strip())
    except ValueError:
        raise ValueError(f"malformed time {text!r}") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=tz)
    return int(dt.timestamp()) * 1_000_000_000 + dt.microsecond * 1000


def parse_elapsed(text) -> float | None:
    """Slurm durations: `[D-]HH:MM:SS`, `MM:SS`, `MM:SS.mmm`, `UNLIMITED`/empty -> None."""
    if _blank(text) or str(text).strip().upper() in ("UNLIMITED", "INVALID", "PARTITION_LIMIT"):
        return None
    s = str(text).strip()
    days = 0
    if "-" in s:
        d, s = s.split("-", 1)
        days = int(d)
    parts = [float(p) for p in s.split(":")]
    if not 1 <= len(parts) <= 3:
        raise ValueError(f"malformed duration {text!r}")
    seconds = 0.0
    for p in parts:
        seconds = seconds * 60 + p
    if len(parts) == 1 and days:  # D-HH
        seconds *= 3600
    elif len(parts) == 2 and days:  # D-HH:MM
        seconds *= 60
    return days * 86400 + seconds


def _int(text) -> int | None:
    if _blank(text):
        return None
    try:
        return int(float(str(text).strip()))
    except ValueError:
        raise ValueError(f"not a number: {text!r}") from None


# -- node lists ------------------------------------------------------------------------------
def expand_nodelist(text: str) -> list[str]:
    """`nid[00001-00004,00010],login1` -> the node names, in order (zero padding kept)."""
    if _blank(text):
        return []
    names: list[str] = []
    for item in _split_top(str(text).strip()):
        names.extend(_expand_one(item))
    return names


def _split_top(text: str) -> list[str]:
    out, depth, cur = [], 0, []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise ValueError(f"unbalanced brackets in node list {text!r}")
    out.append("".join(cur))
    return [o for o in out if o]


def _expand_one(item: str) -> list[str]:
    m = re.match(r"^([^\[]*)\[([^\]]*)\](.*)$", item)
    if not m:
        return [item]
    prefix, ranges, rest = m.groups()
    tails = _expand_one(rest) if rest else [""]
    out = []
    for r in ranges.split(","):
        if "-" in r:
            a, b = r.split("-", 1)
            width = len(a)
            out.extend(f"{prefix}{i:0{width}d}{t}" for i in range(int(a), int(b) + 1) for t in tails)
        else:
            out.extend(f"{prefix}{r}{t}" for t in tails)
    return out


def compact_nodelist(names) -> str:
    """The node names in Slurm's compact form (`nid[05301-05304,05310]`), sorted, duplicates dropped."""
    groups: dict[tuple[str, int], list[int]] = {}
    plain: list[str] = []
    for n in sorted(set(names)):
        m = re.match(r"^(.*?)(\d+)$", n)
        if m:
            groups.setdefault((m.group(1), len(m.group(2))), []).append(int(m.group(2)))
        else:
            plain.append(n)
    parts = list(plain)
    for (prefix, width), nums in sorted(groups.items()):
        nums.sort()
        if len(nums) == 1:
            parts.append(f"{prefix}{nums[0]:0{width}d}")
            continue
        runs, start, prev = [], nums[0], nums[0]
        for x in nums[1:] + [None]:
            if x is not None and x == prev + 1:
                prev = x
                continue
            runs.append(f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}")
            if x is not None:
                start = prev = x
        parts.append(f"{prefix}[{','.join(runs)}]")
    return ",".join(parts)


# -- sacct ---------------------------------------------------------------------------------------
def parse_sacct(text: str, *, tz: str, cluster: str | None = None, header: list[str] | None = None,
                what: str = "sacct output") -> Parsed:
    """`sacct --parsable2` (or `-p`, with its trailing `|`) text: the first line is the header unless
    `header` is given. Steps (`123.batch`) and jobs that never started are left out (noted)."""
    check_timezone(tz)
    zone = ZoneInfo(tz)
    lines = text.splitlines()
    if header is None:
        while lines and not lines[0].strip():
            lines.pop(0)
        if not lines:
            raise UserError(f"{what}: empty (expected a `sacct --parsable2` header line)")
        header = lines.pop(0).split("|")
    cols = [h.strip().lower() for h in header]
    if cols and cols[-1] == "":  # `sacct -p` ends every line with |
        cols.pop()
    index: dict[str, int] = {}
    for i, c in enumerate(cols):
        if c in _COLUMNS and _COLUMNS[c] not in index:
            index[_COLUMNS[c]] = i
    if "jobid" not in index or "start" not in index:
        raise UserError(f"{what}: not sacct --parsable2 output (no JobID and Start columns in the header "
                        f"{'|'.join(header)[:80]!r})")
    notes = []
    unknown = [header[i].strip() for i, c in enumerate(cols) if c not in _COLUMNS]
    if unknown:
        notes.append(f"ignored columns: {', '.join(unknown)}")
    rows, steps, pending, bad = [], 0, 0, []
    for lineno, line in enumerate(lines, start=2 if header is None else 1):
        if not line.strip():
            continue
        fields = line.split("|")
        get = _getter(fields, index)
        jobid = get("jobid")
        if not jobid:
            bad.append(f"line {lineno}: no job id")
            continue
        if _STEP.match(jobid):
            steps += 1
            continue
        try:
            row = _sacct_row(get, jobid, zone, cluster, has_end="end" in index)
        except ValueError as e:
            bad.append(f"line {lineno}: {e}")
            continue
        if row is None:
            pending += 1
            continue
        rows.append(row)
    rows, dups = _last_of_each(rows)
    if dups:
        notes.append(f"{dups} repeated job ids: the last line of each is kept")
    return Parsed(rows, notes + _skip_notes(steps, pending, bad), tz)


def _last_of_each(rows: list[dict]) -> tuple[list[dict], int]:
    """One row per (cluster, jobid), the last (sacct lists a requeued job once per run with --duplicates)."""
    by_key = {(r["cluster"], r["jobid"]): r for r in rows}
    return list(by_key.values()), len(rows) - len(by_key)


def _getter(fields: list[str], index: dict[str, int]):
    return lambda k: fields[index[k]].strip() if k in index and index[k] < len(fields) else None


def _sacct_row(get, jobid: str, zone: ZoneInfo, cluster: str | None, *, has_end: bool) -> dict | None:
    start = local_time_ns(get("start"), zone)
    if start is None:
        return None  # pending or cancelled before it ran: nothing ran on the file system
    end = local_time_ns(get("end"), zone)
    state = (get("state") or "").split(" ")[0] or None  # "CANCELLED by 123" -> CANCELLED
    if end is None and not has_end and state not in (None, "RUNNING", "SUSPENDED", "REQUEUED"):
        elapsed = parse_elapsed(get("elapsed"))  # a file saved without End: Start + Elapsed
        end = start + int(elapsed * 1e9) if elapsed is not None else None
    nodelist = get("nodelist")
    nodelist = "" if _blank(nodelist) else nodelist
    nnodes = _int(get("nnodes"))
    if nnodes is None and nodelist:
        nnodes = len(expand_nodelist(nodelist))
    return {"cluster": get("cluster") if not _blank(get("cluster")) else (cluster or ""),
            "jobid": jobid, "user": _text(get("user")), "account": _text(get("account")),
            "name": _text(get("name")), "partition": _text(get("partition")), "start_ns": start, "end_ns": end,
            "nnodes": nnodes, "ncpus": _int(get("ncpus")), "nodelist": nodelist, "state": state,
            "exit_code": _text(get("exit_code"))}


def _text(v) -> str | None:
    return None if _blank(v) else str(v)


def _skip_notes(steps: int, pending: int, bad: list[str]) -> list[str]:
    notes = []
    if steps:
        notes.append(f"{steps} job steps skipped (only allocations are stored)")
    if pending:
        notes.append(f"{pending} jobs skipped that never started (no Start time)")
    if bad:
        notes.append(f"{len(bad)} bad lines skipped (first: {bad[0]})")
    return notes


def parse_pytokio_json(text: str, *, tz: str, cluster: str | None = None, what: str = "file") -> Parsed:
    """pytokio's JSON cache of a Slurm query: {jobidraw: {jobidraw, start, end, nodelist: [names]}}."""
    check_timezone(tz)
    try:
        data = json.loads(text)
    except ValueError as e:
        raise UserError(f"{what}: not sacct output nor pytokio Slurm JSON: {e}") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise UserError(f"{what}: JSON but not pytokio's Slurm cache ({{jobid: {{start, end, nodelist}}}})")
    zone = ZoneInfo(tz)
    known = {"jobidraw", "jobid", "start", "end", "nodelist"}
    unknown = sorted({k for v in data.values() for k in v} - known)
    rows, steps, pending, bad = [], 0, 0, []
    for key, rec in data.items():
        jobid = str(rec.get("jobidraw") or rec.get("jobid") or key)
        if _STEP.match(jobid):
            steps += 1
            continue
        try:
            start, end = local_time_ns(rec.get("start"), zone), local_time_ns(rec.get("end"), zone)
        except ValueError as e:
            bad.append(f"job {jobid}: {e}")
            continue
        if start is None:
            pending += 1
            continue
        nodes = rec.get("nodelist") or []
        nodes = expand_nodelist(nodes) if isinstance(nodes, str) else [str(n) for n in nodes]
        rows.append({"cluster": cluster or "", "jobid": jobid, "user": None, "account": None, "name": None,
                     "partition": None, "start_ns": start, "end_ns": end, "nnodes": len(set(nodes)) or None,
                     "ncpus": None, "nodelist": compact_nodelist(nodes), "state": None, "exit_code": None})
    notes = ["pytokio Slurm JSON: only job id, start, end and node list are known"]
    if unknown:
        notes.append(f"ignored keys: {', '.join(unknown)}")
    return Parsed(rows, notes + _skip_notes(steps, pending, bad), tz)


def read_sacct_file(path: str | os.PathLike, *, tz: str, cluster: str | None = None) -> Parsed:
    """A saved `sacct --parsable2` file (with its header) or pytokio's JSON cache of one."""
    raw = read_regular_bytes(path)
    text = raw.decode("utf-8", errors="replace")
    if text.lstrip().startswith("{"):
        return parse_pytokio_json(text, tz=tz, cluster=cluster, what=os.fspath(path))
    return parse_sacct(text, tz=tz, cluster=cluster, what=os.fspath(path))


def run_sacct(since_ns: int, until_ns: int, *, tz: str, cluster: str | None = None,
              timeout_s: float = SACCT_TIMEOUT_S, env: dict | None = None) -> Parsed:
    """Run sacct for the jobs eligible or running in [since, until) and parse what it prints."""
    check_timezone(tz)
    env = dict(os.environ if env is None else env)
    sacct = shutil.which("sacct", path=env.get("PATH"))
    if sacct is None:
        raise UserError("sacct not found on PATH: run on a Slurm login node, or import a saved "
                        "`sacct --parsable2` file")
    zone = ZoneInfo(tz)

    def local(ns: int) -> str:
        return datetime.fromtimestamp(ns / 1e9, UTC).astimezone(zone).strftime("%Y-%m-%dT%H:%M:%S")

    cmd = [sacct, "--parsable2", "--noheader", "-X", "--allusers", f"--starttime={local(since_ns)}",
           f"--endtime={local(until_ns)}", f"--format={','.join(SACCT_FORMAT)}"]
    if cluster:
        cmd.append(f"--clusters={cluster}")
    env["TZ"] = tz  # sacct reads --starttime and prints its times in this zone
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise UserError(f"sacct did not answer within {timeout_s:.0f} s") from None
    except OSError as e:
        raise from_os_error(sacct, e, "run") from None
    if proc.returncode != 0:
        raise UserError(f"sacct failed (exit {proc.returncode}): {_sacct_error(proc.stderr)}")
    return parse_sacct(proc.stdout, tz=tz, cluster=cluster, header=list(SACCT_FORMAT), what="sacct")


def _sacct_error(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    if not lines:
        return "no message"
    pick = next((line for line in lines if "error" in line.lower()), lines[0])
    return pick.removeprefix("sacct: ")


# -- NERSC jobs database ---------------------------------------------------------------------------
NERSC_COLUMNS = ("stepid", "hostname", "start", "completion", "numnodes")


def read_nersc_jobsdb(path: str | os.PathLike) -> Parsed:
    """pytokio's cache of the NERSC jobs database: table `summary` (stepid `<jobid>.<host>`, hostname,
    start, completion in unix seconds, numnodes). Opened read-only."""
    p = os.fspath(path)
    check_input(p)
    uri = f"file:{urllib.parse.quote(os.path.abspath(p))}?mode=ro"
    try:
        con = sqlite3.connect(uri, uri=True)
        try:
            cols = [r[1] for r in con.execute("PRAGMA table_info(summary)")]
            have = {c.lower(): c for c in cols}
            missing = [c for c in NERSC_COLUMNS if c not in have]
            if missing:
                raise UserError(f"{p}: not a NERSC jobs database (table summary without {', '.join(missing)})"
                                if cols else f"{p}: not a NERSC jobs database (no table summary)")
            data = con.execute(f"SELECT {', '.join(have[c] for c in NERSC_COLUMNS)} FROM summary").fetchall()
        finally:
            con.close()
    except sqlite3.DatabaseError as e:
        raise UserError(f"cannot read {p}: {str(e).splitlines()[0]}") from None
    notes = []
    unknown = [c for c in cols if c.lower() not in NERSC_COLUMNS]
    if unknown:
        notes.append(f"ignored columns: {', '.join(unknown)}")
    rows, bad = [], []
    for stepid, host, start, completion, numnodes in data:
        host = "" if host is None else str(host)
        stepid = str(stepid)
        jobid = stepid[: -len(host) - 1] if host and stepid.endswith("." + host) else stepid
        try:
            start_s, end_s = _int(start), _int(completion)
        except ValueError as e:
            bad.append(f"{stepid}: {e}")
            continue
        if start_s is None or start_s <= 0:
            bad.append(f"{stepid}: no start time")
            continue
        rows.append({"cluster": host, "jobid": jobid, "user": None, "account": None, "name": None,
                     "partition": None, "start_ns": start_s * 1_000_000_000,
                     "end_ns": end_s * 1_000_000_000 if end_s and end_s > 0 else None,
                     "nnodes": _int(numnodes), "ncpus": None, "nodelist": "", "state": None, "exit_code": None})
    return Parsed(rows, notes + _skip_notes(0, 0, bad), "UTC")
