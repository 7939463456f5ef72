"""CPU time of each test, for the fast tier's budget (docs/architecture.md, "Test tiers").

Loaded by tests/conftest.py when IOWEATHER_TEST_CPU names a directory: each pytest process (the controller
and every xdist worker) writes DIR/<worker>.jsonl, one line per test with the CPU seconds of its setup, call
and teardown in this process (user + sys, `resource.RUSAGE_SELF`) and in the processes it started and waited
for (`RUSAGE_CHILDREN`: `python -m ioweather`, a store built by tests/shared_stores.py), its wall start and
end, and one line per process for its start-up and collection and its end. CPU hardly depends on what else
the machine runs, where wall time does. A module fixture's setup counts in its first test's setup, its
teardown in the last test's teardown.

    IOWEATHER_TEST_CPU=/tmp/cpu nice -n 19 python -m pytest -n 2 --fast -q -p no:cacheprovider
    python tests/cpu_times.py /tmp/cpu          # totals, the two workers' finish, the heaviest modules
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

_DIR = os.environ.get("IOWEATHER_TEST_CPU", "")
_PHASES = ("setup", "call", "teardown")


def _now() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


class _Log:
    def __init__(self) -> None:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        Path(_DIR).mkdir(parents=True, exist_ok=True)
        self.file = open(Path(_DIR) / f"{worker}.jsonl", "w", encoding="utf-8")  # noqa: SIM115 (closed at exit)
        self.worker = worker
        self.current: dict = {}

    def write(self, row: dict) -> None:
        self.file.write(json.dumps(row) + "\n")
        self.file.flush()


_LOG: _Log | None = None


_GC = [0.0, 0.0, 0]  # CPU seconds in the cyclic garbage collector, when its current pass began, passes


def _gc_timer(phase: str, info: dict) -> None:
    if phase == "start":
        _GC[1] = time.process_time()
    else:
        _GC[0] += time.process_time() - _GC[1]
        _GC[2] += 1


def pytest_configure(config):
    global _LOG
    _LOG = _Log()
    import gc

    gc.callbacks.append(_gc_timer)
    own, kids = _now()
    _LOG.write({"event": "configure", "worker": _LOG.worker, "t": time.time(), "cpu": own, "children": kids})


def pytest_collection_finish(session):
    own, kids = _now()
    _LOG.write({"event": "collected", "worker": _LOG.worker, "t": time.time(), "cpu": own, "children": kids,
                "items": len(session.items)})


def _phase(name: str):
    @pytest.hookimpl(hookwrapper=True)
    def wrapper(item, *args):
        own, kids = _now()
        if name == "setup":
            _LOG.current = {"event": "test", "nodeid": item.nodeid, "start": time.time()}
        yield
        own2, kids2 = _now()
        _LOG.current[name] = round(own2 - own, 4)
        _LOG.current[name + "_children"] = round(kids2 - kids, 4)
        if name == "teardown":
            _LOG.current["end"] = time.time()
            _LOG.write(_LOG.current)
    return wrapper


pytest_runtest_setup = _phase("setup")
pytest_runtest_call = _phase("call")
pytest_runtest_teardown = _phase("teardown")


def pytest_sessionfinish(session):
    own, kids = _now()
    _LOG.write({"event": "finish", "worker": _LOG.worker, "t": time.time(), "cpu": own, "children": kids,
                "gc": round(_GC[0], 3), "gc_passes": _GC[2]})


def _cost(row: dict) -> float:
    return sum(row.get(p, 0.0) + row.get(p + "_children", 0.0) for p in _PHASES)


def summarize(directory: Path, top: int = 40) -> None:
    """Print the totals, each worker's time line and the heaviest modules and tests."""
    tests, procs = [], {}
    for path in sorted(directory.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row["event"] == "test":
                row["worker"] = path.stem
                tests.append(row)
            else:
                procs.setdefault(path.stem, {})[row["event"]] = row
    start = min(p["configure"]["t"] for p in procs.values())
    print("process  start-up+collect  tests  cpu(self)  cpu(children)  finished at (s after the first start)")
    for worker, ev in sorted(procs.items()):
        fin = ev.get("finish", ev.get("collected"))
        own, kids = fin["cpu"], fin["children"]
        coll = ev.get("collected", ev["configure"])
        mine = [t for t in tests if t["worker"] == worker]
        print(f"{worker:8} {coll['cpu'] + coll['children']:16.1f} {len(mine):6} {own:10.1f} {kids:14.1f}"
              f"  {fin['t'] - start:8.1f}")
    # the controller's children are the workers (and theirs), reaped before its end
    total = (sum(procs["main"]["finish"][k] for k in ("cpu", "children")) if "finish" in procs.get("main", {})
             else sum(ev["finish"]["cpu"] + ev["finish"]["children"] for ev in procs.values() if "finish" in ev))
    print("garbage collector:", ", ".join(f"{w} {ev['finish'].get('gc', 0):.1f} s in {ev['finish'].get('gc_passes', 0)}"
                                          " passes" for w, ev in sorted(procs.items()) if "finish" in ev))
    print(f"CPU of every pytest process and its children: {total:.1f} s; tests' own sum:"
          f" {sum(_cost(t) for t in tests):.1f} s over {len(tests)} tests")
    by_module: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for t in tests:
        m = by_module[t["nodeid"].split("::")[0]]
        m[0] += t.get("setup", 0) + t.get("teardown", 0) + t.get("setup_children", 0) + t.get("teardown_children", 0)
        m[1] += t.get("call", 0)
        m[2] += t.get("call_children", 0)
        m[3] += 1
    print(f"\n{'module':55} {'tests':>5} {'fixtures':>8} {'call':>7} {'procs':>7} {'total':>7}")
    for name, (fix, call, kids, n) in sorted(by_module.items(), key=lambda kv: -sum(kv[1][:3]))[:top]:
        print(f"{name:55} {n:5} {fix:8.1f} {call:7.1f} {kids:7.1f} {fix + call + kids:7.1f}")
    print(f"\n{'test':90} {'setup':>6} {'call':>6} {'procs':>6}")
    for t in sorted(tests, key=lambda t: -_cost(t))[:top]:
        kids = sum(t.get(p + "_children", 0.0) for p in _PHASES)
        print(f"{t['nodeid'][:90]:90} {t.get('setup', 0):6.2f} {t.get('call', 0):6.2f} {kids:6.2f}")


if __name__ == "__main__":
    summarize(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 40)
