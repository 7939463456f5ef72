"""Archives of `lctl dl -t` (a Lustre client's devices and the server NID each is connected to) ->
state and failover rows per OST and MDT.

pytokio's collectors save one listing after another, each introduced by `BEGIN <unix seconds>`
(sample_ost-map.txt.gz); a single saved listing has no such line and needs its time (`--at`).
A line reads

      4 UP osc snx11035-OST0014-osc-ffff885f81a64000 8dbdc7f6-... 5 10.100.101.25@o2ib2
    index state type name                             uuid        refs  target NID (-t)

Only the osc and mdc devices name targets ("snx11035-OST0014" from "snx11035-OST0014-osc-ffff...").
The telemetry layout holds numbers, so a state and a NID are carried in the metric name with
the value 1: `lctl_state_<state>` (lower case; UP, ST, IN, AT and whatever else a Lustre version
prints, kept as it came so that an unknown state is shown, not dropped) and `lctl_nid:<nid>`.
"""

from __future__ import annotations

import re
from collections.abc import Callable


from ioweather.sources.telemetry.importers import Importer
from ioweather.sources.telemetry.lfsdf import Dated, dated_rows, dated_snapshots
from ioweather.sources.telemetry.textfiles import TextImport

STATE_PREFIX = "lctl_state_"
NID_PREFIX = "lctl_nid:"
_TARGET = re.compile(r"^(?P<target>[A-Za-z0-9_.-]+-(?:OST|MDT)[0-9a-fA-F]{4})-(?:osc|mdc)-")
_STATE = re.compile(r"^[A-Za-z0-9]{1,8}$")
_NID = re.compile(r"^[A-Za-z0-9_.:@-]{1,64}$")


def parse_lctl_dl(text: str, skipped: list | None = None) -> list[tuple[int | None, dict[str, tuple[str, str | None]]]]:
    """`lctl dl -t` output -> [(unix seconds or None, {target: (state, nid or None)})]."""
    snapshots: list = []
    current: dict[str, tuple[str, str | None]] = {}
    when: int | None = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        f = raw.split()
        if not f:
            continue
        if f[0] == "BEGIN" and len(f) == 2 and f[1].isdigit():
            if current:
                snapshots.append((when, current))
            current, when = {}, int(f[1])
            continue
        if len(f) < 6 or not f[0].isdigit() or not _STATE.match(f[1]):
            if skipped is not None:
                skipped.append((lineno, raw))
            continue
        if f[2] not in ("osc", "mdc"):
            continue  # mgc, lov, lmv, ... name no target
        m = _TARGET.match(f[3])
        if not m:
            if skipped is not None:
                skipped.append((lineno, raw))
            continue
        nid = f[6] if len(f) > 6 and _NID.match(f[6]) else None
        current[m.group("target")] = (f[1].lower(), nid)
    if current:
        snapshots.append((when, current))
    return snapshots


def read_lctl(source: str, at_ns: int | None = None, fs: str | None = None,
              advance: Callable[[int], None] | None = None) -> TextImport:
    """All listings in `source` (text, .gz, tar/.tgz, directory) -> one chunk of rows (value 1)."""
    times, targets, metrics = [], [], []
    dated = Dated()
    for t, snap in dated_snapshots(source, parse_lctl_dl, at_ns, advance, dated):
        for target, (state, nid) in snap.items():
            times += [t] * (2 if nid else 1)
            targets += [target] * (2 if nid else 1)
            metrics.append(STATE_PREFIX + state)
            if nid:
                metrics.append(NID_PREFIX + nid)
    return dated_rows(source, "osc or mdc lines of `lctl dl -t`", "listings", times, targets, metrics,
                      [1.0] * len(times), fs, dated)




class LctlImporter(Importer):
    kind = "lctl"

    def chunks(self, advance):
        chunk = read_lctl(self.source, self.at_ns, self.fs, advance=advance)
        self.notes += chunk.notes
        self.bad_lines = chunk.bad_lines
        yield chunk
