"""Climate vs weather for one job, which metrics matter, and job-feature imports (seed 003; METHODS.md section 7).

Two kinds of jobs have a weather: imported feature rows (tokio-abc: every metric already in the row,
fraction of peak `darshan_normalized_perf_by_max`) and jobs of our own store (Darshan or scheduler
jobs, their weather computed from our telemetry by services/jobs/weather.py, fraction of peak
`fraction_of_peak`). Both go through `climate()`: the motif's history (jobs of the same motif that
started before the job), a box and quartile per metric, Pearson's r of each metric with fraction of
peak across that history, culprits and the verdict.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ioweather.errors import UserError
from ioweather.files import write_atomic
from ioweather.services.jobs import weather as job_weather
from ioweather.stats import correlate
from ioweather.stats.umami import climate, climate_columns, MetricRow, number_or_none, Umami  # noqa: F401 (re-exported: the answer)
from ioweather.views.umami_report import figure_data, render

if TYPE_CHECKING:
    import pandas as pd

PRESETS = ("tokio-abc",)
FEATURE_PERF = "darshan_normalized_perf_by_max"
#: The rows of a tokio-abc UMAMI when abcconfig.json names none, plus what the paper correlates.
DEFAULT_FEATURE_ROWS = ["darshan_normalized_perf_by_max", "coverage_factor_bw", "contention_bw", "contention_opens",
                        "contention_stats", "contention_ops", "fs_ave_mds_cpu", "fs_ave_oss_cpu",
                        "fshealth_ost_most_full_pct", "fshealth_ost_overloaded_oss_count", "jobsdb_concurrent_jobs",
                        "topology_job_max_radius"]
#: Columns that restate performance: correlating them with fraction of peak says nothing.
_PERF_PREFIXES = ("darshan_normalized_perf", "darshan_agg_perf")


@dataclass(frozen=True)
class FeatureWeather:
    """The weather of an imported feature row: its bandwidth (bytes/s; None: unknown). Its metrics are
    columns of the row, shown in the answer's metric rows."""

    performance_bps: float | None

    def answer_json(self) -> dict:
        return {"performance_bps": self.performance_bps}


# ----------------------------------------------------------------------------- import

@dataclass(frozen=True)
class FeatureImport:
    """What `import job-features` stored: set `set` of preset `preset`, `rows` rows of the file's
    `rows_in_file`, of which `rows_kept_by_paper_filters` pass the paper's filters; `config` the
    abcconfig.json read (None when none named a direction). `to_json()` is the command's --json."""

    set: str
    preset: str
    rows: int
    rows_in_file: int
    rows_kept_by_paper_filters: int
    config: str | None

    def to_json(self) -> dict:
        return asdict(self)


def import_job_features(store, csv_path: str, preset: str, config_path: str | None = None,
                        name: str | None = None) -> FeatureImport:
    """Read a feature CSV, derive what it lacks, store it as set `name` (tokio-abc: the system's name)."""
    # lazy: pandas, pyarrow via sources.job_features, loaded only when this runs
    from ioweather.sources import job_features as src
    # lazy: pandas, pyarrow via stats.abc_features, loaded only when this runs
    from ioweather.stats.abc_features import derive, paper_filter
    # lazy: pandas, pyarrow via store.job_features, loaded only when this runs
    from ioweather.store import job_features as fstore

    if preset not in PRESETS:
        raise UserError(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
    raw = src.read_csv(csv_path)
    system = name or src.system_from_name(csv_path)
    if not system:
        raise UserError(f"cannot tell the system from the file name {Path(csv_path).name!r}: give --name")
    cfg_path = Path(config_path) if config_path else Path(csv_path).parent / "abcconfig.json"
    config = src.read_config(cfg_path) if (config_path or cfg_path.is_file()) else {}
    ppn = int(config.get("job_ppns", {}).get(system, 16))
    df = derive(raw, system, ppn=ppn)
    df["_paper_filter"] = paper_filter(df)
    stored = {"directions": {k: bool(v) for k, v in config.get("metric_big_is_good", {}).items()},
              "umami_rows": config.get("umami_row_order") or DEFAULT_FEATURE_ROWS,
              "labels": config.get("metric_labels", {}), "perf": FEATURE_PERF}
    n = fstore.write_set(store, system, preset, str(Path(csv_path).resolve()), df, stored)
    return FeatureImport(set=system, preset=preset, rows=n, rows_in_file=len(raw),
                         rows_kept_by_paper_filters=int(df["_paper_filter"].sum()),
                         config=str(cfg_path) if stored["directions"] else None)


# ----------------------------------------------------------------------------- correlations

@dataclass(frozen=True)
class CorrelationRow:
    """Pearson's r of `performance` (a performance column) with `metric` over `n` finite pairs, its p-value,
    `strength` (p < 0.01 strong, < 0.05 weak, else none) and `magnitude` (the paper's reading of |r|)."""

    metric: str
    n: int
    r: float | None
    p: float | None
    strength: str
    performance: str
    magnitude: str


@dataclass(frozen=True)
class CorrelationListing:
    """`correlations --json`: each row's metric, r, p, n, strength and magnitude (not its performance
    column), in the answer's order."""

    rows: list[CorrelationRow]

    def to_json(self) -> list[dict]:
        return [{"metric": r.metric, "r": r.r, "p": r.p, "n": r.n, "strength": r.strength, "magnitude": r.magnitude}
                for r in self.rows]


@dataclass(frozen=True)
class Correlations:
    """The answer to "which metrics matter?": Pearson's r of fraction of peak with each metric over the
    `jobs` jobs with a weather (imported feature rows and our own jobs), optionally of one file system,
    motif or feature set: one `CorrelationRow` per metric and performance column. `to_json()` is the whole
    answer; `correlations --json` prints `listing()`'s."""

    fs: str | None
    motif: str | None
    system: str | None
    jobs: int
    rows: list[CorrelationRow]

    def to_json(self) -> dict:
        return asdict(self)

    def listing(self) -> CorrelationListing:
        return CorrelationListing(self.rows)


def metric_columns(df: pd.DataFrame) -> list[str]:
    """Numeric metric columns of a feature table: not identifiers (`_...`), flags (`...?`) or performance."""
    # lazy: pandas, pyarrow, loaded only when this runs
    import pandas as pd
    out = []
    for c in df.columns:
        if c.startswith("_") or c.endswith("?") or c.endswith("_flagged") or c.startswith(_PERF_PREFIXES):
            continue
        if c in ("fraction_of_peak", "performance_bps", "start_ns", "end_ns"):
            continue
        if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c]):
            out.append(c)
    return out


def _feature_frame(store, system=None, fs=None, motif=None, all_rows=False) -> pd.DataFrame:
    # lazy: pandas, pyarrow, loaded only when this runs
    import pandas as pd
    # lazy: pandas, pyarrow via store.job_features, loaded only when this runs
    from ioweather.store import job_features as fstore

    df = fstore.load(store, [system] if system else None)
    if df.empty:
        return df
    keep = df["_paper_filter"].astype(bool) if not all_rows else pd.Series(True, index=df.index)
    if fs:
        keep &= df["_file_system"].astype(str) == fs
    if motif:
        keep &= df["_benchmark_id"].astype(str) == motif
    return df[keep]


def correlations(store, fs: str | None = None, motif: str | None = None, system: str | None = None,
                 metrics: list[str] | None = None, all_rows: bool = False) -> Correlations:
    """Pearson's r of fraction of peak with every metric over the jobs in the store (imported features and
    our own jobs' weather), optionally of one file system, motif or feature set."""
    # lazy: pandas, pyarrow, loaded only when this runs
    import pandas as pd
    parts = []
    feats = _feature_frame(store, system, fs, motif, all_rows)
    if not feats.empty:
        parts.append((FEATURE_PERF, feats))
    if system is None:
        own = job_weather.weather_frame(store, fs=fs, motif=motif)
        if not own.empty:
            parts.append(("fraction_of_peak", own))
    if not parts:
        where = " and ".join(x for x in (f"file system {fs!r}" if fs else "", f"motif {motif!r}" if motif else "",
                                          f"set {system!r}" if system else "") if x)
        raise UserError("no jobs with a weather in the store" + (f" for {where}" if where else "")
                        + "; import some with `ioweather import job-features CSV --preset tokio-abc` "
                          "or ingest Darshan logs with telemetry for their window")
    rows, n_jobs = [], 0
    for perf, df in parts:
        n_jobs += len(df)
        cols = metrics or metric_columns(df)
        unknown = [m for m in cols if m not in df.columns]
        if metrics and len(unknown) == len(cols) and len(parts) == 1:
            raise UserError(f"no metric named {', '.join(unknown)}; e.g. {', '.join(metric_columns(df)[:6])}")
        y = pd.to_numeric(df[perf], errors="coerce").to_numpy(float)
        for r in correlate.correlation_rows(y, {m: pd.to_numeric(df[m], errors="coerce").to_numpy(float)
                                                for m in cols if m in df.columns}):
            rows.append(CorrelationRow(**r, performance=perf, magnitude=_magnitude(r["r"])))
    return Correlations(fs=fs, motif=motif, system=system, jobs=n_jobs, rows=rows)


def _magnitude(r: float | None) -> str:
    """The paper's reading of |r|: moderate above 0.3, negligible below 0.1, weak between."""
    if r is None:
        return "none"
    a = abs(r)
    return "moderate" if a > correlate.MODERATE_R else ("negligible" if a < 0.1 else "weak")


# ----------------------------------------------------------------------------- climate vs weather

def _matrix(df: pd.DataFrame, cols: list[str]) -> np.ndarray:
    """A feature table's columns `cols` as floats (NaN where missing or not a number)."""
    # lazy: pandas, pyarrow, loaded only when this runs
    import pandas as pd
    out = np.full((len(df), len(cols)), np.nan)
    for c, m in enumerate(cols):
        if m in df.columns:
            out[:, c] = pd.to_numeric(df[m], errors="coerce").to_numpy(float, na_value=np.nan)
    return out


def feature_umami(store, job_id: str, system: str | None = None, motif: str | None = None,
                  fs: str | None = None) -> Umami | None:
    """UMAMI of an imported feature row whose `_jobid` is `job_id`; None when no set holds it."""
    # lazy: pandas, pyarrow, loaded only when this runs
    import pandas as pd
    # lazy: pandas, pyarrow via store.job_features, loaded only when this runs
    from ioweather.store import job_features as fstore

    sets = {s["name"]: s for s in fstore.sets(store)}
    if not sets:
        return None
    df = _feature_frame(store, system, all_rows=True)
    if df.empty:
        return None
    hit = df[df["_jobid"].astype(str) == str(job_id)]
    if hit.empty:
        return None
    # tokio-abc runs several benchmarks (motifs) in one scheduler job: one row each
    for col, want, opt in (("_benchmark_id", motif, "--motif"), ("_file_system", fs, "--fs"), ("_set", None, "--system")):
        if want is not None:
            hit = hit[hit[col].astype(str) == want]
            if hit.empty:
                raise UserError(f"job id {job_id} has no row with {opt} {want}")
        if len(hit) > 1 and hit[col].nunique() > 1:
            raise UserError(f"job id {job_id} has {len(hit)} rows: give {opt} (one of "
                            f"{', '.join(sorted(set(hit[col].astype(str))))})")
    row = hit.iloc[0]
    cfg = sets[row["_set"]]["config"]
    df = df[df["_paper_filter"].astype(bool)].copy()
    df["start_ns"] = (pd.to_numeric(df["_datetime_start"], errors="coerce") * 1e9).astype("Int64")
    start_ns = int(float(row["_datetime_start"]) * 1e9)
    platform = df["_test_platform"] == row["_test_platform"]
    same = platform & (df["_benchmark_id"] == row["_benchmark_id"])
    history = df[same & (df["start_ns"] < start_ns) & (df["_jobid"].astype(str) != str(job_id))]
    metrics = [m for m in cfg.get("umami_rows") or DEFAULT_FEATURE_ROWS if m in df.columns]
    for extra in ("coverage_factor_bw", "jobsdb_concurrent_jobs"):
        if extra in df.columns and extra not in metrics:
            metrics.append(extra)
    job = {"id": str(job_id), "motif": f"{row['_benchmark_id']} on {row['_test_platform']}", "start_ns": start_ns,
           "values": {m: row.get(m) for m in metrics}}
    cols = climate_columns(metrics, FEATURE_PERF)
    doc = climate(job, history["start_ns"].to_numpy(np.int64), _matrix(history, cols), metrics, FEATURE_PERF,
                  cfg.get("directions"), cfg.get("labels"), fs_h=_matrix(df[platform], cols))
    perf_mibps = number_or_none(row.get("darshan_agg_perf_by_slowest_posix"))
    return replace(doc, source=f"job features ({row['_set']})",
                   weather=FeatureWeather(None if perf_mibps is None else perf_mibps * 1024 * 1024))


def umami_for_run(store, run_id: str, fs: str | None = None) -> Umami:
    """A benchmark run as a job of its motif (key `bench:<run id>`): its weather against the climate
    of the other runs of the same motif and direction, as `ioweather umami` does for a user job."""
    # lazy: sqlalchemy via store.bench, loaded only when this runs
    from ioweather.store import bench as bstore

    run = bstore.get_run(store, run_id)
    if run is None:
        raise UserError(f"no benchmark run {run_id!r} (see `ioweather bench summary`)")
    job = _as_job(run)
    name = fs or run["fs"]  # without telemetry for it the verdict says "no data", never another fs's weather
    df = bstore.results_frame(store, run["motif"])
    peers = [_as_job({"run_id": rid, "motif": g["motif"].iloc[0], "start_ns": g["start_ns"].iloc[0],
                      "end_ns": g["end_ns"].iloc[0], "hosts": g["hosts"].iloc[0], "directory": None,
                      "results": g.to_dict("records")}) for rid, g in df.groupby("run_id")]
    key = job.motif(name)
    return job_weather.umami_among(store, job, name, [p for p in peers if p.motif(name) == key], source="bench")


def _as_job(run: dict) -> job_weather.Job:
    res = run["results"]
    best = max(res, key=lambda r: r.get("bytes") or 0)
    by = {d: sum((r.get("bytes") or 0) for r in res if r["direction"] == d) for d in ("read", "write")}
    if not by["read"] and not by["write"]:  # metadata: no bytes moved; the run's operation is its direction
        by = {"read" if best["direction"] == "stat" else "write": 1}
    hosts = str(run.get("hosts") or "")
    return job_weather.Job(key=f"bench:{run['run_id']}", id=f"bench:{run['run_id']}", jobid=None,
                           exe=f"bench {run['motif']}", nnodes=max(1, hosts.count(",") + 1) if hosts else 1, start_ns=int(run["start_ns"]),
                           end_ns=int(run["end_ns"]), bytes_read=by.get("read"), bytes_written=by.get("write"),
                           perf_bps=float(best.get("bw_bps") or "nan"), mounts=[run["directory"]] if run.get("directory") else [])


def umami(store, job_id: str, system: str | None = None, fs: str | None = None, motif: str | None = None) -> Umami:
    """The UMAMI answer of `job_id`: an imported feature row, a Darshan job (log hash prefix or job id)
    or a scheduler job. One-line UserError when no such job is known."""
    job_id = str(job_id).strip()
    if not job_id:
        raise UserError("give a job id")
    if job_id.startswith("bench:"):  # a regression benchmark run is a job of its motif
        return umami_for_run(store, job_id[len("bench:"):], fs=fs)
    doc = job_weather.umami_for_job(store, job_id, fs=fs)
    if doc is not None:
        return doc
    doc = feature_umami(store, job_id, system, motif, fs)
    if doc is not None:
        return doc
    raise UserError(f"no job {job_id!r} in the store (not a Darshan log hash or job id, a scheduler job, "
                    f"or an imported feature row)")


def write_html(doc: Umami, out: str) -> None:
    """The UMAMI page of `doc` as one self-contained file (plotly.js inlined)."""
    # lazy: plotly, loaded only when this runs
    import plotly

    js_path = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"
    write_atomic(out, render(doc.to_json(), js_path.read_text()))


# ----------------------------------------------------------------------------- dashboard

@dataclass(frozen=True)
class JobPanel:
    """The job page's climate-vs-weather panel: the job's UMAMI answer, or why it has none (`reason`). Its
    JSON is the weather verdict with its numbers and the figure data (views.umami_report.figure_data) with
    `available: true`, or `{"available": false, "reason"}`."""

    umami: Umami | None
    reason: str | None = None

    def to_json(self) -> dict:
        if self.umami is None:
            return {"available": False, "reason": self.reason}
        return {"available": True, **figure_data(self.umami.to_json())}


def job_panel(store, job_id: str) -> JobPanel:
    """The job page's climate-vs-weather panel of `job_id` (JobPanel)."""
    try:
        doc = job_weather.umami_for_job(store, job_id)
    except UserError as e:
        return JobPanel(None, str(e))
    if doc is None:
        return JobPanel(None, f"no job {job_id!r} in the store")
    return JobPanel(doc)
