"""`ioweather workload`: how busy, how bursty, when idle, which events — per file system (METHODS.md section 4)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import click
import numpy as np
import pandas as pd

from ioweather.commands.common import DURATION, SINCE, TIME, _Parsed, json_option
from ioweather.errors import UserError
from ioweather.units import format_bytes, ns_to_iso, parse_size, to_ns

MAX_BINS = 20_000_000  # ~320 MB of float64 series; beyond that the resample interval is surely a typo


def parse_rate(text: str) -> float:
    """A rate in bytes/s: `1GiB/s`, `500M`, `1G/s` (sizes as everywhere in ioweather, binary)."""
    s = str(text).strip()
    if s.lower().endswith("/s"):
        s = s[:-2]
    return float(parse_size(s))


RATE = _Parsed("rate", parse_rate)


@dataclass
class WorkloadData:
    """The aggregate series behind a report, kept for the HTML figures."""

    t0_ns: int
    interval_s: float
    read_bytes: np.ndarray
    write_bytes: np.ndarray
    smooth_s: float
    min_amplitude: float


def _grid(series, step_ns: int, since_ns: int | None, until_ns: int | None) -> tuple[int, int]:
    """First bin and bin count: the bins holding data, cut to the asked range."""
    b0 = int(series["bin"].min())
    b1 = int(series["bin"].max()) + 1
    if since_ns is not None:
        b0 = max(b0, since_ns // step_ns)
    if until_ns is not None:
        b1 = min(b1, -(-until_ns // step_ns))
    return b0, max(1, b1 - b0)


def _observations(cov, range_s: float) -> tuple[int, int, float | None]:
    """Valid per-target observations, missing ones (NaN rows plus absent intervals), sampling interval."""
    cov = cov[cov["min_interval_s"] > 0]
    if cov.empty:
        return 0, 0, None
    expected = np.round(range_s / cov["min_interval_s"].to_numpy(float)).astype(np.int64)
    n = cov["n"].to_numpy(np.int64)
    return int(n.sum()), int(np.maximum(expected - n, 0).sum()), float(cov["min_interval_s"].median())


def _check_resample(sampling_s: float | None, resample_s: float, warn: bool) -> None:
    if not sampling_s or sampling_s <= 0:
        return
    if resample_s + 1e-9 < sampling_s:
        raise UserError(f"--resample {resample_s:g}s is shorter than the sampling interval ({sampling_s:g} s)")
    if warn and abs(resample_s / sampling_s - round(resample_s / sampling_s)) > 1e-6:
        click.echo(f"ioweather: warning: --resample {resample_s:g}s is not a multiple of the sampling interval "
                   f"({sampling_s:g} s): intervals hold unequal numbers of samples", err=True)


def _precheck(con, settings, fs: str, step_ns: int, since_ns, until_ns) -> None:
    """Refuse from the Parquet footers alone what would only fail after a long scan."""
    from ioweather.store.telemetry_layout import fs_dir
    from ioweather.store.telemetry_query import footer_summary

    f = footer_summary(con, str(fs_dir(settings, fs) / "date=*" / "*.parquet"))
    _check_resample(f["min_interval_s"], step_ns / 1e9, warn=False)
    if f["first_ns"] is None:
        return
    first = f["first_ns"] if since_ns is None else max(f["first_ns"], since_ns)
    last = f["last_ns"] if until_ns is None else min(f["last_ns"], until_ns)
    nbins = (last - first) // step_ns + 1
    if nbins > MAX_BINS:
        raise UserError(f"{nbins} intervals of {step_ns / 1e9:g} s: choose a longer --resample or a shorter range")


def _series_arrays(series, b0: int, nbins: int, metrics) -> list[np.ndarray]:
    """One array of bytes per resample interval for each metric, NaN where nothing was reported."""
    out = []
    for m in metrics:
        a = np.full(nbins, np.nan)
        s = series[series["metric"] == m]
        a[s["bin"].to_numpy(np.int64) - b0] = s["bytes"].to_numpy(float)
        out.append(a)
    return out


def _calendar(sums, read, write, b0: int, present) -> tuple[list, list]:
    from ioweather.stats.workload import calendar_totals
    from ioweather.store.telemetry_query import BYTES_METRICS, DAY_NS

    if sums.daily is not None:  # the resample interval does not divide a day: DuckDB summed per day
        d = sums.daily.pivot_table(index="day", columns="metric", values="bytes", aggfunc="sum")
    else:
        days = (np.arange(len(read), dtype=np.int64) + b0) * sums.step_ns // DAY_NS
        d = pd.DataFrame({"day": days[present], "read_bytes": read[present], "write_bytes": write[present]})
        d = d.groupby("day").sum(min_count=1)
    d = d.reindex(columns=list(BYTES_METRICS))
    return calendar_totals(d.index.to_numpy(), d["read_bytes"].to_numpy(), d["write_bytes"].to_numpy())


def _spectra(hist, tops: dict) -> dict:
    from ioweather.stats import workload as W

    spectra = {}
    for m, key in (("read_bytes", "read"), ("write_bytes", "write")):
        w = np.zeros(W.SPECTRUM_BINS)
        h = hist[hist["metric"] == m]
        np.add.at(w, h["bin"].to_numpy(np.int64), h["bytes"].to_numpy(float))
        spectra[key] = W.power_spectrum_from_histogram(W.spectrum_edges(float(tops.get(m) or 0.0)), w)
    return spectra


def _no_data(con, scan: str, fs: str, since_ns, until_ns) -> UserError:
    from ioweather.store.telemetry_query import BYTES_METRICS, extent

    first, last = extent(con, scan)
    if first is None:
        return UserError(f"telemetry for {fs!r} has no {' or '.join(BYTES_METRICS)} rows")
    a = ns_to_iso(since_ns) if since_ns is not None else "the start"
    b = ns_to_iso(until_ns) if until_ns is not None else "the end"
    return UserError(f"no read/write telemetry for {fs!r} between {a} and {b} "
                     f"(data covers {ns_to_iso(first)} to {ns_to_iso(last)})")


def compute(settings, fs: str, since, until, resample_s: float, idle_threshold: float, smooth_s: float,
            min_amplitude: float, acf_max_lag_s: float, on_step=None) -> tuple[dict, WorkloadData]:
    """The `--json` document and the series behind it, for file system `fs` over [since, until)."""
    from ioweather.stats import workload as W
    from ioweather.store import telemetry_query as Q
    from ioweather.store.telemetry_layout import connect_duckdb, scan_sql

    step = on_step or (lambda name: None)
    since_ns = to_ns(since) if since is not None else None
    until_ns = to_ns(until) if until is not None else None
    if since_ns is not None and until_ns is not None and since_ns >= until_ns:
        raise UserError("--since must be before --until")
    step_ns = int(round(resample_s * 1e9))
    scan = scan_sql(settings, fs)
    con = connect_duckdb()
    Q.configure(con)

    _precheck(con, settings, fs, step_ns, since_ns, until_ns)

    step("scanning telemetry")
    sums = Q.interval_sums(con, scan, step_ns, since_ns, until_ns)
    if sums.series.empty:
        raise _no_data(con, scan, fs, since_ns, until_ns)
    b0, nbins = _grid(sums.series, step_ns, since_ns, until_ns)
    read, write = _series_arrays(sums.series, b0, nbins, Q.BYTES_METRICS)
    present = np.isfinite(read) | np.isfinite(write)
    t0_ns = b0 * step_ns
    start_ns = t0_ns if since_ns is None else max(t0_ns, since_ns)
    end_ns = (b0 + nbins) * step_ns if until_ns is None else min((b0 + nbins) * step_ns, until_ns)
    daily, monthly = _calendar(sums, read, write, b0, present)

    step("power spectrum")
    tops = sums.series.groupby("metric")["top"].max().to_dict()
    hist, coverage = Q.spectrum_and_coverage(con, scan, tops, W.SPECTRUM_BINS, since_ns, until_ns)
    con.close()
    intervals = coverage.loc[coverage["min_interval_s"] > 0, "min_interval_s"]
    _check_resample(float(intervals.min()) if len(intervals) else None, resample_s, warn=True)
    spectra = _spectra(hist, tops)

    step("statistics")
    obs, missing_obs, sample_interval = _observations(coverage, (end_ns - start_ns) / 1e9)
    total_read = float(np.nansum(read))
    total_write = float(np.nansum(write))
    stats = W.summarize(t0_ns, resample_s, read, write, idle_threshold=idle_threshold, smooth_s=smooth_s,
                        min_amplitude=min_amplitude, acf_max_lag_s=acf_max_lag_s)
    events = [{"start": ns_to_iso(e["start_ns"]), "end": ns_to_iso(e["end_ns"]), "peak_time": ns_to_iso(e["peak_time_ns"]),
               "peak_bps": e["peak_bps"], "bytes": e["bytes"]} for e in stats.pop("events")]
    result = {
        "fs": fs,
        "start": ns_to_iso(start_ns),
        "end": ns_to_iso(end_ns),
        "interval_s": resample_s,
        "samples": int(present.sum()),
        "missing_samples": int(nbins - present.sum()),
        "read_bytes": total_read,
        "write_bytes": total_write,
        "read_write_ratio": W.read_write_ratio(total_read, total_write),
        "targets": int(coverage["target"].nunique()),
        "sample_interval_s": sample_interval,
        "observations": obs,
        "missing_observations": missing_obs,
        "daily": daily,
        "monthly": monthly,
        **{k: stats[k] for k in ("peak_read_bps", "peak_write_bps", "peak_total_bps", "mean_total_bps",
                                 "burstiness", "idle_periods")},
        "power_spectrum": spectra,
        "acf": stats["acf"],
        "events": events,
        "idle_threshold": idle_threshold,
        "smooth_s": smooth_s,
        "min_amplitude_bps": min_amplitude,
    }
    return result, WorkloadData(t0_ns, resample_s, read, write, smooth_s, min_amplitude)


def _print_human(r: dict) -> None:
    from ioweather.views.output import print_table, stderr
    from ioweather.views.workload_report import pct_text, rate_text

    def when(iso: str) -> str:
        return iso[:16].replace("T", " ")

    b = r["burstiness"]
    rows = [
        ("range", f"{r['start']} – {r['end']}"),
        ("intervals", f"{r['samples']} of {r['interval_s']:g} s ({r['missing_samples']} missing)"),
        ("observations", f"{r['observations']} from {r['targets']} targets ({r['missing_observations']} missing)"),
        ("read", format_bytes(r["read_bytes"])),
        ("written", format_bytes(r["write_bytes"])),
        ("read/write ratio", "-" if r["read_write_ratio"] is None else f"{r['read_write_ratio']:.2f}"),
        ("peak read", rate_text(r["peak_read_bps"])),
        ("peak write", rate_text(r["peak_write_bps"])),
        ("peak total", rate_text(r["peak_total_bps"])),
        ("mean total", rate_text(r["mean_total_bps"])),
        ("time below 33 % of peak", pct_text(b["frac_time_below_33pct_peak"])),
        ("power-spectrum centroid (read)", format_bytes(r["power_spectrum"]["read"]["centroid_bytes"])),
        ("power-spectrum centroid (write)", format_bytes(r["power_spectrum"]["write"]["centroid_bytes"])),
        ("events", str(len(r["events"]))),
    ]
    print_table([{"label": k, "value": v} for k, v in rows], [("label", "statistic"), ("value", "value")],
                title=f"workload of {r['fs']}")
    print_table(r["idle_periods"], [("bin", "idle minutes"), ("count", "count"), ("minutes", "total minutes", lambda v: f"{v:g}"),
                                    ("frac_time", "share of time", pct_text)],
                title=f"idle periods (< {100 * r['idle_threshold']:g} % of peak)")
    shown = r["events"][:20]
    print_table(shown, [("start", "start (UTC)", when), ("end", "end", when), ("peak_time", "peak at", when),
                        ("peak_bps", "peak", rate_text),
                        ("bytes", "bytes", format_bytes)],
                title="events", empty=f"no events above {rate_text(r['min_amplitude_bps'])}")
    if len(r["events"]) > len(shown):
        stderr.print(f"{len(r['events']) - len(shown)} more events: use --json or --html")


def register(cli: click.Group) -> None:
    @cli.command()
    @click.option("--fs", "fs", required=True, help="File system name (as given to `ioweather import/collect --fs`).")
    @click.option("--since", type=SINCE, default=None, help="Start: a time or a duration ago (default: the first data).")
    @click.option("--until", type=TIME, default=None, help="End time (default: the last data).")
    @click.option("--resample", type=DURATION, default="60s", show_default=True,
                  help="Interval of the aggregate series (peaks, CDF, idle periods, events, ACF).")
    @click.option("--idle-threshold", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05,
                  show_default=True, help="Idle = aggregate rate below this fraction of the peak.")
    @click.option("--smooth", type=DURATION, default="600s", show_default=True, help="Event detection smoothing window.")
    @click.option("--min-amplitude", type=RATE, default="1GiB/s", show_default=True,
                  help="Smallest event: how far a peak must rise above its surroundings (bytes/s).")
    @click.option("--acf-max-lag", type=DURATION, default="24h", show_default=True, help="Longest autocorrelation lag.")
    @json_option
    @click.option("--html", "html", type=click.Path(dir_okay=False, writable=True), default=None,
                  help="Write a self-contained HTML report with the figures to this file.")
    @click.pass_obj
    def workload(settings, fs, since, until, resample, idle_threshold, smooth, min_amplitude, acf_max_lag, as_json, html):
        """Workload statistics of a file system from its server-side telemetry (seeds 002, 004).

        Totals per day and month, peak and mean throughput, burstiness, idle periods,
        the I/O power spectrum, autocorrelation, and I/O events. See docs/workload.md.
        """
        from ioweather.views.output import print_json, progress

        if as_json and html:
            raise UserError("choose one of --json and --html")
        if resample <= 0:
            raise UserError("--resample must be positive")
        if acf_max_lag < 0 or not math.isfinite(acf_max_lag):
            raise UserError("--acf-max-lag must be a non-negative duration")
        if min_amplitude <= 0:
            raise UserError("--min-amplitude must be positive")
        with progress() as bar:
            task = bar.add_task("workload", total=4 if html else 3)

            def on_step(name):
                bar.update(task, description=name, advance=0 if name == "scanning telemetry" else 1)

            result, data = compute(settings, fs, since, until, resample, idle_threshold, smooth, min_amplitude,
                                   acf_max_lag, on_step)
            if html:
                from ioweather.views.workload_report import write_report

                on_step("report")
                write_report(html, result, data)
            bar.update(task, completed=bar.tasks[0].total)
        if as_json:
            print_json(result)
        elif html:
            click.echo(f"wrote {html}", err=True)
        else:
            _print_human(result)
