"""The probe targets' lifecycle (issue 30): which targets the store holds, in which state, and retiring one.

A target is `starting` until its first samples are stored, `active` while its probe reports, `stale` once its newest sample is older than the Status page's
limit (`probe_status.stale_after_s`: 10 probe periods, at least a minute), `abandoned` after
`probe_status.ABANDON_AFTER_S` of silence (or without a sample since its last run started that long ago) (no longer deciding `slowdown --check`), `retired` once an admin says so
(`probe retire`: kept, out of Status, /metrics and --check, back as soon as a probe of it runs again).
"""

from __future__ import annotations

import time

from ioweather.errors import from_os_error
from ioweather.services.probe.status import abandoned, stale_after_s
from ioweather.services.probe.slowdown import known_targets
from ioweather.store import probe as probe_store
from ioweather.store.probe_aggregates import sample_range
from ioweather.units import ns_to_iso


def list_targets(store, now_ns: int | None = None) -> list[dict]:
    """One row per target: its file system's name, first and last sample, runs, host of the last run, state
    (module docstring). The file system and host are its newest run's: a run records them when it starts."""
    now = time.time_ns() if now_ns is None else now_ns
    retired = set(probe_store.retired_targets(store))
    by_target: dict[str, list[dict]] = {}
    for r in probe_store.runs(store):
        by_target.setdefault(r["target"], []).append(r)
    rows = []
    for target, runs in sorted(by_target.items()):
        span = sample_range(store, target)
        last = runs[-1]
        age_s = None if span is None else max(0.0, (now - span[1]) / 1e9)
        if target in retired:
            state = "retired"
        elif abandoned(age_s, last, now):
            state = "abandoned"
        elif age_s is None:
            state = "starting"  # its run began less than a day ago and has stored nothing yet
        elif age_s > stale_after_s(last["interval_s"]):
            state = "stale"
        else:
            state = "active"
        rows.append({"target": target, "state": state, "host": last["host"], "fs": last["fs"],
                     "directory": last["directory"],
                     "runs": len(runs), "first_sample": ns_to_iso(span[0]) if span else None,
                     "last_sample": ns_to_iso(span[1]) if span else None, "last_sample_age_s": age_s})
    return rows


def retire(store, target: str) -> dict:
    """Retire `target`; its row of `list_targets` as it was (an `active` one still has a probe writing)."""
    known_targets(store, target)
    row = next(r for r in list_targets(store) if r["target"] == target)
    probe_store.retire(store, target)
    return row


def purge(store, target: str) -> dict:
    """Delete the target and all its data; the counts of what went (`runs`, `samples`, `pieces`, `files`)."""
    known_targets(store, target)
    done = probe_store.purge(store, target)
    removed = 0
    for rel in done.pop("files"):
        path = store.parquet_dir / rel if store.parquet_dir is not None else None
        if path is None:
            continue
        try:
            path.unlink()
            removed += 1
        except FileNotFoundError:
            pass
        except OSError as e:
            raise from_os_error(path, e, "remove archived samples") from None
    done["files"] = removed
    return done
