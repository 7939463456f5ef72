"""The rule that links a Darshan log to a scheduler job (store/scheduler.py's docstring states it): pure, so that
the store's reads through SQLAlchemy and those through `sqlite3` alone (store/sqlite_reads.py) apply the same one."""

from __future__ import annotations

import os

#: Clock skew allowed between a Darshan log's times (compute node) and the scheduler's (controller).
LINK_SLACK_NS = 60 * 1_000_000_000


def exe_name(exe: str | None) -> str | None:
    """The file name of a log's executable (Darshan's exe holds the command line)."""
    if not exe or not exe.strip():
        return None
    return os.path.basename(exe.split()[0]) or None


def match_darshan(log: dict, candidates: list[dict], now_ns: int) -> dict:
    """Apply the link rule to one log and the scheduler jobs with its id (or its exe's name)."""
    out = {"log_hash": log["log_hash"], "darshan_jobid": log["jobid"], "exe": log["exe"], "cluster": None,
           "jobid": None, "how": None, "candidates": 0, "reason": None}
    start, end = log["start_ns"], log["end_ns"]
    by_id = bool(log["jobid"])

    def job_end(j):
        return j["end_ns"] if j["end_ns"] is not None else now_ns

    if by_id:
        if start is None:  # a log without times: the id alone decides
            fits = candidates
        else:
            last = end if end is not None else start
            fits = [j for j in candidates if j["start_ns"] - LINK_SLACK_NS <= last and start <= job_end(j) + LINK_SLACK_NS]
        if not fits:
            out["reason"] = (f"job id {log['jobid']} not in the scheduler data" if not candidates else
                             f"job id {log['jobid']} is known only at other times (a reused id)")
            return out
        best = min(fits, key=lambda j: (abs(j["start_ns"] - (start or j["start_ns"])), j["cluster"]))
        how = "jobid"
    else:
        if start is None or end is None:
            out["reason"] = "no job id and no times in the log"
            return out
        fits = [j for j in candidates if j["start_ns"] - LINK_SLACK_NS <= start and end <= job_end(j) + LINK_SLACK_NS]
        if not fits:
            out["reason"] = f"no job id; no scheduler job named {exe_name(log['exe'])!r} ran over the log's times"
            return out
        best = min(fits, key=lambda j: (job_end(j) - j["start_ns"], j["cluster"], j["jobid"]))
        how = "time+exe"
    out.update(cluster=best["cluster"], jobid=best["jobid"], how=how, candidates=len(fits))
    return out
