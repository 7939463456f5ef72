"""`ioweather fsstats DIR | diff A B | list`: content snapshots (METHODS.md section 5, seed 002 section IV-A)."""

from __future__ import annotations

import math
import sys
import time

import click

from ioweather.commands.common import json_option
from ioweather.errors import UserError
from ioweather.services.content.fsstats import compare, HTML_WHAT, keep_snapshot, stored_snapshots, take_snapshot
from ioweather.views.output import print_json, stderr


class _DirOrSubcommand(click.Group):
    """`fsstats DIR` walks DIR; `fsstats diff ...` and `fsstats list` are subcommands.

    A directory literally named `diff` or `list` is walked as `./diff`."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["walk", *args]
        return super().parse_args(ctx, args)


class ProgressLine:
    """Entries/s and errors on stderr: rewritten in place on a terminal at most every `redraw_s`
    (a walk calls this thousands of times a second: 9,074 redraws in 2.3 s before), a line every
    `every_s` seconds otherwise (cron logs). The rate shown is smoothed over about `smooth_s`
    seconds (an exponential moving average), so it does not swing between 0/s and the burst of one
    directory's entries. ETA-free: the total is never known."""

    def __init__(self, enabled: bool = True, every_s: float = 30.0, *, redraw_s: float = 0.1,
                 smooth_s: float = 3.0, tty: bool | None = None, clock=time.monotonic, stream=None):
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.enabled = enabled
        self.every_s = every_s
        self.redraw_s = redraw_s
        self.smooth_s = smooth_s
        self.clock = clock
        self.t0 = clock()
        self.last_print = self.t0
        self.last = (self.t0, 0)
        self.rate: float | None = None
        self.shown = False

    def __call__(self, entries: int, errors: int, queued: int) -> None:
        now = self.clock()
        if not self.enabled or now - self.last_print < (self.redraw_s if self.tty else self.every_s):
            return
        t_prev, e_prev = self.last
        dt = now - t_prev
        if dt > 0:
            now_rate = (entries - e_prev) / dt
            w = 1.0 - math.exp(-dt / self.smooth_s)
            self.rate = now_rate if self.rate is None else self.rate + w * (now_rate - self.rate)
        self.last = (now, entries)
        self.last_print = now
        line = (f"fsstats: {entries:,} entries ({self.rate or 0:,.0f}/s now, "
                f"{entries / (now - self.t0) if now > self.t0 else 0:,.0f}/s overall), "
                f"{errors:,} errors, {queued:,} dirs queued, {now - self.t0:.0f} s")
        if self.tty:
            self.stream.write("\r\x1b[K" + line)
            self.shown = True
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def _say(line: str) -> None:
    stderr.print(line, highlight=False, markup=False)


def register(cli: click.Group) -> None:
    @cli.group(cls=_DirOrSubcommand)
    def fsstats():
        """What is stored, how old, how it grows: content snapshots (docs/fsstats.md).

        \b
        ioweather fsstats DIR [--json | --csv] [--out FILE] [--html OUT] [--label L]
        ioweather fsstats diff A B     (A, B: snapshot files or stored labels)
        ioweather fsstats list         (stored snapshots)
        """

    @fsstats.command("walk")
    @click.argument("directory", metavar="DIR")
    @json_option
    @click.option("--csv", "as_csv", is_flag=True, help="fsstats-compatible CSV on stdout (fsstats 1.4.5 layout).")
    @click.option("--out", "out", metavar="FILE", help="Also save the snapshot as JSON to FILE (for fsstats diff).")
    @click.option("--html", "html_out", metavar="OUT", help="Also write an HTML report (size and age CDFs, projects).")
    @click.option("--threads", type=click.IntRange(1, 1024), default=None,
                  help="Walker threads (default: 2 per core, 4 to 16; more helps on network file systems).")
    @click.option("--cross-mounts", is_flag=True, help="Descend into other file systems mounted below DIR.")
    @click.option("--exclude", "exclude", multiple=True, metavar="PAT",
                  help="Skip entries whose name (or, with a '/', path below DIR) matches this shell pattern. Repeatable.")
    @click.option("--label", metavar="L", help="Also store the snapshot in the store under label L.")
    @click.option("--quiet", "-q", is_flag=True, help="No progress line on stderr.")
    @click.option("--dask", "dask_address", metavar="SPEC", default=None,
                  help="Walk each first-level directory on a Dask cluster: tcp://HOST:PORT, local[:N] or "
                       "slurm[:key=value,...] (needs ioweather[dask]; the workers must see DIR at the same path; "
                       "docs/fsstats.md). The same snapshot as one walk.")
    @click.pass_obj
    def walk_cmd(settings, directory, as_json, as_csv, out, html_out, threads, cross_mounts, exclude, label, quiet,
                 dask_address):
        """Walk DIR once (never following symlinks, one file system) and report what it holds."""
        # lazy: numpy via views.fsstats_tables: kept off the command's `--help` and its usage errors
        from ioweather.views.fsstats_tables import print_snapshot

        if as_json and as_csv:
            raise UserError("--json and --csv are exclusive: pick one output on stdout")
        if label is not None and not label.strip():
            raise UserError("--label must not be empty")
        bar = ProgressLine(enabled=not quiet)
        try:
            snapshot, notes = take_snapshot(directory, threads=threads, cross_mounts=cross_mounts, exclude=exclude,
                                            progress=bar, outputs=((out, "write snapshot"), (html_out, HTML_WHAT)),
                                            dask=dask_address)
        finally:
            bar.close()
        doc = snapshot.to_json()
        for note in notes:
            _say(f"note: {note}")
        sid = keep_snapshot(settings, doc, out=out, html_out=html_out, label=label)
        if label and not (as_json or as_csv):
            _say(f"stored as snapshot {sid} with label {label!r}")
        if as_json:
            print_json(doc)
        elif as_csv:
            # lazy: numpy via views.fsstats_csv: kept off the command's `--help` and its usage errors
            from ioweather.views.fsstats_csv import render_csv

            sys.stdout.write(render_csv(doc))
        else:
            print_snapshot(doc)
        if doc["errors"] and not (as_json or as_csv):
            stderr.print(f"warning: {doc['errors']:,} entries could not be read; totals exclude them", highlight=False)

    @fsstats.command("diff")
    @click.argument("a")
    @click.argument("b")
    @json_option
    @click.option("--movers", type=click.IntRange(1, 10_000), default=10, show_default=True,
                  help="How many directories and owners to list as largest movers.")
    @click.option("--label", "label_only", is_flag=True,
                  help="A and B are stored labels, even where a file or directory has the same name.")
    @click.pass_obj
    def diff_cmd(settings, a, b, as_json, movers, label_only):
        """Growth from snapshot A to snapshot B, as docs/fsstats.md describes.

        A and B are snapshot files, stored labels (the newest snapshot of each) or the ids that
        `fsstats list` prints; the line on stderr says which was used."""
        # lazy: numpy via views.fsstats_tables: kept off the command's `--help` and its usage errors
        from ioweather.views.fsstats_tables import print_growth

        growth = compare(settings, a, b, movers=movers, say=_say, label_only=label_only)
        if as_json:
            print_json(growth.to_json())
            return
        print_growth(growth.to_json(), movers)

    @fsstats.command("list")
    @json_option
    @click.pass_obj
    def list_cmd(settings, as_json):
        """Snapshots kept in the store (labels for fsstats diff)."""
        # lazy: numpy via views.fsstats_tables: kept off the command's `--help` and its usage errors
        from ioweather.views.fsstats_tables import print_listing

        listing = stored_snapshots(settings)
        if as_json:
            print_json(listing.to_json())
            return
        print_listing(listing.to_json())
