"""Probe samples as a latency table for the performance-factor analysis (`factors density/fit --probe`, the Factors page).

The probe's ops map onto the io-model's op names where they measure the same thing, so a
model fitted on io-model runs classifies probe samples too.
"""

from __future__ import annotations

import pandas as pd

from ioweather.errors import UserError
from ioweather.sources.latency_table import PROBE_OP_TO_IOMODEL
from ioweather.services.probe.slowdown import known_targets
from ioweather.store import probe as probe_store


def load_probe_durations(store, op: str, target: str | None, since_ns: int | None, until_ns: int | None) -> tuple[str, pd.DataFrame]:
    """(target, frame) of one probe op's successful samples: duration_s, start_ns, op."""
    if op not in probe_store.OPS:
        raise UserError(f"unknown probe op {op!r}; choose one of {', '.join(probe_store.OPS)}")
    known = known_targets(store, target)
    if not known:
        raise UserError("no probe samples in the store (run 'ioweather probe run' first)")
    if len(known) > 1:
        raise UserError(f"the store holds several targets ({', '.join(known)}): choose one with --target")
    target = known[0]
    df, _ = probe_samples(store, target, op, since_ns, until_ns)
    df["op"] = PROBE_OP_TO_IOMODEL.get(op, op)
    return target, df


def probe_samples(store, target: str, op: str, since_ns: int | None, until_ns: int | None) -> tuple[pd.DataFrame, int]:
    """(start_ns and duration_s of one probe op's successful samples, how many others were left out)."""
    s = probe_store.read_samples(store, target, since_ns=since_ns, until_ns=until_ns, ops=[op])
    # Errors and timeouts did not complete: their durations say nothing about the I/O path.
    keep = (s["op"] == probe_store.OPS.index(op)) & (s["status"] == 0)
    df = pd.DataFrame({"start_ns": s["start_ns"][keep], "duration_s": s["duration_ns"][keep] / 1e9})
    if len(df) == 0:
        raise UserError(f"no successful {op} samples for target {target!r} in this window")
    return df, int((~keep).sum())


def probe_block_bytes(store, target: str) -> int | None:
    """The block size of the target's probe runs, when they all used the same one."""
    sizes = {r["block_bytes"] for r in probe_store.runs(store, target)}
    return sizes.pop() if len(sizes) == 1 else None
