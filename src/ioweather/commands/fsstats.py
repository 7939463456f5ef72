"""`ioweather fsstats DIR | diff A B | list`: content snapshots (METHODS.md section 5, seed 002 section IV-A)."""

from __future__ import annotations

import os
import socket
import sys
import time

import click

from ioweather.commands.common import json_option
from ioweather.errors import UserError, from_os_error
from ioweather.units import format_bytes, format_seconds
from ioweather.views.output import print_json, print_table, stderr


class _DirOrSubcommand(click.Group):
    """`fsstats DIR` walks DIR; `fsstats diff ...` and `fsstats list` are subcommands.

    A directory literally named `diff` or `list` is walked as `./diff`."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["walk", *args]
        return super().parse_args(ctx, args)


class ProgressLine:
    """Entries/s and errors on stderr: rewritten in place on a terminal, a line every
    `every_s` seconds otherwise (cron logs). ETA-free: the total is never known."""

    def __init__(self, enabled: bool = True, every_s: float = 30.0):
        self.tty = sys.stderr.isatty()
        self.enabled = enabled
        self.every_s = every_s
        self.t0 = time.monotonic()
        self.last_print = self.t0
        self.last = (self.t0, 0)
        self.shown = False

    def __call__(self, entries: int, errors: int, queued: int) -> None:
        now = time.monotonic()
        if not self.enabled or (not self.tty and now - self.last_print < self.every_s):
            return
        t_prev, e_prev = self.last
        rate = (entries - e_prev) / (now - t_prev) if now > t_prev else 0.0
        self.last = (now, entries)
        self.last_print = now
        line = (f"fsstats: {entries:,} entries ({rate:,.0f}/s now, {entries / (now - self.t0):,.0f}/s overall), "
                f"{errors:,} errors, {queued:,} dirs queued, {now - self.t0:.0f} s")
        if self.tty:
            sys.stderr.write("\r\x1b[K" + line)
            self.shown = True
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def _load(settings, ref: str) -> dict:
    """A snapshot by file path, else by store label."""
    from ioweather.store import open_store
    from ioweather.store import snapshots

    if os.path.exists(ref):
        return snapshots.read_file(ref)
    doc = snapshots.load(open_store(settings), ref)
    if doc is None:
        raise UserError(f"{ref!r} is neither a snapshot file nor a stored label (see 'ioweather fsstats list')")
    return doc


def _pct(x) -> str:
    return "-" if x is None else f"{x:+.1f}%"


def _share(x) -> str:
    return "-" if x is None else f"{x:.1f}%"


def _num(x) -> str | None:
    if x is None:
        return None
    return f"{x:,}" if isinstance(x, int) else f"{x:.4g}"


def _count(n) -> str:
    if n is None:
        return "-"
    for limit, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= limit:
            return f"{n / limit:.1f} {unit}"
    return f"{n:,.0f}"


def _print_snapshot(doc: dict) -> None:
    from ioweather.stats import fsstats as fs

    click.echo(f"fsstats {doc['root']}  snapshot {doc['snapshot_time']}  ({doc['entries']:,} entries in "
               f"{doc['walk_s']:.2f} s with {doc['threads']} threads)")
    print_table([{"name": k.replace("_", " "), "value": v} for k, v in (
        ("files", f"{doc['files']:,}"), ("dirs", f"{doc['dirs']:,}"), ("symlinks", f"{doc['symlinks']:,}"),
        ("other", f"{doc['other']:,}"), ("bytes", format_bytes(doc["bytes"])),
        ("capacity", format_bytes(doc["capacity_bytes"])),
        ("hard links counted once", f"{doc['hardlinks_deduplicated']:,}"), ("errors", f"{doc['errors']:,}"),
        ("excluded", f"{doc['excluded']:,}"), ("mount points not crossed", f"{doc['skipped_mounts']:,}"))],
        [("name", "total"), ("value", "")])
    h = doc["histograms"]
    for key, title, fmt in (("file_size", "file size", lambda v: format_bytes(v)),
                            ("mtime_age_days", "modification age (days)", lambda v: f"{v:g}"),
                            ("atime_age_days", "access age (days)", lambda v: f"{v:g}")):
        hist = h[key]
        if not hist["buckets"]:
            continue
        _, by_count = fs.cdf(hist, "count")
        _, by_bytes = fs.cdf(hist, "bytes")
        rows = [{"name": f"[{fmt(b['min'])}, {fmt(b['max'])})", "files": f"{b['count']:,}",
                 "cum_files": f"{100 * c:.1f}%", "bytes": format_bytes(b["bytes"]), "cum_bytes": f"{100 * y:.1f}%"}
                for b, c, y in zip(hist["buckets"], by_count, by_bytes) if b["count"]]
        print_table(rows, [("name", title), ("files", "files"), ("cum_files", "cum % files"), ("bytes", "bytes"),
                           ("cum_bytes", "cum % bytes")])
    print_table([{"name": k, "unit": v["unit"], "count": f"{v['count']:,}", "min": _num(v["min"]),
                  "max": _num(v["max"]), "mean": _num(v["mean"])} for k, v in h.items()],
                [("name", "histogram"), ("unit", "unit"), ("count", "count"), ("min", "min"), ("max", "max"),
                 ("mean", "mean")])
    if doc["top_dirs"]:
        print_table([{"name": d["name"], "files": f"{d['files']:,}", "bytes": format_bytes(d["bytes"]),
                      "cap": format_bytes(d["capacity_bytes"]), "newest": d["newest_mtime"]} for d in doc["top_dirs"][:20]],
                    [("name", "first-level directory"), ("files", "files"), ("bytes", "bytes"), ("cap", "capacity"),
                     ("newest", "newest file mtime")], title=f"largest {min(20, len(doc['top_dirs']))} of "
                                                            f"{len(doc['top_dirs'])} first-level directories")
    if doc["owners"]:
        print_table([{"name": o["user"] or str(o["uid"]), "uid": o["uid"], "files": f"{o['files']:,}",
                      "bytes": format_bytes(o["bytes"])} for o in doc["owners"][:10]],
                    [("name", "owner"), ("uid", "uid"), ("files", "files"), ("bytes", "bytes")])
    for e in doc["error_list"][:10]:
        stderr.print(f"error: {e['op']} {e['path']!r}: {e['error']}", highlight=False, markup=False)
    if doc["errors"] > 10:
        stderr.print(f"... {doc['errors']:,} errors in all (the first {len(doc['error_list'])} are in --json)",
                     highlight=False)


def _print_growth(g: dict, a: dict, b: dict, movers: int) -> None:
    t = g["total"]
    span = g["interval_s"]
    click.echo(f"growth of {b['root']} over {f'{span / 86400:.1f} days' if abs(span) >= 86400 else format_seconds(span)}")
    print_table([
        {"name": f"A {a['snapshot_time']}", "usage": format_bytes(t["bytes_a"]), "files": _count(t["files_a"]),
         "cap": format_bytes(t["capacity_bytes_a"])},
        {"name": f"B {b['snapshot_time']}", "usage": format_bytes(t["bytes_b"]), "files": _count(t["files_b"]),
         "cap": format_bytes(t["capacity_bytes_b"])},
        {"name": "change", "usage": _pct(t["bytes_change_pct"]), "files": _pct(t["files_change_pct"]),
         "cap": _pct(t["capacity_bytes_change_pct"])},
    ], [("name", "snapshot"), ("usage", "usage"), ("files", "files"), ("cap", "capacity")])
    if g["files_per_day"] is not None:
        click.echo(f"rate: {_count(g['files_per_day'])} files/day, {format_bytes(g['bytes_per_day'])}/day")
    for key, rows, label in (("name", g["top_dirs"], "first-level directory"), ("uid", g["owners"], "owner")):
        shown = [r for r in rows if r["bytes_change"] or r["files_change"]][:movers]
        if not shown:
            continue
        print_table([{"name": (r.get("user") or str(r["uid"])) if key == "uid" else r["name"],
                      "usage": f"{format_bytes(r['bytes_a'])} -> {format_bytes(r['bytes_b'])}",
                      "dusage": _pct(r["bytes_change_pct"]),
                      "files": f"{_count(r['files_a'])} -> {_count(r['files_b'])}",
                      "dfiles": _pct(r["files_change_pct"]),
                      "sb": _share(r["share_of_bytes_change_pct"]), "sf": _share(r["share_of_files_change_pct"])}
                     for r in shown],
                    [("name", label), ("usage", "usage"), ("dusage", "change"), ("files", "files"),
                     ("dfiles", "change"), ("sb", "share of data change"), ("sf", "share of file change")],
                    title=f"largest movers by {label}")


def register(cli: click.Group) -> None:
    @cli.group(cls=_DirOrSubcommand)
    def fsstats():
        """What is stored, how old, how it grows: content snapshots (seed 002 IV-A).

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
    @click.pass_obj
    def walk_cmd(settings, directory, as_json, as_csv, out, html_out, threads, cross_mounts, exclude, label, quiet):
        """Walk DIR once (never following symlinks, one file system) and report what it holds."""
        from ioweather import __version__
        from ioweather.sources.tree_walk import walk
        from ioweather.stats.fsstats import snapshot_document

        if as_json and as_csv:
            raise UserError("--json and --csv are exclusive: pick one output on stdout")
        if label is not None and not label.strip():
            raise UserError("--label must not be empty")
        bar = ProgressLine(enabled=not quiet)
        try:
            result = walk(directory, threads=threads, cross_mounts=cross_mounts, exclude=exclude, progress=bar)
        finally:
            bar.close()
        for note in result.notes:
            stderr.print(f"note: {note}", highlight=False, markup=False)
        doc = snapshot_document(result, host=socket.gethostname(), version=__version__)
        if out:
            from ioweather.store.snapshots import write_file

            write_file(out, doc)
        if html_out:
            from ioweather.views.fsstats_report import render_html

            try:
                with open(html_out, "w", encoding="utf-8") as f:
                    f.write(render_html(doc))
            except OSError as e:
                raise from_os_error(html_out, e, "write") from None
        if label:
            from ioweather.store import open_store
            from ioweather.store.snapshots import save

            sid = save(open_store(settings), doc, label)
            if not (as_json or as_csv):
                stderr.print(f"stored as snapshot {sid} with label {label!r}", highlight=False, markup=False)
        if as_json:
            print_json(doc)
        elif as_csv:
            from ioweather.views.fsstats_csv import render_csv

            sys.stdout.write(render_csv(doc))
        else:
            _print_snapshot(doc)
        if doc["errors"] and not (as_json or as_csv):
            stderr.print(f"warning: {doc['errors']:,} entries could not be read; totals exclude them", highlight=False)

    @fsstats.command("diff")
    @click.argument("a")
    @click.argument("b")
    @json_option
    @click.option("--movers", type=click.IntRange(1, 10_000), default=10, show_default=True,
                  help="How many directories and owners to list as largest movers.")
    @click.pass_obj
    def diff_cmd(settings, a, b, as_json, movers):
        """Growth from snapshot A to snapshot B (files or store labels), as seed 002 Table IV."""
        from ioweather.stats.fsstats import growth

        da, db = _load(settings, a), _load(settings, b)
        if da["root"] != db["root"]:
            stderr.print(f"note: comparing different roots: {da['root']!r} and {db['root']!r}", highlight=False,
                         markup=False)
        g = growth(da, db, movers=movers)
        if as_json:
            print_json({"a": {"root": da["root"], "snapshot_time": da["snapshot_time"], "source": a},
                        "b": {"root": db["root"], "snapshot_time": db["snapshot_time"], "source": b}, **g})
            return
        _print_growth(g, da, db, movers)

    @fsstats.command("list")
    @json_option
    @click.pass_obj
    def list_cmd(settings, as_json):
        """Snapshots kept in the store (labels for fsstats diff)."""
        from ioweather.store import open_store
        from ioweather.store.snapshots import listing
        from ioweather.units import ns_to_iso

        rows = [{"id": r["id"], "label": r["label"], "root": r["root"], "host": r["host"],
                 "snapshot_time": ns_to_iso(r["snapshot_ns"]), "files": r["files"], "dirs": r["dirs"],
                 "bytes": r["bytes"], "capacity_bytes": r["capacity_bytes"], "errors": r["errors"]}
                for r in listing(open_store(settings))]
        if as_json:
            print_json(rows)
            return
        print_table([{**r, "bytes": format_bytes(r["bytes"]), "files": f"{r['files']:,}"} for r in rows],
                    [("id", "id"), ("label", "label"), ("snapshot_time", "snapshot"), ("root", "root"),
                     ("files", "files"), ("bytes", "bytes"), ("errors", "errors")],
                    empty="no stored snapshots (store one with 'ioweather fsstats DIR --label L')")
