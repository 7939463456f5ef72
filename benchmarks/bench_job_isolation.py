"""What isolating the Darshan reader costs `ioweather job` (issue 27 item 1): two source trees run
as real processes, interleaved, on the same log; wall time and CPU time (user+sys of the process
and its children, from getrusage: less sensitive than wall time on a shared machine).

    python benchmarks/bench_job_isolation.py LOG OLD_SRC [RUNS]

OLD_SRC: the `src` of a tree from before the isolation (`git archive ae6d6a8 src | tar -x -C /tmp/old`,
plus the built `_native/*.so`); this tree's `src` is the other one.
"""
import os, resource, statistics, subprocess, sys, time
log, old = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 7
here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
trees = {"isolated": here, "in-process": old}
wall = {k: [] for k in trees}
cpu = {k: [] for k in trees}
for _ in range(n):
    for k, src in trees.items():
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        s = time.perf_counter()
        subprocess.run([sys.executable, "-m", "ioweather", "job", "--json", log], env=dict(os.environ, PYTHONPATH=src),
                       check=True, stdout=subprocess.DEVNULL)
        wall[k].append(time.perf_counter() - s)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu[k].append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
for k in trees:
    print(f"{os.path.basename(log)[:30]:30s} {k:10s} wall median {statistics.median(wall[k])*1000:5.0f} ms, "
          f"CPU median {statistics.median(cpu[k])*1000:5.0f} ms ({n} runs)")
