"""fio (Debian's `fio` package): run it with `--output-format=json` and read its JSON.

Raw values only: per fio job and direction, bytes, runtime, bandwidth, IOPS and latency percentiles,
as fio reports them. The JSON of other fio versions is read by name with fallbacks (fio 2.x gives
`bw` in KiB/s and latencies in µs under `clat`/`lat`; newer versions add `bw_bytes`, `*_ns`,
`job_start`); fields this module does not know are ignored, and the whole document is kept by the
caller as fio wrote it.

Every failure is one line (a UserError): fio missing, exiting non-zero, killed by a signal, or
printing something that is not its JSON.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import signal
import subprocess

from ioweather.errors import UserError, from_os_error
from ioweather.files import read_regular_text
from ioweather.signals import die_with_parent

DIRECTIONS = ("read", "write", "trim")
#: fio's file engines count one "read" per file; the direction people mean is the operation.
FILE_ENGINES = {"filecreate": "create", "filestat": "stat", "filedelete": "delete"}
PERCENTILES = {"50.000000": "lat_p50_s", "95.000000": "lat_p95_s", "99.000000": "lat_p99_s"}


def find_fio() -> str:
    path = shutil.which("fio")
    if path is None:
        raise UserError("fio is not installed (not on PATH): install Debian's fio package "
                        "(scripts/install-system-deps.sh does)")
    return path


def version(fio: str | None = None) -> str:
    fio = fio or find_fio()
    try:
        out = subprocess.run([fio, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise UserError(f"cannot run {fio} --version: {e}") from None
    return out.stdout.strip() or "unknown"


def run(args: list[str], cwd: str | os.PathLike, fio: str | None = None) -> tuple[dict, str]:
    """Run `fio ARGS --output-format=json` in `cwd`; (parsed JSON, its text).

    Ctrl-C (KeyboardInterrupt) stops fio before it propagates, so no fio outlives its run."""
    fio = fio or find_fio()
    cmd = [fio, *args, "--output-format=json"]
    try:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=functools.partial(_detach, os.getpid()))
    except OSError as e:
        raise from_os_error(fio, e, "run") from None
    try:
        out, err = proc.communicate()
    except BaseException:
        _stop(proc)
        raise
    if proc.returncode < 0:
        raise UserError(f"fio was killed by signal {signal.Signals(-proc.returncode).name}")
    if proc.returncode != 0:
        raise UserError(f"fio failed (exit {proc.returncode}): {_last_line(err) or _last_line(out) or 'no message'}")
    return parse_text(out, "fio's output")


def _detach(parent_pid: int) -> None:
    """In the child: its own session (Ctrl-C reaches ioweather, which stops fio in order), and SIGKILL
    when ioweather dies (kill -9), so no fio keeps writing into a directory the next run removes."""
    os.setsid()
    die_with_parent(parent_pid)


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM fio's session (fio and its job processes), then SIGKILL after 5 s."""
    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def escape_path(path: str | os.PathLike) -> str:
    """`path` for fio's --directory/--filename, which split at ':' (several directories) unless the
    colon is escaped as `\\:` (fio(1), filename=). A backslash already before a colon cannot be told
    from an escape, so such a path is refused."""
    text = os.fspath(path)
    if "\\:" in text:
        raise UserError(f"cannot give fio the directory {text!r}: a backslash before a colon is ambiguous to fio")
    return text.replace(":", "\\:")


def _last_line(text: str | None) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def parse_text(text: str, what: str) -> tuple[dict, str]:
    """(fio's JSON document, its text) from `text`: fio may print notes and job lines before the JSON,
    which starts on a line of its own."""
    m = re.search(r"^\{", text, re.MULTILINE)
    body = text[m.start():] if m else ""
    try:
        doc = json.loads(body) if body else None
    except (ValueError, RecursionError):  # RecursionError: nesting deeper than any fio output
        doc = None
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        first = _last_line(text.splitlines()[0] if text.strip() else "") or "nothing"
        raise UserError(f"{what} is not fio's JSON output (starts with {first[:80]!r}); "
                        f"fio must run with --output-format=json")
    return doc, body


def read_file(path: str | os.PathLike) -> tuple[dict, str]:
    """(parsed JSON, text) of a saved fio JSON output."""
    try:
        text = read_regular_text(path)
    except UnicodeDecodeError:
        raise UserError(f"{path} is not fio's JSON output (not UTF-8 text)") from None
    return parse_text(text, str(path))


def _num(v, scale: float = 1.0) -> float | None:
    try:
        f = float(v) * scale
    except (TypeError, ValueError):
        return None
    return f if f == f and abs(f) != float("inf") else None


def _latencies(side: dict) -> dict:
    out = {v: None for v in PERCENTILES.values()}
    for key, scale in (("clat_ns", 1e-9), ("lat_ns", 1e-9), ("clat", 1e-6), ("lat", 1e-6)):
        pct = side.get(key, {}).get("percentile") if isinstance(side.get(key), dict) else None
        if isinstance(pct, dict) and pct:
            for k, name in PERCENTILES.items():
                out[name] = _num(pct.get(k), scale)
            return out
    return out


#: What the store's 64-bit columns hold: bytes, and times in ms that are ns below 2**63 (year 2262).
MAX_BYTES = 2**63 - 1
MAX_MS = (2**63 - 1) // 1_000_000


def results(doc: dict) -> list[dict]:
    """One row per fio job and direction that did I/O (read_results without the reasons)."""
    return read_results(doc)[0]


def read_results(doc: dict) -> tuple[list[dict], list[str]]:
    """(rows, reasons): one row per fio job and direction that did I/O: job (its index in fio's list; two
    jobs may share a name), jobname, direction, bytes, duration_s, bw_bps, iops, lat_p50/95/99_s,
    ioengine, and the job's start/end (unix ms) when the JSON tells them. A side fio could not have
    written (no positive runtime, bytes below zero or beyond 2**63, times outside 1970..2262) is left
    out, and why is in `reasons`: stored, it became a run no statistic could use."""
    rows, reasons = [], []
    stamp_ms = _num(doc.get("timestamp_ms")) or (_num(doc.get("timestamp"), 1000.0))
    if stamp_ms is not None and not 0 < stamp_ms <= MAX_MS:
        reasons.append(f"timestamp {stamp_ms:.6g} ms is not a time between 1970 and 2262")
        stamp_ms = None
    for index, job in enumerate(doc.get("jobs") or []):
        if not isinstance(job, dict):
            continue
        name = str(job.get("jobname", "fio"))
        opts = job.get("job options") if isinstance(job.get("job options"), dict) else {}
        engine = str(opts.get("ioengine", ""))
        start_ms = _num(job.get("job_start")) or None  # 0: a job that never started
        if start_ms is not None and not 0 < start_ms <= MAX_MS:
            reasons.append(f"job {name}: job_start {start_ms:.6g} ms is not a time between 1970 and 2262")
            continue
        for d in DIRECTIONS:
            side = job.get(d)
            if not isinstance(side, dict):
                continue
            nbytes = _num(side.get("io_bytes"))
            if nbytes is None:
                nbytes = _num(side.get("io_kbytes"), 1024.0)  # fio 2.x
            ios = _num(side.get("total_ios")) or 0
            runtime_ms = _num(side.get("runtime"))
            if not (nbytes or ios) or runtime_ms is None:
                continue
            bad = _bad_side(nbytes, ios, runtime_ms)
            if bad:
                reasons.append(f"job {name} {d}: {bad}")
                continue
            bw = _num(side.get("bw_bytes"))
            if bw is None:
                bw = _num(side.get("bw"), 1024.0)  # KiB/s before fio 3
            run_ms = _num(job.get("job_runtime")) or runtime_ms
            end_ms = start_ms + run_ms if start_ms is not None else stamp_ms
            if end_ms is not None and not end_ms <= MAX_MS:
                reasons.append(f"job {name}: its end is after 2262")
                continue
            rows.append({"job": index, "jobname": name,
                         "direction": FILE_ENGINES.get(engine, d) if d == "read" else d,
                         "bytes": int(nbytes or 0), "duration_s": runtime_ms / 1000.0, "bw_bps": _positive(bw),
                         "iops": _positive(_num(side.get("iops"))), "ios": int(ios), "ioengine": engine or None,
                         "start_ms": start_ms if start_ms is not None else (None if end_ms is None else end_ms - run_ms),
                         "end_ms": end_ms, **_latencies(side)})
    return rows, reasons


def _bad_side(nbytes: float | None, ios: float, runtime_ms: float) -> str | None:
    if not runtime_ms > 0:
        return f"runtime {runtime_ms:g} ms (a run needs a positive duration)"
    if nbytes is not None and not 0 <= nbytes <= MAX_BYTES:
        return f"io_bytes {nbytes:.6g} is not a byte count (0 to 2**63)"
    if not 0 <= ios <= MAX_BYTES:
        return f"total_ios {ios:.6g} is not a count"
    return None


def _positive(v: float | None) -> float | None:
    return v if v is not None and v >= 0 else None


def fio_version(doc: dict) -> str:
    return str(doc.get("fio version") or "unknown")

