"""`ioweather lab build|list|run|storm|score`: real runs with planted causes, and the advisor scored on them (docs/lab.md)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import click

from ioweather.commands.common import DURATION, json_option
from ioweather.errors import UserError
from ioweather.services.lab.answers import catalogue, RunAndScores
from ioweather.services.lab.catalogue import select
from ioweather.services.lab.record import run_recorded
from ioweather.services.lab.score import score_logs
from ioweather.services.lab.toolchain import build, cache_dir, find
from ioweather.units import format_bytes, format_seconds
from ioweather.views.lab_report import scores_markdown


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.0f} %"


def _share(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def register(cli: click.Group) -> None:
    @cli.group("lab")
    def lab():
        """The I/O lab: real MPI runs under Darshan with planted causes, and the advisor scored on them."""

    @lab.command("build")
    @click.option("--sources", type=click.Path(file_okay=False, path_type=Path), default=None,
                  help="Directory of darshan-3.5.0.tar.gz and ior-4.0.0.tar.gz (default: ../shared/third_party "
                       "beside the checkout, or $IOWEATHER_LAB_SOURCES).")
    @click.option("--force", is_flag=True, help="Build even when the tools are on PATH or already built.")
    @json_option
    def build_cmd(sources, force, as_json):
        """Build Darshan 3.5.0 and IOR 4.0.0 (with mdtest) into the lab's cache ($IOWEATHER_LAB_CACHE,
        default ~/.cache/ioweather-lab), unless a site's `darshan-config`, `ior` and `mdtest` are on PATH."""
        # lazy: rich via views.output: kept off the command's `--help` and its usage errors
        from ioweather.views.output import print_json, stderr

        with stderr.status("building the lab's tools") as status:
            done = build(sources=sources, force=force, step=lambda what: status.update(f"building: {what}"))
        if as_json:
            print_json(done.to_json())
            return
        t = done.toolchain
        click.echo(("built into " if done.built else "already there, from ") + (done.cache if t.origin == "cache" else "PATH"))
        for name, path in (("libdarshan", t.darshan_lib), ("ior", t.ior), ("mdtest", t.mdtest), *t.programs.items()):
            click.echo(f"  {name:16} {path}")
        for name, why in t.missing.items():
            click.echo(f"  {name:16} missing: {why}")

    @lab.command("list")
    @json_option
    def list_cmd(as_json):
        """The catalogue: each case, its planted cause and labels; and the labels' finding codes."""
        # lazy: rich via views.output: kept off the command's `--help` and its usage errors
        from ioweather.views.output import print_json, print_table

        listed = catalogue()
        if as_json:
            print_json(listed.to_json())
            return
        doc = listed.to_json()
        cases, labels = doc["cases"], doc["labels"]
        # "label" and "evidence": the keys views.output aligns left as text
        print_table([{**r, "label": ", ".join(r["labels"] or ["(control)"]), "evidence": r["cause"],
                      "mpi": "MPI" if r["mpi"] else "processes"} for r in cases],
                    [("name", "case"), ("procs", "procs"), ("mpi", "kind"), ("label", "labels"), ("evidence", "planted cause")],
                    title=f"{len(cases)} cases")
        print_table([{"label": x["label"], "evidence": x["meaning"], "name": ", ".join(x["ioweather_codes"]) or "-",
                      "state": ", ".join(x["drishti_codes"]) or "-"} for x in labels],
                    [("label", "label"), ("evidence", "meaning"), ("name", "ioweather codes"), ("state", "Drishti codes")])

    @lab.command("run")
    @click.option("--dir", "directory", required=True, type=click.Path(file_okay=False, path_type=Path),
                  help="Directory on the file system under test (a scratch directory on Lustre or GPFS at a site).")
    @click.option("--case", "names", multiple=True, metavar="NAME", help="Run only this case (repeatable; see `lab list`).")
    @click.option("--logs", "logs_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                  help="Where the Darshan logs and INDEX.json go (default: the lab's cache/logs).")
    @click.option("--home", type=click.Path(file_okay=False, path_type=Path), default=None,
                  help="The lab store the disk's counters and the logs go into (default: LOGS/store).")
    @click.option("--no-telemetry", is_flag=True,
                  help="Record no disk counters or probes and ingest nothing: the pairs are scored from the logs alone.")
    @click.option("--score", "then_score", is_flag=True, help="Then score ioweather and Drishti on the logs (`lab score`).")
    @json_option
    def run_cmd(directory, names, logs_dir, home, no_telemetry, then_score, as_json):
        """Run the catalogue's cases on DIR, each a real run under Darshan with its planted cause.

        Beside them, `collect --sources diskstats` records DIR's disk and `probe run` probes DIR into the lab
        store (LOGS/store, or --home), the probes for 20 s alone first (why's quiet baseline), and the logs
        are ingested there at the end: `lab score` then diffs the bad -> fixed pairs as stored jobs with the
        disk's counters (job diff's crowd cause) and prices each run's system share. On a file system with no
        local block device (Lustre, GPFS, NFS) nothing is recorded and the pairs are scored from the logs."""
        # lazy: rich via views.output: kept off the command's `--help` and its usage errors
        from ioweather.views.output import print_json, print_table, progress

        if not directory.is_dir():
            raise UserError(f"--dir {directory}: not a directory")
        try:
            cases = select(list(names))
        except ValueError as e:
            raise UserError(str(e)) from None
        logs_dir = logs_dir or cache_dir() / "logs"
        tools = find()
        with progress() as bar:
            task = bar.add_task("lab cases", total=len(cases))
            run = run_recorded(cases, tools, directory, logs_dir, home=home, telemetry=not no_telemetry,
                               progress_cb=lambda done, total, name: bar.update(task, completed=done,
                                                                                description=name or "lab cases"))
        scores = _score(logs_dir) if then_score else None
        # a failed case leaves the others' logs indexed; the exit status tells `make lab` not to go on
        failed = [c.name for c in run.cases if c.status == "failed"]
        if as_json:
            print_json(RunAndScores(run, scores).to_json())
            if failed:
                raise click.exceptions.Exit(1)
            return
        print_table([{"name": c.name, "state": c.status if not c.reason else f"{c.status}: {c.reason}",
                      "elapsed": f"{c.elapsed_s:.1f} s", "logs": len(c.logs),
                      "label": ", ".join(c.labels) or "(control)"} for c in run.cases],
                    [("name", "case"), ("state", "state"), ("elapsed", "time"), ("logs", "logs"), ("label", "labels")],
                    title=f"{len(run.cases)} cases on {directory} (Darshan, IOR from {tools.origin}); logs in {logs_dir}")
        click.echo(run.telemetry or
                   f"telemetry: the disk's counters (collect --sources diskstats), the probes (probe run, quiet "
                   f"baseline {run.baseline_from} - {run.baseline_until}) and the logs in the lab store {run.store}"
                   + ("" if run.probe_bytes_written is None else
                      f"; the probe wrote {format_bytes(run.probe_bytes_written)}"))
        unset = [c for c in run.cases if c.autogroup_applied is False]
        if unset:
            # the wrapper's write was refused (not root) or left out (a launcher that keeps the ranks in this session)
            click.echo(f"priority: not applied in {len(unset)} of {len(run.cases)} cases ({unset[0].name}: "
                       f"{unset[0].autogroup_note}); INDEX.json has each case's autogroup nice")
        if scores:
            _print_scores(scores)
        if failed:
            raise UserError(f"{len(failed)} case(s) failed: {', '.join(failed)} (their reasons are in the table)")

    @lab.command("storm")
    @click.option("--dir", "directory", required=True, type=click.Path(file_okay=False, path_type=Path),
                  help="Directory on the disk or file system under test: the twins, the storm and the probe run there.")
    @click.option("--store", "home", type=click.Path(file_okay=False, path_type=Path), default=None,
                  help="A new ioweather home the pair records into (default: a fresh one in the lab's cache).")
    @click.option("--quiet", "quiet_s", type=DURATION, default="12s", show_default=True,
                  help="The quiet period recorded first: the twins' baseline (--baseline-from/--baseline-until).")
    @click.option("--block", default="auto", show_default=True,
                  help="IOR's bytes per rank (2 ranks, 4 MiB O_DIRECT writes); auto: sized so the quiet twin takes "
                       "about 2.5 s on this disk (a short fio write times it), 1-8 GiB.")
    @json_option
    def storm_cmd(directory, home, quiet_s, block, as_json):
        """`why` scored on planted truth: one IOR job alone, then during a fio storm on the same disk.

        `probe run` and `collect --sources diskstats` record both into one store; the three Darshan logs
        are ingested and `why` answers for each twin with the quiet period as its baseline. Exits 1 when
        the issue's targets are missed: the storm twin's extra I/O time at least 50 % on the system with
        the storm's job named, the quiet twin's system share at most 10 %, and `job diff` of the twins
        saying "same code; the system"."""
        # lazy: numpy via services.lab.storm: kept off the command's `--help` and its usage errors
        from ioweather.services.lab.storm import run_pair
        # lazy: rich via views.output: kept off the command's `--help` and its usage errors
        from ioweather.views.output import print_json, print_table

        if not directory.is_dir():
            raise UserError(f"--dir {directory}: not a directory")
        home = home or cache_dir() / "storm" / dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        if home.exists() and any(home.iterdir()):
            raise UserError(f"--store {home}: not empty (the pair records into a new store)")
        pair = run_pair(find(), directory.resolve(), home.resolve(), quiet_s=quiet_s, block=block)
        doc = pair.to_json()
        if as_json:
            print_json(doc)
        else:
            print_table([{"name": t["role"], "time": f"{t['io_time_s']:.2f} s",
                          "evidence": "unknown" if t["system_s"] is None else f"{t['system_s']:.2f} s",
                          "state": t["system_model"], "label": ", ".join(t["culprits"]) or "-"}
                         for t in (doc["quiet"], doc["storm"])],
                        [("name", "twin"), ("time", "I/O time"), ("evidence", "system"), ("state", "model"),
                         ("label", "culprits named")], title=f"storm pair on {directory}; store {home}")
            click.echo(f"extra I/O time {doc['extra_io_s']:.2f} s, on the system {_pct(doc['system_share_of_extra'])} "
                       f"(target ≥ 50 %); storm job {doc['storm_job']} named: {'yes' if doc['culprit_named'] else 'no'}; "
                       f"quiet twin's system share {_pct(doc['quiet_system_share'])} (target ≤ 10 %)")
            if doc["quiet_others_share"]:
                click.echo(f"the disk was not quiet: {_pct(doc['quiet_others_share'])} of its writes during the quiet "
                           "twin were other processes' (/proc/diskstats)")
            click.echo(f"baseline: --baseline-from {doc['baseline_from']} --baseline-until {doc['baseline_until']}")
            click.echo(f"job diff quiet -> storm ({'says' if doc['diff_says_system'] else 'does not say'} "
                       f"\"same code; the system\"): {doc['diff_verdict'] or '-'}")
            for note in doc["notes"]:
                click.echo(f"note: {note}")
        if not pair.targets_met:
            raise click.exceptions.Exit(1)

    @lab.command("score")
    @click.argument("logs_dir", type=click.Path(file_okay=False, path_type=Path))
    @click.option("--no-drishti", is_flag=True, help="Score ioweather only.")
    @click.option("--markdown", is_flag=True, help="Print the tables as Markdown (docs/validation.md's).")
    @json_option
    def score_cmd(logs_dir, no_drishti, markdown, as_json):
        """Per-label precision, recall, F1 and micro-F1 of ioweather and Drishti on the logs of `lab run`."""
        scores = _score(logs_dir, drishti=not no_drishti)
        if markdown:
            click.echo(scores_markdown(scores.to_json()), nl=False)
        elif as_json:
            # lazy: rich via views.output: kept off the command's `--help` and its usage errors
            from ioweather.views.output import print_json

            print_json(scores.to_json())
        else:
            _print_scores(scores)


def _score(logs_dir: Path, *, drishti: bool = True):
    # lazy: rich via views.output: kept off the command's `--help` and its usage errors
    from ioweather.views.output import progress

    with progress() as bar:
        task = bar.add_task("reading the logs", total=None)
        return score_logs(logs_dir, drishti=drishti, progress_cb=lambda done, total: bar.update(task, completed=done,
                                                                                             total=total))


def _print_scores(scores) -> None:
    # lazy: rich via views.output: kept off the command's `--help` and its usage errors
    from ioweather.views.output import print_table, stdout

    tools = [t for t in scores.tools if t.available]
    rows = []
    for i, row in enumerate(tools[0].labels if tools else []):
        line = {"label": row.label}
        for t in tools:
            r = t.labels[i]
            line[f"{t.tool}_f1"] = f"{_share(r.precision)} / {_share(r.recall)} / {_share(r.f1)}  ({r.tp}/{r.fp}/{r.fn})"
        rows.append(line)
    print_table(rows, [("label", "label"), *((f"{t.tool}_f1", f"{t.tool}: P / R / F1 (tp/fp/fn)") for t in tools)],
                title=f"{scores.cases} cases of {scores.logs_dir}")
    for t in scores.tools:
        if not t.available:
            stdout.print(f"{t.tool}: not scored: {t.reason}", markup=False, highlight=False)
            continue
        stdout.print(f"{t.tool} {t.version}: micro-F1 {_share(t.micro_f1)} (precision {_share(t.micro_precision)}, "
                     f"recall {_share(t.micro_recall)}; planted labels only {_share(t.micro_f1_labels)}); "
                     f"controls quiet {t.controls_quiet} of {t.controls}", markup=False, highlight=False)
        errors = [c for c in t.cases if c.error]
        for c in errors:
            stdout.print(f"  {c.case}: {c.error}", markup=False, highlight=False)
    if scores.pairs is not None:
        _print_pairs(scores.pairs)


def _print_pairs(pairs) -> None:
    # lazy: rich via views.output: kept off the command's `--help` and its usage errors
    from ioweather.views.output import print_table, stdout

    def sec(v):
        return "-" if v is None else format_seconds(v)

    print_table([{"name": f"{p.bad} -> {p.fixed}", "time": f"{sec(p.before_s)} -> {sec(p.after_s)}",
                  "change": ("+" if (p.change_s or 0) > 0 else "") + sec(p.change_s), "share": _pct(p.explained_share),
                  "state": f"{sec(p.before_system_s)} / {sec(p.after_system_s)}",
                  "evidence": p.error or p.verdict or "-"} for p in pairs.pairs],
                [("name", "pair (bad -> fixed)"), ("time", "I/O time"), ("change", "change"),
                 ("share", "explained"), ("state", "system (why) bad / fixed"), ("evidence", "job diff's verdict")],
                title="job diff on bad -> fixed pairs")
    stdout.print(f"job diff explains >= {100 * pairs.min_share:.0f} % of the change on {pairs.explained} of "
                 f"{pairs.scored} pairs" + (f"; not in the logs: {', '.join(pairs.absent)}" if pairs.absent else "")
                 + (f"; {pairs.with_telemetry} of them diffed as stored jobs with the disk's counters ({pairs.store})"
                    if pairs.store else ""),
                 markup=False, highlight=False)
