"""A real one-node Slurm cluster on this machine, for tests (and later benchmarks, Dask SLURMCluster).

    with SlurmCluster.start(tmp_dir) as cluster:      # munged, slurmdbd, slurmctld, slurmd
        jobid = cluster.sbatch("--wrap", "sleep 2")
        cluster.wait_for_sacct([jobid])
        subprocess.run(["sacct", ...], env=cluster.env)

Everything lives under one temp directory: the configuration (every Slurm command and
daemon finds it through `SLURM_CONF` in `cluster.env`), state, spool, logs and pid files,
and a munged of our own on a private socket (so a system munged, if any, is untouched).
The daemons listen on free private ports; accounting goes to the MariaDB at
127.0.0.1:3306 (root, empty password) in a database of our own, dropped at the end.
`SlurmUnavailable` (a reason with the failing daemon's log tail) is raised when the
packages are missing or a daemon does not come up; the pytest fixture turns it into a skip.

The settings follow ../shared/docs/SLURM.md (Debian 12, Slurm 22.05): no cgroups
(proctrack/linuxproc, task/none), slurmdbd before `sacctmgr add cluster` before slurmctld.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Self

from ports import free_ports

MARIADB = {"host": "127.0.0.1", "port": 3306, "user": "root"}
PACKAGES = ("munged", "slurmdbd", "slurmctld", "slurmd", "sacct", "sbatch", "sacctmgr")
#: Where Debian installs munged's and the daemons' binaries (not always on a non-root PATH).
SBIN = ("/usr/sbin", "/sbin", "/usr/bin")


class SlurmUnavailable(Exception):
    """The cluster cannot run here; the message says why (for a pytest skip)."""


def _which(name: str) -> str | None:
    return shutil.which(name) or next((f"{d}/{name}" for d in SBIN if os.access(f"{d}/{name}", os.X_OK)), None)


def _tail(path: Path, lines: int = 8) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return f"(no log at {path})"
    return " | ".join(text[-lines:]) or "(empty log)"


def _mariadb(sql: str) -> None:
    import pymysql

    conn = pymysql.connect(connect_timeout=5, **MARIADB)
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
        conn.commit()
    finally:
        conn.close()


class SlurmCluster:
    """A running one-node cluster; use `SlurmCluster.start(dir)` as a context manager."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.name = "iow" + uuid.uuid4().hex[:8]
        self.node = socket.gethostname().split(".")[0]
        self.database = f"ioweather_slurm_{self.name}"
        self.ctld_port, self.slurmd_port, self.dbd_port = free_ports(3)
        self.conf = self.root / "slurm.conf"
        # munged runs as user munge, who cannot traverse pytest's private (0700) temp directories
        self.munge_dir = Path(tempfile.mkdtemp(prefix="ioweather-munge-", dir="/tmp"))
        self.munge_socket = self.munge_dir / "munge.socket"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self._started: list[tuple[str, Path]] = []  # (daemon, pid file), in start order
        self._database_created = False
        self._procs: dict[str, subprocess.Popen] = {}

    # -- life cycle ---------------------------------------------------------------------
    @classmethod
    def start(cls, root: Path, timeout: float = 60.0) -> SlurmCluster:
        missing = [p for p in PACKAGES if not _which(p)]
        if missing:
            raise SlurmUnavailable(f"Slurm not installed (missing {', '.join(missing)}): "
                                   "apt-get install slurm-wlm slurmdbd munge (scripts/install-system-deps.sh)")
        if os.geteuid() != 0:
            raise SlurmUnavailable("the test Slurm cluster runs its daemons as root (SlurmUser=root)")
        cluster = cls(root)
        try:
            cluster._boot(timeout)
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _boot(self, timeout: float) -> None:
        for d in ("state", "spool", "log", "run"):
            (self.root / d).mkdir(parents=True, exist_ok=True)
        self._write_conf()
        self._start_munged()
        try:
            _mariadb(f"CREATE DATABASE `{self.database}`")
        except Exception as e:  # noqa: BLE001 (any failure: no database to account in)
            raise SlurmUnavailable(f"MariaDB at 127.0.0.1:3306 not usable for Slurm accounting: {e}") from None
        self._database_created = True
        self._daemon("slurmdbd", [_which("slurmdbd"), "-D"], ready=lambda: "started" in self._log("slurmdbd"),
                     timeout=timeout)
        self.run("sacctmgr", "-i", "add", "cluster", self.name)
        self.run("sacctmgr", "-i", "add", "account", "ioweather", "Description=tests", "Organization=tests")
        self.run("sacctmgr", "-i", "add", "user", "root", "Account=ioweather", f"Cluster={self.name}")
        self._daemon("slurmctld", [_which("slurmctld"), "-D"], ready=self._ctld_answers, timeout=timeout)
        self._daemon("slurmd", [_which("slurmd"), "-D", "-N", self.node], ready=self._node_idle, timeout=timeout)

    def stop(self) -> None:
        """Cancel our jobs, stop the daemons (newest first) by their pid files, drop the database."""
        if any(d == "slurmctld" for d, _ in self._started):
            subprocess.run([_which("scancel"), "--full", "-u", "root"], env=self.env, capture_output=True, timeout=30, check=False)
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and self._queue():
                time.sleep(0.5)
        for daemon, pid_file in reversed(self._started):
            self._kill(daemon, pid_file)
        self._started.clear()
        if self._database_created:
            try:
                _mariadb(f"DROP DATABASE IF EXISTS `{self.database}`")
            except Exception:  # noqa: BLE001, S110 (the server went away: nothing left to drop)
                pass
            self._database_created = False
        shutil.rmtree(self.munge_dir, ignore_errors=True)

    # -- what tests use --------------------------------------------------------------------
    def run(self, *args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
        """A Slurm command against this cluster."""
        proc = subprocess.run([_which(args[0]) or args[0], *args[1:]], env=self.env, capture_output=True, text=True,
                              timeout=timeout, check=False)
        if check and proc.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()}")
        return proc

    def sbatch(self, *args: str) -> str:
        """Submit a job (e.g. `sbatch("--wrap", "sleep 2")`); returns its job id."""
        out = self.run("sbatch", "--parsable", "--output=/dev/null", *args).stdout.strip()
        return out.split(";")[0]

    def wait_for_sacct(self, jobids, *, states: set[str] | None = None, timeout: float = 60) -> dict[str, str]:
        """Wait until sacct lists every job id (in one of `states` when given); {jobid: state}."""
        want = set(map(str, jobids))
        deadline = time.monotonic() + timeout
        seen: dict[str, str] = {}
        while True:
            out = self.run("sacct", "--parsable2", "--noheader", "-X", "--allusers", "--format=JobID,State",
                           "--jobs", ",".join(sorted(want)), check=False).stdout
            seen = {j: s.split()[0] for j, s in (line.split("|", 1) for line in out.splitlines() if "|" in line)}
            if want <= seen.keys() and (states is None or all(seen[j] in states for j in want)):
                return seen
            if time.monotonic() > deadline:
                raise TimeoutError(f"sacct did not list {sorted(want)} in {sorted(states or [])} within "
                                   f"{timeout:.0f} s: {seen}")
            time.sleep(0.5)

    def log_tail(self, daemon: str) -> str:
        return _tail(self.root / "log" / f"{daemon}.log")

    # -- internals ---------------------------------------------------------------------------
    def _log(self, daemon: str) -> str:
        try:
            return (self.root / "log" / f"{daemon}.log").read_text(errors="replace")
        except OSError:
            return ""

    def _queue(self) -> list[str]:
        out = self.run("squeue", "--noheader", "--format=%i", check=False).stdout
        return out.split()

    def _ctld_answers(self) -> bool:
        return self.run("scontrol", "ping", check=False, timeout=10).returncode == 0

    def _node_idle(self) -> bool:
        out = self.run("sinfo", "--noheader", "--format=%t", check=False, timeout=10).stdout.split()
        return "idle" in out

    def _write_conf(self) -> None:
        r = self.root
        meminfo = Path("/proc/meminfo").read_text().splitlines()
        mem_mib = int(int(next(line.split()[1] for line in meminfo if line.startswith("MemTotal"))) / 1024 / 2)
        auth = f"AuthInfo=socket={self.munge_socket}"
        self.conf.write_text("\n".join([
            f"ClusterName={self.name}", f"SlurmctldHost={self.node}", "SlurmUser=root", "SlurmdUser=root",
            "AuthType=auth/munge", auth, "CredType=cred/munge",
            f"SlurmctldPort={self.ctld_port}", f"SlurmdPort={self.slurmd_port}",
            f"StateSaveLocation={r}/state", f"SlurmdSpoolDir={r}/spool",
            f"SlurmctldPidFile={r}/run/slurmctld.pid", f"SlurmdPidFile={r}/run/slurmd.pid",
            f"SlurmctldLogFile={r}/log/slurmctld.log", f"SlurmdLogFile={r}/log/slurmd.log",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "MpiDefault=none",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core", "ReturnToService=2",
            "AccountingStorageType=accounting_storage/slurmdbd", "AccountingStorageHost=localhost",
            f"AccountingStoragePort={self.dbd_port}",
            # how clients reach munged for slurmdbd connections (AuthInfo covers only slurmctld's)
            f"AccountingStoragePass={self.munge_socket}", "JobAcctGatherType=jobacct_gather/linux",
            "JobAcctGatherFrequency=30", "MailProg=/bin/true", "MinJobAge=300", "KillWait=2",
            "SchedulerParameters=sched_interval=1",
            f"NodeName={self.node} CPUs={os.cpu_count()} RealMemory={mem_mib} State=UNKNOWN",
            f"PartitionName=debug Nodes={self.node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4",
            ""]))
        dbd = r / "slurmdbd.conf"
        dbd.write_text("\n".join([
            "AuthType=auth/munge", auth, "DbdHost=localhost", f"DbdPort={self.dbd_port}", "SlurmUser=root",
            f"PidFile={r}/run/slurmdbd.pid", f"LogFile={r}/log/slurmdbd.log",
            "StorageType=accounting_storage/mysql", f"StorageHost={MARIADB['host']}",
            f"StoragePort={MARIADB['port']}", f"StorageUser={MARIADB['user']}", f"StorageLoc={self.database}", ""]))
        dbd.chmod(0o600)  # slurmdbd refuses a readable configuration (it may hold the password)

    def _start_munged(self) -> None:
        import pwd

        d = self.munge_socket.parent
        try:
            munge = pwd.getpwnam("munge")
        except KeyError:
            raise SlurmUnavailable("no user 'munge' (is the munge package installed?)") from None
        os.chown(d, munge.pw_uid, munge.pw_gid)
        d.chmod(0o755)  # munged insists that every client can reach its socket
        pid_file = d / "munged.pid"
        cmd = [_which("munged"), f"--socket={self.munge_socket}", f"--pid-file={pid_file}",
               f"--log-file={d / 'munged.log'}", f"--seed-file={d / 'munged.seed'}"]
        proc = subprocess.run(["setpriv", f"--reuid={munge.pw_uid}", f"--regid={munge.pw_gid}", "--clear-groups",
                               *cmd], capture_output=True, text=True, timeout=30, check=False)
        if proc.returncode != 0:
            raise SlurmUnavailable(f"munged did not start: {proc.stderr.strip()} {_tail(d / 'munged.log')}")
        self._started.append(("munged", pid_file))
        # the socket's directory is munge's own; the daemons (root) reach it all the same
        check = subprocess.run(f"{_which('munge')} -n -S {self.munge_socket} | {_which('unmunge')} -S {self.munge_socket}",
                               shell=True, capture_output=True, text=True, timeout=30, check=False)
        if check.returncode != 0:
            raise SlurmUnavailable(f"munge -n | unmunge failed: {check.stderr.strip()} {_tail(d / 'munged.log')}")

    def _daemon(self, name: str, cmd: list[str], *, ready, timeout: float) -> None:
        pid_file = self.root / "run" / f"{name}.pid"
        log = self.root / "log" / f"{name}.log"
        # -D keeps it in the foreground: our child, so it cannot outlive a crashed test run's session by double-forking
        with open(self.root / "log" / f"{name}.out", "ab") as out:
            proc = subprocess.Popen(cmd, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self._started.append((name, pid_file))
        self._procs[name] = proc
        deadline = time.monotonic() + timeout
        while not ready():
            if proc.poll() is not None:
                raise SlurmUnavailable(f"{name} exited ({proc.returncode}): {_tail(log)} "
                                       f"{_tail(self.root / 'log' / f'{name}.out', 3)}")
            if time.monotonic() > deadline:
                raise SlurmUnavailable(f"{name} not ready within {timeout:.0f} s: {_tail(log)}")
            time.sleep(0.3)
        if not pid_file.exists():  # some daemons write it only once ready; the Popen pid is the same process
            pid_file.write_text(f"{proc.pid}\n")

    def _kill(self, daemon: str, pid_file: Path) -> None:
        try:
            pid = int(pid_file.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            proc = self._procs.get(daemon)
            if proc is None:
                return
            pid = proc.pid
        for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and _alive(pid):
                proc = self._procs.get(daemon)
                if proc is not None and proc.pid == pid:
                    proc.poll()  # reap our own child so it does not linger as a zombie
                time.sleep(0.1)
            if not _alive(pid):
                break
        proc = self._procs.get(daemon)
        if proc is not None:
            try:
                proc.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
