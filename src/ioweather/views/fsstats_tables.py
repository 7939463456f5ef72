"""The console tables of `ioweather fsstats`: one snapshot, the growth between two, the stored ones."""

from __future__ import annotations

import click

from ioweather.stats import fsstats as fs
from ioweather.units import format_bytes, format_number, format_seconds
from ioweather.views.output import print_table, stderr


def _pct(x) -> str:
    return "-" if x is None else f"{x:+.1f}%"


def _share(x) -> str:
    return "-" if x is None else f"{x:.1f}%"


def _num(x) -> str | None:
    if x is None:
        return None
    return f"{x:,}" if isinstance(x, int) else format_number(x)


def _count(n) -> str:
    if n is None:
        return "-"
    for limit, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= limit:
            return f"{n / limit:.1f} {unit}"
    return f"{n:,.0f}"


def print_snapshot(doc: dict) -> None:
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
                            ("mtime_age_days", "modification age (days)", format_number),
                            ("atime_age_days", "access age (days)", format_number)):
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


def print_growth(g: dict, movers: int) -> None:
    """`fsstats diff`'s text: `g` its `--json` (services.content.fsstats.Growth.to_json)."""
    a, b = g["a"], g["b"]
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


def print_listing(rows: list[dict]) -> None:
    print_table([{**r, "bytes": format_bytes(r["bytes"]), "files": f"{r['files']:,}"} for r in rows],
                [("id", "id"), ("label", "label"), ("snapshot_time", "snapshot"), ("root", "root"),
                 ("files", "files"), ("bytes", "bytes"), ("errors", "errors")],
                empty="no stored snapshots (store one with 'ioweather fsstats DIR --label L')")
