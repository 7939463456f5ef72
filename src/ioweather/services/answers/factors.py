"""Performance-factor runs (seed 000, METHODS.md 2.2-2.5): load a latency table or probe samples,
group it, and run the density, the model fit or the classification on each group.

Serves `ioweather factors density|fit|classify` and the Factors page. Messages a run has for
the person at the terminal (a dropped value, a group that failed) go to the `say` callable the
caller passes, one line each; the results come back as values for the caller to render.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ioweather.encoding import Answer, answer_dict, iso_ms
from ioweather.errors import UserError
from ioweather.files import atomic_output, read_regular_bytes, write_atomic
from ioweather.services.probe.samples import load_probe_durations, probe_block_bytes, probe_samples
from ioweather.sources import latency_table as lt
from ioweather.stats import factor_classes as fc
from ioweather.stats.downsample import downsample
from ioweather.stats.factor_classes import group_name, groups, split_cols  # noqa: F401 (re-exported: --by groups rows)
from ioweather.stats.factor_models import FactorModel, fit_setup, models_from_doc, models_to_doc, NO_MODEL_LABEL
from ioweather.stats.factors import all_positive_finite, analyse, FactorAnalysis, FactorClass, invalid_durations
from ioweather.store import open_store
from ioweather.store.probe import OPS
from ioweather.units import ns_to_iso, parse_size, to_ns

Say = Callable[[str], None]


#: Largest bandwidth multiplier: R's default is 1, the paper's 2; at 100 the kernel spans ~12 ln-seconds.
MAX_ADJUST = 100.0


@dataclass(frozen=True)
class DensityOptions:
    """How a density is read (the keyword arguments of `stats.factors.analyse`, checked): the bandwidth
    multiplier, the significance of a maximum and the outlier cutoff (fractions of the highest density),
    where classes split ("minimum" or "mean") and whether the kernel's grid is R < 4.4's (`old_coords`)."""

    adjust: float
    significance: float
    cutoff_fraction: float
    split: str
    old_coords: bool


def density_options(adjust, significance, cutoff_fraction, split, r44) -> DensityOptions:
    """The options of `stats.factors.analyse`, checked."""
    if not 0 < adjust <= MAX_ADJUST:  # also NaN and inf; a wider kernel's grid overflowed (IndexError, OverflowError)
        raise UserError(f"--adjust must be in (0, {MAX_ADJUST:g}]: a wider kernel smooths every density into one class")
    if not 0 < significance <= 1:
        raise UserError("--significance must be in (0, 1]")
    if not 0 < cutoff_fraction < 1:
        raise UserError("--cutoff-fraction must be in (0, 1)")
    return DensityOptions(adjust=adjust, significance=significance, cutoff_fraction=cutoff_fraction, split=split,
                          old_coords=not r44)


def load_table(settings, files, *, from_store, op, target, since, until, column, unit, where, need,
               size_default=None) -> tuple[pd.DataFrame, str]:
    """(rows with duration_s and `need`, a name for the input) from FILEs or the probe store."""
    if from_store:
        if files:
            raise UserError("give FILEs or --from-store, not both")
        if not op:
            raise UserError("--from-store needs --op (e.g. --op data_read)")
        return _load_probe(settings, op, target, since, until, where, need, size_default)
    if not files:
        raise UserError("give a FILE (CSV or Parquet) or --from-store --op OP")
    if op or target or since or until:
        raise UserError("--op, --target, --since and --until go with --from-store")
    df = lt.load_durations([str(f) for f in files], column=column, unit=unit, need=need,
                           where=lt.parse_where(where))
    return df, ", ".join(str(f) for f in files) + (f" ({', '.join(where)})" if where else "")


def _load_probe(settings, op, target, since, until, where, need, size_default) -> tuple[pd.DataFrame, str]:
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


def optional_columns(files, from_store, cols) -> list[str]:
    """Columns used when present (size for throughput, start_ns for the timeline order)."""
    if from_store:
        return ["start_ns"]
    if not files:
        return []
    names = set(lt.column_names(files[0]))
    return [c for c in cols if c in names]


def valid_durations(d: np.ndarray, drop_invalid: bool, what: str, say: Say) -> np.ndarray | None:
    """Mask of usable durations, None when all are; without --drop-invalid a bad value is an error."""
    if all_positive_finite(d):
        return None
    bad = invalid_durations(d)
    text = ", ".join(f"{v} {k}" for k, v in bad.items())
    if not drop_invalid:
        raise UserError(f"{what}: durations must be positive and finite, found {text} (--drop-invalid skips them)")
    say(f"ioweather: warning: {what}: dropped {text} duration(s)")
    return np.isfinite(d) & (d > 0)


def keep(a: np.ndarray, ok: np.ndarray | None) -> np.ndarray:
    return a if ok is None else a[ok]


# ---------------------------------------------------------------- density


@dataclass(frozen=True)
class Density:
    """The `--json` of one density (`factors density`, the Factors page's `analysis`; keys fixed by issue 4):
    stats.factors.FactorAnalysis without its per-observation labels, the grid as lists. Durations in
    seconds, the grid over ln-seconds."""

    n: int
    bandwidth: float
    adjust: float
    grid_x: list[float]
    grid_y: list[float]
    maxima_s: list[float]
    minima_s: list[float]
    splits_s: list[float]
    cutoff_s: float | None
    outlier_fraction: float
    classes: list[FactorClass]

    @classmethod
    def of(cls, a: FactorAnalysis) -> Density:
        return cls(a.n, a.bandwidth, a.adjust, a.grid_x.tolist(), a.grid_y.tolist(), a.maxima_s, a.minima_s,
                   a.splits_s, a.cutoff_s, a.outlier_fraction, list(a.classes))

    def to_json(self) -> dict:
        return {**answer_dict(self), "classes": [answer_dict(c) for c in self.classes]}


@dataclass
class GroupDensity:
    """One group's density: `analysis` (stats.factors.Analysis) or `error` (its message) with
    `message`, the line to show for it."""

    group: dict[str, str | int | float | bool]
    what: str
    durations: np.ndarray | None = None
    start_ns: np.ndarray | None = None
    analysis: FactorAnalysis | None = None
    error: str | None = None
    message: str | None = None

    def timeline_order(self) -> np.ndarray | None:
        """Indices of `durations` in time order, when the rows have start times."""
        return None if self.start_ns is None else np.argsort(self.start_ns, kind="stable")


@dataclass(frozen=True)
class Densities:
    """`factors density`'s answer: each group's density (`GroupDensity`), in the order of the groups. With
    `grouped` (--by) the JSON is a list of `{"group": ..., **analysis}` (or `error` for a group that failed);
    without, the one analysis itself (None when it failed)."""

    runs: list[GroupDensity]
    grouped: bool

    def to_json(self) -> list[dict] | dict | None:
        if self.grouped:
            return [{"group": r.group, **(Density.of(r.analysis).to_json() if r.error is None else {"error": r.error})}
                    for r in self.runs]
        return Density.of(self.runs[0].analysis).to_json() if self.runs else None


def density_runs(groups: list[tuple[dict, pd.DataFrame]], name: str, opts: DensityOptions, drop_invalid: bool,
                 say: Say) -> Iterator[GroupDensity]:
    """The density of each group in turn (a failed group is yielded with its error, the others still run)."""
    for group, g in groups:
        what = f"{name} {fc.group_name(group)}" if group else name
        run = GroupDensity({k: fc.plain(v) for k, v in group.items()}, what)
        try:
            d = g["duration_s"].to_numpy(dtype=np.float64)
            ok = valid_durations(d, drop_invalid, what, say)
            run.durations = keep(d, ok)
            sizes = keep(g["size"].to_numpy(dtype=np.float64), ok) if "size" in g else None
            run.analysis = analyse(run.durations, sizes, **asdict(opts))
        except (UserError, ValueError) as e:
            run.error = str(e)
            run.message = f"{what}: {e}" if isinstance(e, ValueError) else str(e)
        else:
            if "start_ns" in g:
                run.start_ns = keep(g["start_ns"].to_numpy(), ok)
        yield run


def probe_density(store, target: str, op: str, since_ns: int, until_ns: int, kw: dict):
    """(start_ns, duration_s, analysis, samples left out) of one probe op's successful samples in a
    window: the density `factors density --from-store` computes, for the Factors page."""
    df, excluded = probe_samples(store, target, op, since_ns, until_ns)
    start, dur = df["start_ns"].to_numpy(), df["duration_s"].to_numpy()
    try:
        a = analyse(dur, None, **kw)
    except ValueError as e:  # too few or identical durations: no density to read classes from
        raise UserError(f"{target}/{op}: {e}") from None
    return start, dur, a, excluded


#: The Factors page's plot: at most this many samples, thinned keeping the extremes.
MAX_POINTS = 20000


@dataclass(frozen=True)
class Timeline:
    """The Factors page's samples in time order, thinned to MAX_POINTS keeping the extremes (`downsampled`:
    `shown` of `total`): each one's start (ISO 8601 UTC, ms), duration (seconds) and class label (JSON
    `class`)."""

    shown: int
    total: int
    downsampled: bool
    time: list[str]
    duration_s: list[float]
    class_label: list[str]

    def to_json(self) -> dict:
        return {"shown": self.shown, "total": self.total, "downsampled": self.downsampled, "time": self.time,
                "duration_s": self.duration_s, "class": self.class_label}


@dataclass(frozen=True)
class Factors(Answer):
    """Which performance class each sample of one probe target's op fell in over a window: the
    Factors page's answer (`/api/factors`). `analysis` is `factors density --from-store --json` for
    the same target, op, window and options (durations in seconds, the density over ln-seconds);
    `timeline` the samples in time order (ISO 8601 UTC, ms) with their class, thinned to MAX_POINTS
    keeping the extremes; `excluded` how many samples were left out of the analysis (failed)."""

    target: str
    targets_all: list[str]
    op: str
    ops: list[str]
    since: str
    until: str
    adjust: float
    significance: float
    cutoff_fraction: float
    split: str
    analysis: Density
    excluded: int
    timeline: Timeline


def probe_factors(store, targets_all: list[str], target: str, op: str, since_ns: int, until_ns: int,
                  kw: dict) -> Factors:
    """The density of `target`'s `op` over [since, until) with `kw` (adjust, significance, cutoff_fraction,
    split); UserError when the window holds no successful sample, or too few to read classes from."""
    start, dur, a, excluded = probe_density(store, target, op, since_ns, until_ns, kw)
    order = np.argsort(start, kind="stable")
    start, dur, lab = start[order], dur[order], a.labels[order]
    keep = downsample(start, dur, MAX_POINTS)
    names = [c.label for c in a.classes]
    return Factors(target=target, targets_all=targets_all, op=op, ops=list(OPS), since=ns_to_iso(since_ns),
                   until=ns_to_iso(until_ns), **kw, analysis=Density.of(a), excluded=excluded,
                   timeline=Timeline(int(len(keep)), int(len(dur)), bool(len(keep) < len(dur)), iso_ms(start[keep]),
                                     dur[keep].tolist(), [names[i] for i in lab[keep].tolist()]))


# ---------------------------------------------------------------- fit


def parse_caps(items: tuple[str, ...]) -> tuple[int | None, dict[str, int]]:
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


def positive_sizes(df: pd.DataFrame, size_column: str) -> pd.Series:
    sizes = pd.to_numeric(df["size"], errors="coerce")
    if sizes.isna().any() or (sizes <= 0).any():
        raise UserError(f"column {size_column!r} must hold positive sizes in bytes")
    return sizes


@dataclass
class FitInput:
    name: str
    setup_cols: list[str]
    groups: list[tuple[dict, pd.DataFrame]]
    labels: list[str]
    cap_all: int | None
    caps: dict[str, int]

    @property
    def total_sizes(self) -> int:
        return sum(g["size"].nunique() for _, g in self.groups)


def fit_input(settings, files, *, column, unit, where, op, target, since, until, by, size_column,
              size_cap) -> FitInput:
    """The setups to fit, one group of rows each (labels 'cache-op-mem' from the setup columns)."""
    setup_cols = fc.split_cols(by)
    cap_all, caps = parse_caps(size_cap)
    df, name = load_table(settings, files, from_store=False, op=op, target=target, since=since, until=until,
                          column=column, unit=unit, where=where, need=[*setup_cols, size_column])
    df = df.rename(columns={size_column: "size"}) if size_column != "size" else df
    df["size"] = positive_sizes(df, size_column).astype(np.int64)
    groups = [(({k: str(fc.plain(v)) for k, v in grp.items()}), g) for grp, g in fc.groups(df, setup_cols)]
    labels = ["-".join(grp.values()) or "all" for grp, _ in groups]
    unknown = sorted(set(caps) - set(labels))
    if unknown:
        raise UserError(f"--size-cap: no setup {', '.join(unknown)}; setups: {', '.join(labels)}")
    return FitInput(name, setup_cols, groups, labels, cap_all, caps)


def fit_models(inp: FitInput, *, drop_invalid: bool, small_max: int, margin: float, opts: DensityOptions, say: Say,
               on_size: Callable[[], None]) -> tuple[list[FactorModel], int]:
    """(the fitted models, how many setups failed); a failed setup is said and skipped."""
    models, failed = [], 0
    for (grp, g), label in zip(inp.groups, inp.labels):
        d = g["duration_s"].to_numpy(dtype=np.float64)
        try:
            ok = valid_durations(d, drop_invalid, f"{inp.name} {label}", say)
            m, problems = fit_setup(keep(g["size"].to_numpy(), ok), keep(d, ok), label=label, setup=grp,
                                    size_cap_bytes=inp.caps.get(label, inp.cap_all), small_max_bytes=small_max,
                                    margin=margin, on_size=on_size, **asdict(opts))
        except (UserError, ValueError) as e:
            say(f"ioweather: error: {e}")
            failed += 1
            continue
        for p in problems:
            say(f"ioweather: warning: {p} (size skipped)")
        models.append(m)
    if not models:
        raise UserError("no model could be fitted")
    return models, failed


@dataclass(frozen=True)
class ModelFile:
    """`factors fit`'s answer: the model file written (`path`), when (`created`, ISO 8601 UTC), from what
    (`inputs`, the setup columns `grouping`), with which margin over each size's cutoff and density options,
    and the fitted models. Its JSON is the file's document (`stats.factor_models`'s versioned format, which
    `factors classify --model` reads back)."""

    path: Path
    created: str
    inputs: list[str]
    grouping: list[str]
    margin: float
    options: DensityOptions
    models: list[FactorModel]

    def to_json(self) -> dict:
        return models_to_doc(self.models, created=self.created, inputs=self.inputs, grouping=self.grouping,
                             margin=self.margin, **asdict(self.options))


def save_models(models: list[FactorModel], out: Path, *, files, setup_cols: list[str], margin: float,
                opts: DensityOptions) -> ModelFile:
    """Write the model file."""
    saved = ModelFile(Path(out), created=ns_to_iso(time.time_ns()), inputs=[str(f) for f in files],
                      grouping=list(setup_cols), margin=margin, options=opts, models=list(models))
    write_atomic(out, json.dumps(saved.to_json(), indent=1) + "\n")
    return saved


# ---------------------------------------------------------------- classify


def load_models(path: Path):
    """(models, the file's text) of a model file written by `factors fit`."""
    path = Path(path)
    text = read_regular_bytes(path, what="read model file").decode("utf-8", errors="replace")
    try:
        return models_from_doc(json.loads(text)), text
    except json.JSONDecodeError as e:
        raise UserError(f"{path}: not JSON ({e})") from None
    except RecursionError:
        raise UserError(f"{path}: not a model file (JSON nested too deeply)") from None
    except ValueError as e:
        raise UserError(f"{path}: {e}") from None


@dataclass(frozen=True)
class ExperimentShares:
    """A row of Table 4: one experiment (its columns' values, `label` joining them, "all" without), its
    `n` observations and the share of each class (a fraction, by class label in the table's order)."""

    experiment: dict[str, str | int | float | bool]
    label: str
    n: int
    fractions: dict[str, float]


@dataclass
class Classified:
    """Each observation's class (`df['factor']`, `labels`) and Table 4 (`table`, classes in `class_order`)."""

    name: str
    df: pd.DataFrame
    durations: np.ndarray
    sizes: np.ndarray
    labels: np.ndarray
    models: list
    match_cols: list[str]
    class_order: list[str]
    table: list[ExperimentShares]

    def to_json(self) -> dict:
        """`factors classify --json`: the observations, the classes in order and Table 4's rows."""
        return {"n": int(len(self.durations)), "classes": self.class_order,
                "experiments": [answer_dict(r) for r in self.table]}


def _classify_columns(files, from_store, models, *, size_column, fixed_size, match, by) -> tuple[list[str], list[str]]:
    """(experiment columns, columns to load)."""
    if not from_store and files:
        names = lt.column_names(files[0])
        if fixed_size is None and size_column not in names:
            raise UserError(f"column {size_column!r} not found in {files[0]}: give --size-column or --size; "
                            f"columns: {', '.join(names)}")
        exp_cols = fc.split_cols(by) if by is not None else [c for c in fc.EXPERIMENT_COLUMNS if c in names]
        optional = [c for c in ("start_ns",) if c in names]
        need = list(dict.fromkeys([*exp_cols, *([] if fixed_size else [size_column]), *optional,
                                   *(c for c in fc.model_match_cols(models, match, names))]))
        return exp_cols, need
    return (fc.split_cols(by) if by is not None else ["op"]), ["size", "op", "start_ns"]


def classify_rows(settings, files, *, column, unit, where, drop_invalid, from_store, op, target, since, until,
                  model_path, size_column, fixed_size, match, by, else_label, say: Say) -> Classified:
    """Classify each observation by the first model that explains it, and Table 4 per experiment."""
    models, _ = load_models(model_path)
    exp_cols, need = _classify_columns(files, from_store, models, size_column=size_column, fixed_size=fixed_size,
                                       match=match, by=by)
    df, name = load_table(settings, files, from_store=from_store, op=op, target=target, since=since, until=until,
                          column=column, unit=unit, where=where, need=need, size_default=fixed_size)
    if not from_store:
        if fixed_size:
            df["size"] = fixed_size
        elif size_column != "size":
            df = df.rename(columns={size_column: "size"})
    sizes = positive_sizes(df, size_column)
    d = df["duration_s"].to_numpy(dtype=np.float64)
    ok = valid_durations(d, drop_invalid, name, say)
    if ok is not None:
        df = df[ok].reset_index(drop=True)
    d = keep(d, ok)
    s = keep(sizes.to_numpy(dtype=np.float64), ok)
    match_cols = fc.model_match_cols(models, match, list(df.columns))
    labels = fc.classify_matched(df, d, s, models, match_cols, else_label)
    df["factor"] = labels
    order = fc.class_order(models, match_cols, else_label)
    if (labels == NO_MODEL_LABEL).any():
        order.append(NO_MODEL_LABEL)
        say(f"ioweather: warning: {(labels == NO_MODEL_LABEL).sum()} observations have no model "
            f"with the same {', '.join(match_cols)}")
    table = [ExperimentShares(**r) for r in fc.class_shares(df, exp_cols, order)]
    return Classified(name, df, d, s, labels, models, match_cols, order, table)


def write_rows(df: pd.DataFrame, out: Path) -> None:
    """The classified rows as CSV (.csv) or Parquet (anything else)."""
    with atomic_output(out) as f:
        if out.suffix.lower() == ".csv":
            df.to_csv(f, index=False)
        else:
            df.to_parquet(f, index=False)
