"""Score ioweather's findings and Drishti's insights against the lab's planted labels (docs/validation.md).

Both tools read the same logs (the INDEX.json of `lab run`). A case's prediction is the union over its
logs (a non-MPI case has one per process) of the codes raised at WARN or HIGH, mapped to labels by
`catalogue.LABELS`; a raised code that maps to no label is an unplanted alarm. A control is quiet when
no code at WARN or HIGH is raised (and, for ioweather, its verdict says "nothing worth changing").

A case's `costless_local` labels (catalogue.Case) are causes measured to cost less than the advisor's bar on
one machine's local disk: when the lab ran on a node-local file system (INDEX.json's `fs_type`) they are
scored as patterns, like tolerated labels (neither found nor missed), and counted apart (`costless_*`).

The bad -> fixed pairs of `catalogue.PAIRS` whose two cases ran are read by `job diff` (services/answers/
job_diff.py): the share of the I/O-time change its findings explain, at least `MIN_EXPLAINED_SHARE` each
(issue 39's "Done when"). When `lab run` recorded the disk (INDEX.json's `store`, services/lab/record.py) and
both of a pair's logs are stored jobs there, the pair is diffed by its stored jobs: job diff then has the
disk's counters for each run's window (its system share, and its `crowd` cause on one device); otherwise by
the logs' paths, as without telemetry (`PairScore.telemetry` says which). A stored pair is also diffed from its
logs alone (`logs_share`: what the store added), and `why` prices the system's share of each run against the
probes' quiet window `lab run` recorded before the first case (INDEX.json's `baseline_from/until`; job diff's
own `why` takes the rolling baseline, which learns for a day: a lab store's probes are younger than that).

Drishti (drishti-io on PyPI) runs from its own virtual environment in the lab's cache, made here on
first use; it is never a dependency of ioweather. When it cannot be installed or run, its score is
absent and `reason` says why.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ioweather.config import Settings
from ioweather.encoding import Answer
from ioweather.errors import UserError
from ioweather.services.lab.catalogue import LABEL_NAMES, PAIRS, TWIN_NAMES, code_labels
from ioweather.services.lab.run import CaseRun, read_index
from ioweather.services.lab.toolchain import PROGRAMS, cache_dir
from ioweather.stats.lab_scores import pair_outcome, score
from ioweather.units import parse_time, to_ns

DRISHTI = "drishti-io==0.8"
DRISHTI_TIMEOUT_S = 300
ALARMS = ("WARN", "HIGH")
#: issue 39: `job diff` explains at least this share of the I/O-time change of every bad -> fixed pair
MIN_EXPLAINED_SHARE = 0.9


@dataclass
class LabelScore:
    label: str
    tp: int
    fp: int
    fn: int
    precision: float | None
    recall: float | None
    f1: float | None


@dataclass
class CaseScore:
    case: str
    planted: list[str]
    named: list[str]
    unplanted: list[str]
    #: every code raised at WARN or HIGH, in the tool's words
    alarms: list[str]
    control: bool
    quiet: bool | None
    verdict: str | None = None
    error: str | None = None
    #: planted labels scored as patterns here (costless on a node-local disk), and those of them the tool named
    costless: list[str] = field(default_factory=list)
    costless_named: list[str] = field(default_factory=list)


@dataclass
class ToolScore:
    tool: str
    version: str | None
    available: bool
    reason: str | None = None
    micro_precision: float | None = None
    micro_recall: float | None = None
    micro_f1: float | None = None
    micro_f1_labels: float | None = None
    controls: int = 0
    controls_quiet: int = 0
    labels: list[LabelScore] = field(default_factory=list)
    cases: list[CaseScore] = field(default_factory=list)
    #: planted labels scored as patterns (costless on a node-local disk), and how many of them the tool named
    costless_planted: int = 0
    costless_named: int = 0


@dataclass
class PairScore:
    """`job diff BAD FIXED` on one pair: seconds of I/O time (the slowest rank's, as `job` says)."""

    bad: str
    fixed: str
    same: str
    fix: str
    before_s: float | None = None
    after_s: float | None = None
    change_s: float | None = None
    explained_s: float | None = None
    explained_share: float | None = None
    #: explained_share >= MIN_EXPLAINED_SHARE
    explained: bool = False
    #: the saving `job` claimed for the fix: the seconds of the findings whose cost the fix removed or lowered
    #: (job diff's finding causes that fell), not capped at the change as `explained_s` is
    claimed_s: float | None = None
    #: the fix changed no material I/O time and `job` claimed no material saving for it (`claimed_s` under job
    #: diff's material bar): the cause costs nothing here, and the advisor says so (nothing for job diff to
    #: explain); a finding the fix left as it was (a second cause of the bad run) is no claim for the fix
    no_saving: bool = False
    verdict: str | None = None
    #: `job`'s verdict on the fixed run (a clean twin should be told "nothing worth changing")
    fixed_verdict: str | None = None
    #: the finding causes (and the crowd's, with the lab store's telemetry), largest change first ("Y01 -4.20 s")
    causes: list[str] = field(default_factory=list)
    error: str | None = None
    #: job diff read the pair as stored jobs of the lab store with the disk's counters for both windows (its
    #: system share and crowd cause could count); False: from the logs alone
    telemetry: bool = False
    #: why a pair of stored jobs still had no telemetry (job diff's note), None otherwise
    telemetry_note: str | None = None
    #: a stored pair's explained share from its logs alone (job diff by paths, no store): what the store added
    logs_share: float | None = None
    #: `why`'s system seconds of each run with the probes' quiet window as their baseline, and its model of each
    #: ("coverage_factor", "probe_slowdown"); None where why had none (`system_note` says why)
    before_system_s: float | None = None
    after_system_s: float | None = None
    system_models: list[str] = field(default_factory=list)
    system_note: str | None = None


@dataclass
class PairsScore:
    pairs: list[PairScore] = field(default_factory=list)
    #: pairs whose share is at least MIN_EXPLAINED_SHARE, of those scored without error
    explained: int = 0
    #: pairs not explained whose fix saved no material time and for whose fix `job` claimed none (PairScore.no_saving)
    no_saving: int = 0
    scored: int = 0
    min_share: float = MIN_EXPLAINED_SHARE
    #: the pairs of the catalogue whose two cases are not both in the logs (status "ok", one log each)
    absent: list[str] = field(default_factory=list)
    #: the lab store the pairs were looked up in (INDEX.json's `store`), and how many pairs used its telemetry
    store: str | None = None
    with_telemetry: int = 0
    #: the probes' quiet window `why` judged each run's system share against (INDEX.json), None without one
    baseline_from: str | None = None
    baseline_until: str | None = None


@dataclass
class Scores(Answer):
    logs_dir: str
    cases: int
    tools: list[ToolScore]
    pairs: PairsScore | None = None
    #: the file system the lab ran on (INDEX.json), and whether it is node-local (costless_local labels apply)
    fs_type: str | None = None
    local: bool = False

    def to_json(self) -> dict:
        return asdict(self)


# ---- the tools' readings: per log, (codes raised at WARN/HIGH, verdict or None), or an error

def _ioweather(log: str) -> tuple[list[str], str | None]:
    # lazy: the job report forks its reader before numpy and PyDarshan are imported (docs/darshan.md)
    from ioweather.services.jobs.darshan_child import job_outputs

    rep, _ = job_outputs(log)
    return [f.code for f in rep.findings if f.level in ALARMS], rep.verdict


def drishti_python(cache: Path) -> Path:
    """Drishti's own environment's Python, made on first use; UserError with pip's last line if it cannot be."""
    venv = cache / "drishti-venv"
    python = venv / "bin" / "python"
    check = [str(python), "-c", "import drishti.reporter"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    for cmd in ([sys.executable, "-m", "venv", "--clear", str(venv)], [str(python), "-m", "pip", "install", "-q", DRISHTI]):
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise UserError(f"cannot install {DRISHTI} into {venv}: {last}")
    return python


def _drishti(python: Path, log: str) -> tuple[list[str], str | None, str]:
    with tempfile.TemporaryDirectory(prefix="ioweather-drishti-") as tmp:
        out = Path(tmp) / "insights.json"
        done = subprocess.run([str(python), str(PROGRAMS / "drishti_codes.py"), str(out), log], cwd=tmp,
                              capture_output=True, text=True, timeout=DRISHTI_TIMEOUT_S)
        if not out.exists() or done.returncode:
            raise RuntimeError(f"Drishti failed (exit {done.returncode}): "
                               f"{(done.stderr.strip().splitlines() or ['no message'])[-1]}")
        doc = json.loads(out.read_text())
    return [i["code"] for i in doc["insights"] if i["level"] in ALARMS], None, doc["version"]


def _case_score(tool: str, case: CaseRun, readings: list, local: bool) -> CaseScore:
    errors = [r for r in readings if isinstance(r, Exception)]
    alarms = sorted({c for r in readings if not isinstance(r, Exception) for c in r[0]})
    verdicts = [r[1] for r in readings if not isinstance(r, Exception) and r[1]]
    mapping = code_labels(tool)
    named = sorted({mapping[c] for c in alarms if c in mapping})
    unplanted = sorted(c for c in alarms if c not in mapping)
    quiet = None
    if case.control and not errors:
        quiet = not alarms and all("nothing worth changing" in v for v in verdicts)
    costless = [x for x in case.labels if x in case.costless_local] if local else []
    return CaseScore(case.name, list(case.labels), named, unplanted, alarms, case.control, quiet,
                     verdict=" | ".join(verdicts) or None, error=str(errors[0]) if errors else None,
                     costless=costless, costless_named=[x for x in costless if x in named])


def _tool_score(tool: str, version: str | None, cases: list[CaseRun], readings: dict[str, list],
                local: bool = False) -> ToolScore:
    scored = [_case_score(tool, c, readings[c.name], local) for c in cases]
    by_name = {c.name: c for c in cases}
    # a costless label is scored as a tolerated one: neither found nor missed
    s = score(LABEL_NAMES, [(set(cs.planted) - set(cs.costless), set(by_name[cs.case].tolerated) | set(cs.costless),
                             set(cs.named), set(cs.unplanted)) for cs in scored if cs.error is None])
    controls = [cs for cs in scored if cs.control]
    ok = [cs for cs in scored if cs.error is None]
    return ToolScore(tool, version, True, None, s["micro_precision"], s["micro_recall"], s["micro_f1"],
                     s["micro_f1_labels"], len(controls), sum(1 for cs in controls if cs.quiet),
                     [LabelScore(name, **row) for name, row in s["labels"].items()], scored,
                     sum(len(cs.costless) for cs in ok), sum(len(cs.costless_named) for cs in ok))


def _read_all(read, cases: list[CaseRun], workers: int, progress_cb, done: list[int], total: int) -> dict[str, list]:
    def one(log):
        try:
            return read(log)
        except Exception as e:  # a log a tool cannot read is that tool's error on that case, not the scorer's
            return e
        finally:
            done[0] += 1
            progress_cb(done[0], total)

    with ThreadPoolExecutor(workers) as pool:
        return {c.name: list(pool.map(one, c.logs)) for c in cases}


def stored_logs(settings: Settings, paths: list[str]) -> dict[str, str]:
    """{log path: its stored job's log hash} for those of `paths` that are jobs in the store of `settings`."""
    # lazy: sqlalchemy via store, loaded only when a lab store is there
    from ioweather.sources.darshan_header import content_hash
    from ioweather.store import jobs as jobs_store, open_store

    hashes = {}
    for p in paths:
        try:
            hashes[p] = content_hash(p)
        except Exception:  # a log that cannot be hashed is not stored either: job diff reads it by path
            continue
    store = open_store(settings)
    try:
        have = ({r["log_hash"] for r in jobs_store.rows_of(store, hashes.values(), ["log_hash"])}
                if "darshan" in store.versions() else set())
    finally:
        store.dispose()
    return {p: h for p, h in hashes.items() if h in have}


def pair_idents(bad: str, fixed: str, stored: dict[str, str]) -> tuple[str, str, bool]:
    """What job diff is given for a pair's two logs: their stored jobs' hashes when both are stored (the store's
    telemetry can then count), else the two paths; and whether it was the store."""
    if bad in stored and fixed in stored:
        return stored[bad], stored[fixed], True
    return bad, fixed, False


def reference_of(baseline_from: str | None, baseline_until: str | None) -> tuple[int, int] | None:
    """The probes' quiet window of INDEX.json as `why`'s `reference` ([since, until) in ns), None without one or
    when it is empty."""
    if not baseline_from or not baseline_until:
        return None
    since, until = to_ns(parse_time(baseline_from)), to_ns(parse_time(baseline_until))
    return (since, until) if since < until else None


def run_systems(settings: Settings, idents: tuple[str, str], reference: tuple[int, int] | None
                ) -> tuple[list[float | None], list[str], str | None]:
    """`why`'s system seconds and model of each of the two stored runs (bad, fixed) against the probes' quiet
    window `reference` (None: the rolling baseline), and a note naming the runs why could not price and why."""
    # lazy: numpy, sqlalchemy via services.answers.why, loaded only when a lab store is there
    from ioweather.services.answers.why import why

    seconds, models, notes = [], [], {}
    for role, ident in zip(("bad", "fixed"), idents):
        w = why(settings, ident, reference=reference)
        seconds.append(w.system_s)
        models.append(w.system_model or "unknown")
        if seconds[-1] is None and w.system_model != "below_resolution":  # the table says that one in its cell
            notes.setdefault(w.logs[0].evidence.system if w.logs else w.system_model, []).append(role)
    # one reason once: "bad and fixed runs: ..." where why said the same of both
    return seconds, models, "; ".join(f"{' and '.join(r)} run{'s' if len(r) > 1 else ''}: {why_not}"
                                      for why_not, r in notes.items()) or None


def score_pairs(cases: list[CaseRun], pairs=PAIRS, progress_cb=lambda pair: None,
                settings: Settings | None = None, baseline: tuple[str | None, str | None] = (None, None)) -> PairsScore:
    """`job diff` on each of `pairs` (catalogue.Pair) whose bad and fixed cases both ran (one log each); by the
    stored jobs of `settings`'s store (the lab store) when both logs are there (`pair_idents`), then also from
    the logs alone, with `why`'s system share of each run against the probes' quiet window `baseline` (INDEX.json's
    `baseline_from`, `baseline_until`; none: why's rolling baseline)."""
    # lazy: the job report forks its reader before numpy and PyDarshan are imported (docs/darshan.md)
    from ioweather.services.answers.job_diff import job_diff, material_s

    logs = {c.name: c.logs[0] for c in cases if c.status == "ok" and len(c.logs) == 1}
    out = PairsScore(store=None if settings is None else str(settings.home))
    reference = reference_of(*baseline)
    if reference is not None:
        out.baseline_from, out.baseline_until = baseline
    stored = stored_logs(settings, list(logs.values())) if settings is not None else {}
    for p in pairs:
        if p.bad not in logs or p.fixed not in logs:
            out.absent.append(f"{p.bad} -> {p.fixed}")
            continue
        progress_cb(p)
        ps = PairScore(p.bad, p.fixed, p.same, p.fix)
        before, after, from_store = pair_idents(logs[p.bad], logs[p.fixed], stored)
        try:
            d = job_diff(settings if from_store else None, before, after)
        except Exception as e:  # a log job diff cannot read is that pair's error, not the scorer's
            ps.error = str(e)
        else:
            ps.before_s, ps.after_s, ps.change_s = d.before.io_time_s, d.after.io_time_s, d.io_time_change_s
            ps.explained_s, ps.explained_share, ps.verdict = d.explained_s, d.explained_share, d.verdict
            ps.fixed_verdict = d.after.verdict
            ps.claimed_s = -sum(c.change_s for c in d.causes if c.kind == "finding" and c.change_s < 0)
            ps.explained, ps.no_saving = pair_outcome(d.explained_share, d.io_time_change_s,
                                                      d.verdict.startswith("no material change"), ps.claimed_s,
                                                      material_s(d.before.io_time_s), MIN_EXPLAINED_SHARE)
            # the crowd is there only when the store's telemetry was (without it, the findings and the pace)
            ps.causes = [f"{c.code} {c.change_s:+.2f} s" for c in d.causes if c.kind in ("finding", "crowd", "pace")]
            ps.telemetry = from_store and d.system is not None
            if from_store and d.system is None:
                ps.telemetry_note = "; ".join(d.notes) or None
            if from_store:
                _stored_extras(ps, settings, (before, after), (logs[p.bad], logs[p.fixed]), reference)
            out.with_telemetry += ps.telemetry
            out.scored += 1
            out.explained += ps.explained
            out.no_saving += ps.no_saving and not ps.explained
        out.pairs.append(ps)
    return out


def _stored_extras(ps: PairScore, settings: Settings, idents: tuple[str, str], paths: tuple[str, str],
                   reference: tuple[int, int] | None) -> None:
    """A stored pair's explained share from its logs alone, and why's system share of each run."""
    # lazy: the job report forks its reader before numpy and PyDarshan are imported (docs/darshan.md)
    from ioweather.services.answers.job_diff import job_diff

    try:
        ps.logs_share = job_diff(None, *paths).explained_share
        (ps.before_system_s, ps.after_system_s), ps.system_models, ps.system_note = run_systems(settings, idents,
                                                                                                reference)
    except UserError as e:
        ps.system_note = str(e)


def _lab_store(home: str | None) -> Settings | None:
    """The settings of the lab store `lab run` recorded into (INDEX.json's `store`), None without one."""
    if not home:
        return None
    settings = Settings.resolve(Path(home))
    return settings if settings.store_exists() else None


def score_logs(logs_dir: Path, *, drishti: bool = True, cache: Path | None = None,
               progress_cb=lambda done, total: None) -> Scores:
    """Both tools' scores on the cases of `logs_dir`/INDEX.json that ran (status "ok"): the labels on the
    planted cases and controls, `job diff` on the bad -> fixed pairs (the fixed twins are read there only)."""
    index = read_index(logs_dir)
    ran = [c for c in index.cases if c.status == "ok"]
    cases = [c for c in ran if c.name not in TWIN_NAMES]
    if not cases:
        raise UserError(f"{logs_dir}: no case ran successfully (see INDEX.json)")
    logs = sum(len(c.logs) for c in cases)
    total, done = logs * (2 if drishti else 1), [0]
    # lazy: the version for the score's header
    from ioweather import __version__

    # ioweather's reader forks a child per log (a dying libdarshan-util is one line): imported here first,
    # numpy, pandas and PyDarshan are inherited by every child instead of imported 40 times; one at a
    # time, as a fork from a process with threads may inherit a lock held by another
    # lazy: imported once here so every forked reader child inherits numpy, pandas and PyDarshan
    import ioweather.services.jobs.darshan  # noqa: F401

    # lazy: the advisor's rules (numpy) stay out of `lab`'s command module top
    from ioweather.stats.findings import LOCAL_FS

    local = (index.fs_type or "").lower() in LOCAL_FS
    ours = _read_all(_ioweather, cases, 1, progress_cb, done, total)
    tools = [_tool_score("ioweather", __version__, cases, ours, local)]
    if drishti:
        try:
            python = drishti_python(cache or cache_dir())
        except UserError as e:
            tools.append(ToolScore("drishti", None, False, str(e)))
        else:
            theirs = _read_all(lambda log: _drishti(python, log), cases, 2, progress_cb, done, total)
            versions = {r[2] for rs in theirs.values() for r in rs if not isinstance(r, Exception)}
            tools.append(_tool_score("drishti", ", ".join(sorted(versions)) or None, cases, theirs, local))
    pairs = score_pairs(ran, settings=_lab_store(index.store),
                        baseline=(index.baseline_from, index.baseline_until))
    return Scores(str(logs_dir), len(cases), tools, pairs, index.fs_type, local)

