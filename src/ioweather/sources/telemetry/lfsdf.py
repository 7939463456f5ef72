"""Archives of repeated `lfs df` / `lfs df -i` runs -> capacity and inode gauges per OST and MDT.

pytokio's collectors append one snapshot after another, each introduced by `BEGIN <unix seconds>`
(sample_ost-fullness.txt.gz: 70 snapshots of four file systems); a single saved `lfs df` has no
such line and needs its time from the caller (`--at`). The parsing is capacity.parse_lfs_df, the
one the live `capacity` source uses: the same output, read the same way.

Gauges are levels at the snapshot time; `interval_s` is the archive's usual spacing (the median
gap between snapshots), NaN for a single snapshot.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ioweather.errors import UserError
from ioweather.sources.telemetry.base import lustre_fsname
from ioweather.sources.telemetry.capacity import parse_lfs_df
from ioweather.sources.telemetry.importers import Importer
from ioweather.sources.telemetry.textfiles import TextImport, read_members

COLUMNS = ["time_ns", "target", "metric", "value", "interval_s"]


@dataclass
class Dated:
    """What reading an archive of dated outputs left aside: notes, unreadable lines, undated outputs."""

    notes: list[str] = field(default_factory=list)
    bad: int = 0
    first_bad: str | None = None
    undated: int = 0


def dated_snapshots(source: str, parse, at_ns: int | None, advance: Callable[[int], None] | None, dated: Dated,
                    known: Callable[[str, list], list] = lambda name, skipped: skipped) -> Iterator[tuple[int, dict]]:
    """(time ns, snapshot) of every output in `source` (text, .gz, tar/.tgz, directory) that `parse`
    finds, dated by its BEGIN line or else `at_ns`; what is left aside goes to `dated`. `known` takes a
    member's skipped lines and returns those that are unreadable (it may explain the others in a note)."""
    for member in read_members(source):
        if member.damage:
            dated.notes.append(f"{member.damage}: the rest is lost")
        skipped: list = []
        for when, snap in parse(member.text, skipped):
            if when is None and at_ns is None:
                dated.undated += 1
                continue
            yield (at_ns if when is None else when * 1_000_000_000), snap
        skipped = known(member.name, skipped)
        if skipped:
            dated.bad += len(skipped)
            dated.first_bad = dated.first_bad or f"{member.name} line {skipped[0][0]}: {skipped[0][1][:80]!r}"
        if advance:
            advance(1)


def read_lfsdf(source: str, at_ns: int | None = None, fs: str | None = None,
               advance: Callable[[int], None] | None = None) -> TextImport:
    """All snapshots in `source` (text, .gz, tar/.tgz, directory) -> one chunk of gauge rows.

    `lfs df` on a client lists every Lustre file system it mounts. When `fs` is the name of one
    of them (the dataset name the collector gives Lustre targets), only its targets are kept."""
    times, targets, metrics, values = [], [], [], []
    dated = Dated()

    def known(name: str, skipped: list) -> list:
        inactive = [x for x in skipped if "inactive device" in x[1]]
        if inactive:  # a target the client cannot reach: a known line without numbers, not garbage
            dated.notes.append(f"{name}: {len(inactive)} inactive targets without numbers")
        return [x for x in skipped if "inactive device" not in x[1]]

    for t, snap in dated_snapshots(source, parse_lfs_df, at_ns, advance, dated, known):
        for target, ms in snap.items():
            for metric, value in ms.items():
                times.append(t)
                targets.append(target)
                metrics.append(metric)
                values.append(value)
    return dated_rows(source, "`lfs df`", "snapshots", times, targets, metrics, values, fs, dated)


def dated_rows(source, what: str, units: str, times, targets, metrics, values, fs: str, dated: Dated) -> TextImport:
    """The rows of archived Lustre command outputs (`lfs df`, `lctl dl -t`), each dated by its BEGIN line:
    one reading per (time, target, metric), kept to file system `fs` when the archive holds several."""
    notes, undated, bad, first_bad = dated.notes, dated.undated, dated.bad, dated.first_bad
    if undated and not times:
        raise UserError(f"{source}: {what} output without a `BEGIN <unix seconds>` line: give --at TIME "
                        "(when it was taken)")
    if undated:
        notes.append(f"{undated} {units} without a BEGIN line skipped (give --at TIME to date them)")
    if not times:
        why = f" ({bad} unreadable lines, first {first_bad})" if bad else ""
        raise UserError(f"{source}: no {what} lines found{why}")
    t = np.asarray(times, dtype=np.int64)
    distinct = np.unique(t)
    step = float(np.median(np.diff(distinct))) / 1e9 if distinct.size > 1 else np.nan
    rows = pd.DataFrame({"time_ns": t, "target": targets, "metric": metrics,
                         "value": np.asarray(values, dtype=np.float64), "interval_s": step})
    n = len(rows)
    rows = rows.drop_duplicates(subset=["time_ns", "target", "metric"], keep="last")
    if len(rows) < n:
        notes.append(f"{n - len(rows)} repeated (time, target, metric) readings: kept the last of each")
    if bad:
        notes.append(f"{bad} unreadable lines skipped (first: {first_bad})")
    owner = rows["target"].map(lambda x: lustre_fsname(x) or x)
    names = sorted(owner.unique())
    if fs in names and len(names) > 1:
        rows = rows[owner == fs]
        notes.append(f"kept the targets of {fs}; those of {', '.join(n for n in names if n != fs)} left out")
    elif len(names) > 1:
        notes.append(f"targets of {len(names)} Lustre file systems ({', '.join(names)}) in one dataset: "
                     "give --fs one of these names to import only its targets")
    rows = rows.sort_values(["time_ns", "target", "metric"], kind="stable").reset_index(drop=True)
    return TextImport(rows, notes, bad_lines=bad)


class LfsdfImporter(Importer):
    kind = "lfsdf"

    def chunks(self, advance: Callable[[int], None]) -> Iterator[TextImport]:
        chunk = read_lfsdf(self.source, self.at_ns, self.fs, advance=advance)
        self.notes += chunk.notes
        self.bad_lines = chunk.bad_lines
        yield chunk
