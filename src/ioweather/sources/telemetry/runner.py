"""Run every live source with a deadline; a failing or hanging one never stops the others.

Each call runs in its own daemon thread: a read of /proc/fs/lustre can block in the kernel
for minutes when a target is stuck, and such a thread cannot be interrupted. The runner waits
for all sources up to the deadline, reports the late ones as timed out, and skips a source at
the following ticks until its stuck call returns (node_exporter does the same per scrape).
Daemon threads (not a ThreadPoolExecutor, whose workers are joined at exit) let the collector
stop even while a source is stuck.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from ioweather.sources.telemetry.base import Sample, Source, SourceError


@dataclass
class SourceStatus:
    name: str
    ok: int = 0
    failed: int = 0
    timeouts: int = 0
    skipped: int = 0
    samples: int = 0
    seconds: float = 0.0
    last_error: str | None = None
    warnings: set = field(default_factory=set)

    def as_dict(self) -> dict:
        calls = self.ok + self.failed
        return {"name": self.name, "ok": self.ok, "failed": self.failed, "timeouts": self.timeouts,
                "skipped": self.skipped, "samples": self.samples,
                "mean_duration_s": self.seconds / calls if calls else None, "last_error": self.last_error}


@dataclass
class Result:
    source: Source
    samples: list[Sample]


class _Call:
    def __init__(self, source: Source):
        self.source = source
        self.done = threading.Event()
        self.samples: list[Sample] | None = None
        self.error: BaseException | None = None
        self.seconds = 0.0
        self.thread = threading.Thread(target=self._run, name=f"source-{source.name}", daemon=True)

    def _run(self) -> None:
        t0 = time.perf_counter()
        try:
            self.samples = self.source.collect()
        except BaseException as e:  # reported to the log; a source bug must not kill the daemon
            self.error = e
        finally:
            self.seconds = time.perf_counter() - t0
            self.done.set()


class Runner:
    def __init__(self, sources: list[Source], timeout_s: float, log=lambda msg: None):
        self.sources = list(sources)
        self.timeout_s = timeout_s
        self.log = log
        self.status = {s.name: SourceStatus(s.name) for s in self.sources}
        self._stuck: dict[str, _Call] = {}

    def collect(self) -> list[Result]:
        calls: list[_Call] = []
        for src in self.sources:
            st = self.status[src.name]
            stuck = self._stuck.get(src.name)
            if stuck is not None:
                if not stuck.done.is_set():
                    st.skipped += 1
                    continue
                del self._stuck[src.name]
                self.log(f"{src.name}: the call that timed out has returned after {stuck.seconds:.1f} s")
            call = _Call(src)
            src.warnings = []
            call.thread.start()
            calls.append(call)
        deadline = time.monotonic() + self.timeout_s
        results = []
        for call in calls:
            name = call.source.name
            st = self.status[name]
            if not call.done.wait(max(0.0, deadline - time.monotonic())):
                st.timeouts += 1
                st.last_error = f"no answer within {self.timeout_s:g} s"
                self._stuck[name] = call
                self.log(f"{name}: no answer within {self.timeout_s:g} s; skipped until it returns")
                continue
            st.seconds += call.seconds
            for w in call.source.warnings:
                if w not in st.warnings:  # each distinct problem once, not every 5 s
                    st.warnings.add(w)
                    self.log(f"{name}: {w}")
            if call.error is not None:
                st.failed += 1
                e = call.error
                msg = str(e) if isinstance(e, (SourceError, OSError)) else f"{type(e).__name__}: {e}"
                if st.last_error != msg:
                    self.log(f"{name}: failed: {msg}")
                st.last_error = msg
                continue
            st.ok += 1
            st.samples += len(call.samples or [])
            results.append(Result(call.source, call.samples or []))
        return results
