"""Grouping observations and naming their classes for `factors density|fit|classify` (METHODS.md 2.5).

Pure: frames and models in, labels and shares out. The fitting and the classification rule
themselves are in stats/factor_models.py.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ioweather.errors import UserError
from ioweather.stats.factor_models import NO_MODEL_LABEL, class_name, classify

#: Experiment columns of the io-model's rows, the default rows of Table 4.
EXPERIMENT_COLUMNS = ("cache", "mem_layout", "file_layout", "op")


def split_cols(text: str | None) -> list[str]:
    """'a, b,' -> ['a', 'b']: a comma-separated column list of an option."""
    return [c.strip() for c in (text or "").split(",") if c.strip()]


def plain(v):
    """A numpy scalar as the Python value JSON and labels expect."""
    return v.item() if isinstance(v, np.generic) else v


def groups(df: pd.DataFrame, by: list[str], option: str = "--by") -> list[tuple[dict, pd.DataFrame]]:
    """[(dict of group values, frame)] in sorted order, one group without `by`."""
    if not by:
        return [({}, df)]
    missing = [c for c in by if c not in df.columns]
    if missing:
        raise UserError(f"{option}: no column {', '.join(map(repr, missing))}; columns: {', '.join(df.columns)}")
    return [(dict(zip(by, (k if isinstance(k, tuple) else (k,)))), g) for k, g in df.groupby(by, sort=True)]


def group_name(group: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in group.items()) or "all"


def model_match_cols(models, match: str | None, names: list[str]) -> list[str]:
    """Columns an observation must share with a model: --match, else op when models and data have it."""
    setup_keys = set().union(*(m.setup.keys() for m in models))
    if match is not None:
        cols = split_cols(match)
        bad = [c for c in cols if c not in setup_keys]
        if bad:
            raise UserError(f"--match {', '.join(bad)}: the models' setups have only {', '.join(sorted(setup_keys)) or 'no columns'}")
        return cols
    return ["op"] if "op" in setup_keys and "op" in names else []


def class_order(models, match_cols: list[str], else_label: str) -> list[str]:
    """Class names, fastest model first (by prediction at 4 KiB), then the else label."""
    by_speed = sorted(models, key=lambda m: float(m.predict([4096])[0]))
    return list(dict.fromkeys([class_name(m, match_cols) for m in by_speed] + [else_label]))


def classify_matched(df: pd.DataFrame, d: np.ndarray, s: np.ndarray, models, match_cols: list[str],
                     else_label: str) -> np.ndarray:
    """Class name per row: each row against the models sharing its match columns."""
    labels = np.full(len(d), NO_MODEL_LABEL, dtype=object)
    if match_cols:
        missing = [c for c in match_cols if c not in df.columns]
        if missing:
            raise UserError(f"the data has no column {', '.join(missing)} to match the models by (--match)")
        keys = df[match_cols].astype(str).agg("\x1f".join, axis=1) if len(match_cols) > 1 else df[match_cols[0]].astype(str)
        by_key = {k: np.flatnonzero(keys.to_numpy() == k) for k in pd.unique(keys)}
    else:
        by_key = {None: np.arange(len(d))}
    for key, idx in by_key.items():
        ms = models if key is None else [m for m in models
                                         if "\x1f".join(str(m.setup.get(c)) for c in match_cols) == key]
        if not ms:
            continue
        k = classify(d[idx], s[idx], ms)
        names = np.array([class_name(m, match_cols) for m in ms] + [else_label], dtype=object)
        labels[idx] = names[k]  # k == -1 picks the last entry: the else label
    return labels


def class_shares(df: pd.DataFrame, exp_cols: list[str], order: list[str]) -> list[dict]:
    """Table 4: per experiment (group of `exp_cols`), its size and the share of each class of `order`."""
    out = []
    for grp, g in groups(df, exp_cols):
        counts = g["factor"].value_counts()
        n = len(g)
        out.append({"experiment": {k: plain(v) for k, v in grp.items()},
                    "label": "-".join(str(v) for v in grp.values()) or "all", "n": int(n),
                    "fractions": {c: float(counts.get(c, 0)) / n for c in order}})
    return out
