"""The work behind `ioweather factors density|fit|classify` (registered in commands/factors.py).

Kept apart so that loading the CLI (every ioweather command imports every command
module) does not import pandas, pyarrow and scipy: only a factors command does.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click
import numpy as np
import pandas as pd

from ioweather.errors import UserError, from_os_error
from ioweather.stats.factor_models import NO_MODEL_LABEL, class_name
from ioweather.units import format_bytes, format_seconds, ns_to_iso, parse_size, to_ns

EXPERIMENT_COLUMNS = ("cache", "mem_layout", "file_layout", "op")


def _density_kw(adjust, significance, cutoff_fraction, split, r44) -> dict:
    if not adjust > 0:
        raise UserError("--adjust must be positive")
    if not 0 < significance <= 1:
        raise UserError("--significance must be in (0, 1]")
    if not 0 < cutoff_fraction < 1:
        raise UserError("--cutoff-fraction must be in (0, 1)")
    return {"adjust": adjust, "significance": significance, "cutoff_fraction": cutoff_fraction,
            "split": split, "old_coords": not r44}


def _split_cols(text: str | None) -> list[str]:
    return [c.strip() for c in (text or "").split(",") if c.strip()]


def _load(settings, files, *, from_store, op, target, since, until, column, unit, where, need,
          size_default=None) -> tuple[pd.DataFrame, str]:
    """(rows with duration_s and `need`, a name for the input) from FILEs or the probe store."""
    from ioweather.sources import latency_table as lt

    if from_store:
        if files:
            raise UserError("give FILEs or --from-store, not both")
        if not op:
            raise UserError("--from-store needs --op (e.g. --op data_read)")
        from ioweather.services.probe_samples import load_probe_durations, probe_block_bytes
        from ioweather.store import open_store

        store = open_store(settings)
        tgt, df = load_probe_durations(store, op, target, to_ns(since) if since else None,
                                       to_ns(until) if until else None)
        if "size" in need:
            size = size_default or probe_block_bytes(store, tgt)
            if size is None:
                raise UserError(f"the probe runs of {tgt!r} used different block sizes: give --size")
            df["size"] = size
        missing = [c for c in need if c not in df.columns]
        if missing:
            raise UserError(f"probe samples have no column {', '.join(missing)}")
        conditions = lt.parse_where(where)
        for k, _ in conditions:
            if k not in df.columns:
                raise UserError(f"--where {k}: probe samples have no column {k!r}")
        return lt.apply_where(df, conditions), f"{tgt}/{op}"
    if not files:
        raise UserError("give a FILE (CSV or Parquet) or --from-store --op OP")
    if op or target or since or until:
        raise UserError("--op, --target, --since and --until go with --from-store")
    df = lt.load_durations([str(f) for f in files], column=column, unit=unit, need=need,
                           where=lt.parse_where(where))
    return df, ", ".join(str(f) for f in files) + (f" ({', '.join(where)})" if where else "")


def _valid_durations(d: np.ndarray, drop_invalid: bool, what: str) -> np.ndarray | None:
    """Mask of usable durations, None when all are; without --drop-invalid a bad value is an error."""
    from ioweather.stats.factors import all_positive_finite, invalid_durations

    if all_positive_finite(d):
        return None
    bad = invalid_durations(d)
    text = ", ".join(f"{v} {k}" for k, v in bad.items())
    if not drop_invalid:
        raise UserError(f"{what}: durations must be positive and finite, found {text} (--drop-invalid skips them)")
    click.echo(f"ioweather: warning: {what}: dropped {text} duration(s)", err=True)
    return np.isfinite(d) & (d > 0)


def _keep(a: np.ndarray, ok: np.ndarray | None) -> np.ndarray:
    return a if ok is None else a[ok]


def _groups(df: pd.DataFrame, by: list[str]):
    """[(dict of group values, frame)], one group without --by."""
    if not by:
        return [({}, df)]
    missing = [c for c in by if c not in df.columns]
    if missing:
        raise UserError(f"--by: no column {', '.join(map(repr, missing))}; columns: {', '.join(df.columns)}")
    return [(dict(zip(by, (k if isinstance(k, tuple) else (k,)))), g) for k, g in df.groupby(by, sort=True)]


def _group_name(group: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in group.items()) or "all"


def _plain(v):
    return v.item() if isinstance(v, np.generic) else v


def _fmt_bps(v) -> str:
    return f"{format_bytes(v)}/s"


def _pct(v) -> str:
    return f"{100 * v:.3g}%"


# ---------------------------------------------------------------- density


def _density_table(result: dict, title: str) -> None:
    from ioweather.views.output import print_table

    rows = [dict(c, range=f"{format_seconds(c['lo_s']) if c['lo_s'] is not None else '-'} – "
                          f"{format_seconds(c['hi_s']) if c['hi_s'] is not None else '-'}") for c in result["classes"]]
    print_table(rows, [("label", "class"), ("range", "range"), ("count", "n"), ("fraction", "share", _pct),
                       ("mean_s", "mean", format_seconds), ("mean_bps", "throughput", _fmt_bps)], title=title)
    cut = format_seconds(result["cutoff_s"]) if result["cutoff_s"] is not None else "none"
    click.echo(f"n={result['n']}  bandwidth={result['bandwidth']:.4g} (ln s, adjust {result['adjust']:g})  "
               f"maxima={', '.join(format_seconds(m) for m in result['maxima_s'])}  "
               f"splits={', '.join(format_seconds(m) for m in result['splits_s']) or 'none'}  "
               f"cutoff={cut}  outliers={_pct(result['outlier_fraction'])}")


def _plot_path(plot: Path, group: dict, many: bool) -> Path:
    if not many:
        return plot
    tag = "_".join(f"{k}-{v}" for k, v in group.items()).replace("/", "-")
    return plot.with_name(f"{plot.stem}_{tag}{plot.suffix or '.png'}")


# ---------------------------------------------------------------- fit


def _parse_caps(items: tuple[str, ...]) -> tuple[int | None, dict[str, int]]:
    """--size-cap SIZE (all models) or LABEL=SIZE (one model), repeatable."""
    default, per = None, {}
    for it in items:
        label, _, size = it.rpartition("=")
        try:
            value = parse_size(size)
        except UserError as e:
            raise UserError(f"--size-cap {it!r}: {e}") from None
        if value <= 0:
            raise UserError(f"--size-cap {it!r}: the cap must be positive")
        if label:
            per[label] = value
        else:
            default = value
    return default, per


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


def _load_models(path: Path):
    from ioweather.sources.latency_table import reading
    from ioweather.stats.factor_models import models_from_doc

    path = Path(path)
    with reading(path, "model file"):
        text = path.read_text(errors="replace")
    try:
        return models_from_doc(json.loads(text)), text
    except json.JSONDecodeError as e:
        raise UserError(f"{path}: not JSON ({e})") from None
    except ValueError as e:
        raise UserError(f"{path}: {e}") from None


def _write_rows(df: pd.DataFrame, out: Path) -> None:
    try:
        if out.suffix.lower() == ".csv":
            df.to_csv(out, index=False)
        else:
            df.to_parquet(out, index=False)
    except OSError as e:
        raise from_os_error(out, e, "write") from None


# ---------------------------------------------------------------- commands


def run_density(settings, *,
        files, column, unit, where, drop_invalid, from_store, op, target, since, until, by, adjust,
        significance, cutoff_fraction, split, r44, plot, as_json) -> None:
    """`factors density`: classes, splits and outliers per group, table or JSON, optional Fig. 2."""
    from ioweather.stats.factors import analyse
    from ioweather.views.output import print_json, progress

    kw = _density_kw(adjust, significance, cutoff_fraction, split, r44)
    by_cols = _split_cols(by)
    need = [*by_cols]
    extra = ["size", "start_ns"]
    df, name = _load(settings, files, from_store=from_store, op=op, target=target, since=since, until=until,
                     column=column, unit=unit, where=where, need=need + _optional(files, from_store, extra))
    groups = _groups(df, by_cols)
    results, failed = [], 0
    with progress() as bar:
        task = bar.add_task("densities", total=len(groups))
        for group, g in groups:
            what = f"{name} {_group_name(group)}" if group else name
            try:
                d = g["duration_s"].to_numpy(dtype=np.float64)
                ok = _valid_durations(d, drop_invalid, what)
                d = _keep(d, ok)
                sizes = _keep(g["size"].to_numpy(dtype=np.float64), ok) if "size" in g else None
                a = analyse(d, sizes, **kw)
            except (UserError, ValueError) as e:
                click.echo(f"ioweather: error: {what}: {e}" if isinstance(e, ValueError) else f"ioweather: error: {e}",
                           err=True)
                failed += 1
                if group:
                    results.append(({k: _plain(v) for k, v in group.items()}, None, str(e)))
                bar.advance(task)
                continue
            results.append(({k: _plain(v) for k, v in group.items()}, a.as_dict(), None))
            if plot is not None:
                from ioweather.views.factors_plot import density_figure

                order = np.argsort(_keep(g["start_ns"].to_numpy(), ok), kind="stable") if "start_ns" in g else None
                density_figure(_plot_path(plot, group, bool(by_cols)), d, a,
                               title=f"{what}: {len(d)} operations", order=order)
            bar.advance(task)
    if as_json:
        if by_cols:
            print_json([{"group": grp, **(res or {"error": err})} for grp, res, err in results])
        elif results:
            print_json(results[0][1])
    else:
        for grp, res, _ in results:
            if res is not None:
                _density_table(res, _group_name(grp) if by_cols else name)
    if failed:
        sys.exit(2)


def run_fit(settings, *,
        files, column, unit, where, drop_invalid, from_store, op, target, since, until, by, size_column,
        size_cap, small_max, margin, adjust, significance, cutoff_fraction, split, r44, out, as_json) -> None:
    """`factors fit`: one model per setup, the model file, Table 3."""
    from ioweather.stats.factor_models import fit_setup, models_to_doc
    from ioweather.views.output import print_json, print_table, progress

    if from_store:
        raise UserError("fit needs io-model runs with known setups: give FILEs (--from-store is for density/classify)")
    if margin < 0:
        raise UserError("--margin must not be negative")
    kw = _density_kw(adjust, significance, cutoff_fraction, split, r44)
    setup_cols = _split_cols(by)
    cap_all, caps = _parse_caps(size_cap)
    df, name = _load(settings, files, from_store=False, op=op, target=target, since=since, until=until,
                     column=column, unit=unit, where=where, need=[*setup_cols, size_column])
    df = df.rename(columns={size_column: "size"}) if size_column != "size" else df
    sizes = pd.to_numeric(df["size"], errors="coerce")
    if sizes.isna().any() or (sizes <= 0).any():
        raise UserError(f"column {size_column!r} must hold positive sizes in bytes")
    df["size"] = sizes.astype(np.int64)
    groups = [(({k: str(_plain(v)) for k, v in grp.items()}), g) for grp, g in _groups(df, setup_cols)]
    labels = ["-".join(grp.values()) or "all" for grp, _ in groups]
    unknown = sorted(set(caps) - set(labels))
    if unknown:
        raise UserError(f"--size-cap: no setup {', '.join(unknown)}; setups: {', '.join(labels)}")
    models, failed = [], 0
    total = sum(g["size"].nunique() for _, g in groups)
    with progress() as bar:
        task = bar.add_task("fitting", total=total)
        for (grp, g), label in zip(groups, labels):
            d = g["duration_s"].to_numpy(dtype=np.float64)
            try:
                ok = _valid_durations(d, drop_invalid, f"{name} {label}")
                m, problems = fit_setup(_keep(g["size"].to_numpy(), ok), _keep(d, ok), label=label, setup=grp,
                                        size_cap_bytes=caps.get(label, cap_all), small_max_bytes=small_max,
                                        margin=margin, on_size=lambda: bar.advance(task), **kw)
            except (UserError, ValueError) as e:
                click.echo(f"ioweather: error: {e}", err=True)
                failed += 1
                continue
            for p in problems:
                click.echo(f"ioweather: warning: {p} (size skipped)", err=True)
            models.append(m)
    if not models:
        raise UserError("no model could be fitted")
    doc = models_to_doc(models, created=ns_to_iso(time.time_ns()), inputs=[str(f) for f in files],
                        grouping=setup_cols, margin=margin, **{k: v for k, v in kw.items()})
    try:
        Path(out).write_text(json.dumps(doc, indent=1) + "\n")
    except OSError as e:
        raise from_os_error(out, e, "write") from None
    if as_json:
        print_json(doc)
    else:
        g3 = lambda v: f"{v:.3g}"  # noqa: E731
        print_table(_table3_rows(models), [
            ("label", "case"), ("intercept_s", "I (s)", g3), ("slope", "c (s/B)", g3), ("abs_err_s", "abs err", g3),
            ("rel_err", "rel err", _pct), ("outlier_fraction", "out exp", _pct),
            ("above_model_fraction", "out model", _pct)],
            title=f"Table 3: p(s) = I + c·s, {len(models)} setups -> {out}")
    if failed:
        sys.exit(2)


def run_classify(settings, *,
        files, column, unit, where, drop_invalid, from_store, op, target, since, until, model_path,
        size_column, fixed_size, match, by, else_label, out, plot, as_json) -> None:
    """`factors classify`: the factor of each observation, Table 4, optional rows and Figs. 5-6."""
    from ioweather.sources import latency_table as lt
    from ioweather.stats.factor_models import classify
    from ioweather.views.output import print_json, print_table

    models, _ = _load_models(model_path)
    if not from_store and files:
        names = lt.column_names(files[0])
        if fixed_size is None and size_column not in names:
            raise UserError(f"column {size_column!r} not found in {files[0]}: give --size-column or --size; "
                            f"columns: {', '.join(names)}")
        exp_cols = _split_cols(by) if by is not None else [c for c in EXPERIMENT_COLUMNS if c in names]
        optional = [c for c in ("start_ns",) if c in names]
        need = list(dict.fromkeys([*exp_cols, *([] if fixed_size else [size_column]), *optional,
                                   *(c for c in _model_match_cols(models, match, names))]))
    else:
        names = ["op", "start_ns", "size"]
        exp_cols = _split_cols(by) if by is not None else ["op"]
        need = ["size", "op", "start_ns"]
    df, name = _load(settings, files, from_store=from_store, op=op, target=target, since=since, until=until,
                     column=column, unit=unit, where=where, need=need, size_default=fixed_size)
    if not from_store:
        if fixed_size:
            df["size"] = fixed_size
        elif size_column != "size":
            df = df.rename(columns={size_column: "size"})
    sizes = pd.to_numeric(df["size"], errors="coerce")
    if sizes.isna().any() or (sizes <= 0).any():
        raise UserError(f"column {size_column!r} must hold positive sizes in bytes")
    d = df["duration_s"].to_numpy(dtype=np.float64)
    ok = _valid_durations(d, drop_invalid, name)
    if ok is not None:
        df = df[ok].reset_index(drop=True)
    d = _keep(d, ok)
    s = _keep(sizes.to_numpy(dtype=np.float64), ok)
    match_cols = _model_match_cols(models, match, list(df.columns))
    labels = _classify_matched(df, d, s, models, match_cols, else_label, classify)
    df["factor"] = labels
    class_order = _class_order(models, match_cols, else_label)
    if (labels == NO_MODEL_LABEL).any():
        class_order.append(NO_MODEL_LABEL)
        click.echo(f"ioweather: warning: {(labels == NO_MODEL_LABEL).sum()} observations have no model "
                   f"with the same {', '.join(match_cols)}", err=True)
    table = _class_shares(df, exp_cols, class_order)
    if out is not None:
        _write_rows(df, out)
    if plot is not None:
        from ioweather.views.factors_plot import classify_figure

        classify_figure(plot, s, d, labels, class_order, models, match_cols, else_label,
                        title=f"{name}: {len(d)} operations")
    if as_json:
        print_json({"n": int(len(d)), "classes": class_order, "experiments": table})
        return
    rows = [{"experiment": r["label"], "n": r["n"], **r["fractions"]} for r in table]
    print_table(rows, [("experiment", "experiment"), ("n", "n"),
                       *((c, c, lambda v: f"{100 * v:.3g}") for c in class_order)],
                title="Share of each class in % (Table 4)")


def _optional(files, from_store, cols) -> list[str]:
    """Columns used when present (size for throughput, start_ns for the timeline order)."""
    from ioweather.sources import latency_table as lt

    if from_store:
        return ["start_ns"]
    if not files:
        return []
    names = set(lt.column_names(files[0]))
    return [c for c in cols if c in names]


def _model_match_cols(models, match: str | None, names: list[str]) -> list[str]:
    setup_keys = set().union(*(m.setup.keys() for m in models))
    if match is not None:
        cols = _split_cols(match)
        bad = [c for c in cols if c not in setup_keys]
        if bad:
            raise UserError(f"--match {', '.join(bad)}: the models' setups have only {', '.join(sorted(setup_keys)) or 'no columns'}")
        return cols
    return ["op"] if "op" in setup_keys and "op" in names else []


def _class_order(models, match_cols, else_label) -> list[str]:
    """Class names, fastest model first (by prediction at 4 KiB), then the else label."""
    by_speed = sorted(models, key=lambda m: float(m.predict([4096])[0]))
    return list(dict.fromkeys([class_name(m, match_cols) for m in by_speed] + [else_label]))


def _classify_matched(df, d, s, models, match_cols, else_label, classify) -> np.ndarray:
    """Class name per row: each row against the models sharing its match columns."""
    labels = np.full(len(d), NO_MODEL_LABEL, dtype=object)
    if match_cols:
        missing = [c for c in match_cols if c not in df.columns]
        if missing:
            raise UserError(f"the data has no column {', '.join(missing)} to match the models by (--match)")
        keys = df[match_cols].astype(str).agg("\x1f".join, axis=1) if len(match_cols) > 1 else df[match_cols[0]].astype(str)
        groups = {k: np.flatnonzero(keys.to_numpy() == k) for k in pd.unique(keys)}
    else:
        groups = {None: np.arange(len(d))}
    for key, idx in groups.items():
        ms = models if key is None else [m for m in models
                                         if "\x1f".join(str(m.setup.get(c)) for c in match_cols) == key]
        if not ms:
            continue
        k = classify(d[idx], s[idx], ms)
        names = np.array([class_name(m, match_cols) for m in ms] + [else_label], dtype=object)
        labels[idx] = names[k]  # k == -1 picks the last entry: the else label
    return labels


def _class_shares(df, exp_cols, class_order) -> list[dict]:
    groups = [({}, df)] if not exp_cols else [(dict(zip(exp_cols, k if isinstance(k, tuple) else (k,))), g)
                                              for k, g in df.groupby(exp_cols, sort=True)]
    out = []
    for grp, g in groups:
        counts = g["factor"].value_counts()
        n = len(g)
        out.append({"experiment": {k: _plain(v) for k, v in grp.items()},
                    "label": "-".join(str(v) for v in grp.values()) or "all", "n": int(n),
                    "fractions": {c: float(counts.get(c, 0)) / n for c in class_order}})
    return out
