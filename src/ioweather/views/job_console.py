"""The human (rich) rendering of `ioweather job` and `ioweather jobs summary`."""

from __future__ import annotations

from rich.markup import escape as _markup_escape
from rich.panel import Panel
from rich.table import Table

from ioweather.units import format_bytes, format_seconds, printable
from ioweather.views.job_text import combined_text, cost_text, layer_text, lustre_text  # noqa: F401 (services.jobs.darshan's)
from ioweather.views.output import stdout


def escape(text: str) -> str:
    """A name from the log (executable, mount, project) as markup-free, terminal-safe text."""
    return _markup_escape(printable(text))


LEVEL_STYLE = {"HIGH": "bold red", "WARN": "yellow", "INFO": "cyan", "OK": "green"}


def _b(x) -> str:
    return "-" if x is None else format_bytes(x)


def _s(x) -> str:
    return "-" if x is None else format_seconds(x)


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _times(x) -> str:
    return "-" if x is None else f"{x:.2f}×"


def shared_split_text(sp) -> str:
    """A module's shared files split over the ranks (services.jobs.answer.SharedSplit), in one line."""
    name = escape(sp.file or "unnamed")
    more = f" (worst of {sp.files})" if sp.files > 1 else ""
    # bytes_cv is None where an MPI-IO record sits above (the aggregators' split, not the ranks'): say the time's only
    parts = [f"{_times(v)} the mean {what}" for v, what in ((sp.bytes_cv, "bytes"), (sp.time_cv, "time")) if v is not None]
    cv = f"; over all ranks, standard deviation {', '.join(parts)}" if parts else ""
    return (f"{name}{more}: slowest rank {sp.slowest_rank} {_b(sp.slowest_bytes)} in {_s(sp.slowest_time_s)}, "
            f"fastest rank {sp.fastest_rank} {_b(sp.fastest_bytes)} in {_s(sp.fastest_time_s)} "
            f"({_pct(sp.bytes)} / {_pct(sp.time)} apart in bytes / time){cv}")


def _rate(x) -> str:
    return "-" if x is None else f"{x:,.1f} MiB/s"


def print_job(rep) -> None:
    """`ioweather job LOG`'s text: its `JobReport` (services/jobs/answer.py)."""
    j, perf, tot = rep.job, rep.perf, rep.totals
    if rep.verdict:
        stdout.print(f"[bold]verdict:[/] {escape(rep.verdict)}")
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    head.add_row("executable", escape(j.exe or "(anonymized)"))
    head.add_row("job id / uid", f"{j.jobid} / {j.uid}")
    head.add_row("processes / nodes", f"{j.nprocs} / {j.nnodes if j.nnodes is not None else 'unknown'}")
    head.add_row("run", f"{j.start} → {j.end} ({_s(j.runtime_s)})")
    head.add_row("log format", j.log_version + (f"  [yellow]partial modules: {', '.join(j.partial_modules)}"
                                                " (Darshan ran out of record memory: numbers are lower bounds)[/]"
                                                if j.partial_modules else ""))
    head.add_row("moved (storage layer)", f"{_b(tot.bytes_read)} read, {_b(tot.bytes_written)} written, "
                                          f"{tot.files} files")
    head.add_row("I/O time (slowest rank)", f"{_s(perf.io_time_s)} = {_pct(perf.io_fraction_of_runtime)} of the run"
                 + (f", {layer_text(perf)}" if perf.io_time_layer else "")
                 + (" [yellow](timers exceed the run time)[/]" if perf.io_time_exceeds_runtime else ""))
    head.add_row("bandwidth", f"{_rate(perf.mibps)} (Darshan agg_perf_by_slowest, POSIX: "
                              f"{_rate(perf.agg_perf_by_slowest_mibps)})")
    head.add_row("MiB/s per node", f"{perf.mibps_per_node:,.2f}" if perf.mibps_per_node is not None
                 else f"- ({perf.mibps_per_node_reason})")
    stdout.print(Panel(head, title="Darshan job", expand=False))

    t = Table(title="interfaces", header_style="bold")
    for col in ("module", "read", "written", "reads", "writes", "opens", "read time", "write time", "meta time",
                "files", "MiB/s"):
        t.add_column(col, justify="left" if col == "module" else "right")
    for mod, it in rep.interfaces.items():
        t.add_row(mod + (" [yellow](partial)[/]" if it.partial else ""), _b(it.bytes_read),
                  _b(it.bytes_written), _n(it.reads), _n(it.writes), _n(it.opens), _s(it.read_time_s),
                  _s(it.write_time_s), _s(it.meta_time_s), str(it.files),
                  _rate(it.agg_perf_by_slowest_mibps) if it.has_perf else "")
    stdout.print(t)

    sh, acc = rep.sharing, rep.access
    t = Table(title="files and access", header_style="bold", show_header=False)
    t.add_column(style="bold")
    t.add_column()
    t.add_row("unique / shared / partially shared",
              f"{sh.unique} ({_b(sh.unique_bytes)}) / {sh.shared} ({_b(sh.shared_bytes)}) / "
              f"{sh.partially_shared} ({_b(sh.partially_shared_bytes)})")
    if acc.common_sizes:
        t.add_row("most common access sizes", ", ".join(f"{_b(c.size_bytes)} × {c.count}" for c in acc.common_sizes))
    t.add_row("sequential / consecutive", f"{_pct(acc.seq_fraction)} / {_pct(acc.consec_fraction)}")
    t.add_row("not aligned: file / memory", f"{_pct(acc.file_not_aligned_fraction)} / {_pct(acc.mem_not_aligned_fraction)}")
    imb = perf.imbalance
    if imb.ranks_with_io or not imb.shared:
        t.add_row("rank imbalance (bytes / time)" + (", own files" if imb.shared else ""),
                  f"{_pct(imb.bytes)} / {_pct(imb.time)} over {imb.ranks_with_io} ranks"
                  + (f", slowest rank {perf.slowest_rank}" if perf.slowest_rank is not None else ""))
    for sp in imb.shared:
        t.add_row(f"rank split of shared files ({sp.module})", shared_split_text(sp))
    for m in rep.mounts[:6]:
        extra = f"  {lustre_text(m.lustre)}" if m.lustre else ""
        t.add_row(f"mount {escape(m.mount or '(other)')}", f"{m.fs_type or '?'}: {_b(m.bytes_read)} read, "
                  f"{_b(m.bytes_written)} written, {m.files} files{extra}")
    stdout.print(t)

    t = Table(title="findings, most expensive first", header_style="bold",
              caption="combined: what a fix saves after the fixes above it (savings overlap: they compound, "
                      "never add up past the I/O time)")
    for col in ("level", "code", "costs", "combined", "finding"):
        t.add_column(col, justify="right" if col in ("costs", "combined") else "left")
    for f in rep.findings:
        t.add_row(f"[{LEVEL_STYLE[f.level]}]{f.level}[/]", f.code, cost_text(f), combined_text(f), escape(f.message))
    if not rep.findings:
        t.add_row("OK", "-", "nothing to report")
    stdout.print(t)
    for w in rep.warnings:
        stdout.print(f"[yellow]note:[/] {escape(w)}")




def _n(x) -> str:
    return "-" if x is None else f"{int(x):,}"


def print_summary(rep: dict) -> None:
    stdout.print(f"[bold]{rep['jobs']}[/] jobs ({_b(rep['bytes_read'])} read, {_b(rep['bytes_written'])} written), "
                 f"[bold]{rep['failed_logs']}[/] logs that could not be read")
    t = Table(title="interfaces by job size (jobs using each)", header_style="bold")
    names = ["POSIX", "STDIO", "MPI-IO", "HDF5", "PnetCDF"]
    for col in ["processes", "jobs", *names]:
        t.add_column(col, justify="right")
    for r in rep["interfaces_by_size"]:
        t.add_row(r["size_class"], str(r["jobs"]), *(f"{r['jobs_using'][n]} ({_b(r['bytes'][n])})" for n in names))
    stdout.print(t)
    t = Table(title="I/O strategy by job size: jobs using it (bytes)", header_style="bold")
    for col in ("processes", "jobs", "unique N:N", "shared N:1", "partially shared N:M"):
        t.add_column(col, justify="right")
    for r in rep["strategy_by_size"]:
        t.add_row(r["size_class"], str(r["jobs"]), *(f"{r['jobs_using'][k]} ({_b(r['bytes'][k])})"
                                                      for k in ("unique", "shared", "partially_shared")))
    stdout.print(t)
    for key, title in (("top_projects", "project"), ("top_users", "user"), ("top_executables", "exe_name")):
        for by, what in (("by_bytes_read", "read"), ("by_bytes_written", "written")):
            t = Table(title=f"top {title.replace('_name', '')}s by bytes {what}", header_style="bold")
            for col in (title, "jobs", "read", "written"):
                t.add_column(col, justify="left" if col == title else "right")
            for r in rep[key][by]:
                t.add_row(escape(str(r[title])), str(r["jobs"]), _b(r["bytes_read"]), _b(r["bytes_written"]))
            stdout.print(t)
    box = rep["mibps_per_node_by_project"]
    f = rep["filters"]
    t = Table(title=f"MiB/s per compute node, jobs with ≥ {f['min_procs']} processes and ≥ {_b(f['min_bytes'])}",
              header_style="bold")
    for col in ("project", "jobs", "min", "Q1", "median", "Q3", "max"):
        t.add_column(col, justify="left" if col == "project" else "right")
    for r in box["projects"]:
        t.add_row(escape(r["project"]), str(r["jobs"]), *(f"{r[k]:.2f}" for k in ("min", "q1", "median", "q3", "max")))
    stdout.print(t)
    if box["jobs_without_node_count"]:
        stdout.print(f"[yellow]note:[/] {box['jobs_without_node_count']} jobs in the filter have no node count; "
                     "pass --cores-per-node N")
    t = Table(title="projects", header_style="bold")
    for col in ("project", "jobs", "procs", "read", "written", "MiB/s/CN", "meta %", "files/job", "key size", "APIs"):
        t.add_column(col, justify="left" if col == "project" else "right")
    for r in rep["projects"][:30]:
        t.add_row(escape(r["project"]), str(r["jobs"]), f"{r['nprocs_mean']:.0f}", _b(r["bytes_read"]),
                  _b(r["bytes_written"]),
                  "-" if r["mibps_per_node_mean"] is None else f"{r['mibps_per_node_mean']:.2f}",
                  _pct(r["meta_time_share_mean"]), f"{r['files_per_job_mean']:.1f}", _b(r["key_access_bytes"]),
                  r["interfaces"])
    stdout.print(t)
