"""The client-side probe (METHODS.md section 1, seed 001).

A probe directory holds one large data file and a FIFO pool of small files:

    DIR/              0700, owned by the user running the probe
      probe.json      parameters written by `init`
      probe.lock      held (flock) by the one probe running on this directory; holds its pid and host
      data            the large file (0600), read and written at random block offsets
      pool/           0700, small files named by a growing sequence number

Every file is opened relative to a directory descriptor with O_NOFOLLOW (and
created with O_EXCL), so a symlink planted anywhere in the tree is refused,
never followed. Disk use is bounded: the data file is never extended and the
pool keeps a constant number of files.

Each period runs the six operations one after another, each timed in C around
its system calls only (`ioweather._native.probe_core`). The operations run on a
worker thread so that a hung call (a stuck mount) becomes a `timeout` sample
after its deadline while the daemon stays responsive; no new operation starts
on the target until the hung one returns.
"""

from __future__ import annotations

import errno as errno_mod
import fcntl
import json
import mmap
import os
import queue
import socket
import stat
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ioweather._native import load
from ioweather.errors import UserError, from_os_error, os_error_reason
from ioweather.files import kind_of
from ioweather.sources.mounts import mount_of
from ioweather.units import format_bytes

SMALL_FILE_BYTES = 3901  # the paper's metadata probe file size
DEFAULT_BLOCK = 1 << 20
META_NAME = "probe.json"
DATA_NAME = "data"
POOL_NAME = "pool"
LOCK_NAME = "probe.lock"


# --------------------------------------------------------------------------- layout
@dataclass
class ProbeLayout:
    file_bytes: int
    pool_files: int
    small_bytes: int = SMALL_FILE_BYTES
    uid: int = 0
    created_ns: int = 0


def open_dir(path: Path) -> int:
    """A descriptor for the probe directory; refuses symlinks and other users' directories."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise UserError(f"probe directory {path} does not exist (run 'ioweather probe init {path}' first)") from None
    except OSError as e:
        raise from_os_error(path, e, "open probe directory",
                            hint="give the real path" if os.path.islink(path) else None) from None
    st = os.fstat(fd)
    if st.st_uid != os.geteuid():
        os.close(fd)
        raise UserError(f"probe directory {path} is owned by uid {st.st_uid}, not by you (uid {os.geteuid()}); "
                        "use a directory of your own")
    return fd


def _open_at(dirfd: int, name: str, flags: int, mode: int = 0o600) -> int:
    return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dirfd)


def read_layout(dirfd: int, path: Path) -> ProbeLayout:
    try:
        fd = _open_at(dirfd, META_NAME, os.O_RDONLY)
    except FileNotFoundError:
        raise UserError(f"{path} is not a probe directory (no {META_NAME}); run 'ioweather probe init {path}'") from None
    except OSError as e:
        raise from_os_error(path / META_NAME, e, "read") from None
    with os.fdopen(fd) as f:
        try:
            raw = json.load(f)
            return ProbeLayout(**{k: raw[k] for k in ("file_bytes", "pool_files", "small_bytes", "uid", "created_ns")})
        except (ValueError, KeyError, TypeError):
            raise UserError(f"{path / META_NAME} is damaged; remove the directory and run 'probe init' again") from None


def lock_probe_dir(dirfd: int, path: Path, log: Callable[[str], None]) -> int:
    """Hold DIR/probe.lock while the returned descriptor is open: one probe per directory.

    Two probes on one directory create and delete in the same pool: each takes the other's files
    for EEXIST/ENOENT failures and the pool outgrows its size. flock, not fcntl record locks: those
    belong to the process, so a second probe in the same process (`watch`'s thread) would not
    conflict with the first. The kernel drops the lock with its holder, even after kill -9.
    """
    try:
        fd = _open_at(dirfd, LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK)  # O_NONBLOCK: a planted FIFO
    except OSError as e:
        if e.errno not in (errno_mod.ENOSPC, errno_mod.EDQUOT):
            raise from_os_error(path / LOCK_NAME, e, "open") from None
        # A full disk is what the probe must go on measuring: run, unguarded, rather than refuse.
        log(f"cannot create {path / LOCK_NAME} ({os_error_reason(e)}): a second probe of this directory "
            "would not be refused")
        return -1
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UserError(f"{path / LOCK_NAME} is not a regular file; remove it")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(f"{path} is already being probed{_lock_holder(fd)}; stop that probe first or "
                            "probe another directory") from None
        except OSError as e:  # ENOLCK, EOPNOTSUPP: NFS without lockd, Lustre mounted without flock
            log(f"cannot lock {path / LOCK_NAME} ({os_error_reason(e)}): a second probe of this directory "
                "would not be refused")
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
        except OSError:  # only names the holder in the refusal; a full disk must not stop the probe
            pass
    except BaseException:
        os.close(fd)
        raise
    return fd


def _lock_holder(fd: int) -> str:
    """" by pid N" (and " on HOST" when it is another node) from the lock file, if it says."""
    try:
        pid, host = os.pread(fd, 300, 0).decode().split()
    except (OSError, ValueError):  # just taken and not yet written, or not ours
        return ""
    return f" by pid {pid}" + ("" if host == socket.gethostname() else f" on {host}")


def physical_memory_bytes() -> int:
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def init_probe_dir(path: Path, file_bytes: int, pool_files: int, *, block: int = DEFAULT_BLOCK,
                   on_progress: Callable[[int, int], None] | None = None) -> ProbeLayout:
    """Create DIR with its data file and pool. Idempotent when the layout already matches.

    Resumable: an init stopped by Ctrl-C or kill -9 left a partial data file, which a re-run
    completes (probe.json, written last and atomically, says the directory is whole). An init
    that fails (a full disk) removes what it made, the directory too when it created it.
    """
    if file_bytes < block:
        raise UserError(f"--file-size ({file_bytes} B) must be at least one block ({block} B)")
    if pool_files < 1:
        raise UserError("--pool must be at least 1")
    created_dir = _make_probe_dir(path)
    try:
        dirfd = open_dir(path)
        try:
            return _init_in(dirfd, path, file_bytes, pool_files, on_progress)
        finally:
            os.close(dirfd)
    except BaseException:
        if created_dir:  # a refusal or a failure leaves no empty directory behind (rmdir: only if empty)
            try:
                os.rmdir(path)
            except OSError:
                pass
        raise


def _make_probe_dir(path: Path) -> bool:
    """mkdir DIR (0700); whether this call created it."""
    try:
        os.mkdir(path, 0o700)
        return True
    except FileExistsError:
        return False
    except OSError as e:
        raise from_os_error(path, e, "create probe directory") from None


def _init_in(dirfd: int, path: Path, file_bytes: int, pool_files: int, on_progress) -> ProbeLayout:
    try:
        existing = read_layout(dirfd, path)
    except UserError:
        existing = None
    if existing is not None:
        if (existing.file_bytes, existing.pool_files) != (file_bytes, pool_files):
            raise UserError(f"{path} is already a probe directory with a {existing.file_bytes} B file and "
                            f"{existing.pool_files} pool files; use another directory or remove it")
        return existing
    need = file_bytes - _partial_data_bytes(dirfd) + pool_files * 4096 + 4096
    sv = os.fstatvfs(dirfd)
    free = sv.f_bavail * sv.f_frsize
    if free < need:
        raise UserError(f"not enough space in {path}: need {format_bytes(need)}, {format_bytes(free)} free")
    _create_data_file(dirfd, path, file_bytes, on_progress)  # removes its partial file if a write fails
    try:
        pool_fd = _make_pool_dir(dirfd, path)
        try:
            _clear_pool(pool_fd)  # files of an interrupted init: made again, whole
            payload = os.urandom(SMALL_FILE_BYTES)
            for seq in range(pool_files):
                _create_small(pool_fd, seq, payload, path)
        finally:
            os.close(pool_fd)
        layout = ProbeLayout(file_bytes, pool_files, SMALL_FILE_BYTES, os.geteuid(), time.time_ns())
        _write_layout(dirfd, path, layout)
    except Exception:
        _remove_init_files(dirfd)
        raise
    return layout


def _partial_data_bytes(dirfd: int) -> int:
    """Bytes of a data file an interrupted init left (0 if none, or if it is not a regular file)."""
    try:
        st = os.stat(DATA_NAME, dir_fd=dirfd, follow_symlinks=False)
    except OSError:
        return 0
    return st.st_size if stat.S_ISREG(st.st_mode) else 0


#: Fresh random bytes per chunk written by init: a repeated pattern is what deduplicating file systems store once.
INIT_CHUNK = 8 << 20


def _create_data_file(dirfd: int, path: Path, size: int, on_progress) -> None:
    """Write DATA_NAME to `size` bytes of random content, from where an interrupted init stopped."""
    try:
        # O_NONBLOCK: a FIFO planted under the name must not block the open; refused below.
        fd = _open_at(dirfd, DATA_NAME, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK)
    except OSError as e:
        if e.errno == errno_mod.ELOOP:
            raise UserError(f"{path / DATA_NAME} already exists and is a symlink, which ioweather never follows; "
                            "remove it or use another directory") from None
        raise from_os_error(path / DATA_NAME, e, "create") from None
    written = 0
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UserError(f"{path / DATA_NAME} already exists and is {kind_of(st.st_mode)}; remove it or use "
                            "another directory")
        if st.st_size > size:
            raise UserError(f"{path / DATA_NAME} already exists and is larger ({st.st_size} B) than --file-size; "
                            "remove it or use another directory")
        os.set_blocking(fd, True)
        written = os.lseek(fd, st.st_size, os.SEEK_SET)
        # Random (incompressible) content: zeros would be stored sparse, compressed or deduplicated
        # by some file systems and make reads unrealistically fast.
        rng = np.random.default_rng()
        while written < size:
            if on_progress:
                on_progress(written, size)
            written += os.write(fd, rng.bytes(min(INIT_CHUNK, size - written)))
        if on_progress:
            on_progress(written, size)
        os.fsync(fd)
    except OSError as e:
        os.close(fd)
        os.unlink(DATA_NAME, dir_fd=dirfd)
        raise from_os_error(path / DATA_NAME, e, "write",
                            hint=f"removed the partial file ({written} of {size} B written)") from None
    except BaseException:
        os.close(fd)
        raise
    os.close(fd)


def _write_layout(dirfd: int, path: Path, layout: ProbeLayout) -> None:
    """probe.json whole or not at all: written beside and renamed, as the last step of init."""
    tmp = f".{META_NAME}.tmp"
    try:
        fd = _open_at(dirfd, tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        with os.fdopen(fd, "w") as f:
            json.dump(layout.__dict__, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, META_NAME, src_dir_fd=dirfd, dst_dir_fd=dirfd)
    except OSError as e:
        _unlink_quietly(dirfd, tmp)
        raise from_os_error(path / META_NAME, e, "write") from None


def _unlink_quietly(dirfd: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=dirfd)
    except OSError:  # already gone, or nothing we can do about it on a failing disk
        pass


def _is_pool_name(name: str) -> bool:
    return name.startswith("f") and name[1:].isdigit() and name == _pool_name(int(name[1:]))


def _clear_pool(pool_fd: int) -> None:
    for name in os.listdir(pool_fd):
        if _is_pool_name(name):
            _unlink_quietly(pool_fd, name)


def _remove_init_files(dirfd: int) -> None:
    """Undo a failed init: the data file, the pool files and the pool directory."""
    _unlink_quietly(dirfd, DATA_NAME)
    try:
        pool_fd = os.open(POOL_NAME, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dirfd)
    except OSError:
        return
    try:
        _clear_pool(pool_fd)
    finally:
        os.close(pool_fd)
    try:
        os.rmdir(POOL_NAME, dir_fd=dirfd)
    except OSError:
        pass


def _make_pool_dir(dirfd: int, path: Path) -> int:
    try:
        os.mkdir(POOL_NAME, 0o700, dir_fd=dirfd)
    except FileExistsError:
        pass
    except OSError as e:
        raise from_os_error(path / POOL_NAME, e, "create") from None
    try:
        return os.open(POOL_NAME, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dirfd)
    except OSError as e:
        raise from_os_error(path / POOL_NAME, e, "open") from None


def _pool_name(seq: int) -> str:
    return f"f{seq:012d}"


def _create_small(pool_fd: int, seq: int, payload: bytes, path: Path) -> None:
    """Create one pool file; a create that fails half-way (a full disk: the name made, the bytes not
    written) removes what it made, which would otherwise read short for good."""
    name = _pool_name(seq)
    try:
        fd = _open_at(pool_fd, name, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    except OSError as e:
        raise from_os_error(path / POOL_NAME / name, e, "create") from None
    try:
        try:
            if os.write(fd, payload) != len(payload):
                raise OSError(errno_mod.ENOSPC, os.strerror(errno_mod.ENOSPC))
        finally:
            os.close(fd)
    except OSError as e:
        _unlink_quietly(pool_fd, name)
        raise from_os_error(path / POOL_NAME / name, e, "create") from None


# --------------------------------------------------------------------------- running
@dataclass
class ProbeOptions:
    interval_s: float = 1.0
    duration_s: float | None = None
    block: int = DEFAULT_BLOCK
    direct: bool = False
    fsync: bool = False
    timeout_s: float = 60.0
    seed: int | None = None
    flush_s: float = 5.0
    buffer_rows: int = 0  # 0: services.probe.run.BUFFER_ROWS


class _Worker:
    """One daemon thread that runs the timed calls, so the main thread can give up on a hung one.

    A daemon thread, not a ThreadPoolExecutor: the executor joins its threads at exit,
    and a thread stuck in a dead mount would then keep the process alive forever.
    """

    def __init__(self):
        self._q: queue.Queue = queue.Queue()
        self._pending: dict | None = None
        threading.Thread(target=self._loop, name="probe-op", daemon=True).start()

    def _loop(self):
        while True:
            fn, args, box = self._q.get()
            try:
                box["result"] = fn(*args)
            except BaseException as e:  # delivered to the caller, never lost in the thread
                box["error"] = e
            box["done"].set()

    @property
    def hung(self) -> bool:
        return self._pending is not None and not self._pending["done"].is_set()

    def call(self, fn, args, timeout_s: float, stop: threading.Event):
        """The call's result, or None if it did not return within timeout_s (or we were stopped)."""
        box = {"done": threading.Event()}
        self._pending = box
        self._q.put((fn, args, box))
        deadline = time.monotonic() + timeout_s
        # Wait in slices so SIGTERM/SIGINT are handled within a fraction of a second.
        while not box["done"].wait(min(0.2, max(0.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline or stop.is_set():
                return None
        if "error" in box:
            raise box["error"]
        return box["result"]


class Probe:
    """The six operations of one period (`run_period`), on the files of one probe directory, which
    it holds locked from construction to `close()`. The loop around it is services/probe/run.py's.

    Rows are tuples (op, start_ns, duration_ns, bytes, status, errno).
    """

    def __init__(self, path: Path, options: ProbeOptions, log: Callable[[str], None] = lambda m: None):
        self.path = Path(path)
        self.opt = options
        self.log = log
        self.core = load("probe_core")
        self.stop_event = threading.Event()
        self.dirfd = self.lock_fd = self.data_fd = self.pool_fd = -1
        try:
            self._open_files()
        except BaseException:
            self.close()  # a refused start must not keep the directory locked
            raise
        self.pool, self.next_seq = self._read_pool()
        self.seed = options.seed if options.seed is not None else int.from_bytes(os.urandom(4), "little")
        self.rng = np.random.default_rng(self.seed)
        # mmap gives page-aligned buffers, which O_DIRECT requires.
        self.wbuf = mmap.mmap(-1, options.block)
        # Content has its own stream, so the offsets stay those the recorded seed gives.
        self.content_rng = np.random.default_rng([self.seed, 1])
        self.wview = np.frombuffer(self.wbuf, dtype=np.uint8)
        self.rbuf = mmap.mmap(-1, options.block)
        self.small_payload = os.urandom(self.layout.small_bytes)
        self.small_rbuf = bytearray(self.layout.small_bytes)
        self.worker = _Worker()

    def _open_files(self) -> None:
        options = self.opt
        self.dirfd = open_dir(self.path)
        self.layout = read_layout(self.dirfd, self.path)
        self.lock_fd = lock_probe_dir(self.dirfd, self.path, self.log)
        if self.layout.file_bytes < options.block:
            raise UserError(f"--block {options.block} B is larger than the probe file ({self.layout.file_bytes} B)")
        self.nblocks = self.layout.file_bytes // options.block
        flags = os.O_RDWR | (os.O_DIRECT if options.direct else 0)
        try:
            self.data_fd = _open_at(self.dirfd, DATA_NAME, flags)
        except OSError as e:
            if options.direct and e.errno == errno_mod.EINVAL:
                raise UserError(f"{self.path} does not support O_DIRECT (--direct)") from None
            raise from_os_error(self.path / DATA_NAME, e, "open") from None
        st = os.fstat(self.data_fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size < self.layout.file_bytes:
            raise UserError(f"{self.path / DATA_NAME} is not the probe's data file (size {st.st_size} B); run init again")
        self.pool_fd = _make_pool_dir(self.dirfd, self.path)

    def _read_pool(self) -> tuple[deque, int]:
        """The pool as the directory holds it, and the next free sequence number.

        What is no pool file goes first: short regular files (creates that a full disk stopped
        half-way, in this run or an earlier one) would read short for good, as false EIO md_read
        errors; past --pool, the oldest files go. Anything else planted there (a FIFO, a symlink)
        stays, to be measured as the error it is and then deleted and replaced like any file.
        """
        seqs = sorted(int(n[1:]) for n in os.listdir(self.pool_fd) if _is_pool_name(n))
        pool, short = deque(), 0
        for seq in seqs:
            try:
                st = os.stat(_pool_name(seq), dir_fd=self.pool_fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISREG(st.st_mode) and st.st_size != self.layout.small_bytes:
                short += 1
                _unlink_quietly(self.pool_fd, _pool_name(seq))
            else:
                pool.append(seq)
        extra = max(0, len(pool) - self.layout.pool_files)
        for _ in range(extra):
            _unlink_quietly(self.pool_fd, _pool_name(pool.popleft()))
        if short or extra:
            self.log(f"pool: removed {short} short file(s) left by failed creates and {extra} file(s) past --pool")
        return pool, (seqs[-1] + 1 if seqs else 0)

    # one op ------------------------------------------------------------------
    def _timed(self, op: str, fn, args, expect_bytes: int | None) -> tuple | None:
        if self.worker.hung:
            return None
        wall0 = time.time_ns()
        res = self.worker.call(fn, args, self.opt.timeout_s, self.stop_event)
        if res is None:
            if self.stop_event.is_set() and not self.worker.hung:
                return None
            self.log(f"{op} did not return within {self.opt.timeout_s:g} s; no new operation until it does")
            return (op, wall0, time.time_ns() - wall0, 0, "timeout", 0)
        start, dur, nbytes, err = res
        status = "error" if err else "ok"
        if not err and expect_bytes is not None and nbytes != expect_bytes:
            status, err = "error", errno_mod.EIO  # a short transfer is a failure of the probe's contract
        return (op, start, dur, nbytes, status, err)

    def run_period(self) -> list[tuple]:
        c, o, rows = self.core, self.opt, []
        blocks = self.rng.integers(0, self.nblocks, size=2)

        def add(row):
            if row is not None:
                rows.append(row)
            return row

        # Fresh content per write, made before the timed call: a buffer written again and again is what a
        # compressing or deduplicating file system stores once, and the probe would time that shortcut.
        # The generator's raw 64-bit words: ~10x cheaper than Generator.bytes (benchmarks in docs/probe.md).
        self.wview[:] = self.content_rng.bit_generator.random_raw(-(-o.block // 8)).view(np.uint8)[:o.block]
        add(self._timed("data_write", c.timed_pwrite, (self.data_fd, self.wbuf, int(blocks[0]) * o.block, o.fsync), o.block))
        add(self._timed("data_read", c.timed_pread, (self.data_fd, self.rbuf, int(blocks[1]) * o.block), o.block))
        seq = self.next_seq
        created = add(self._timed("md_create", c.timed_create,
                                  (self.pool_fd, _pool_name(seq), self.small_payload, o.fsync), self.layout.small_bytes))
        if created is not None:
            self.next_seq += 1
            if created[4] == "ok":
                self.pool.append(seq)
            elif created[5] == errno_mod.EEXIST:
                self.log(f"pool file {_pool_name(seq)} exists but was not created by this probe; skipping that name")
            elif created[4] == "error":  # a full disk makes the name but not the bytes: no pool file, remove it
                _unlink_quietly(self.pool_fd, _pool_name(seq))
        if self.pool:
            oldest = _pool_name(self.pool[0])
            add(self._timed("md_stat", c.timed_stat, (self.pool_fd, oldest), None))
            add(self._timed("md_read", c.timed_read_small, (self.pool_fd, oldest, self.small_rbuf), self.layout.small_bytes))
            deleted = add(self._timed("md_delete", c.timed_unlink, (self.pool_fd, oldest), None))
            if deleted is not None and (deleted[4] == "ok" or deleted[5] == errno_mod.ENOENT):
                self.pool.popleft()
        self._refill_pool()
        return rows

    def _refill_pool(self) -> None:
        """Keep the pool at its size: files removed by someone else are recreated (untimed)."""
        while len(self.pool) < self.layout.pool_files and not self.worker.hung:
            try:
                _create_small(self.pool_fd, self.next_seq, self.small_payload, self.path)
            except UserError as e:
                self.log(f"cannot refill the pool: {e}")
                return
            finally:
                self.next_seq += 1
            self.pool.append(self.next_seq - 1)

    def stop(self, *_):
        """Give up waiting for a hung call at once (a stop)."""
        self.stop_event.set()

    def close(self) -> None:
        """Close the files; the lock goes last, once nothing of this probe touches the directory."""
        for name in ("data_fd", "pool_fd", "dirfd", "lock_fd"):
            fd, _ = getattr(self, name), setattr(self, name, -1)
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass


def mount_point(path: Path) -> str:
    """The mount point that holds `path` (the default probe target label)."""
    return mount_of(path)[0]
