"""One Darshan log for `ioweather job` and `why`: read, characterize, findings and verdict, and its
HTML report. No store here: `job LOG` does not load SQLAlchemy (the archive is services/jobs/darshan.py).
"""

from __future__ import annotations

from ioweather.sources.darshan_log import read_log
from ioweather.sources.thresholds_file import load
from ioweather.stats.damage import drop_impossible
from ioweather.stats.findings import job_findings, job_verdict, Thresholds
from ioweather.stats.job import characterize, file_columns, per_rank_with_shared
from ioweather.stats.job_files import TOP_FILES, top_files
from ioweather.views.job_report import render_job_html

MiB = 1 << 20

#: Keys renamed to the unit rule (`read_bytes`, `_bps` rates in bytes/s). The old keys stay one release
#: beside the new ones (docs/darshan.md documents them); new commands print only the new ones.
BYTE_KEYS = {"bytes_read": "read_bytes", "bytes_written": "write_bytes", "by_bytes_read": "by_read_bytes",
             "by_bytes_written": "by_write_bytes"}
RATE_KEYS = {"agg_perf_by_slowest_mibps": "agg_perf_by_slowest_bps", "mibps": "bps", "mibps_per_node": "per_node_bps",
             "mibps_per_node_mean": "per_node_bps_mean"}
BOX_KEYS = ("min", "q1", "median", "q3", "max")


def _bps(mibps):
    return None if mibps is None else mibps * MiB


def with_unit_keys(obj):
    """`obj` with each old byte or MiB/s key followed by its unit-rule twin (values in bytes and bytes/s)."""
    if isinstance(obj, list):
        return [with_unit_keys(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    out = {}
    for k, v in obj.items():
        out[k] = with_unit_keys(v)
        if k in BYTE_KEYS:
            out[BYTE_KEYS[k]] = out[k]
        elif k in RATE_KEYS and (v is None or isinstance(v, (int, float))):
            out[RATE_KEYS[k]] = _bps(v)
        elif k == "mibps_per_node_by_project":
            out["per_node_bps_by_project"] = {**v, "projects": [{**p, **{b: _bps(p[b]) for b in BOX_KEYS}}
                                                                for p in v["projects"]]}
    return out


def load_thresholds(path: str) -> object:
    """The finding thresholds of `--thresholds FILE` (TOML or JSON), checked: a bad file is one line."""
    return Thresholds.from_mapping(load(path), f"thresholds file {path}")


def job_report(path: str, *, cores_per_node: int | None = None, thresholds_file: str | None = None,
               dxt: bool = False) -> tuple[dict, object]:
    """(the JSON report of one log, the log itself)."""
    thresholds = load_thresholds(thresholds_file) if thresholds_file else Thresholds()
    log, damage = drop_impossible(read_log(path, dxt=dxt, heatmaps=False))
    rep = characterize(log, cores_per_node=cores_per_node)
    if damage:
        rep["job"]["damage"] = damage
    rep["findings"] = job_findings(log, rep, thresholds)
    v = job_verdict(rep["findings"], rep, thresholds)
    # the verdict first: it is what a reader acts on
    rep = {"verdict": v["text"], "verdict_actions": v["actions"], "verdict_saving_s": v["saving_s"], **rep}
    # optional regions (DXT, heatmaps) that could not be read are named: the counters above stand without them
    warnings = list(log.warnings) + [f"{m} region of the log left out: {why}" for m, why in log.damaged.items()]
    if warnings:
        rep["warnings"] = warnings
    return rep, log


def log_top_files(log, n: int = TOP_FILES) -> list[dict]:
    """The files of `log` that moved the most, ranked as the job page ranks the stored table."""
    return top_files(file_columns(log), n)


def job_html(rep: dict, log, source: str) -> str:
    """The self-contained HTML report of `job_report`'s (rep, log) (read with dxt=True for the timeline)."""
    top = [{"name": f["name"] or f"(record {f['record_id']})", "module": f["module"], "sharing": f["sharing"],
            "bytes": f["moved_bytes"]} for f in log_top_files(log)]
    pr, how = per_rank_with_shared(log)
    return render_job_html({**rep, "top_files": top}, pr, log.dxt, source=source, per_rank_how=how,
                           damaged=log.damaged)
