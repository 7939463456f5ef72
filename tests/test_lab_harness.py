"""`lab run`'s harness (services/lab/run.py): the settings read from the environment (the ranks' autogroup priority
and the pause before each case), what the priority's wrapper does in a session it leads and in one it does not, and
a lab run killed through its process group. What the settings do to real runs is in tests/test_lab.py (slow tier)
and docs/validation.md ("collective-rmw against CPU contention and the VM's memory")."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from ioweather.errors import UserError
from ioweather.services.lab.catalogue import Case
from ioweather.services.lab.run import AUTOGROUP_NICE, SETTLE_S, _priority, _settle_s, read_autogroup, run_cases
from ioweather.services.lab.toolchain import Toolchain

ROOT = Path(__file__).resolve().parents[1]


def test_each_process_is_started_through_a_wrapper_that_sets_its_autogroup_nice(monkeypatch):
    monkeypatch.delenv("IOWEATHER_LAB_AUTOGROUP_NICE", raising=False)
    sh, flag, script, name, report = _priority("/r")
    assert (sh, flag, name, report) == ("/bin/sh", "-c", "lab", "/r")
    assert f"echo {AUTOGROUP_NICE} > /proc/self/autogroup" in script and script.endswith('exec "$@"')
    monkeypatch.setenv("IOWEATHER_LAB_AUTOGROUP_NICE", "5")
    assert "echo 5 > /proc/self/autogroup" in _priority("/r")[2]
    monkeypatch.setenv("IOWEATHER_LAB_AUTOGROUP_NICE", "off")
    assert _priority("/r") == []


def _autogroup_nice(pid: int | str = "self") -> int:
    return int(Path(f"/proc/{pid}/autogroup").read_text().split()[-1])


def _needs_autogroup():
    if not Path("/proc/self/autogroup").is_file():
        pytest.skip("no autogroup scheduler (kernel.sched_autogroup_enabled, CONFIG_SCHED_AUTOGROUP)")


def _wrapped(report: Path, *command: str, nice: int = 5) -> list[str]:
    """The wrapper asking for `nice`, around `command`. 5 by default: a nice above 0 any user may set (the
    kernel refuses only a lower one), so a wrapper that wrote where it must not would succeed even as non-root."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IOWEATHER_LAB_AUTOGROUP_NICE", str(nice))
        return [*_priority(report), *command]


def test_the_wrapper_sets_the_nice_of_a_session_it_leads_and_leaves_one_it_does_not(tmp_path):
    """An autogroup is its session's and outlives the process: a wrapper run in its caller's session (a launcher
    that keeps the ranks there: Open MPI's mpirun, srun) must leave that session's nice alone (it would stay until
    logout), and say so. The caller here is a parent in a session of its own (setsid), the wrapper its child."""
    _needs_autogroup()
    report = tmp_path / "report"
    # the parent waits for a line before it starts the wrapper, and for another before it ends: before and after
    parent = subprocess.Popen(["/bin/sh", "-c", 'read _; "$@"; read _', "parent",
                               *_wrapped(report, "/bin/sh", "-c", "cat /proc/self/autogroup")],
                              start_new_session=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        before = _autogroup_nice(parent.pid)
        parent.stdin.write("\n")
        parent.stdin.flush()
        seen = parent.stdout.readline()   # the wrapped command's own autogroup: its parent's
        after = _autogroup_nice(parent.pid)
        parent.stdin.write("\n")
        parent.stdin.flush()
    finally:
        parent.communicate(timeout=10)
    assert before == after == int(seen.split()[-1]) == 0   # a new session's autogroup starts at nice 0
    (row,) = report.read_text().splitlines()
    pid, leads, nice = row.split()
    assert (leads, nice) == ("0", "0") and pid != str(parent.pid)
    got = read_autogroup(report, 5, 1)
    assert (got.nice, got.applied) == ([0], False) and "do not lead" in got.note
    # the same wrapper leading its own session (setsid) does set it: the check above could fail
    report.unlink()
    out = subprocess.run(_wrapped(report, "/bin/sh", "-c", "cat /proc/self/autogroup"), start_new_session=True,
                         capture_output=True, text=True, timeout=10)
    assert out.stdout.split()[-1] == "5"
    got = read_autogroup(report, 5, 1)
    assert (got.nice, got.applied, got.note) == ([5], True, None)


def test_a_refused_write_is_recorded_as_not_applied(tmp_path):
    """Only root or CAP_SYS_NICE may lower a nice: as another user the write fails (silently: the case runs as
    it is), and the report says the nice in effect, not the one asked for."""
    _needs_autogroup()
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and util-linux's setpriv to run the wrapper as nobody")
    # a directory nobody may write to, and reach: pytest's tmp_path is under a directory of root's alone
    shared = Path(tempfile.mkdtemp(prefix="ioweather-test-autogroup-"))
    try:
        shared.chmod(0o777)
        report = shared / "report"
        out = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                              *_wrapped(report, "/bin/sh", "-c", "id -u; cat /proc/self/autogroup", nice=-10)],
                             start_new_session=True, capture_output=True, text=True, timeout=10)
        uid, group = out.stdout.splitlines()
        assert uid == "65534" and group.endswith("nice 0"), out
        got = read_autogroup(report, -10, 1)
        assert (got.nice, got.applied) == ([0], False) and "refused" in got.note
        # the same as root is applied
        report.unlink()
        subprocess.run(_wrapped(report, "true", nice=-10), start_new_session=True, timeout=10, check=True)
        assert read_autogroup(report, -10, 1).applied
    finally:
        shutil.rmtree(shared)


def _tools(program: str) -> Toolchain:
    """A toolchain whose only program is `program` (no Darshan: LD_PRELOAD empty)."""
    return Toolchain("test", "", "", "", "mpiexec", "", "", programs={"t": program})


def test_a_cases_record_says_the_nice_in_effect(tmp_path, monkeypatch):
    """Through run_cases: two non-MPI processes, each in a session of its own, run at the nice asked for; the
    entry says so (and nothing with the priority off)."""
    _needs_autogroup()
    monkeypatch.setenv("IOWEATHER_LAB_SETTLE_S", "0")
    monkeypatch.setenv("IOWEATHER_LAB_AUTOGROUP_NICE", "7")
    # the program creates the log Darshan would have written ($0 is "-k", $1 the process's number)
    case = Case("t-touch", "", (), ("t", "-c", ': > "$DARSHAN_LOGFILE"'), procs=2, mpi=False)
    (done,) = run_cases([case], _tools("/bin/sh"), tmp_path, tmp_path / "logs").cases
    assert done.status == "ok", done.reason
    assert (done.autogroup_nice, done.autogroup_applied, done.autogroup_note) == ([7, 7], True, None)
    monkeypatch.setenv("IOWEATHER_LAB_AUTOGROUP_NICE", "off")
    (done,) = run_cases([case], _tools("/bin/sh"), tmp_path, tmp_path / "logs").cases
    assert done.status == "ok" and (done.autogroup_nice, done.autogroup_applied) == (None, None)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logs"]   # no run directory, no report left


def test_under_a_launcher_that_keeps_the_ranks_in_its_session_the_record_says_not_applied(tmp_path):
    """A launcher like Open MPI's mpirun or srun starts the ranks in the caller's session (here a stand-in that
    starts them as its children): the wrapper leaves that session's autogroup alone, and the case's entry says the
    nice in effect and why it is not the one asked for. The caller is a Python process in a session of its own:
    this test's process may be in the root autogroup (a process tree that never started a session since boot, as
    in CI's container), whose /proc/self/autogroup is empty."""
    _needs_autogroup()
    launcher = tmp_path / "mpiexec"
    launcher.write_text('#!/bin/sh\nshift 2\n"$@" & "$@" & wait\n')   # -n 2 dropped: two ranks, the caller's session
    launcher.chmod(0o755)
    caller = f"""
import json, sys
from pathlib import Path
from ioweather.services.lab.catalogue import Case
from ioweather.services.lab.run import run_cases
from ioweather.services.lab.toolchain import Toolchain
nice = lambda: int(Path("/proc/self/autogroup").read_text().split()[-1])
tools = Toolchain("test", "", "", "", {str(launcher)!r}, "", "", programs={{"t": "/bin/sh"}})
case = Case("t-mpi", "", (), ("t", "-c", ': > "$DARSHAN_LOGFILE"'), procs=2, mpi=True)
before = nice()
(done,) = run_cases([case], tools, Path({str(tmp_path)!r}), Path({str(tmp_path / "logs")!r})).cases
print(json.dumps([before, nice(), done.status, done.reason, done.autogroup_nice, done.autogroup_applied,
                  done.autogroup_note]))
"""
    env = {**os.environ, "IOWEATHER_LAB_SETTLE_S": "0", "IOWEATHER_LAB_AUTOGROUP_NICE": "5",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", caller], env=env, start_new_session=True, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    before, after, status, reason, nice, applied, note = json.loads(out.stdout.splitlines()[-1])
    assert status == "ok", reason
    assert before == after == 0   # a new session's autogroup starts at nice 0, and the wrapper left it there
    assert (nice, applied) == ([before] * 2, False)
    assert note.startswith("2 of 2 processes in a session they do not lead")


def _marked(marker: str) -> list[int]:
    """The pids of the processes whose environment holds `marker`."""
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if marker.encode() in (d / "environ").read_bytes():
                    found.append(int(d.name))
            except OSError:   # gone, or not ours
                pass
    return found


@pytest.mark.slow  # a Python process running the lab, and its cases' processes
@pytest.mark.parametrize("how", ["SIGTERM to its group", "SIGKILL to it"])
def test_a_lab_run_killed_leaves_no_process(tmp_path, how):
    """`kill -TERM -- -PGID` of a lab run: its non-MPI processes, each in a session (and group) of its own, get no
    signal; the lab turns SIGTERM into an interrupt, so its cleanup stops them. Killed with SIGKILL, nothing of it
    runs: each process dies with it all the same (PR_SET_PDEATHSIG). The case's processes are counted by their
    DARSHAN_LOGFILE, under this test's directory. (An MPI case's: Hydra's mpiexec, killed, kills its ranks.)"""
    logs = tmp_path / "logs"
    script = (
        "import sys; from pathlib import Path\n"
        "from ioweather.services.lab.catalogue import Case\n"
        "from ioweather.services.lab.run import run_cases\n"
        "from ioweather.services.lab.toolchain import Toolchain\n"
        f"tools = Toolchain('test', '', '', '', 'mpiexec', '', '', programs={{'t': {sys.executable!r}}})\n"
        "case = Case('t-sleep', '', (), ('t', '-c', 'import time; time.sleep(60)'), procs=2, mpi=False)\n"
        "run_cases([case], tools, Path(sys.argv[1]), Path(sys.argv[2]))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "IOWEATHER_LAB_SETTLE_S": "0"}
    lab = subprocess.Popen([sys.executable, "-c", script, str(tmp_path), str(logs)], env=env,
                           start_new_session=True, stderr=subprocess.PIPE, text=True)   # setsid: a group of its own
    marker = f"DARSHAN_LOGFILE={logs}/t-sleep/"
    try:
        for _ in range(300):   # until both of the case's processes run (or the lab failed)
            if len(_marked(marker)) == 2 or lab.poll() is not None:
                break
            time.sleep(0.05)
        assert len(_marked(marker)) == 2, lab.stderr.read() if lab.poll() is not None else "not started"
        if how == "SIGKILL to it":
            os.kill(lab.pid, signal.SIGKILL)
            lab.communicate(timeout=30)
        else:
            os.killpg(lab.pid, signal.SIGTERM)
            _, err = lab.communicate(timeout=30)
            assert lab.returncode == 1 and "Interrupted" in err   # unwound by the interrupt, not killed by it
            assert not any(p.name.startswith("ioweather-lab-") for p in tmp_path.iterdir())   # the run's directory
        left = _marked(marker)
        for _ in range(40):   # a killed process is reaped by init a moment after
            if not left:
                break
            time.sleep(0.05)
            left = _marked(marker)
        assert left == []
    finally:
        for pid in _marked(marker):
            os.kill(pid, signal.SIGKILL)
        if lab.poll() is None:
            lab.kill()
            lab.wait()


@pytest.mark.parametrize("bad", ["-10.5", "fast", "", "40"])
def test_a_priority_that_is_no_nice_value_is_refused(monkeypatch, bad):
    monkeypatch.setenv("IOWEATHER_LAB_AUTOGROUP_NICE", bad)
    with pytest.raises(UserError, match="IOWEATHER_LAB_AUTOGROUP_NICE"):
        _priority("/r")


def test_the_pause_before_each_case(monkeypatch):
    monkeypatch.delenv("IOWEATHER_LAB_SETTLE_S", raising=False)
    assert _settle_s() == SETTLE_S
    monkeypatch.setenv("IOWEATHER_LAB_SETTLE_S", "0")
    assert _settle_s() == 0
    for bad in ("-1", "soon", "601"):
        monkeypatch.setenv("IOWEATHER_LAB_SETTLE_S", bad)
        with pytest.raises(UserError, match="IOWEATHER_LAB_SETTLE_S"):
            _settle_s()


@pytest.mark.parametrize("var, value", [("IOWEATHER_LAB_AUTOGROUP_NICE", "high"), ("IOWEATHER_LAB_SETTLE_S", "-5")])
def test_a_bad_setting_is_said_before_any_case_runs(monkeypatch, tmp_path, var, value):
    from ioweather.services.lab.run import run_cases

    monkeypatch.setenv(var, value)
    with pytest.raises(UserError, match=var):
        run_cases([], None, tmp_path, tmp_path / "logs")
    assert list(tmp_path.iterdir()) == []   # no run directory, no index


def test_storm_sizing_says_in_one_line_when_fio_cannot_time_the_disk(tmp_path):
    """`lab storm --block auto` times the disk with fio: a fio that fails (or prints no JSON) is one clear error,
    and the sizing's scratch directory is removed."""
    from ioweather.services.lab.storm import sized_block

    fio = tmp_path / "fio"
    fio.write_text("#!/bin/sh\necho 'fio: refusing: no space left on device' >&2\nexit 1\n")
    fio.chmod(0o755)
    with pytest.raises(UserError) as e:
        sized_block(str(fio), tmp_path)
    assert "fio could not time a write" in str(e.value) and "no space left" in str(e.value)
    assert "\n" not in str(e.value) and not (tmp_path / "size").exists()


def test_storm_sizing_scales_fio_rate_to_the_quiet_twin(tmp_path, monkeypatch):
    """The rate fio reports sets each rank's bytes (2 ranks, ~AUTO_QUIET_TWIN_S), in 256 MiB steps, 1-8 GiB and at
    most a sixth of the free space."""
    from ioweather.services.lab import storm

    # the disk's free space as the test says: the machine's 44 GiB free made the 8 GiB cap 7424m (a sixth)
    free = {"bytes": 1 << 40}
    monkeypatch.setattr(storm.shutil, "disk_usage", lambda path: SimpleNamespace(free=free["bytes"]))
    # 100 MiB/s: 125 MiB a rank, raised to 1 GiB; 1 GiB/s: 1.25 GiB a rank = 1280 MiB; 50 GiB/s: capped at 8 GiB,
    # and at 2 GiB with 12 GiB free
    for bw, free["bytes"], want in ((100 << 20, 1 << 40, "1024m"), (1 << 30, 1 << 40, "1280m"),
                                    (50 << 30, 1 << 40, "8192m"), (50 << 30, 12 << 30, "2048m")):
        fio = tmp_path / "fio"
        fio.write_text(f"#!/bin/sh\necho '{{\"jobs\": [{{\"write\": {{\"bw_bytes\": {bw}}}}}]}}'\n")
        fio.chmod(0o755)
        assert storm.sized_block(str(fio), tmp_path) == want, (bw, free)


def test_a_lab_program_is_rebuilt_when_its_source_changed_though_its_binary_is_newer(tmp_path, monkeypatch):
    """A checkout gives its files the clone's time: a cached binary built from an earlier source is newer than
    the new source, and by times alone would be kept (a case then fails on an option the old binary lacks)."""
    from ioweather.services.lab import toolchain

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (apt-get install gcc)")
    programs = tmp_path / "programs"
    programs.mkdir()
    for source in ("lab_posix.c", "lab_mpiio.c"):
        (programs / source).write_text('#include <stdio.h>\nint main(void) { puts("one"); return 0; }\n')
    monkeypatch.setattr(toolchain, "PROGRAMS", programs)
    monkeypatch.setattr(toolchain, "HDF5_INCLUDE", tmp_path / "no-hdf5")
    # the C compiler stands in for mpicc: the sources here use no MPI
    tools = Toolchain(mpicc=cc, mpiexec="", cc=cc, darshan_lib="", ior="", mdtest="", origin="cache")
    bindir = tmp_path / "bin"
    toolchain._compile(tools, bindir)
    first = Path(tools.programs["lab_posix_nompi"])
    assert subprocess.run([str(first)], capture_output=True, text=True).stdout == "one\n"
    (programs / "lab_posix.c").write_text('#include <stdio.h>\nint main(void) { puts("two"); return 0; }\n')
    old = first.stat().st_mtime - 3600
    os.utime(programs / "lab_posix.c", (old, old))
    toolchain._compile(tools, bindir)
    second = Path(tools.programs["lab_posix_nompi"])
    assert subprocess.run([str(second)], capture_output=True, text=True).stdout == "two\n"
    # another checkout with the first source (a branch, a worktree sharing the cache) still runs its own binary
    assert second != first and subprocess.run([str(first)], capture_output=True, text=True).stdout == "one\n"
    built = second.stat().st_mtime_ns
    toolchain._compile(tools, bindir)  # the same source again: nothing rebuilt
    assert Path(tools.programs["lab_posix_nompi"]) == second and second.stat().st_mtime_ns == built
    assert not [p.name for p in bindir.iterdir() if p.name.startswith(".")], "a half-built binary was left"
