"""Kernel and Lustre counters around an io-model run (METHODS.md section 2.1, seed 000 Table 2).

Each snapshot is a flat {name: integer} dict; a run records `after - before`.
The paper explained its latency classes with exactly these deltas (page-cache
hits/misses, RPC counts), so they are stored with every run:

- `/proc/self/io` of the process that ran the loop (rchar, syscr, read_bytes ...);
- `/proc/vmstat` and `/proc/meminfo` of the node (meminfo's kB values in bytes);
- Lustre client stats when a Lustre client is mounted: `llite/*/stats`,
  `llite/*/read_ahead_stats`, `osc/*/stats` under /proc/fs/lustre or
  /sys/kernel/debug/lustre. Lines look like
  `read_bytes  25673 samples [bytes] 1 3366225 145121869 [sumsq]`; a counter is
  recorded as `<file>:<name>` (the sample count) and `<file>:<name>.sum`.

Reading the files is a source's job; nothing here computes statistics beyond the
subtraction that turns two counter readings into a delta.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

LUSTRE_GLOBS = (
    "proc/fs/lustre/llite/*/stats",
    "proc/fs/lustre/llite/*/read_ahead_stats",
    "proc/fs/lustre/osc/*/stats",
    "sys/kernel/debug/lustre/llite/*/stats",
    "sys/kernel/debug/lustre/llite/*/read_ahead_stats",
    "sys/kernel/debug/lustre/osc/*/stats",
)
_LUSTRE_SKIP = {"snapshot_time", "start_time", "elapsed_time"}


def _read(path: str | Path) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""  # a counter file that vanished or is unreadable is simply not recorded


def parse_key_values(text: str) -> dict[str, int]:
    """`key value [kB]` or `key: value` lines -> {key: value}; kB values become bytes."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.replace(":", " ").split()
        if len(parts) < 2:
            continue
        try:
            value = int(parts[1])
        except ValueError:
            continue
        if len(parts) > 2 and parts[2] == "kB":
            value *= 1024
        out[parts[0]] = value
    return out


def parse_lustre_stats(text: str, prefix: str) -> dict[str, int]:
    """One Lustre stats file -> {prefix:name: samples, prefix:name.sum: sum}."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 2 or parts[0].rstrip(":") in _LUSTRE_SKIP:
            continue
        try:
            out[f"{prefix}:{parts[0]}"] = int(parts[1])
        except ValueError:
            continue
        # name count samples [unit] min max sum [sumsq]
        if len(parts) >= 7 and parts[2] == "samples":
            try:
                out[f"{prefix}:{parts[0]}.sum"] = int(parts[6])
            except ValueError:
                pass
    return out


def proc_self_io() -> dict[str, int]:
    return parse_key_values(_read("/proc/self/io"))


def vmstat() -> dict[str, int]:
    return parse_key_values(_read("/proc/vmstat"))


def meminfo() -> dict[str, int]:
    return parse_key_values(_read("/proc/meminfo"))


def lustre(root: str | Path = "/") -> dict[str, int]:
    """All Lustre client counters found under `root` (empty without a Lustre client)."""
    out: dict[str, int] = {}
    root = str(root)
    for pattern in LUSTRE_GLOBS:
        for path in sorted(glob.glob(os.path.join(root, pattern))):
            rel = os.path.relpath(path, root)
            out.update(parse_lustre_stats(_read(path), rel))
    return out


def node_snapshot(lustre_root: str | Path = "/") -> dict[str, dict[str, int]]:
    return {"vmstat": vmstat(), "meminfo": meminfo(), "lustre": lustre(lustre_root)}


def delta(before: dict[str, int], after: dict[str, int], *, keep_zero: bool = False) -> dict[str, int]:
    """after - before for keys present in both; zeros dropped unless asked (vmstat has ~200 keys)."""
    out = {k: after[k] - before[k] for k in after if k in before}
    return out if keep_zero else {k: v for k, v in out.items() if v != 0}


def node_delta(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    return {f"{name}_delta": delta(before[name], after[name]) for name in before}
