"""The few facts of the file-system views that `why`, `events` and `workload` read, apart from
services/telemetry/fsview.py (the dashboard's views: its ~20 answer types and the capacity forecast cost
`why` ~15 ms to import for these): the kinds of telemetry a page draws, what `lctl dl -t` last listed of
a file system's targets, and whose a job id is. fsview re-exports them."""

from __future__ import annotations

from dataclasses import dataclass

from ioweather.encoding import Answer, answer_dict
from ioweather.sources.telemetry.lctl import NID_PREFIX, STATE_PREFIX
from ioweather.stats import targets as T
from ioweather.store import telemetry_targets as Q
from ioweather.units import ns_to_iso

CAPACITY_METRICS = ("capacity_bytes", "free_bytes", "avail_bytes", "files_total", "files_free")
#: What each telemetry page draws, as metric names or a prefix: a file system "has data for" a page when
#: it holds valid rows of the page's kind (the Workload, Report and Servers pages: bytes; Metadata: md_*).
KINDS = {"io": (("read_bytes", "write_bytes"), None), "md": ((), "md_"), "capacity": (CAPACITY_METRICS, None),
         "jobs": ((), "job_")}
LCTL_STATES = {"up": "UP (set up)", "st": "ST (stopping)", "in": "IN (inactive)", "at": "AT (attached)"}


@dataclass(frozen=True)
class LctlTarget:
    """A target as `lctl dl -t` last listed it: its state (code and words), server NID, when, and whether
    it sits on a server holding more targets than usual (its failover partner serves it)."""

    state: str | None
    state_label: str | None
    nid: str | None
    seen: str
    failover: bool


@dataclass(frozen=True)
class Failover:
    """stats.targets.failover: the usual number of targets per server NID, the targets of each NID, and the
    targets on NIDs holding more than the usual number."""

    usual: int | None
    per_nid: dict[str, list[str]]
    overloaded: list[str]


@dataclass(frozen=True)
class LctlState(Answer):
    """Each target's state and server NID as last seen by `lctl dl -t` (imported), the failover, and when
    the listing was taken (None, and `imported` false, without one)."""

    imported: bool
    targets: dict[str, LctlTarget]
    failover: Failover
    at: str | None

    def to_json(self) -> dict:
        return {**answer_dict(self), "targets": {t: answer_dict(v) for t, v in self.targets.items()}}


def lctl_state(settings, fs: str, until_ns: int | None) -> LctlState:
    """Each target's state and server NID as last seen by `lctl dl -t` (imported), and failover."""
    df = Q.last_before(settings, fs, until_ns, prefix="lctl_")
    if df.empty:
        return LctlState(imported=False, targets={}, failover=Failover(**T.failover({})), at=None)
    # a target's listing is the rows at its latest time: older rows name states and NIDs it left
    latest = df.groupby("target")["time_ns"].transform("max")
    df = df[df["time_ns"] == latest]
    out: dict[str, dict] = {}
    for r in df.itertuples(index=False):
        d = out.setdefault(r.target, {"state": None, "state_label": None, "nid": None, "seen": ns_to_iso(r.time_ns)})
        if r.metric.startswith(STATE_PREFIX):
            code = r.metric[len(STATE_PREFIX):]
            d["state"] = code.upper()
            d["state_label"] = LCTL_STATES.get(code, f"unknown state {code.upper()!r}")
        elif r.metric.startswith(NID_PREFIX):
            d["nid"] = r.metric[len(NID_PREFIX):]
    fo = T.failover({t: d["nid"] for t, d in out.items()})
    targets = {t: LctlTarget(**d, failover=t in fo["overloaded"]) for t, d in sorted(out.items())}
    return LctlState(imported=True, targets=targets, failover=Failover(**fo), at=ns_to_iso(int(df["time_ns"].max())))


@dataclass(frozen=True)
class JobLink:
    """What the stores know of a job id: its user (the scheduler's) and its page (a Darshan log's)."""

    user: str | None
    job_url: str | None


def user_of(job: str, link: JobLink | None) -> str | None:
    """The user of a job: the scheduler's when known, else the uid of a `procname.uid` job id
    (Lustre's jobid_var=procname_uid), else unknown."""
    if link and link.user:
        return str(link.user)
    head, dot, uid = job.rpartition(".")
    return f"uid {uid}" if dot and head and uid.isdigit() else None
