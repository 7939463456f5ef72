"""`ioweather collect` (the telemetry daemon) and `ioweather import KIND SOURCE...` (histories).

Both end in the same Parquet layout (store/telemetry_layout.py) that `ioweather workload`
reads. METHODS.md section 4; docs/telemetry.md is the user guide.
"""

from __future__ import annotations

import os
import resource
import signal
import sys
import threading
import time
from pathlib import Path

import click

from ioweather.commands.common import DURATION, TIME, json_option
from ioweather.errors import UserError
from ioweather.units import format_seconds, to_ns
from ioweather.views.output import print_json, print_table, progress, stderr

IMPORT_KINDS = ("lmt", "iostat", "tts", "csv", "mmperfmon", "lfsdf")


def live_sources() -> dict:
    from ioweather.sources.telemetry.capacity import Capacity
    from ioweather.sources.telemetry.diskstats import DiskStats
    from ioweather.sources.telemetry.gpfs import Gpfs
    from ioweather.sources.telemetry.host import Host
    from ioweather.sources.telemetry.lustre import Lustre
    from ioweather.sources.telemetry.nfs import Nfs

    return {c.name: c for c in (DiskStats, Lustre, Gpfs, Nfs, Capacity, Host)}


def build_sources(names: str | None, root: str, mounts: tuple[str, ...], jobs: bool, log) -> list:
    classes = live_sources()
    if names:
        wanted = [n.strip() for n in names.split(",") if n.strip()]
        unknown = [n for n in wanted if n not in classes]
        if unknown:
            raise UserError(f"unknown source(s) {', '.join(unknown)}; known: {', '.join(classes)}")
    else:
        wanted = list(classes)
    sources = []
    for n in wanted:
        kw = {"mounts": mounts or None} if n == "capacity" else {"jobs": jobs} if n == "lustre" else {}
        sources.append(classes[n](root, **kw))
    available = [s for s in sources if s.available()]
    if not available:
        raise UserError(f"none of the sources {', '.join(wanted)} has anything to read under {root}")
    if names:
        for s in sources:
            if s not in available:
                log(f"{s.name}: nothing to read yet under {root}; will keep trying")
        return sources
    return available  # without --sources: what this machine has


def run_collect(settings, *, interval: float, source_names: str | None, root: str, fs: str | None,
                duration: float | None, flush_s: float, timeout: float | None, mounts: tuple[str, ...] = (),
                jobs: bool = True, quiet: bool = False, stop_event: threading.Event | None = None,
                install_signals: bool = True) -> dict:
    """The collect loop; returns its summary. Shared by the CLI and tests/benchmarks."""
    from ioweather.sources.telemetry.base import short_hostname
    from ioweather.sources.telemetry.collector import Collector
    from ioweather.store import telemetry_layout as layout

    # Problems are shown even with --quiet, each on one line however long (soft_wrap: no 80-column wrapping).
    warn = lambda m: stderr.print(f"collect: {m}", highlight=False, soft_wrap=True)  # noqa: E731
    log = (lambda m: None) if quiet else warn
    host = short_hostname()
    default_fs = layout.check_fs_name(fs or host)
    sources = build_sources(source_names, root, mounts, jobs, log)
    collector = Collector(sources, interval, default_fs, fs_forced=fs is not None, timeout_s=timeout,
                          log=warn)
    per_fs: dict[str, int] = {}
    state = layout.telemetry_dir(settings) / f".collect-{host}.state.json"
    restored = collector.load_state(state)
    if restored:
        log(f"continuing from the {restored} counter readings saved at the last stop")

    def write(name: str, frame) -> int:
        n = layout.write_rows(settings, name, frame, writer=f"collect-{host}")
        per_fs[name] = per_fs.get(name, 0) + n
        return n

    compacted: set = set()  # day directories done in this run: each finished day is merged once

    def compact() -> None:
        """Merge this host's small files of finished days (see store/telemetry_compact.py)."""
        from ioweather.errors import os_error_reason
        from ioweather.store.telemetry_compact import compact_finished_days

        grace_ns = int(max(2 * flush_s, 600) * 1e9)  # a late flush of yesterday's last rows comes first
        for name in layout.list_fs(settings):
            compact_finished_days(layout.fs_dir(settings, name), f"collect-{host}", time.time_ns(), grace_ns,
                                  compacted, lambda d, e: log(f"could not compact {d}: {os_error_reason(e, d)}"))

    def flush(final: bool = False) -> None:
        """Write the queued rows. A full or failing disk must not stop the sampling (the probe does
        the same): the rows stay queued and the next flush tries again; at the stop it is an error."""
        from ioweather.errors import StoreError, from_os_error

        try:
            collector.flush(write)
        except StoreError as e:
            if final:
                raise StoreError(f"{e}; {collector.pending_rows} buffered readings were not stored") from None
            warn(f"{e}; keeping {collector.pending_rows} buffered readings, will retry at the next flush")
            return
        try:
            state.parent.mkdir(parents=True, exist_ok=True)
            collector.save_state(state)
        except OSError as e:  # only costs the continuity of counters after a restart
            Path(f"{state}.tmp").unlink(missing_ok=True)
            warn(str(from_os_error(state, e, "save collector state")))
        compact()

    stop = stop_event or threading.Event()
    if install_signals and threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
    log(f"sampling {', '.join(s.name for s in sources)} every {interval:g} s into "
        f"{layout.telemetry_dir(settings)} (file system {'from the targets, else ' if fs is None else ''}{default_fs!r})")
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    wall0 = time.monotonic()
    t_end_ns = time.time_ns() + int(duration * 1e9) if duration else None
    step_ns = int(round(interval * 1e9))
    next_ns = -(-time.time_ns() // step_ns) * step_ns  # the next multiple of the interval since the epoch
    last_flush = time.monotonic()
    missed = 0
    with progress() as bar:
        task = bar.add_task("collecting", total=duration) if duration else None
        while not stop.is_set():
            if t_end_ns is not None and next_ns > t_end_ns:
                break
            if stop.wait(max(0.0, (next_ns - time.time_ns()) / 1e9)):
                break
            collector.tick(next_ns)
            if time.monotonic() - last_flush >= flush_s:
                flush()
                last_flush = time.monotonic()
            next_ns += step_ns
            late = time.time_ns() - next_ns
            if late > 0:  # fell behind (suspended, overloaded): skip to the next aligned tick
                skipped = -(-late // step_ns)
                missed += skipped
                next_ns += skipped * step_ns
            if task is not None:
                bar.update(task, completed=min(duration, time.monotonic() - wall0))
    flush(final=True)
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    wall = time.monotonic() - wall0
    cpu = (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime)
    return {"interval_s": interval, "ticks": collector.ticks, "missed_ticks": missed,
            "rows_written": collector.rows_written, "datasets": per_fs,
            "sources": [st.as_dict() for st in collector.runner.status.values()],
            "wall_s": wall, "cpu_s": cpu, "cpu_pct": 100.0 * cpu / wall if wall > 0 else None}


def import_one(settings, kind: str, source: str, fs: str, *, tz: str | None, since_ns: int | None,
               until_ns: int | None, interval: float | None, cumulative: bool, at_ns: int | None = None) -> dict:
    """Import one SOURCE; on any failure its rows are removed again. Returns its summary."""
    from ioweather.sources.telemetry.ingest import source_writer, to_long
    from ioweather.store.telemetry_imports import ImportRun

    ident = source if "://" in source else os.path.abspath(source)
    run = ImportRun(settings, fs, source_writer(kind, ident))
    notes: list[str] = []
    bad_lines = 0
    t0 = time.perf_counter()

    def keep(frame):
        if since_ns is not None:
            frame = frame[frame["time_ns"] >= since_ns]
        if until_ns is not None:
            frame = frame[frame["time_ns"] <= until_ns]
        return frame

    try:
        with progress() as bar:
            if kind == "lmt":
                from ioweather.sources.telemetry.lmt import LmtDatabase, redact

                db = LmtDatabase(source, tz)
                try:
                    info = db.info(since_ns, until_ns)
                    if tz is None and db.kind == "sqlite":
                        notes.append("LMT stores the server's local time; read as UTC (give --timezone ZONE)")
                    if info.dropped_times:
                        notes.append(f"{info.dropped_times} timestamps not after the previous one were dropped")
                    if info.times_ns.size < 2:
                        raise UserError(f"{redact(source)}: fewer than 2 LMT timestamps"
                                        f"{' in the given time range' if since_ns or until_ns else ''}: nothing to import")
                    task = bar.add_task(f"lmt {Path(source).name if '://' not in source else redact(source)}",
                                        total=int(info.ts_ids.size))
                    for n, wides in db.chunks(info):
                        for w in wides:
                            run.write(keep(to_long(w)))
                        bar.advance(task, n)
                finally:
                    db.close()
            elif kind == "tts":
                from ioweather.sources.telemetry.tts import TtsFile

                f = TtsFile(source)
                try:
                    groups = f.groups()
                    task = bar.add_task(f"tts {Path(source).name}", total=len(groups))
                    for _, wides in f.chunks():
                        for w in wides:
                            run.write(keep(to_long(w)))
                        bar.advance(task)
                    if f.skipped:
                        notes.append(f"datasets without a metric mapping skipped: {', '.join(f.skipped)}")
                finally:
                    f.close()
            elif kind in ("mmperfmon", "lfsdf"):
                # text archives: one tick per member file (a tarball's count is known only at its end)
                task = bar.add_task(f"{kind} {Path(source).name}", total=None)
                tick = lambda n: bar.advance(task, n)  # noqa: E731
                if kind == "mmperfmon":
                    from ioweather.sources.telemetry.mmperfmon import read_mmperfmon

                    chunk = read_mmperfmon(source, tz or "UTC", advance=tick)
                else:
                    from ioweather.sources.telemetry.lfsdf import read_lfsdf

                    chunk = read_lfsdf(source, at_ns, fs, advance=tick)
                notes += chunk.notes
                bad_lines = chunk.bad_lines
                run.write(keep(to_long(chunk)))
            else:
                task = bar.add_task(f"{kind} {Path(source).name}", total=2)
                if kind == "iostat":
                    from ioweather.sources.telemetry.iostat_json import parse_iostat_json

                    try:
                        text = Path(source).read_text(encoding="utf-8", errors="replace") if source != "-" else sys.stdin.read()
                    except FileNotFoundError:
                        raise UserError(f"iostat file {source!r} not found") from None
                    chunk = parse_iostat_json(text, tz or "UTC")
                else:
                    from ioweather.sources.telemetry.csv_long import read_csv_long

                    chunk = read_csv_long(source, tz or "UTC", interval, cumulative)
                bar.advance(task)
                notes += chunk.notes
                run.write(keep(to_long(chunk)))
                bar.advance(task)
        run.finish()
        if run.rows == 0:
            detail = f" ({'; '.join(notes)})" if notes else ""
            where = " in the given time range" if since_ns or until_ns else ""
            raise UserError(f"{source}: no rows to import{where}{detail}")
        replaced = run.commit()
    except BaseException:
        run.rollback()
        raise
    seconds = time.perf_counter() - t0
    out = {"source": source if "://" not in source else None, "kind": kind, **run.summary(),
           "replaced_files": replaced, "seconds": seconds, "rows_per_s": run.rows / seconds if seconds > 0 else None,
           "bad_lines": bad_lines, "notes": notes}
    if "://" in source:
        from ioweather.sources.telemetry.lmt import redact

        out["source"] = redact(source)
    return out


_stopping = threading.Event()


def _interrupted(signum, frame):
    _stopping.set()
    raise KeyboardInterrupt


def register(cli: click.Group) -> None:
    @cli.command("collect")
    @click.option("--interval", type=DURATION, default="5s", show_default=True, help="Sampling period.")
    @click.option("--sources", "source_names", metavar="LIST", default=None,
                  help="Comma-separated sources: diskstats, lustre, gpfs, nfs, capacity, host (default: all this machine has).")
    @click.option("--proc-root", type=click.Path(file_okay=False), default="/", show_default=True,
                  help="Root under which /proc and /sys are read (a copied or mock tree for tests).")
    @click.option("--fs", default=None,
                  help="Dataset to write into (default: Lustre server targets into their file system, the rest into the host name).")
    @click.option("--duration", type=DURATION, default=None, help="Stop after this long (default: until SIGTERM/Ctrl-C).")
    @click.option("--flush", "flush_s", type=DURATION, default="5m", show_default=True,
                  help="How often buffered rows are written to Parquet (and at stop).")
    @click.option("--timeout", type=DURATION, default=None,
                  help="Deadline of one source read (default: 80% of the interval, at most 30 s).")
    @click.option("--mounts", multiple=True, metavar="DIR", help="Mount points for the capacity source (default: all storage mounts).")
    @click.option("--no-jobs", is_flag=True, help="Do not read Lustre job_stats.")
    @click.option("--quiet", "-q", is_flag=True, help="No log lines on stderr.")
    @json_option
    @click.pass_obj
    def collect(settings, interval, source_names, proc_root, fs, duration, flush_s, timeout, mounts, no_jobs, quiet,
                as_json):
        """Sample server-side telemetry every INTERVAL and store it (per-interval amounts, Parquet).

        Counters (bytes, operations) are stored as the amount of each interval; a counter that
        goes backwards (restart) and every missed interval are stored as missing, never as 0."""
        if interval <= 0:
            raise UserError("--interval must be positive")
        if not Path(proc_root).is_dir():
            raise UserError(f"--proc-root {proc_root}: no such directory")
        summary = run_collect(settings, interval=interval, source_names=source_names, root=proc_root, fs=fs,
                              duration=duration, flush_s=flush_s or interval, timeout=timeout, mounts=mounts,
                              jobs=not no_jobs, quiet=quiet)
        if as_json:
            print_json(summary)
            return
        print_table(summary["sources"], [
            ("name", "source"), ("ok", "ok"), ("failed", "failed"), ("timeouts", "timeouts"), ("skipped", "skipped"),
            ("samples", "samples"), ("mean_duration_s", "mean read", format_seconds), ("last_error", "last error")],
            title=f"{summary['ticks']} ticks, {summary['rows_written']} rows written, "
                  f"CPU {summary['cpu_pct']:.2f}% of a core" if summary["cpu_pct"] is not None else None)

    @cli.command("import")
    @click.argument("kind", type=click.Choice(IMPORT_KINDS))
    @click.argument("sources", nargs=-1, required=True)
    @click.option("--fs", required=True, help="File system (dataset) name to import into.")
    @click.option("--timezone", "tz", default=None, metavar="ZONE",
                  help="IANA zone of times written without offset (LMT, iostat, CSV, mmperfmon); default UTC, "
                       "or the MySQL server's zone for an LMT MySQL URL.")
    @click.option("--since", type=TIME, default=None, help="Import only from this time on.")
    @click.option("--until", type=TIME, default=None, help="Import only up to this time.")
    @click.option("--interval", type=DURATION, default=None, help="csv: interval of each row when there is no interval_s column.")
    @click.option("--cumulative", is_flag=True, help="csv: values are cumulative counters, not per-interval amounts.")
    @click.option("--at", "at", type=TIME, default=None,
                  help="lfsdf: time of `lfs df` output that has no `BEGIN <unix seconds>` line.")
    @json_option
    @click.pass_obj
    def import_cmd(settings, kind, sources, fs, tz, since, until, interval, cumulative, at, as_json):
        """Import recorded telemetry: KIND is lmt (MySQL URL or SQLite copy), iostat (JSON),
        tts (pytokio HDF5), csv (time,target,metric,value), mmperfmon (GPFS `mmperfmon query`
        output: text, .gz, .tgz or a directory) or lfsdf (archived `lfs df` / `lfs df -i` runs).

        Importing the same SOURCE again replaces its earlier import. A SOURCE that fails is
        reported and leaves nothing behind; the others are still imported."""
        from ioweather.sources.telemetry.base import check_timezone
        from ioweather.store import telemetry_layout as layout

        layout.check_fs_name(fs)
        if tz is not None:
            check_timezone(tz)
        since_ns = to_ns(since) if since else None
        until_ns = to_ns(until) if until else None
        if since_ns is not None and until_ns is not None and until_ns <= since_ns:
            raise UserError("--until must be after --since")
        results, failed = [], 0
        # SIGTERM (systemd, a scheduler's time limit) rolls an import back as Ctrl-C does; kill -9 cannot
        # be caught, and store/telemetry_imports.py makes that safe too.
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, _interrupted)
        for source in sources:
            try:
                r = import_one(settings, kind, source, fs, tz=tz, since_ns=since_ns, until_ns=until_ns,
                               interval=interval, cumulative=cumulative, at_ns=to_ns(at) if at else None)
            except Exception as e:
                if _stopping.is_set():  # DuckDB turns the interrupt into its own error ("Query interrupted")
                    raise KeyboardInterrupt from None
                if not isinstance(e, UserError):
                    raise
                failed += 1
                click.echo(f"ioweather: error: {e}", err=True)
                results.append({"source": source, "kind": kind, "fs": fs, "error": str(e)})
                continue
            for note in r["notes"]:
                stderr.print(f"import: {note}", highlight=False)
            results.append(r)
        total = sum(r.get("rows", 0) for r in results)
        if as_json:
            print_json({"kind": kind, "fs": fs, "rows": total, "failed": failed, "sources": results})
        elif failed < len(results):  # when every source failed, their error lines say it all
            print_table([r for r in results if "error" not in r], [
                ("source", "source", lambda s: s if "://" in s else Path(s).name), ("rows", "rows"), ("missing_values", "missing"), ("targets", "targets"),
                ("start", "start"), ("end", "end"), ("bad_lines", "bad lines"), ("replaced_files", "replaced files"),
                ("rows_per_s", "rows/s", lambda v: f"{v:,.0f}")],
                title=f"imported into file system {fs!r}", empty="nothing imported")
        if failed:
            sys.exit(2)

