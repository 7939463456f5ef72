"""Same stored rows before and after a change to the ingest (issue 40 item 1): every public Darshan log
(tests/darshan_support.all_real_logs: ../shared/testdata, ../shared/data, PyDarshan's examples) ingested
with each src/ tree by `ioweather jobs ingest`, into an empty home, then the store dumped and compared.

    python benchmarks/bench_ingest_same_rows.py --before-src DIR [--after-src DIR] [--keep DIR]

The dump: every job row (all columns but the ingest's time stamp and the Parquet part's name, which
holds it), with its findings (finding_codes, findings_json, verdict); the failed logs (but their
time stamp); every per-file Parquet row, sorted; and per log the hash of the repr of its whole
characterization, findings with their evidence, and per-file columns (what `job --json` shows). Floats are compared exactly (repr). Exit 1 and the
first differences when the two dumps differ, each differing job row and failed log named with the columns
that differ and their two values. `--keep DIR` leaves the two dumps there (JSON lines).
"""

from __future__ import annotations

import argparse
import difflib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

#: run inside the tree under test (its PYTHONPATH): the store dumped as sorted JSON lines
DUMP = r"""
import json, math, sys
from ioweather.config import Settings
from ioweather.store import open_store
from ioweather.store import jobs as J

def plain(v):
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float):
        return repr(v)  # exact, and NaN comparable
    return v

settings = Settings.resolve()
store = open_store(settings)
out = []
df = J.load_jobs(store)
for r in df.to_dict("records"):
    r = {k: plain(v) for k, v in r.items() if k not in ("ingested_ns", "files_part")}
    out.append("job " + json.dumps(r, sort_keys=True, default=str))
for f in J.failed(store):
    out.append("failed " + json.dumps({k: plain(v) for k, v in f.items() if k != "failed_ns"}, sort_keys=True,
                                      default=str))
t = J.file_rows(store, settings.parquet_dir)
for r in (t.to_pylist() if t is not None else []):
    out.append("file " + json.dumps({k: plain(v) for k, v in r.items()}, sort_keys=True, default=str))
sys.stdout.write("\n".join(sorted(out)) + "\n")
"""


#: run inside the tree under test: each log's whole characterization, findings (with their evidence) and
#: per-file columns, as `job --json` and the ingest compute them before anything is stored (repr: exact)
WHOLE = r"""
import hashlib, sys
from ioweather.sources.darshan_log import read_log, DarshanLogError
from ioweather.stats.damage import drop_impossible
from ioweather.stats.findings import job_findings
from ioweather.stats.job import characterize, file_columns

for p in sys.argv[1:]:
    try:
        log = read_log(p, dxt=False, heatmaps=False)
    except DarshanLogError as e:
        print("whole", p, "error", e)
        continue
    clean, damage = drop_impossible(log)
    ch = characterize(clean)
    text = repr((ch, job_findings(clean, ch), {k: list(v) for k, v in file_columns(log).items()}))
    print("whole", p, len(text), hashlib.sha256(text.encode()).hexdigest())
"""


def dump(src: Path, logs: list[Path], scratch: Path) -> list[str]:
    home = scratch / f"home-{abs(hash(str(src)))}"
    env = {"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin", "IOWEATHER_HOME": str(home), "HOME": str(home)}
    p = subprocess.run([sys.executable, "-m", "ioweather", "jobs", "ingest", "--workers", "1", *map(str, logs)],
                       env=env, capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"ingest with {src} failed ({p.returncode}): {p.stderr[-800:]}")
    p = subprocess.run([sys.executable, "-c", DUMP], env=env, capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"dump with {src} failed: {p.stderr[-800:]}")
    w = subprocess.run([sys.executable, "-c", WHOLE, *map(str, logs)], env=env, capture_output=True, text=True)
    if w.returncode:
        raise SystemExit(f"characterization with {src} failed: {w.stderr[-800:]}")
    return p.stdout.splitlines() + w.stdout.splitlines()


def main() -> int:
    from darshan_support import all_real_logs

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before-src", type=Path, required=True)
    ap.add_argument("--after-src", type=Path, default=ROOT / "src")
    ap.add_argument("--keep", type=Path)
    a = ap.parse_args()
    logs = all_real_logs()
    with tempfile.TemporaryDirectory(prefix="iw-same-rows-") as d:
        before = dump(a.before_src.resolve(), logs, Path(d))
        after = dump(a.after_src.resolve(), logs, Path(d))
    if a.keep:
        a.keep.mkdir(parents=True, exist_ok=True)
        (a.keep / "before.jsonl").write_text("\n".join(before) + "\n")
        (a.keep / "after.jsonl").write_text("\n".join(after) + "\n")
    kinds = {k: sum(line.startswith(k + " ") for line in after) for k in ("job", "failed", "file", "whole")}
    print(f"{len(logs)} public logs: {kinds['job']} job rows, {kinds['failed']} failed logs, "
          f"{kinds['file']} per-file rows; {kinds['whole']} whole characterizations + findings (hashed)")
    if before == after:
        print("identical")
        return 0
    diff = list(difflib.unified_diff(before, after, "before", "after", lineterm="", n=0))
    print(f"DIFFERENT: {sum(x.startswith(('-', '+')) for x in diff) - 2} lines")
    for line in differing_fields(before, after):
        print(line)
    print("\n".join(x[:400] for x in diff[:40]))
    return 1


def differing_fields(before: list[str], after: list[str]) -> list[str]:
    """The job rows (by log_hash) and failed logs (by path_hash) in both dumps that differ, each with the
    columns that differ and their two values (a row's JSON is longer than the diff's lines show)."""
    def rows(lines: list[str]) -> dict:
        out = {}
        for line in lines:
            kind, _, text = line.partition(" ")
            if kind in ("job", "failed"):
                r = json.loads(text)
                out[(kind, r.get("log_hash") if kind == "job" else r.get("path_hash"))] = r
        return out

    b, a = rows(before), rows(after)
    out = [f"{k[0]} {k[1]}: only {'before' if k in b else 'after'}" for k in sorted(b.keys() ^ a.keys(), key=str)]
    for k in sorted(b.keys() & a.keys(), key=str):
        cols = sorted(c for c in b[k].keys() | a[k].keys() if b[k].get(c) != a[k].get(c))
        if cols:
            out.append(f"{k[0]} {k[1][:16]}: columns {', '.join(cols)}")
            out += [f"    {c}: {str(b[k].get(c))[:200]!s} -> {str(a[k].get(c))[:200]!s}" for c in cols]
    return out


if __name__ == "__main__":
    sys.exit(main())
