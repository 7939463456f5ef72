"""Benchmark: `ioweather fsstats` against `find -printf`, a plain os.walk + lstat loop and a
threaded Python walker, on one generated tree, in the same run (issue 7).

    .venv/bin/python benchmarks/bench_fsstats.py                 # 1 M files in 10 k directories
    .venv/bin/python benchmarks/bench_fsstats.py --files 100000 --dirs 1000 --no-cold
    .venv/bin/python benchmarks/bench_fsstats.py --repeat 5 --threads 8 --no-cold --no-pywalk   # short rounds
    .venv/bin/python benchmarks/bench_fsstats.py --repeat 5 --threads 2 --no-cold --no-pywalk --rt  # issue 21

--rt (as root): every tool runs under SCHED_FIFO on all CPUs (benchmarks/realtime.py), so other
processes on a shared machine do not preempt it; the issue-21 target is the median over the
rounds of find's time / fsstats' time in the same round.

Every tool runs as its own process on the same tree: wall time from fork to exit,
entries/s = entries in the tree (root included, as find prints it) / wall time,
peak RSS from wait4(). Warm cache: one untimed pass first, then the best of
--repeat timed passes, tools interleaved. Cold cache (as root): `sync; echo 3 >
/proc/sys/vm/drop_caches` before each single pass. The tree is generated once
under --path (free space and inodes checked first) and deleted at the end unless --keep.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from realtime import realtime

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
IOWEATHER = [PY, "-m", "ioweather"]
FIND_FORMAT = "%s %A@ %T@ %C@ %n %U\n"


# ------------------------------------------------------------------ the tree

def generate(path: Path, files: int, dirs: int, seed: int = 1) -> int:
    """`dirs` directories (a two-level fan-out, like projects and their runs), `files` spread
    evenly; sizes log-uniform up to 1 GiB as sparse files (no data blocks written) except a
    tenth of small files with real data; mtimes and atimes spread over ten years.
    Returns the number of entries including the root."""
    rng = random.Random(seed)
    st = os.statvfs(path.parent)
    need_inodes = files + dirs + 1000
    if st.f_favail < need_inodes * 1.2:
        raise SystemExit(f"not enough free inodes on {path.parent}: {st.f_favail:,} < {need_inodes:,}")
    small = files // 10
    need_bytes = small * 4096 * 2 + dirs * 8192 + files * 64
    if st.f_bavail * st.f_frsize < need_bytes * 2:
        raise SystemExit(f"not enough free space on {path.parent}: need ~{need_bytes / 2**30:.1f} GiB")
    path.mkdir(parents=True)
    top = max(1, int(dirs ** 0.5))
    leaf_dirs = []
    made = 0
    for t in range(top):
        p = path / f"proj{t:03d}"
        p.mkdir()
        made += 1
        leaf_dirs.append(p)
    while made < dirs:
        parent = leaf_dirs[made % top]
        p = parent / f"run{made:06d}"
        p.mkdir()
        leaf_dirs.append(p)
        made += 1
    now = time.time()
    per_dir = files // len(leaf_dirs)
    extra = files - per_dir * len(leaf_dirs)
    data = os.urandom(8192)
    for i, d in enumerate(leaf_dirs):
        dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for j in range(per_dir + (1 if i < extra else 0)):
                fd = os.open(f"f{j:05d}.dat", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=dfd)
                if rng.random() < 0.1:
                    os.write(fd, data[: rng.randrange(1, 8192)])
                else:
                    os.ftruncate(fd, int(2 ** rng.uniform(0, 30)))
                m = now - rng.uniform(0, 3650) * 86400
                os.utime(fd, (m + rng.uniform(0, now - m), m))
                os.close(fd)
        finally:
            os.close(dfd)
    return files + dirs + 1


# ------------------------------------------------------------------ runs

def timed_rss(cmd: list[str], stdout=subprocess.DEVNULL) -> tuple[float, int, float]:
    """Wall time, peak RSS and CPU seconds (user + system, from wait4) of one process; output
    discarded like `> /dev/null`. CPU time shows the cost when other jobs share the cores."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} failed ({proc.returncode}): {err[-500:]}")
    return wall, ru.ru_maxrss * 1024, ru.ru_utime + ru.ru_stime


def drop_caches() -> bool:
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def tools(tree: Path, thread_counts: list[int], pywalk: bool = True) -> dict[str, list[str]]:
    me = str(Path(__file__).resolve())
    t = {
        "find -printf": ["find", str(tree), "-printf", FIND_FORMAT],
        "python os.walk+lstat": [PY, me, "--_oswalk", str(tree)],
    }
    if pywalk:
        t["python threaded walker (4 threads)"] = [PY, me, "--_pywalk", str(tree), "4"]
    for n in thread_counts:
        t[f"ioweather fsstats --threads {n}"] = IOWEATHER + ["fsstats", str(tree), "--json", "-q", "--threads", str(n)]
    t["ioweather fsstats (default threads)"] = IOWEATHER + ["fsstats", str(tree), "--json", "-q"]
    return t


# ------------------------------------------------------------------ baselines run as children

def oswalk(root: str) -> None:
    """The plain loop of the issue: os.walk and one lstat per entry, nothing computed."""
    n = 1
    os.lstat(root)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            os.lstat(os.path.join(dirpath, name))
            n += 1
    print(n)


def pywalk(root: str, threads: int) -> None:
    """The threaded Python candidate walker: os.scandir + lstat in threads, aggregating the
    same statistics as the C walker (log2 histograms, ages, owners, projects, hard links once).
    Kept here as the measured alternative; the C walker won (docs/benchmarks/fsstats.md)."""
    snap = time.time_ns()
    day = 86400 * 10**9
    lock = threading.Lock()
    cond = threading.Condition(lock)
    stack = [(root, 0)]
    active = [0]
    seen_links: set = set()
    results = []

    def worker():
        h = {k: [0] * 65 for k in ("size", "cap", "links", "a", "m", "c", "dirents", "names")}
        hb = {k: [0] * 65 for k in h}
        owners: dict = {}
        tops: dict = {}
        n = 0
        while True:
            with cond:
                while not stack and active[0]:
                    cond.wait()
                if not stack:
                    cond.notify_all()
                    break
                path, top = stack.pop()
                active[0] += 1
            kids = []
            try:
                with os.scandir(path) as it:
                    ents = 0
                    for e in it:
                        ents += 1
                        n += 1
                        try:
                            st = e.stat(follow_symlinks=False)
                        except OSError:
                            continue
                        t = top or e.name
                        size = st.st_size
                        h["names"][len(e.name) // 8] += 1
                        if e.is_dir(follow_symlinks=False):
                            kids.append((e.path, t))
                            continue
                        if st.st_nlink > 1:
                            with lock:
                                key = (st.st_dev, st.st_ino)
                                if key in seen_links:
                                    continue
                                seen_links.add(key)
                        if e.is_file(follow_symlinks=False):
                            for k, v in (("size", size), ("cap", st.st_blocks * 512), ("links", st.st_nlink)):
                                b = v.bit_length()
                                h[k][b] += 1
                                hb[k][b] += size
                            for k, ts in (("a", st.st_atime_ns), ("m", st.st_mtime_ns), ("c", st.st_ctime_ns)):
                                age = (snap - ts) // day
                                b = age.bit_length() if age > 0 else 0
                                h[k][b] += 1
                                hb[k][b] += size
                            o = owners.setdefault(st.st_uid, [0, 0])
                            o[0] += 1
                            o[1] += size
                            p = tops.setdefault(t, [0, 0])
                            p[0] += 1
                            p[1] += size
                    h["dirents"][ents.bit_length()] += 1
            except OSError:
                pass
            with cond:
                stack.extend(kids)
                active[0] -= 1
                cond.notify_all()
        with lock:
            results.append((n, h, hb, owners, tops))

    ths = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    print(1 + sum(r[0] for r in results))


# ------------------------------------------------------------------ main

def machine_state() -> dict:
    load = os.getloadavg()
    mem = {}
    with open("/proc/meminfo") as f:
        for line in f:
            k, v = line.split(":", 1)
            mem[k] = int(v.split()[0]) * 1024
    return {"cpus": os.cpu_count(), "load_1_5_15": [round(x, 2) for x in load], "kernel": platform.release(),
            "python": platform.python_version(), "mem_total_bytes": mem.get("MemTotal"),
            "mem_available_bytes": mem.get("MemAvailable")}


def fs_type(path: Path) -> str:
    best = ("", "?")
    with open("/proc/self/mounts") as f:
        for line in f:
            dev, mnt, typ, opts = line.split()[:4]
            if str(path).startswith(mnt) and len(mnt) > len(best[0]):
                best = (mnt, f"{typ} ({opts}) on {dev}")
    return best[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=1_000_000)
    ap.add_argument("--dirs", type=int, default=10_000)
    ap.add_argument("--path", type=Path, default=Path("/tmp/ioweather-bench-fsstats"))
    ap.add_argument("--repeat", type=int, default=3, help="warm passes per tool (best is reported)")
    ap.add_argument("--threads", default="1,2,4,8", help="thread counts of the C walker to time")
    ap.add_argument("--no-cold", action="store_true", help="skip the cold-cache passes")
    ap.add_argument("--no-pywalk", action="store_true",
                    help="skip the threaded Python walker (the slowest tool: shorter rounds see less load change)")
    ap.add_argument("--keep", action="store_true", help="keep the generated tree")
    ap.add_argument("--json", type=Path, help="also write the results to this file")
    ap.add_argument("--rt", action="store_true", help="run every tool under SCHED_FIFO (root)")
    ap.add_argument("--_oswalk", help=argparse.SUPPRESS)
    ap.add_argument("--_pywalk", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a._oswalk:
        return oswalk(a._oswalk)
    if a._pywalk:
        return pywalk(a._pywalk[0], int(a._pywalk[1]))

    tree = a.path / f"tree-{a.files}-{a.dirs}"
    state = machine_state()
    print(f"machine: {state}", flush=True)
    print(f"file system of {a.path}: {fs_type(a.path.parent)}", flush=True)
    created = False
    if not tree.exists():
        a.path.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        generate(tree, a.files, a.dirs)
        created = True
        print(f"generated {a.files:,} files in {a.dirs:,} directories in {time.perf_counter() - t0:.0f} s", flush=True)
    try:
        probe = json.loads(subprocess.run(IOWEATHER + ["fsstats", str(tree), "--json", "-q"], check=True,
                                          capture_output=True, text=True).stdout)
        entries = probe["entries"]
        print(f"tree: {entries:,} entries ({probe['files']:,} files, {probe['dirs']:,} dirs)", flush=True)
        runs = tools(tree, [int(x) for x in a.threads.split(",")], pywalk=not a.no_pywalk)
        # only the timed passes: generating the tree in real time would starve the machine for minutes
        state["scheduling"] = realtime(one_cpu=False) if a.rt else "normal scheduling"
        warm: dict[str, list[tuple[float, int, float]]] = {k: [] for k in runs}
        for _ in range(a.repeat + 1):  # the first round warms the cache and is discarded
            for name, cmd in runs.items():
                warm[name].append(timed_rss(cmd))
        best = {k: min(v[1:], key=lambda x: x[0]) for k, v in warm.items()}
        state["load_after_warm"] = [round(x, 2) for x in os.getloadavg()]
        cold = {}
        if not a.no_cold:
            for name in ("find -printf", "python os.walk+lstat", "ioweather fsstats (default threads)",
                         "ioweather fsstats --threads 8"):
                if name in runs and drop_caches():
                    cold[name] = timed_rss(runs[name])
        report(best, cold, entries, a, state, warm)
        if a.json:
            a.json.write_text(json.dumps({"entries": entries, "machine": state, "warm": best, "cold": cold,
                                          "all_warm": warm}, indent=1))
    finally:
        if created and not a.keep:
            t0 = time.perf_counter()
            subprocess.run(["rm", "-rf", str(tree)], check=True)
            print(f"deleted the tree in {time.perf_counter() - t0:.0f} s", flush=True)


def report(best, cold, entries, a, state, warm) -> None:
    find_s = best["find -printf"][0]
    walk_s = best["python os.walk+lstat"][0]
    print(f"\nwarm cache, best of {a.repeat} ({entries:,} entries; load {state['load_1_5_15']}):")
    print(f"{'tool':40s} {'wall s':>8s} {'entries/s':>12s} {'vs find':>8s} {'vs os.walk':>10s} {'peak RSS':>9s}"
          f" {'CPU s':>7s}")
    for name, (s, rss, cpu) in best.items():
        print(f"{name:40s} {s:8.2f} {entries / s:12,.0f} {find_s / s:8.2f} {walk_s / s:10.2f} {rss / 2**20:7.0f} MB"
              f" {cpu:7.2f}")
    if cold:
        cf = cold.get("find -printf", (None,))[0]
        print("\ncold cache (drop_caches before each pass):")
        for name, (s, rss, cpu) in cold.items():
            ratio = f"{cf / s:8.2f}" if cf else "       -"
            print(f"{name:40s} {s:8.2f} {entries / s:12,.0f} {ratio} {'':10s} {rss / 2**20:7.0f} MB {cpu:7.2f}")
    d = best["ioweather fsstats (default threads)"]
    rounds = [f[0] / i[0] for f, i in zip(warm["find -printf"][1:], warm["ioweather fsstats (default threads)"][1:])]
    print(f"\nper round, find / fsstats (default threads): {', '.join(f'{r:.2f}' for r in rounds)}; "
          f"median {statistics.median(rounds):.2f} (issue 21: >= 1.5); {state['scheduling']}")
    load = os.getloadavg()
    print(f"\nload average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    print(f"\nratio ioweather fsstats / find = {find_s / d[0]:.2f} (goal >= 1.0); "
          f"/ os.walk+lstat = {walk_s / d[0]:.2f} (goal >= 3); peak RSS {d[1] / 2**20:.0f} MB (goal < 300 MB)")


if __name__ == "__main__":
    main()
