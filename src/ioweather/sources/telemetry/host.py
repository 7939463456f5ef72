"""CPU and memory of the server itself, as LMT reports them with every OST/MDT sample.

CPU from the first line of /proc/stat, in clock ticks: busy = user + nice + system + irq +
softirq, total = busy + idle + iowait (LMT's proc_stat2, so that our cpu_pct matches the
%CPU in LMT databases; steal and guest are left out as LMT does). The collector turns the two
counters into cpu_pct = 100 * busy delta / total delta. Memory from /proc/meminfo: used =
MemTotal - MemFree, again LMT's definition (page cache counts as used).
"""

from __future__ import annotations

from ioweather.sources.telemetry.base import COUNTER, GAUGE, Sample, Source, SourceError, read_text

CPU_BUSY = "cpu_busy_ticks"
CPU_TOTAL = "cpu_total_ticks"


def parse_proc_stat(text: str) -> tuple[int, int]:
    """(busy, total) clock ticks from /proc/stat's aggregate `cpu` line."""
    for line in text.splitlines():
        f = line.split()
        if f and f[0] == "cpu":
            v = [int(x) for x in f[1:8]] + [0] * max(0, 8 - len(f))
            user, nice, system, idle, iowait, irq, softirq = v[:7]
            busy = user + nice + system + irq + softirq
            return busy, busy + idle + iowait
    raise SourceError("no 'cpu' line in /proc/stat")


def parse_meminfo(text: str) -> dict[str, int]:
    """{field: bytes} of /proc/meminfo (values in kB there)."""
    out = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        f = rest.split()
        if f and f[0].isdigit():
            out[name.strip()] = int(f[0]) * (1024 if len(f) > 1 and f[1] == "kB" else 1)
    return out


class Host(Source):
    name = "host"
    description = "CPU and memory of this server (/proc/stat, /proc/meminfo), as LMT reports them"

    def available(self) -> bool:
        return self.path("proc/stat").is_file()

    def collect(self) -> list[Sample]:
        out = []
        try:
            busy, total = parse_proc_stat(read_text(self.path("proc/stat")))
            out += [Sample(self.host, CPU_BUSY, busy, COUNTER), Sample(self.host, CPU_TOTAL, total, COUNTER)]
        except FileNotFoundError:
            self.warn(f"{self.path('proc/stat')} not found")
        try:
            mem = parse_meminfo(read_text(self.path("proc/meminfo")))
            if "MemTotal" in mem and "MemFree" in mem:
                out += [Sample(self.host, "mem_total_bytes", mem["MemTotal"], GAUGE),
                        Sample(self.host, "mem_used_bytes", mem["MemTotal"] - mem["MemFree"], GAUGE)]
        except FileNotFoundError:
            self.warn(f"{self.path('proc/meminfo')} not found")
        if not out:
            raise SourceError(f"neither /proc/stat nor /proc/meminfo readable under {self.root}")
        return out
