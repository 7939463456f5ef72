"""Scheduler jobs: Slurm's `sacct` (live or a saved `--parsable2` file, or pytokio's JSON cache of
one) and the NERSC jobs database. Parsing only; the rows go to store/scheduler.py.

`ioweather import slurm` and `import nersc-jobsdb` are the importers at the end of this module
(`Importer` of target "jobs", sources/telemetry/importers.py); services/jobs/scheduler.py runs them.

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
import time
import urllib.parse
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from ioweather.errors import UserError, from_os_error
from ioweather.files import check_input, read_regular_bytes
from ioweather.sources.telemetry.base import check_timezone
from ioweather.sources.telemetry.importers import SACCT_TIMEOUT_S, Importer

#: What the live import asks sacct for (-X: allocations only, no steps).
SACCT_FORMAT = ("JobID", "Cluster", "User", "Account", "JobName", "Partition", "Start", "End", "Elapsed",
                "NNodes", "NCPUS", "NodeList", "State", "ExitCode")
#: A saved sacct file is read whole, at about three times its size: above this it is refused before it
#: is read (a 2 GB file cost `import slurm` 6.4 GB, issue 41). A million jobs take about 300 MB.
SACCT_FILE_MAX_BYTES = 512 << 20
#: --since of a live import without one.
DEFAULT_SINCE_S = 24 * 3600

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
        raise ValueError(f"malformed time {str(text)[:40]!r}") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=tz)
    try:
        ns = int(dt.timestamp()) * 1_000_000_000 + dt.microsecond * 1000
    except (OverflowError, ValueError):
        ns = -1
    if not 0 <= ns <= MAX_NS:  # the store's 64-bit nanoseconds: 9999-12-31 was an OverflowError there
        raise ValueError(f"time {str(text).strip()[:40]!r} is not between 1970 and 2262")
    return ns


#: The last nanosecond a signed 64-bit column holds (2262-04-11).
MAX_NS = 2**63 - 1
#: NNodes and NCPUS go to 32-bit columns (PostgreSQL's integer).
MAX_COUNT = 2**31 - 1


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
        raise ValueError(f"malformed duration {str(text)[:40]!r}")
    if not all(math.isfinite(p) and p >= 0 for p in parts):
        raise ValueError(f"malformed duration {str(text)[:40]!r}")
    seconds = 0.0
    for p in parts:
        seconds = seconds * 60 + p
    if len(parts) == 1 and days:  # D-HH
        seconds *= 3600
    elif len(parts) == 2 and days:  # D-HH:MM
        seconds *= 60
    return days * 86400 + seconds


def _int(text, limit: int = MAX_NS) -> int | None:
    """An integer field (`12`, `12.0`), a ValueError naming it when it is not one in [-limit, limit]."""
    if _blank(text):
        return None
    s = str(text).strip()
    try:
        v = int(s) if s.lstrip("+-").isdigit() else int(float(s))
    except (ValueError, OverflowError):  # OverflowError: int(float("1e400"))
        raise ValueError(f"not a number: {s[:40]!r}") from None
    if abs(v) > limit:
        raise ValueError(f"{s[:40]} is out of range (at most {limit:,})")
    return v


# -- node lists ------------------------------------------------------------------------------
#: Most node names one list is expanded to (the largest machines have ~10^5 nodes); past it a list is
#: counted, never expanded: `nid[0-99999999]` took 5 GB, `a[0-9999]b[0-9999]` 7 GB.
MAX_EXPANDED_NODES = 1_000_000
_GROUP = re.compile(r"(\[[^\[\]]*\])")


class NodeListTooLong(ValueError):
    """A node list that names more than MAX_EXPANDED_NODES nodes (its count is in `count`)."""

    def __init__(self, text: str, count: int, limit: int):
        super().__init__(f"node list {_short(text)} names {count:,} nodes, more than {limit:,}")
        self.count = count


def _short(text: str, n: int = 40) -> str:
    return repr(text if len(text) <= n else text[:n] + "...")


def count_nodes(text) -> int:
    """How many node names `nid[00001-00004,00010],login1` stands for, without expanding it."""
    if _blank(text):
        return 0
    total = 0
    for item in _split_top(str(text).strip()):
        n = 1
        for part in _GROUP.split(item):
            if part.startswith("["):
                n *= sum(len(range(a, b + 1)) for a, b, _ in _ranges(part[1:-1], text))
        total += n
    return total


def expand_nodelist(text: str, limit: int = MAX_EXPANDED_NODES) -> list[str]:
    """`nid[00001-00004,00010],login1` -> the node names, in order (zero padding kept); NodeListTooLong
    past `limit` names, found by counting first."""
    if _blank(text):
        return []
    count = count_nodes(text)
    if count > limit:
        raise NodeListTooLong(str(text), count, limit)
    names: list[str] = []
    for item in _split_top(str(text).strip()):
        names.extend(_expand_one(item, text))
    return names


def _ranges(spec: str, text) -> list[tuple[int, int, int]]:
    """(first, last, width) of each `a-b` or `a` in a bracket's `a-b,c`."""
    out = []
    for r in spec.split(","):
        a, dash, b = r.partition("-")
        if not a.isdigit() or (dash and not b.isdigit()):
            raise ValueError(f"malformed range {r!r} in node list {_short(str(text))}")
        lo, hi = int(a), int(b) if dash else int(a)
        if hi < lo:
            raise ValueError(f"range {r!r} runs backwards in node list {_short(str(text))}")
        out.append((lo, hi, len(a)))
    return out


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
        raise ValueError(f"unbalanced brackets in node list {_short(text)}")
    out.append("".join(cur))
    return [o for o in out if o]


def _expand_one(item: str, text) -> list[str]:
    """The names of one `pre[1-3]mid[7,9]post` item, the first bracket varying slowest (as Slurm does)."""
    names = [""]
    for part in _GROUP.split(item):
        if part.startswith("["):
            values = [f"{i:0{w}d}" for lo, hi, w in _ranges(part[1:-1], text) for i in range(lo, hi + 1)]
            names = [n + v for n in names for v in values]
        elif part:
            names = [n + part for n in names]
    return names


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
    first_line = 1 if header is not None else 2  # the file's own header is its line 1
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
    rows, steps, pending, bad, caps = [], 0, 0, [], []
    for lineno, line in enumerate(lines, start=first_line):
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
            _check_keys(jobid, row)
        except ValueError as e:
            bad.append(f"line {lineno}: {e}")
            continue
        if row is None:
            pending += 1
            continue
        rows.append(_bounded(row, caps, f"line {lineno}"))
    rows, dups = _last_of_each(rows)
    if dups:
        notes.append(f"{dups} repeated job ids: the last line of each is kept")
    return Parsed(rows, notes + _skip_notes(steps, pending, bad) + _cap_notes(caps), tz)


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
        if end is not None and end > MAX_NS:
            raise ValueError(f"Elapsed {get('elapsed')[:40]!r} ends after 2262")
    nodelist = get("nodelist")
    nodelist = "" if _blank(nodelist) else nodelist
    nnodes = _int(get("nnodes"), MAX_COUNT)
    if nnodes is None and nodelist:
        nnodes = _node_count(nodelist)
    return {"cluster": get("cluster") if not _blank(get("cluster")) else (cluster or ""),
            "jobid": jobid, "user": _text(get("user")), "account": _text(get("account")),
            "name": _text(get("name")), "partition": _text(get("partition")), "start_ns": start, "end_ns": end,
            "nnodes": nnodes, "ncpus": _int(get("ncpus"), MAX_COUNT), "nodelist": nodelist, "state": state,
            "exit_code": _text(get("exit_code"))}


def _node_count(nodelist: str) -> int:
    """The count of a node list, for NNodes (a 32-bit column)."""
    n = count_nodes(nodelist)
    if n > MAX_COUNT:
        raise ValueError(f"node list {_short(nodelist)} names {n:,} nodes, more than {MAX_COUNT:,}")
    return n


#: The longest text kept of each field: a 10 MB user name was stored whole. Slurm itself limits user
#: and account names to 32 characters or so and job names to a few hundred; a node list of 10^5
#: scattered nodes is ~600 KB compact.
TEXT_LIMITS = {"user": 256, "account": 256, "partition": 256, "state": 64, "exit_code": 64, "name": 1024,
               "nodelist": 1 << 20}
#: The key columns are String(255): longer is refused (cutting would merge different jobs).
KEY_LIMIT = 255


def _check_keys(jobid: str, row: dict | None) -> None:
    if len(jobid) > KEY_LIMIT:
        raise ValueError(f"job id of {len(jobid):,} characters (at most {KEY_LIMIT})")
    if row is not None and len(row["cluster"] or "") > KEY_LIMIT:
        raise ValueError(f"cluster name of {len(row['cluster']):,} characters (at most {KEY_LIMIT})")


def _bounded(row: dict, caps: list[str], where: str | None = None) -> dict:
    """`row` with each text field cut to TEXT_LIMITS; what was cut is appended to `caps`."""
    _check_keys(row["jobid"], row)
    for key, limit in TEXT_LIMITS.items():
        v = row.get(key)
        if isinstance(v, str) and len(v) > limit:
            row[key] = v[:limit]
            caps.append(f"{where or 'job ' + row['jobid']}: {key} of {len(v):,} characters cut to {limit:,}")
    return row


def _cap_notes(caps: list[str]) -> list[str]:
    return [f"{len(caps)} values capped (first: {caps[0]})"] if caps else []


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
    except RecursionError:
        raise UserError(f"{what}: not sacct output nor pytokio Slurm JSON: nested too deeply") from None
    except ValueError as e:
        raise UserError(f"{what}: not sacct output nor pytokio Slurm JSON: {e}") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise UserError(f"{what}: JSON but not pytokio's Slurm cache ({{jobid: {{start, end, nodelist}}}})")
    zone = ZoneInfo(tz)
    known = {"jobidraw", "jobid", "start", "end", "nodelist"}
    unknown = sorted({k for v in data.values() for k in v} - known)
    rows, steps, pending, bad, caps = [], 0, 0, [], []
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
        try:
            nnodes, nodelist = _pytokio_nodes(rec.get("nodelist") or [], jobid, caps)
            rows.append(_bounded({"cluster": cluster or "", "jobid": jobid, "user": None, "account": None,
                                  "name": None, "partition": None, "start_ns": start, "end_ns": end,
                                  "nnodes": nnodes, "ncpus": None, "nodelist": nodelist, "state": None,
                                  "exit_code": None}, caps))
        except ValueError as e:
            bad.append(f"job {jobid}: {e}")
    notes = ["pytokio Slurm JSON: only job id, start, end and node list are known"]
    if unknown:
        notes.append(f"ignored keys: {', '.join(unknown)}")
    return Parsed(rows, notes + _skip_notes(steps, pending, bad) + _cap_notes(caps), tz)


def _pytokio_nodes(nodes, jobid: str, caps: list[str]) -> tuple[int | None, str]:
    """(node count, compact node list) of pytokio's list of names or Slurm node list text; a text past
    MAX_EXPANDED_NODES is counted and kept as given, and that is said."""
    if isinstance(nodes, str):
        try:
            nodes = expand_nodelist(nodes)
        except NodeListTooLong as e:
            caps.append(f"job {jobid}: {e}, kept as given (not expanded)")
            return _node_count(nodes), nodes
    elif isinstance(nodes, list):
        nodes = [str(n) for n in nodes]
    else:
        raise ValueError(f"nodelist is {type(nodes).__name__}, not a list or a text")
    return len(set(nodes)) or None, compact_nodelist(nodes)


def read_sacct_file(path: str | os.PathLike, *, tz: str, cluster: str | None = None) -> Parsed:
    """A saved `sacct --parsable2` file (with its header) or pytokio's JSON cache of one."""
    raw = read_regular_bytes(path, what="read sacct file", max_bytes=SACCT_FILE_MAX_BYTES)
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
    rows, bad, caps = [], [], []
    for stepid, host, start, completion, numnodes in data:
        host = "" if host is None else str(host)
        stepid = str(stepid)
        jobid = stepid[: -len(host) - 1] if host and stepid.endswith("." + host) else stepid
        try:
            start_s, end_s = _int(start, MAX_NS // 10**9), _int(completion, MAX_NS // 10**9)
            nnodes = _int(numnodes, MAX_COUNT)
            if start_s is None or start_s <= 0:
                raise ValueError("no start time")
            rows.append(_bounded({"cluster": host, "jobid": jobid, "user": None, "account": None, "name": None,
                                  "partition": None, "start_ns": start_s * 1_000_000_000,
                                  "end_ns": end_s * 1_000_000_000 if end_s and end_s > 0 else None,
                                  "nnodes": nnodes, "ncpus": None, "nodelist": "", "state": None,
                                  "exit_code": None}, caps))
        except ValueError as e:
            bad.append(f"{stepid[:80]}: {e}")
    return Parsed(rows, notes + _skip_notes(0, 0, bad) + _cap_notes(caps), "UTC")


# -- the importers -------------------------------------------------------------------------------
class JobsImporter(Importer):
    """A scheduler's jobs, read whole by `open` into `parsed`; `zone` and `cluster` are what the
    import summary says the times were read in and the jobs came from."""

    zone: str
    cluster: str | None = None
    parsed: Parsed

    def chunks(self, advance):
        self.notes += self.parsed.notes
        advance(len(self.parsed.rows))
        yield self.parsed.rows


class SlurmImporter(JobsImporter):
    kind = "slurm"

    def open(self) -> None:
        self.zone = self.tz or local_zone()
        if self.source is None:
            until = self.until_ns if self.until_ns is not None else time.time_ns()
            since = self.since_ns if self.since_ns is not None else until - DEFAULT_SINCE_S * 1_000_000_000
            self.parsed = run_sacct(since, until, tz=self.zone, cluster=self.cluster,
                                    timeout_s=self.timeout_s if self.timeout_s is not None else SACCT_TIMEOUT_S)
        else:  # a saved file: --since/--until keep the jobs that ran in that window
            self.parsed = read_sacct_file(self.source, tz=self.zone, cluster=self.cluster)
            self.parsed.rows = _in_window(self.parsed.rows, self.since_ns, self.until_ns, self.parsed.notes)

    def ident(self) -> str:
        return "sacct" if self.source is None else f"sacct-file:{os.path.abspath(self.source)}"

    def label(self) -> str:
        return "slurm sacct" if self.source is None else super().label()


class NerscJobsdbImporter(JobsImporter):
    kind = "nersc-jobsdb"
    zone = "UTC (unix times)"

    def open(self) -> None:
        self.parsed = read_nersc_jobsdb(self.source)

    def ident(self) -> str:
        return f"nersc-jobsdb:{os.path.abspath(self.source)}"


def _in_window(rows: list[dict], since_ns, until_ns, notes: list[str]) -> list[dict]:
    if since_ns is None and until_ns is None:
        return rows
    now = time.time_ns()
    kept = [r for r in rows
            if (until_ns is None or r["start_ns"] < until_ns)
            and (since_ns is None or (r["end_ns"] if r["end_ns"] is not None else now) > since_ns)]
    if len(kept) < len(rows):
        notes.append(f"{len(rows) - len(kept)} jobs outside --since/--until left out")
    return kept
