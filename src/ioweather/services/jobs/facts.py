"""`LogFacts`: what `why` answers with of one Darshan log, stored at ingest so that `why` needs no
PyDarshan nor findings pass (issue 40).

`why` read each log again (PyDarshan's cffi backend, the characterization, the findings pass: ~0.1 s)
for a dozen facts: the advisor's I/O time and combined saving, the top action's advice, the time per
kind of op, the header's window, the mounts' bytes, the host names. `jobs ingest` computes the same
report, so it stores them (`darshan_jobs.why_facts`, JSON); `why` takes them when the log is still
the one ingested (its content hash) and they were made by this version, under this code's rules
(stats/rules_revision.py), from what `why` would read (`usable`). The module imports nothing heavy: `why` loads it at its top.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

from ioweather import __version__
from ioweather.config import MountBytes
from ioweather.stats.rules_revision import RULES_REVISION

if TYPE_CHECKING:
    from ioweather.services.jobs.answer import JobReport

#: What a row's facts must say to be read instead of the log: a change to what they hold, or to how they
#: are made, bumps it (older rows are then read from their logs again, as before the column was).
FACTS_VERSION = 1
#: How the log's report says its node count came from --cores-per-node (stats.job.node_count): an
#: ingest given it counts nodes (and so findings) that `why`, which reads a log without it, would not.
CORES_PER_NODE = "cores_per_node"
REPORT_CODE_FROM = "the advisor's combined saving (verdict_saving_s)"


@dataclass
class OpTimes:
    """The job's time in each kind of op, any layer (probe_cost uses their shares alone); None: unknown."""

    read: float | None = None
    write: float | None = None
    meta: float | None = None

    def by_kind(self) -> dict[str, float | None]:
        """{kind of op: its time}: the lookup `why`'s probe_cost takes, not an answer."""
        return {"read": self.read, "write": self.write, "meta": self.meta}


@dataclass
class LogFacts:
    """What one log's budget needs, from its report when the log can be read, else its stored row."""

    io_time_s: float = 0.0
    saving_s: float = 0.0
    code_from: str = ""
    advice: str | None = None
    #: the time in each kind of op (probe_cost's shares)
    times: OpTimes = field(default_factory=OpTimes)
    jobid: int | None = None
    exe: str | None = None
    nnodes: int | None = None
    nnodes_source: str | None = None
    start_ns: int | None = None
    end_ns: int | None = None
    #: where the log moved its bytes, as runtime.fs_names.job_fs takes them; None until known
    mounts: list[MountBytes] | None = None
    bytes_read: float | None = None
    bytes_written: float | None = None
    read_ops: float | None = None
    write_ops: float | None = None
    opens: float | None = None
    perf_bps: float = float("nan")
    hosts: list[str] = field(default_factory=list)

    @classmethod
    def of_report(cls, rep: JobReport, log) -> LogFacts:
        """The facts of `services.jobs.report.job_answer`'s (report, log)."""
        j, p, t = rep.job, rep.perf, rep.totals
        start_ns = None if log.start_time_s is None else int(round(log.start_time_s * 1e9))
        end_ns = None if log.end_time_s is None else int(round(log.end_time_s * 1e9))
        mounts = [MountBytes(m.mount, m.fs_type, (m.bytes_read or 0) + (m.bytes_written or 0)) for m in rep.mounts]
        posix = rep.interfaces.get("POSIX")
        return cls(io_time_s=p.io_time_s or 0.0, saving_s=rep.verdict_saving_s or 0.0,
                   code_from=REPORT_CODE_FROM, advice=_advice(rep),
                   times=OpTimes(t.read_time_s, t.write_time_s, t.meta_time_s),
                   jobid=j.jobid, exe=j.exe, nnodes=j.nnodes,
                   nnodes_source=p.nnodes_source, start_ns=start_ns, end_ns=end_ns, mounts=mounts,
                   bytes_read=posix and posix.bytes_read, bytes_written=posix and posix.bytes_written,
                   read_ops=posix and posix.reads, write_ops=posix and posix.writes, opens=posix and posix.opens,
                   perf_bps=(p.agg_perf_by_slowest_mibps or float("nan")) * (1 << 20),
                   hosts=list(getattr(log, "node_names", None) or []))

    def stored(self) -> str:
        """The `why_facts` column: the facts and what made them. JSON keeps a float's every digit
        (repr), NaN included; numpy scalars are written as the Python numbers they equal. `times` and each
        mount are JSON objects by their field names ({"read", "write", "meta"}, {"mount", "fs_type", "bytes"}),
        as darshan store version 4 has held them from the first: `usable` reads every row stored since under
        this code's rules (`rules`: the revision they were derived under, since version 5)."""
        return json.dumps({"version": FACTS_VERSION, "ioweather": __version__, "rules": RULES_REVISION,
                           "facts": self._fields()}, default=_plain)

    def _fields(self) -> dict:
        """`asdict(self)` without its deep copy of every leaf (issue 40: 3 % of an ingest's per-log work): the
        same keys in the same order, `times` and each mount as the dicts of their fields."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["times"] = {f.name: getattr(self.times, f.name) for f in fields(self.times)}
        if self.mounts is not None:
            out["mounts"] = [{f.name: getattr(m, f.name) for f in fields(m)} for m in self.mounts]
        out["hosts"] = list(self.hosts)
        return out

    @classmethod
    def usable(cls, text: str | None) -> LogFacts | None:
        """The facts of a `why_facts` column when they are what reading the log would give now: None for a
        row stored before the column, by another version, under other rules (or before facts said theirs: the
        version string is "0.1.0" whatever the rules), or from a node count --cores-per-node made."""
        try:
            doc = json.loads(text) if text else None
        except ValueError:  # not JSON: read the log, as for a row without facts
            return None
        if not isinstance(doc, dict) or doc.get("version") != FACTS_VERSION or doc.get("ioweather") != __version__ \
                or doc.get("rules") != RULES_REVISION:
            return None
        facts = doc.get("facts")
        if not isinstance(facts, dict):
            return None
        if facts.get("nnodes_source") == CORES_PER_NODE or set(facts) != {f.name for f in fields(cls)}:
            return None
        times, mounts = facts["times"], facts["mounts"]
        if not isinstance(times, dict) or not (mounts is None or isinstance(mounts, list)
                                               and all(isinstance(m, dict) for m in mounts)):
            return None
        try:
            return cls(**{**facts, "times": OpTimes(**times),
                          "mounts": None if mounts is None else [MountBytes(**m) for m in mounts]})
        except TypeError:  # a key neither dataclass has: facts of another shape, read the log
            return None


def _advice(rep: JobReport) -> str | None:
    """The top finding's fix (or action) as the verdict names it."""
    top = rep.verdict_actions[0] if rep.verdict_actions else None
    f = next((f for f in rep.findings if f.code == top), None)
    return None if f is None else f.fix or f.action or f.message


def _plain(v):
    """A numpy scalar (the statistics' sums) as its Python number; anything else is no fact."""
    if hasattr(v, "item"):
        return v.item()
    raise TypeError(f"{type(v).__name__} is not a fact")
