"""Linear models per performance factor and classification by them (METHODS.md 2.4-2.5).

For one setup (e.g. cached, R, off0 memory) and each access size s, the outlier
cutoff of that size's durations plus 10 % is the slowest duration the factor
explains. Two lines fit these points: least squares d = I + c s for s <= 4096, and
for s > 4096 a line whose intercept is fixed to the small line's value at 4096 B
(only the slope is fitted). This reproduces every row of Table 3 of the paper
(2.94e-7 + 4096 x 4.41e-11 = 4.75e-7). An observation then belongs to the model with
the smallest prediction at its size that is still >= its duration, else to the next
factor up ("uncached").

Pure functions; the model document (`models_to_doc` / `models_from_doc`) is a plain
dict, written and read by the command.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ioweather._native import density_core
from ioweather.stats.factors import cutoff_of

SMALL_MAX_BYTES = 4096  # the paper's break between the small and the large model (Table 3)
MODEL_MARGIN = 0.10     # "adding 10 % to this value as they vary between the sizes"
MODEL_FORMAT = "ioweather.factors.models"
MODEL_VERSION = 1
NO_MODEL_LABEL = "no-model"  # an observation whose op (or other match column) no model covers


@dataclass(frozen=True)
class Line:
    """d(s) = intercept_s + slope_s_per_byte * s."""

    intercept_s: float
    slope_s_per_byte: float

    def __call__(self, s):
        return self.intercept_s + self.slope_s_per_byte * np.asarray(s, dtype=np.float64)


@dataclass
class Piece:
    """One fitted line and how well it explains its training data (a row of Table 3)."""

    line: Line
    sizes_bytes: list[int]
    n: int
    abs_err_s: float
    rel_err: float              # fraction, the paper's "Rel.err in %" / 100
    outlier_fraction: float     # above the per-size density cutoffs (the paper's "Exp.")
    above_model_fraction: float  # above the line (the paper's "Model")


@dataclass
class FactorModel:
    """One performance factor: a small (s <= 4096) and a large (s > 4096) line."""

    label: str
    setup: dict
    small: Piece | None
    large: Piece | None
    small_max_bytes: int = SMALL_MAX_BYTES
    size_cap_bytes: int | None = None
    per_size: list[dict] = field(default_factory=list)

    def predict(self, sizes) -> np.ndarray:
        """Predicted slowest duration explained by this factor; a missing piece uses the other."""
        s = np.asarray(sizes, dtype=np.float64)
        small = (self.small or self.large).line
        large = (self.large or self.small).line
        return np.where(s <= self.small_max_bytes, small(s), large(s))


# ---------------------------------------------------------------- fitting


def fit_small(sizes: np.ndarray, targets: np.ndarray) -> Line:
    """Least squares d = I + c s (R's `lm(target ~ size)`); a single size gives a flat line."""
    if len(np.unique(sizes)) < 2:
        return Line(float(np.mean(targets)), 0.0)
    c, i = np.polyfit(np.asarray(sizes, dtype=np.float64), targets, 1)
    return Line(float(i), float(c))


def fit_large(sizes: np.ndarray, targets: np.ndarray, intercept_s: float | None) -> Line:
    """Slope only, through the fixed intercept (METHODS.md 2.4); both when there is no small line."""
    if intercept_s is None:
        return fit_small(sizes, targets)
    s = np.asarray(sizes, dtype=np.float64)
    c, *_ = np.linalg.lstsq(s[:, None], targets - intercept_s, rcond=None)
    return Line(float(intercept_s), float(c[0]))


def fit_lines(sizes, cutoffs_s, *, small_max_bytes: int = SMALL_MAX_BYTES,
              margin: float = MODEL_MARGIN) -> tuple[Line | None, Line | None]:
    """(small, large) lines through (1 + margin) x each size's outlier cutoff."""
    s = np.asarray(sizes, dtype=np.int64)
    t = np.asarray(cutoffs_s, dtype=np.float64) * (1.0 + margin)
    is_small = s <= small_max_bytes
    small = fit_small(s[is_small], t[is_small]) if is_small.any() else None
    large = None
    if (~is_small).any():
        anchor = float(small(small_max_bytes)) if small is not None else None
        large = fit_large(s[~is_small], t[~is_small], anchor)
    return small, large


def fit_errors(line: Line, sizes, cutoffs_s) -> tuple[float, float]:
    """Mean absolute (s) and relative (fraction) error of the line against each size's cutoff.

    Read from Table 3: a perfect fit of 1.1 x cutoff errs by 10 %, and the paper's
    smallest relative errors are 10.0-10.4 % with absolute errors ~0.1 x the intercept.
    """
    c = np.asarray(cutoffs_s, dtype=np.float64)
    err = np.abs(line(sizes) - c)
    return float(err.mean()), float((err / c).mean())


def fit_setup(sizes, durations_s, *, label: str, setup: dict, size_cap_bytes: int | None = None,
              small_max_bytes: int = SMALL_MAX_BYTES, margin: float = MODEL_MARGIN,
              on_size=None, **density_kw) -> tuple[FactorModel, list[str]]:
    """The model of one setup from its observations, and the problems met per size.

    Each access size is analysed on its own (its density, its cutoff); a size whose
    durations cannot be analysed (one row, invalid values) is skipped and reported.
    `on_size()` is called after each size (a progress bar).
    """
    s = np.asarray(sizes, dtype=np.int64)
    d = np.asarray(durations_s, dtype=np.float64)
    if size_cap_bytes is not None:
        keep = s <= size_cap_bytes
        s, d = s[keep], d[keep]
    order = np.argsort(s, kind="stable")
    s, d = s[order], d[order]
    uniq, starts = np.unique(s, return_index=True)
    ends = np.append(starts[1:], len(s))
    per_size, problems = [], []
    for size, a, b in zip(uniq, starts, ends):
        try:
            cut, frac = cutoff_of(d[a:b], **density_kw)
            per_size.append({"size_bytes": int(size), "n": int(b - a), "cutoff_s": cut, "outlier_fraction": frac})
        except ValueError as e:
            problems.append(f"{label} size {int(size)}: {e}")
        if on_size:
            on_size()
    if not per_size:
        raise ValueError(f"{label}: no access size could be analysed" + (f" ({problems[0]})" if problems else ""))
    ps = np.array([p["size_bytes"] for p in per_size])
    pc = np.array([p["cutoff_s"] for p in per_size])
    small_line, large_line = fit_lines(ps, pc, small_max_bytes=small_max_bytes, margin=margin)
    pieces = []
    for line, in_piece in ((small_line, ps <= small_max_bytes), (large_line, ps > small_max_bytes)):
        if line is None:
            pieces.append(None)
            continue
        obs = np.isin(s, ps[in_piece])
        n_obs = int(obs.sum())
        abs_err, rel_err = fit_errors(line, ps[in_piece], pc[in_piece])
        n_out = sum(p["outlier_fraction"] * p["n"] for p, k in zip(per_size, in_piece) if k)
        pieces.append(Piece(line=line, sizes_bytes=[int(x) for x in ps[in_piece]], n=n_obs,
                            abs_err_s=abs_err, rel_err=rel_err, outlier_fraction=n_out / n_obs,
                            above_model_fraction=float((d[obs] > line(s[obs])).mean())))
    model = FactorModel(label=label, setup=dict(setup), small=pieces[0], large=pieces[1],
                        small_max_bytes=small_max_bytes, size_cap_bytes=size_cap_bytes, per_size=per_size)
    return model, problems


# ---------------------------------------------------------------- classification


def class_name(model: FactorModel, match_cols: list[str]) -> str:
    """A model's class as the paper names it: its setup without the columns matched on (e.g. op)."""
    rest = [str(v) for k, v in model.setup.items() if k not in match_cols]
    return "-".join(rest) if rest else model.label


def classify(durations_s, sizes, models: list[FactorModel]) -> np.ndarray:
    """Index of the explaining model per observation (int16), -1 when none does (METHODS.md 2.5).

    "Sort the models by their prediction at the size, take the first whose prediction
    is >= the duration" is the model with the smallest prediction among those >= the
    duration, so no per-size sort is needed: one pass over the observations (C, in
    `_native/density_core.c`; numpy needed ~10 array passes per model). Ties keep the
    earlier model.
    """
    d = np.ascontiguousarray(durations_s, dtype=np.float64)
    s = np.ascontiguousarray(sizes, dtype=np.float64)
    if d.shape != s.shape:
        raise ValueError("durations and sizes must have the same length")
    small = [(m.small or m.large).line for m in models]
    large = [(m.large or m.small).line for m in models]
    params = [np.array(v, dtype=np.float64) for v in (
        [m.small_max_bytes for m in models], [x.intercept_s for x in small], [x.slope_s_per_byte for x in small],
        [x.intercept_s for x in large], [x.slope_s_per_byte for x in large])]
    label = np.empty(len(d), dtype=np.int16)
    density_core.classify_lines(d, s, *params, label)
    return label


# ---------------------------------------------------------------- the model document


def _piece_doc(p: Piece | None) -> dict | None:
    if p is None:
        return None
    return {"intercept_s": p.line.intercept_s, "slope_s_per_byte": p.line.slope_s_per_byte,
            "sizes_bytes": p.sizes_bytes, "n": p.n, "abs_err_s": p.abs_err_s, "rel_err": p.rel_err,
            "outlier_fraction": p.outlier_fraction, "above_model_fraction": p.above_model_fraction}


def models_to_doc(models: list[FactorModel], **meta) -> dict:
    """The model file: format, version, how it was fitted (`meta`), one entry per factor."""
    return {"format": MODEL_FORMAT, "version": MODEL_VERSION, **meta,
            "models": [{"label": m.label, "setup": m.setup, "small_max_bytes": m.small_max_bytes,
                        "size_cap_bytes": m.size_cap_bytes, "small": _piece_doc(m.small),
                        "large": _piece_doc(m.large), "per_size": m.per_size} for m in models]}


def _number(v, where: str, *, positive: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(f"{where} must be a finite number, got {v!r}")
    if positive and v <= 0:
        raise ValueError(f"{where} must be positive, got {v!r}")
    return float(v)


def _piece_from(doc, where: str) -> Piece | None:
    if doc is None:
        return None
    if not isinstance(doc, dict):
        raise ValueError(f"{where} must be an object or null")
    for k in ("intercept_s", "slope_s_per_byte"):
        if k not in doc:
            raise ValueError(f"{where}.{k} is missing")
    line = Line(_number(doc["intercept_s"], f"{where}.intercept_s"),
                _number(doc["slope_s_per_byte"], f"{where}.slope_s_per_byte"))
    return Piece(line=line, sizes_bytes=list(doc.get("sizes_bytes") or []), n=int(doc.get("n") or 0),
                 abs_err_s=float(doc.get("abs_err_s") or math.nan), rel_err=float(doc.get("rel_err") or math.nan),
                 outlier_fraction=float(doc.get("outlier_fraction") or math.nan),
                 above_model_fraction=float(doc.get("above_model_fraction") or math.nan))


def models_from_doc(doc) -> list[FactorModel]:
    """Models from a model document, or ValueError saying which field is wrong."""
    if not isinstance(doc, dict) or doc.get("format") != MODEL_FORMAT:
        raise ValueError(f"not an ioweather factor model file (expected \"format\": \"{MODEL_FORMAT}\")")
    if doc.get("version") != MODEL_VERSION:
        raise ValueError(f"model file version {doc.get('version')!r} is not supported "
                         f"(this ioweather reads version {MODEL_VERSION}); fit the models again")
    entries = doc.get("models")
    if not isinstance(entries, list) or not entries:
        raise ValueError("\"models\" must be a non-empty list")
    out, seen = [], set()
    for i, e in enumerate(entries):
        where = f"models[{i}]"
        if not isinstance(e, dict):
            raise ValueError(f"{where} must be an object")
        label = e.get("label")
        if not isinstance(label, str) or not label:
            raise ValueError(f"{where}.label must be a non-empty string")
        if label in seen:
            raise ValueError(f"{where}.label {label!r} appears twice")
        seen.add(label)
        setup = e.get("setup", {})
        if not isinstance(setup, dict) or not all(isinstance(v, (str, int, float)) for v in setup.values()):
            raise ValueError(f"{where}.setup must map column names to values")
        small, large = _piece_from(e.get("small"), f"{where}.small"), _piece_from(e.get("large"), f"{where}.large")
        if small is None and large is None:
            raise ValueError(f"{where} has neither a small nor a large line")
        smax = int(_number(e.get("small_max_bytes", SMALL_MAX_BYTES), f"{where}.small_max_bytes", positive=True))
        cap = e.get("size_cap_bytes")
        cap = None if cap is None else int(_number(cap, f"{where}.size_cap_bytes", positive=True))
        out.append(FactorModel(label=label, setup={k: str(v) for k, v in setup.items()}, small=small, large=large,
                               small_max_bytes=smax, size_cap_bytes=cap, per_size=list(e.get("per_size") or [])))
    return out
