"""The History answer's text with each heatmap row's settled columns kept (web/pages/history.py `_encoded`) is the
text of encoding the answer whole, request after request, as rows gain columns, their grid moves by an interval,
a settled value changes (a baseline refreshed) and the unfinished interval changes. Random rows, seed printed."""

from __future__ import annotations

import os
import random

from ioweather.encoding import to_json
from ioweather.web.pages import history as page

SEED = int(os.environ.get("TEST_SEED", random.randrange(2**32)))


def _doc(rows: dict[str, dict[str, list]], rng: random.Random) -> dict:
    targets = [{"target": name, "expected_s": {"a": 0.1, "b": None}, "baseline": {"since": "x", "until": "y"},
                **m, "worst": [{"op": "a", "slowdown": rng.random()}], "learning": {"a": False},
                "learning_reason": None} for name, m in rows.items()]
    return {"since": "s", "until": "u", "interval_s": 3600, "ops": ["a", "b"], "time": ["t"], "targets": targets}


def _row(rng: random.Random, n: int, ints: bool) -> list:
    if ints:
        return [rng.randrange(4000) for _ in range(n)]
    return [None if rng.random() < 0.1 else rng.lognormvariate(0, 0.5) for _ in range(n)]


def test_kept_rows_give_the_whole_text():
    print(f"seed {SEED}")
    rng = random.Random(SEED)
    page._ROWS.clear()
    rows = {t: {m: [_row(rng, 20, m != "slowdown") for _ in range(2)] for m in ("slowdown", "count", "timeouts")}
            for t in ("t1", "t2")}
    reused = 0
    for step in range(60):
        doc = _doc(rows, rng)
        before = dict(page._ROWS)
        assert to_json(page._encoded(doc)) == to_json(doc), step
        reused += sum(before.get(k) is v for k, v in page._ROWS.items())
        for m in rows.values():
            for name, matrix in m.items():
                for row in matrix:
                    what = rng.random()
                    if what < 0.5:  # the unfinished interval's value moves
                        row[-1] = _row(rng, 1, name != "slowdown")[0]
                    elif what < 0.7:  # an interval settles: the grid moves by one
                        row.pop(0)
                        row.append(_row(rng, 1, name != "slowdown")[0])
                    elif what < 0.8:  # a settled value changes (a refreshed baseline)
                        row[rng.randrange(len(row))] = _row(rng, 1, name != "slowdown")[0]
                    elif what < 0.85:  # another window: fewer columns
                        del row[:rng.randrange(len(row))]
                    elif what < 0.9:
                        row.extend(_row(rng, rng.randrange(3), name != "slowdown"))
    assert reused > 100  # the kept texts were used, not only made
