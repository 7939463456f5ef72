"""Block devices from /proc/diskstats, the counters iostat works from.

Fields after `major minor name` (Documentation/admin-guide/iostats.rst): reads completed,
reads merged, sectors read, ms reading, writes completed, writes merged, sectors written,
ms writing, I/Os in flight, ms doing I/O, weighted ms (then discard and flush fields on newer
kernels, unused here). Sectors are always 512 bytes in this file, whatever the device's own
sector size. iostat's %util is busy_s per interval / interval, its r_await is
read_time_s / read_ops.
"""

from __future__ import annotations

import re

from ioweather.sources.telemetry.base import COUNTER, GAUGE, Sample, Source, SourceError, read_text

# node_exporter's default: RAM disks, loop devices, floppies and partitions repeat their parent
IGNORED_DEVICES = re.compile(r"^(z?ram|loop|fd|(h|s|v|xv)d[a-z]|nvme\d+n\d+p|mmcblk\d+p)\d+$")
SECTOR = 512


def parse_diskstats(text: str, ignore: re.Pattern | None = IGNORED_DEVICES) -> dict[str, dict[str, float]]:
    """{device: {metric: value}} with counters in base units (bytes, operations, seconds)."""
    out: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) < 14:
            continue
        name = f[2]
        if ignore is not None and ignore.match(name):
            continue
        try:
            v = [int(x) for x in f[3:14]]
        except ValueError:
            continue
        out[name] = {
            "read_ops": v[0], "read_bytes": v[2] * SECTOR, "read_time_s": v[3] / 1000.0,
            "write_ops": v[4], "write_bytes": v[6] * SECTOR, "write_time_s": v[7] / 1000.0,
            "queue_depth": v[8], "busy_s": v[9] / 1000.0,
        }
    return out


class DiskStats(Source):
    name = "diskstats"
    description = "block devices (/proc/diskstats), like iostat"

    def __init__(self, *args, ignore: re.Pattern | None = IGNORED_DEVICES, **kw):
        super().__init__(*args, **kw)
        self.ignore = ignore

    def available(self) -> bool:
        return self.path("proc/diskstats").is_file()

    def collect(self) -> list[Sample]:
        p = self.path("proc/diskstats")
        if not p.is_file():
            raise SourceError(f"{p} not found")
        samples = []
        for dev, metrics in parse_diskstats(read_text(p), self.ignore).items():
            target = f"{self.host}:{dev}"
            for metric, value in metrics.items():
                samples.append(Sample(target, metric, value, GAUGE if metric == "queue_depth" else COUNTER))
        return samples
