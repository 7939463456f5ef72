"""CPU per log of the characterization (stats.job `characterize`, `file_columns`, stats.lustre
`lustre_file_columns`) over a directory of Darshan logs, each read once beforehand; each pass empties the
per-log caches first (the ingest's worker makes them once per log). Prints each pass and the minimum.

    PYTHONPATH=TREE/src chrt -f 10 python benchmarks/bench_characterize.py [--logs DIR] [--passes N] [--dump FILE]

--dump writes every answer (values, dtypes, order; floats by repr) to FILE: two trees' dumps compared with
`cmp` tell whether a change kept the answers.
"""

from __future__ import annotations

import argparse
import glob
import sys
import time

import numpy as np


def _norm(x):
    if isinstance(x, dict):
        return {k: _norm(v) for k, v in x.items()} | {"__keys__": list(x.keys())}
    if isinstance(x, (list, tuple)):
        return [type(x).__name__] + [_norm(v) for v in x]
    if isinstance(x, np.ndarray):
        return ("nd", str(x.dtype), x.shape, [repr(v) + type(v).__name__ for v in x.tolist()])
    return repr(x) + type(x).__name__


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--logs", default="/tmp/fleet-logs")
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--dump")
    args = ap.parse_args()
    import ioweather.services.jobs.ingest as ing
    import ioweather.stats.job as job
    from ioweather.sources.darshan_log import read_log
    from ioweather.stats.damage import drop_impossible
    from ioweather.stats.lustre import lustre_file_columns

    ing._load_reader()
    logs = []
    for p in sorted(glob.glob(f"{args.logs}/*.darshan")):
        try:
            log = read_log(p, dxt=False, heatmaps=False)
        except Exception:  # a log the ingest would list as failed
            continue
        logs.append((log, drop_impossible(log)[0]))
    best = [float("inf")] * 4
    for i in range(args.passes):
        job._PER_LOG.clear()
        job._ROWS.clear()
        t0 = time.process_time()
        ch = [job.characterize(clean) for _, clean in logs]
        t1 = time.process_time()
        fc = [job.file_columns(log) for log, _ in logs]
        t2 = time.process_time()
        lu = [lustre_file_columns(clean) for _, clean in logs]
        t3 = time.process_time()
        got = [(b - a) / len(logs) * 1e3 for a, b in ((t0, t1), (t1, t2), (t2, t3), (t0, t3))]
        best = [min(x, y) for x, y in zip(best, got)]
        print("pass %d: characterize %.3f file_columns %.3f lustre_file_columns %.3f sum %.3f ms/log" % (i, *got),
              file=sys.stderr)
    print("min: characterize %.3f file_columns %.3f lustre_file_columns %.3f sum %.3f ms/log (%d logs)"
          % (*best, len(logs)), file=sys.stderr)
    if args.dump:
        with open(args.dump, "w") as f:
            for row in zip(ch, fc, lu):
                f.write("".join(repr(_norm(x)) + "\n" for x in row))


if __name__ == "__main__":
    main()
