"""The `ioweather workload` document: its `--json` dict and the series behind its figures.

Shared by the command line and the dashboard page so both show the same numbers. The store
(`store.telemetry_query`) reduces the Parquet files to small tables; `stats.workload` computes the
statistics; this module joins the two over the asked range and formats times.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ioweather.encoding import Answer, answer_dict, finite_or_none, iso_ms
from ioweather.errors import UserError
from ioweather.services.runtime.distributed import connect, map_unordered
from ioweather.stats import workload as W
from ioweather.stats.downsample import downsample
from ioweather.stats.workload import (
    aggregate_signal,
    calendar_totals,
    daily_mean_rates,
    DEFAULT_IDLE_THRESHOLD,
    DEFAULT_MIN_AMPLITUDE,
    DEFAULT_SMOOTH_S,
    Signal,
)
from ioweather.units import check_order, ns_to_iso, to_ns

# pandas is imported where used: the dashboard imports this module at start (its memory).

MAX_BINS = 20_000_000  # ~320 MB of float64 series; beyond that the resample interval is surely a typo
#: The longest resample interval, and the widest smoothing window: the kernel is window / resample samples
#: and its convolution costs kernel x series (a day at 5 s: 17,280 samples), so an unbounded one is a
#: hang, on a server too.
MAX_RESAMPLE_S = 92 * 86400.0
MAX_SMOOTH_S = 86400.0


def check_options(resample_s: float, smooth_s: float, min_amplitude: float, flag=lambda name: f"--{name}") -> None:
    """The one check of the event options, for `workload`, `events`, `report` and their pages, so a page
    takes what the command takes (`flag` names an option as the caller's user writes it). A smoothing
    window shorter than the interval is allowed: it smooths nothing (stats.workload.smooth)."""
    for name, v, most in (("resample", resample_s, MAX_RESAMPLE_S), ("smooth", smooth_s, MAX_SMOOTH_S)):
        if not 0 < v <= most:  # also nan and inf
            raise UserError(f"{flag(name)} must be positive and at most {most / 86400:g}d")
    if not 0 < min_amplitude < float("inf"):
        raise UserError(f"{flag('min-amplitude')} must be positive")


@dataclass
class WorkloadData:
    """The aggregate series behind a report, kept for the HTML figures."""

    t0_ns: int
    interval_s: float
    read_bytes: np.ndarray
    write_bytes: np.ndarray
    smooth_s: float
    min_amplitude: float


def plotted_signal(data: WorkloadData, max_points: int) -> tuple[np.ndarray, Signal, int]:
    """The aggregate signal of a report for a plot: (interval starts in ns, the signal there, intervals in
    all), at most `max_points` intervals keeping each bucket's extremes. A missing interval is picked as
    its bucket's minimum, so gaps stay visible after downsampling."""
    sig = aggregate_signal(data.read_bytes, data.write_bytes, data.interval_s, data.smooth_s)
    step_ns = int(round(data.interval_s * 1e9))
    t = data.t0_ns + np.arange(len(sig.total), dtype=np.int64) * step_ns
    keep = downsample(t, np.where(np.isfinite(sig.total), sig.total, -1.0), max_points)
    return t[keep], Signal(*(x[keep] for x in sig)), len(sig.total)


def daily_rates(data: WorkloadData):
    """Mean read and write rate of each UTC day of a report (a DataFrame indexed by day)."""
    return daily_mean_rates(data.t0_ns, data.interval_s, data.read_bytes, data.write_bytes)


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
    # lazy: pandas, pyarrow via services.telemetry.ingest, loaded only when this runs
    from ioweather.services.telemetry.ingest import MIN_INTERVAL_S

    cov = cov[cov["min_interval_s"] >= MIN_INTERVAL_S]
    if cov.empty:
        return 0, 0, None
    expected = np.round(range_s / cov["min_interval_s"].to_numpy(float)).astype(np.int64)
    n = cov["n"].to_numpy(np.int64)
    return int(n.sum()), int(np.maximum(expected - n, 0).sum()), float(cov["min_interval_s"].median())


def _check_resample(sampling_s: float | None, resample_s: float, warn) -> None:
    if not sampling_s or sampling_s <= 0:
        return
    if resample_s + 1e-9 < sampling_s:
        raise UserError(f"--resample {resample_s:g}s is shorter than the sampling interval ({sampling_s:g} s)")
    if abs(resample_s / sampling_s - round(resample_s / sampling_s)) > 1e-6:
        warn(f"--resample {resample_s:g}s is not a multiple of the sampling interval ({sampling_s:g} s): "
             "intervals hold unequal numbers of samples")


def _precheck(con, files, step_ns: int, since_ns, until_ns) -> None:
    """Refuse from the Parquet footers alone what would only fail after a long scan."""
    # lazy: pandas, pyarrow via store.telemetry_query, loaded only when this runs
    from ioweather.store.telemetry_query import footer_summary

    f = footer_summary(con, files)
    # The footers mix every metric (a 15-minute capacity gauge beside 5-second bytes), so the check of
    # --resample against the sampling interval waits for the per-target byte counts after the scan.
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
    # lazy: pandas, pyarrow, loaded only when this runs
    import pandas as pd

    # lazy: pandas, pyarrow via store.telemetry_query, loaded only when this runs
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
    spectra = {}
    for m, key in (("read_bytes", "read"), ("write_bytes", "write")):
        w = np.zeros(W.SPECTRUM_BINS)
        h = hist[hist["metric"] == m]
        np.add.at(w, h["bin"].to_numpy(np.int64), h["bytes"].to_numpy(float))
        spectra[key] = W.power_spectrum_from_histogram(W.spectrum_edges(float(tops.get(m) or 0.0)), w)
    return spectra


def _no_data(con, scan: str, fs: str, since_ns, until_ns) -> UserError:
    # lazy: pandas, pyarrow via store.telemetry_query, loaded only when this runs
    from ioweather.store.telemetry_query import BYTES_METRICS, extent

    first, last = extent(con, scan)
    if first is None:
        return UserError(f"telemetry for {fs!r} has no {' or '.join(BYTES_METRICS)} rows")
    a = ns_to_iso(since_ns) if since_ns is not None else "the start"
    b = ns_to_iso(until_ns) if until_ns is not None else "the end"
    return UserError(f"no read/write telemetry for {fs!r} between {a} and {b} "
                     f"(data covers {ns_to_iso(first)} to {ns_to_iso(last)})")


def _read_inputs(settings, fs: str, files, step_ns: int, since_ns, until_ns, step, use_rollups: bool,
                 client=None):
    """The DuckDB reductions of one listing of the dataset (all of it: `files`), on the Dask
    cluster of `client` when given."""
    # lazy: pyarrow via store.telemetry_layout, loaded only when this runs
    from ioweather.store import telemetry_layout as layout
    # lazy: pandas, pyarrow via store.telemetry_query, loaded only when this runs
    from ioweather.store import telemetry_query as Q

    scan = layout.scan_sql(settings, fs, files)  # raises the clear "no telemetry for ..." error
    ranged = layout.within(files, since_ns, until_ns)
    con = layout.connect_duckdb(options=Q.options())
    try:
        _precheck(con, ranged, step_ns, since_ns, until_ns)
        if client is None:
            inputs = Q.workload_inputs(con, layout.fs_dir(settings, fs), step_ns, W.SPECTRUM_BINS, since_ns,
                                       until_ns, step, use_rollups, files=ranged)
        else:
            inputs = _distributed_inputs(client, layout.fs_dir(settings, fs), ranged, step_ns, since_ns, until_ns,
                                         step, use_rollups)
        if inputs is None or inputs.sums.series.empty:
            raise _no_data(con, scan, fs, since_ns, until_ns)
        return inputs
    finally:
        con.close()


@dataclass(frozen=True)
class CalendarTotal:
    """Bytes read and written in one calendar day (`date` YYYY-MM-DD) or month (YYYY-MM), UTC."""

    date: str
    read_bytes: float | None
    write_bytes: float | None


@dataclass(frozen=True)
class Burstiness:
    """stats.workload.burstiness: the share of time below a third of the peak rate (None without data) and
    the CDF of the aggregate rate (`cdf_frac[i]`: the share of intervals at or below `cdf_bps[i]`)."""

    frac_time_below_33pct_peak: float | None
    cdf_bps: list[float]
    cdf_frac: list[float]


@dataclass(frozen=True)
class IdleBin:
    """Idle periods of one duration bin (`bin`, minutes): how many, their minutes, their share of the
    observed time (None with no observed time)."""

    bin: str
    count: int
    minutes: float
    frac_time: float | None


@dataclass(frozen=True)
class Spectrum:
    """An I/O power spectrum: the bins' edges (bytes per observation), the bytes in each, their centroid
    (None without bytes)."""

    bin_edges_bytes: list[float]
    bytes: list[float]
    centroid_bytes: float | None


@dataclass(frozen=True)
class PowerSpectra:
    """The read and write power spectra."""

    read: Spectrum
    write: Spectrum


@dataclass(frozen=True)
class Autocorrelation:
    """The read and write rates' autocorrelation at each lag (seconds)."""

    lags_s: list[float]
    read: list[float]
    write: list[float]


@dataclass(frozen=True)
class BurstEvent:
    """One burst (stats.workload events): its window and peak (ISO 8601 UTC), peak rate and bytes."""

    start: str
    end: str
    peak_time: str
    peak_bps: float
    bytes: float


@dataclass(frozen=True)
class Workload(Answer):
    """How busy, how bursty, when idle and which events: `workload --json`, the `result` of /api/workload.

    Times are ISO 8601 UTC strings; rates are bytes per second (`_bps`), amounts bytes, durations
    seconds. The parts that are tables (`daily`, `monthly`, `idle_periods`, `events`) are lists of
    dataclasses and the statistics' parts (`burstiness`, `power_spectrum`, `acf`) dataclasses, from the
    dicts of `stats.workload.summarize`, with the keys the JSON has always had."""

    fs: str
    start: str
    end: str
    interval_s: float
    samples: int
    missing_samples: int
    read_bytes: float
    write_bytes: float
    read_write_ratio: float | None
    targets: int
    sample_interval_s: float | None
    observations: int
    missing_observations: int
    daily: list[CalendarTotal]
    monthly: list[CalendarTotal]
    peak_read_bps: float | None
    peak_write_bps: float | None
    peak_total_bps: float | None
    mean_total_bps: float | None
    burstiness: Burstiness
    idle_periods: list[IdleBin]
    power_spectrum: PowerSpectra
    acf: Autocorrelation
    events: list[BurstEvent]
    idle_threshold: float
    smooth_s: float
    min_amplitude_bps: float

    def to_json(self) -> dict:
        return {**answer_dict(self), **{k: [answer_dict(r) for r in getattr(self, k)]
                                        for k in ("daily", "monthly", "idle_periods", "events")}}


@dataclass(frozen=True)
class WorkloadSeries:
    """The aggregate rate per interval as the Workload page plots it: at most a page's points, each
    bucket's extremes kept (`plotted_signal`); `points` intervals in all, `shown` of them here.
    Times ISO 8601 UTC (ms), rates bytes per second, None where an interval has no data."""

    points: int
    shown: int
    downsampled: bool
    time: list[str]
    read_bps: list[float | None]
    write_bps: list[float | None]
    total_bps: list[float | None]
    smoothed_bps: list[float | None]


@dataclass(frozen=True)
class DailyRates:
    """Mean read and write rate (bytes per second) of each UTC day (`YYYY-MM-DD`)."""

    date: list[str]
    read_bps: list[float | None]
    write_bps: list[float | None]


@dataclass(frozen=True)
class WorkloadView(Answer):
    """The Workload page's answer (/api/workload without the form's fields): the `workload --json`
    document (`result`), the series its plots draw from the same data, and what the command would
    have said on stderr (`warnings`)."""

    result: Workload
    series: WorkloadSeries
    daily_rates: DailyRates
    warnings: list[str]


def workload_view(settings, fs: str, since, until, resample_s: float, idle_threshold: float, smooth_s: float,
                  min_amplitude: float, acf_max_lag_s: float, max_points: int) -> WorkloadView:
    """`compute`'s document and the series of its plots (at most `max_points` intervals), for the page."""
    warnings: list[str] = []
    result, data = compute(settings, fs, since, until, resample_s, idle_threshold, smooth_s, min_amplitude,
                           acf_max_lag_s, warn=warnings.append)
    t, s, points = plotted_signal(data, max_points)
    series = WorkloadSeries(int(points), int(len(t)), bool(len(t) < points), iso_ms(t), finite_or_none(s.read),
                            finite_or_none(s.write), finite_or_none(s.total), finite_or_none(s.smoothed))
    d = daily_rates(data)
    days = DailyRates([x.strftime("%Y-%m-%d") for x in d.index], finite_or_none(d["read_bps"]),
                      finite_or_none(d["write_bps"]))
    return WorkloadView(result, series, days, warnings)


@dataclass
class _Series:
    """The aggregate bytes per resample interval over the asked range cut to the data, and what the
    reductions said about the targets: what `compute` and `events` both start from."""

    inputs: object
    b0: int
    nbins: int
    read: np.ndarray
    write: np.ndarray
    start_ns: int
    end_ns: int


def _series(settings, fs: str, since, until, resample_s: float, on_step=None, use_rollups: bool = True,
            warn=lambda message: None, dask: str | None = None) -> _Series:
    # lazy: pyarrow via store.telemetry_layout, loaded only when this runs
    from ioweather.store import telemetry_layout as layout
    # lazy: pandas, pyarrow via store.telemetry_query, loaded only when this runs
    from ioweather.store import telemetry_query as Q

    step = on_step or (lambda name: None)
    since_ns = to_ns(since) if since is not None else None
    until_ns = to_ns(until) if until is not None else None
    if since_ns is not None and until_ns is not None:
        check_order(since, until)
    if since_ns is not None or until_ns is not None:
        # An asked window is cut to the time the data covers, as the pages cut it (fsview.covered): the
        # command and the Workload page resolve one window alike and answer the same start and end.
        # lazy: pandas, pyarrow via services.telemetry.fsfacts, loaded only when this runs
        from ioweather.services.telemetry.fsfacts import KINDS
        from ioweather.store import telemetry_targets as TT

        inside = TT.spans(settings, fs, {"io": KINDS["io"]}, since_ns, until_ns).get("io")
        if inside is not None:
            since_ns = None if since_ns is None else max(since_ns, inside[0])
            until_ns = None if until_ns is None else min(until_ns, inside[1])
    step_ns = int(round(resample_s * 1e9))
    base = layout.fs_dir(settings, fs)
    # Every query of one attempt reads one listing: an import may replace files meanwhile (read_listed).
    if dask:
        if not layout.data_files(base):
            raise layout.no_telemetry(settings, fs)  # before a cluster is started for nothing
        with connect(dask) as client:
            inputs = layout.read_listed(base, lambda files: _read_inputs(settings, fs, files, step_ns, since_ns,
                                                                         until_ns, step, use_rollups, client),
                                        warn=warn)
    else:
        inputs = layout.read_listed(base, lambda files: _read_inputs(settings, fs, files, step_ns, since_ns,
                                                                     until_ns, step, use_rollups), warn=warn)
    b0, nbins = _grid(inputs.sums.series, step_ns, since_ns, until_ns)
    read, write = _series_arrays(inputs.sums.series, b0, nbins, Q.BYTES_METRICS)
    t0_ns = b0 * step_ns
    start_ns = t0_ns if since_ns is None else max(t0_ns, since_ns)
    end_ns = (b0 + nbins) * step_ns if until_ns is None else min((b0 + nbins) * step_ns, until_ns)
    # >= a microsecond: a store that took `interval_s=1e-320` before imports refused it failed here for good
    # lazy: pandas, pyarrow via services.telemetry.ingest, loaded only when this runs
    from ioweather.services.telemetry.ingest import MIN_INTERVAL_S

    coverage = inputs.coverage
    intervals = coverage.loc[coverage["min_interval_s"] >= MIN_INTERVAL_S, "min_interval_s"]
    _check_resample(float(intervals.min()) if len(intervals) else None, resample_s, warn)
    return _Series(inputs, b0, nbins, read, write, start_ns, end_ns)


def _events_json(found: list[dict]) -> list[dict]:
    return [{"start": ns_to_iso(e["start_ns"]), "end": ns_to_iso(e["end_ns"]), "peak_time": ns_to_iso(e["peak_time_ns"]),
             "peak_bps": e["peak_bps"], "bytes": e["bytes"]} for e in found]


@dataclass(frozen=True)
class WorkloadEvents:
    """The events of `compute`'s document alone (its `start`, `end`, `events`) and the series they were
    found on: what `events` and `why JOB` need, without the statistics of a whole workload (its
    autocorrelation imports scipy; its spectrum and calendar read more)."""

    start: str
    end: str
    events: list[dict]
    data: WorkloadData


def events(settings, fs: str, since, until, resample_s: float, smooth_s: float, min_amplitude: float,
           warn=lambda message: None) -> WorkloadEvents:
    """`compute(...)`'s `start`, `end` and `events` and its series, found the same way on the same series."""
    s = _series(settings, fs, since, until, resample_s, warn=warn)
    t0_ns = s.b0 * int(round(resample_s * 1e9))
    found = W.events_of(t0_ns, resample_s, s.read, s.write, smooth_s, min_amplitude)
    return WorkloadEvents(ns_to_iso(s.start_ns), ns_to_iso(s.end_ns), _events_json(found),
                          WorkloadData(t0_ns, resample_s, s.read, s.write, smooth_s, min_amplitude))


def compute(settings, fs: str, since, until, resample_s: float, idle_threshold: float, smooth_s: float,
            min_amplitude: float, acf_max_lag_s: float, on_step=None, use_rollups: bool = True,
            warn=lambda message: None, dask: str | None = None) -> tuple[Workload, WorkloadData]:
    """The `--json` answer and the series behind it, for file system `fs` over [since, until).
    `use_rollups=False` reads every row (to check the rollups, or to measure what they save);
    `warn(message)` hears what the caller may want to tell a person (the command prints it);
    `dask` (a `--dask` SPEC, services/runtime/distributed.py) scans the days on a Dask cluster's workers,
    which must see the store's Parquet files at the same path: the same document as without."""
    step = on_step or (lambda name: None)
    s = _series(settings, fs, since, until, resample_s, on_step, use_rollups, warn, dask)
    inputs, b0, nbins, read, write = s.inputs, s.b0, s.nbins, s.read, s.write
    sums, hist, coverage, tops = inputs.sums, inputs.histogram, inputs.coverage, inputs.tops
    step_ns = int(round(resample_s * 1e9))
    present = np.isfinite(read) | np.isfinite(write)
    t0_ns = b0 * step_ns
    start_ns, end_ns = s.start_ns, s.end_ns
    daily, monthly = _calendar(sums, read, write, b0, present)
    spectra = _spectra(hist, tops)

    step("statistics")
    obs, missing_obs, sample_interval = _observations(coverage, (end_ns - start_ns) / 1e9)
    total_read = float(np.nansum(read))
    total_write = float(np.nansum(write))
    stats = W.summarize(t0_ns, resample_s, read, write, idle_threshold=idle_threshold, smooth_s=smooth_s,
                        min_amplitude=min_amplitude, acf_max_lag_s=acf_max_lag_s)
    events = _events_json(stats.pop("events"))
    result = Workload(
        fs=fs,
        start=ns_to_iso(start_ns),
        end=ns_to_iso(end_ns),
        interval_s=resample_s,
        samples=int(present.sum()),
        missing_samples=int(nbins - present.sum()),
        read_bytes=total_read,
        write_bytes=total_write,
        read_write_ratio=W.read_write_ratio(total_read, total_write),
        targets=int(coverage["target"].nunique()),
        sample_interval_s=sample_interval,
        observations=obs,
        missing_observations=missing_obs,
        daily=[CalendarTotal(**r) for r in daily],
        monthly=[CalendarTotal(**r) for r in monthly],
        **{k: stats[k] for k in ("peak_read_bps", "peak_write_bps", "peak_total_bps", "mean_total_bps")},
        burstiness=Burstiness(**stats["burstiness"]),
        idle_periods=[IdleBin(**r) for r in stats["idle_periods"]],
        power_spectrum=PowerSpectra(Spectrum(**spectra["read"]), Spectrum(**spectra["write"])),
        acf=Autocorrelation(**stats["acf"]),
        events=[BurstEvent(**e) for e in events],
        idle_threshold=idle_threshold,
        smooth_s=smooth_s,
        min_amplitude_bps=min_amplitude,
    )
    return result, WorkloadData(t0_ns, resample_s, read, write, smooth_s, min_amplitude)


# ----------------------------------------------------------------------------- on a Dask cluster
# One task per UTC day directory (a day's files: its rollups and, for days cut by --since/--until or
# without a rollup, its rows), DuckDB inside each task on one thread: the cluster's threads are the
# parallelism. Two rounds, as the local queries: the per-interval sums first, whose maxima fix the
# power spectrum's bins, then the histogram and the per-target counts. Each task returns small
# tables (at most a day of intervals, 100 bins, one row per target); the client merges them in
# day order with the local path's sums, maxima and minima. Byte counts are whole numbers, so every
# sum below 2**53 (8 PiB) is exact in any order: the same document as the local path.

def _partitions(plan) -> list[tuple[str, list[str], list[str]]]:
    """(day directory, its rolled files, its raw files), in day order."""
    days: dict[str, tuple[list[str], list[str]]] = {}
    for kind, files in ((0, plan.rolled), (1, plan.raw)):
        for f in files:
            days.setdefault(f.parent.name, ([], []))[kind].append(str(f))
    return [(day, *days[day]) for day in sorted(days)]


def _task_con():
    # lazy: pyarrow via store.telemetry_layout, loaded only when this runs
    from ioweather.store import telemetry_layout as layout
    # lazy: pandas, pyarrow via store.telemetry_query, loaded only when this runs
    from ioweather.store import telemetry_query as Q

    return layout.connect_duckdb(threads=1, options=Q.options(memory_limit="1GB"))


def _merge_sums(parts: list, step_ns: int):
    # lazy: pandas, pyarrow, loaded only when this runs
    import pandas as pd

    # lazy: pandas, pyarrow via store.telemetry_query, loaded only when this runs
    from ioweather.store.telemetry_query import IntervalSums

    series = pd.concat([p.series for p in parts], ignore_index=True)
    series = series.groupby(["metric", "bin"], as_index=False).agg(bytes=("bytes", "sum"), top=("top", "max"))
    dailies = [p.daily for p in parts if p.daily is not None]
    daily = None
    if dailies:
        daily = pd.concat(dailies, ignore_index=True).groupby(["metric", "day"], as_index=False).agg(
            bytes=("bytes", "sum"))
    return IntervalSums(step_ns, series, daily)


def _missing(e: FileNotFoundError):
    # an import or compaction removed a listed file: the client lists again (layout.read_listed)
    return ("missing", str(e))


def partition_sums(part, *, step_ns: int, since_ns, until_ns):
    """Dask task: the interval sums of one day's files (telemetry_query.workload_inputs' first round)."""
    # lazy: pandas, pyarrow via store.telemetry_query, loaded only when this runs
    from ioweather.store import telemetry_query as Q
    # lazy: pyarrow via store.telemetry_layout, loaded only when this runs
    from ioweather.store.telemetry_layout import files_scan

    _, rolled, raw = part
    con = _task_con()
    try:
        parts = []
        if rolled:
            parts.append(Q.rolled_sums(con, rolled, step_ns))
        if raw:
            parts.append(Q.interval_sums(con, files_scan(raw), step_ns, since_ns, until_ns))
        return _merge_sums(parts, step_ns)
    except FileNotFoundError as e:
        return _missing(e)
    finally:
        con.close()


def partition_spectrum(part, *, tops: dict, bins: int, since_ns, until_ns):
    """Dask task: the spectrum histogram and per-target counts of one day's files (the second round)."""
    # lazy: pandas, pyarrow via store.telemetry_query, loaded only when this runs
    from ioweather.store import telemetry_query as Q
    # lazy: pyarrow via store.telemetry_layout, loaded only when this runs
    from ioweather.store.telemetry_layout import files_scan

    _, rolled, raw = part
    con = _task_con()
    try:
        hists, covs = [], []
        if rolled:
            hists.append(Q.histogram(con, files_scan(rolled), tops, bins))
            covs.append(Q.rolled_coverage(con, rolled))
        if raw:
            h, c = Q.spectrum_and_coverage(con, files_scan(raw), tops, bins, since_ns, until_ns)
            hists.append(h)
            covs.append(c)
        return hists, covs
    except FileNotFoundError as e:
        return _missing(e)
    finally:
        con.close()


def _map_days(client, fn, parts: list, kwargs: dict) -> list:
    """fn over every day on the cluster; the results in day order. A day whose task killed every
    worker it ran on stops the command: a workload without that day would be silently wrong."""
    out: dict[str, object] = {}

    def on_result(part, res):
        if isinstance(res, tuple) and len(res) == 2 and res[0] == "missing":
            raise FileNotFoundError(res[1])
        out[part[0]] = res

    def on_crash(part, reason):
        raise UserError(f"workload: the telemetry of {part[0]} {reason}; nothing was reported")

    map_unordered(client, fn, parts, on_result, on_crash, kwargs=kwargs,
                  crash_reason="killed every Dask worker it ran on")
    missing = [p[0] for p in parts if p[0] not in out]
    if missing:  # map_unordered hands every item to on_result or on_crash: this is a bug, never a result
        raise RuntimeError(f"Dask returned no result for {', '.join(missing)}")
    return [out[p[0]] for p in parts]


def _distributed_inputs(client, base, files, step_ns: int, since_ns, until_ns, step, use_rollups: bool):
    """telemetry_query.workload_inputs with the scans of each day done by a Dask task."""
    # lazy: pandas, pyarrow, loaded only when this runs
    import pandas as pd

    # lazy: pandas, pyarrow via store.telemetry_query, loaded only when this runs
    from ioweather.store import telemetry_query as Q

    plan = Q.plan_files(base, since_ns, until_ns, step_ns, use_rollups,
                        on_build=lambda n: step(f"summarizing older files ({n})") if n % 10 == 1 else None,
                        files=files)
    parts = _partitions(plan)
    if not parts:
        return None
    step("scanning telemetry")
    sums = _merge_sums(_map_days(client, partition_sums, parts,
                                 {"step_ns": step_ns, "since_ns": since_ns, "until_ns": until_ns}), step_ns)
    if sums.series.empty:
        return Q.WorkloadInputs(sums, pd.DataFrame(), pd.DataFrame(), {}, plan)
    tops = sums.series.groupby("metric")["top"].max().to_dict()
    step("power spectrum")
    results = _map_days(client, partition_spectrum, parts,
                        {"tops": tops, "bins": W.SPECTRUM_BINS, "since_ns": since_ns, "until_ns": until_ns})
    hists = [h for hs, _ in results for h in hs]
    covs = [c for _, cs in results for c in cs]
    hist = pd.concat(hists, ignore_index=True).groupby(["metric", "bin"], as_index=False)["bytes"].sum()
    cov = pd.concat(covs, ignore_index=True).groupby(["metric", "target"], as_index=False).agg(
        n=("n", "sum"), min_interval_s=("min_interval_s", "min"))
    return Q.WorkloadInputs(sums, hist, cov, tops, plan)


def daily_totals(settings, fs: str, since_ns: int, until_ns: int) -> tuple[np.ndarray, np.ndarray]:
    """(day start in ns, bytes read + written that day) for the days with data in [since, until)."""
    # lazy: pyarrow via store.telemetry_layout, loaded only when this runs
    from ioweather.store.telemetry_layout import connect_duckdb, scan_sql
    # lazy: pandas, pyarrow via store.telemetry_query, loaded only when this runs
    from ioweather.store.telemetry_query import BYTES_METRICS, DAY_NS

    con = connect_duckdb()
    try:
        rows = con.execute(
            f"SELECT time_ns // {DAY_NS} AS day, sum(value) FROM {scan_sql(settings, fs)} "
            f"WHERE metric IN ({', '.join('?' * len(BYTES_METRICS))}) AND time_ns >= ? AND time_ns < ? "
            "AND isfinite(value) GROUP BY day ORDER BY day", [*BYTES_METRICS, since_ns, until_ns]).fetchall()
    finally:
        con.close()
    days = np.array([r[0] for r in rows], np.int64) * DAY_NS
    return days, np.array([r[1] for r in rows], np.float64)


def file_systems(settings) -> list[str]:
    """The file systems that have server-side telemetry in the store."""
    # lazy: pyarrow via store.telemetry_layout, loaded only when this runs
    from ioweather.store.telemetry_layout import list_fs

    return list_fs(settings)


def dataset_fingerprint(settings, fs: str) -> tuple:
    """Files, total size and newest change of the dataset: any import, collect or removal changes it."""
    # lazy: pyarrow via store.telemetry_layout, loaded only when this runs
    from ioweather.store.telemetry_layout import fs_dir

    n = size = newest = 0
    base = fs_dir(settings, fs)
    for day in os.scandir(base):
        if day.is_dir() and day.name.startswith("date="):
            for f in os.scandir(day.path):
                if f.name.endswith(".parquet"):
                    try:
                        st = f.stat()
                    except FileNotFoundError:  # an import removed it since the scandir: counted as a change
                        n += 1
                        continue
                    n, size, newest = n + 1, size + st.st_size, max(newest, st.st_mtime_ns)
    return n, size, newest
