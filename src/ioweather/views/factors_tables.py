"""The tables of `ioweather factors`: classes of a density, the paper's Table 3 (models) and Table 4 (shares)."""

from __future__ import annotations

import click

from ioweather.units import format_bytes, format_seconds
from ioweather.views.output import print_table


def _fmt_bps(v) -> str:
    return f"{format_bytes(v)}/s"


def _pct(v) -> str:
    return f"{100 * v:.3g}%"


def _g3(v) -> str:
    return f"{v:.3g}"


def print_density(result: dict, title: str) -> None:
    """One density's classes, then a line with its bandwidth, maxima, splits, cutoff and outliers."""
    rows = [dict(c, range=f"{format_seconds(c['lo_s']) if c['lo_s'] is not None else '-'} – "
                          f"{format_seconds(c['hi_s']) if c['hi_s'] is not None else '-'}") for c in result["classes"]]
    print_table(rows, [("label", "class"), ("range", "range"), ("count", "n"), ("fraction", "share", _pct),
                       ("mean_s", "mean", format_seconds), ("mean_bps", "throughput", _fmt_bps)], title=title)
    cut = format_seconds(result["cutoff_s"]) if result["cutoff_s"] is not None else "none"
    click.echo(f"n={result['n']}  bandwidth={result['bandwidth']:.4g} (ln s, adjust {result['adjust']:g})  "
               f"maxima={', '.join(format_seconds(m) for m in result['maxima_s'])}  "
               f"splits={', '.join(format_seconds(m) for m in result['splits_s']) or 'none'}  "
               f"cutoff={cut}  outliers={_pct(result['outlier_fraction'])}")


def _short_size(n: int) -> str:
    for unit, f in (("M", 1 << 20), ("K", 1 << 10)):
        if n % f == 0:
            return f"{n // f}{unit}"
    return str(n)


def _table3_rows(models) -> list[dict]:
    rows = []
    for m in models:
        for name, p in (("≤", m.small), (">", m.large)):
            if p is None:
                continue
            rows.append({"label": f"{m.label} {name}{_short_size(m.small_max_bytes)}", "intercept_s": p.line.intercept_s,
                         "slope": p.line.slope_s_per_byte, "abs_err_s": p.abs_err_s, "rel_err": p.rel_err,
                         "outlier_fraction": p.outlier_fraction, "above_model_fraction": p.above_model_fraction})
    return rows


def print_models(models, out) -> None:
    """Table 3: each model's small and large line with their errors; `out` is the model file written."""
    print_table(_table3_rows(models), [
        ("label", "case"), ("intercept_s", "I (s)", _g3), ("slope", "c (s/B)", _g3), ("abs_err_s", "abs err", _g3),
        ("rel_err", "rel err", _pct), ("outlier_fraction", "out exp", _pct),
        ("above_model_fraction", "out model", _pct)],
        title=f"Table 3: p(s) = I + c·s, {len(models)} setups -> {out}")


def print_shares(table: list[dict], class_order: list[str]) -> None:
    """Table 4: the share of each class per experiment, in %."""
    rows = [{"experiment": r["label"], "n": r["n"], **r["fractions"]} for r in table]
    print_table(rows, [("experiment", "experiment"), ("n", "n"),
                       *((c, c, lambda v: f"{100 * v:.3g}") for c in class_order)],
                title="Share of each class in % (Table 4)")
