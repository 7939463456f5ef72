"""Opening the files users name, and writing the files we produce, without hanging or following links.

Log directories are often world-writable: anyone can plant a FIFO (which blocks a reader
forever), a device (`/dev/zero` never ends) or a symlink to a file they may not read
(`/etc/shadow`) where ioweather expects a log. So inputs are opened non-blocking and must
be regular files *on the opened descriptor* (no race between a check and the open), and
outputs are written beside their destination and renamed over it, refusing a symlink there.
Below every layer: sources, store and services all use it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from ioweather.errors import UserError, from_os_error

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


def kind_of(mode: int) -> str:
    """'a FIFO (named pipe)', 'a directory', ... for a file that is not regular."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def open_regular(path: str | os.PathLike, *, follow_symlinks: bool = True, what: str = "read") -> BinaryIO:
    """`path` opened for reading in binary, if it is a regular file; a one-line UserError otherwise.

    O_NONBLOCK makes opening a FIFO return at once instead of waiting for a writer; the type is
    then checked on the descriptor itself, and blocking mode restored for the regular file.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_symlinks else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise from_os_error(path, e, what) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise UserError(f"cannot {what} {os.fsdecode(path)}: it is {kind_of(mode)}, not a regular file")
        refuse_pseudo_file(fd, path, what)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


# statfs(2) f_type of the kernel's file systems, whose "regular" files are interfaces, not data:
# /proc/kmsg blocks a read forever, /sys and debugfs files can be huge or have side effects.
_PSEUDO_FS = {0x9FA0: "/proc", 0x62656572: "/sys", 0x64626720: "debugfs", 0x74726163: "tracefs",
              0x73636673: "securityfs", 0x27E0EB: "a cgroup file system", 0x63677270: "a cgroup file system",
              0x62656570: "configfs", 0xCAFE4A11: "bpffs", 0x6165676C: "pstore", 0xDE5E81E4: "efivarfs",
              0x1CD1: "devpts", 0x65735543: "fusectl"}


def pseudo_file_system(fd: int) -> str | None:
    """The name of the kernel pseudo-file system holding the open file `fd` (/proc, /sys, /dev,
    ...), None for a file system that holds data. By the descriptor, so a bind mount or a link
    that leads there is caught too."""
    try:
        if os.fstat(fd).st_dev == os.stat("/dev").st_dev:  # devtmpfs reports tmpfs' f_type
            return "/dev"
    except OSError:
        pass
    kind = _fs_type(fd)
    return _PSEUDO_FS.get(kind) if kind is not None else None


def refuse_pseudo_file(fd: int, path: str | os.PathLike, what: str = "read") -> None:
    name = pseudo_file_system(fd)
    if name is not None:
        raise UserError(f"cannot {what} {os.fsdecode(path)}: it is a kernel interface on {name}, not a data file")


@functools.cache
def _fstatfs():
    # lazy: ctypes: the command line imports this module at its start; only a kernel-interface check needs it
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).fstatfs
    except (OSError, AttributeError):
        return None


def _fs_type(fd: int) -> int | None:
    # Python has no fstatfs; f_type is the first field (a C long) of struct statfs on Linux.
    # lazy: ctypes: the command line imports this module at its start; only a kernel-interface check needs it
    import ctypes

    fstatfs = _fstatfs()
    buf = ctypes.create_string_buffer(256)
    if fstatfs is None or fstatfs(fd, buf) != 0:
        return None
    return ctypes.c_ulong.from_buffer(buf).value & 0xFFFFFFFF


def fd_path(f: BinaryIO) -> str:
    """A path that names exactly the already opened file `f`, for libraries that only take paths
    (libdarshan-util, HDF5): they then read the file that was checked, not whatever the name
    points to a moment later."""
    return f"/proc/self/fd/{f.fileno()}"


def display_path(path: str | os.PathLike) -> str:
    """`path` as text that can be stored and printed: file names are bytes on Linux, and a name
    that is not UTF-8 (os.fsdecode's surrogates) cannot be encoded for SQLite, HTML or a terminal.
    Undecodable bytes read as `\\xNN`; the original stays recoverable where it matters (the
    store keys paths by the hash of their bytes, `store.jobs.path_hash`)."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def read_regular_text(path: str | os.PathLike, *, what: str = "read", encoding: str = "utf-8") -> str:
    with open_regular(path, what=what) as f:
        try:
            return f.read().decode(encoding)
        except OSError as e:
            raise from_os_error(path, e, what) from None


def read_home_file(path: str | os.PathLike, home: str | os.PathLike, *, max_bytes: int,
                   what: str = "read") -> str | None:
    """The UTF-8 text of a file ioweather keeps under its home (a setting, the collector's state);
    None when there is none; a one-line UserError otherwise.

    Anyone who may write the home could put there a FIFO (every reader hangs), a device (/dev/zero
    never ends) or a link to a file they may not read (its first line used to come back in the
    error). So: open_regular's checks on the descriptor, the file it opened must lie inside the home
    (a link within it is followed, one leading out refused before a byte is read), at most
    `max_bytes` are read, and the text must be UTF-8. No error quotes the content."""
    path = Path(path)
    if not os.path.lexists(path):
        return None
    with open_regular(path, what=what) as f:
        opened = os.readlink(fd_path(f))
        root = os.path.realpath(home)
        if os.path.commonpath([opened, root]) != root:
            raise UserError(f"cannot {what} {display_path(path)}: it leads outside {display_path(home)} "
                            "(a link), which ioweather never follows for its own files")
        try:
            data = f.read(max_bytes + 1)
        except OSError as e:
            raise from_os_error(path, e, what) from None
    if len(data) > max_bytes:
        raise UserError(f"cannot {what} {display_path(path)}: it is larger than {max_bytes:,} bytes, "
                        "the most ioweather reads of it")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"cannot {what} {display_path(path)}: not UTF-8 text (byte {e.start:,})") from None


def check_input(path: str | os.PathLike, *, what: str = "read") -> None:
    """A one-line UserError unless `path` is a regular data file (open_regular's checks), for inputs
    handed to a library that opens them by name (SQLite, pyarrow): a FIFO would block it forever."""
    open_regular(path, what=what).close()


def read_regular_bytes(path: str | os.PathLike, *, what: str = "read", max_bytes: int | None = None) -> bytes:
    """The file's bytes; with `max_bytes`, a file larger than that is refused in one line before it is
    read (its size), or once that many bytes and one more were read (a file that grows)."""
    with open_regular(path, what=what) as f:
        try:
            if max_bytes is None:
                return f.read()
            if os.fstat(f.fileno()).st_size > max_bytes:
                raise too_large(path, what, max_bytes)
            data = f.read(max_bytes + 1)
        except OSError as e:
            raise from_os_error(path, e, what) from None
    if len(data) > max_bytes:
        raise too_large(path, what, max_bytes)
    return data


def too_large(path, what: str, max_bytes: int) -> UserError:
    return UserError(f"cannot {what} {display_path(os.fspath(path))}: larger than {max_bytes / (1 << 20):g} MiB, "
                     "the most ioweather reads of such a file")


def check_destination(path: str | os.PathLike, *, what: str = "write") -> None:
    """A one-line UserError if write_atomic would refuse `path`; for commands that check their
    outputs before a long run rather than after it."""
    path = Path(path)
    if path.is_symlink():
        raise UserError(f"cannot {what} {path}: it is a symlink, which ioweather never follows")
    if path.is_dir():
        raise UserError(f"cannot {what} {path}: it is a directory")


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, *, what: str = "write") -> Iterator[BinaryIO]:
    """A binary file to write `path`'s new content to; published whole when the block ends, never
    through a symlink at `path`, and discarded (the old file kept) when the block raises.

    For writers that stream (matplotlib's savefig, pandas' to_csv/to_parquet): they get a file
    object, never the name, so nothing they open can follow a link. The temporary has a random
    name and O_EXCL|O_NOFOLLOW: a link or file planted beside the destination is neither followed
    nor reused. fsync before the rename, so a crash leaves the old file or the new one, not an
    empty one.
    """
    path = Path(path)
    check_destination(path, what=what)
    fd, tmp = _create_temporary(path, what)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise from_os_error(path, e, what) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _sync_directory(path.parent)


def write_atomic(path: str | os.PathLike, data: str | bytes, *, what: str = "write") -> None:
    """Write `data` to `path` whole or not at all, never through a symlink at `path` (atomic_output)."""
    with atomic_output(path, what=what) as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)


def _create_temporary(path: Path, what: str) -> tuple[int, Path]:
    # A random name: a fixed one (OUT.tmp) let anyone with write access to the directory plant a
    # link there first, and a planted file would block every later run.
    for _ in range(16):
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644), tmp
        except FileExistsError:
            continue
        except OSError as e:
            raise from_os_error(path, e, what) from None
    raise UserError(f"cannot {what} {path}: no free temporary name beside it")


def _sync_directory(d: Path) -> None:
    # The rename itself is durable only once the directory is; a file system that cannot fsync a
    # directory (some network ones) still has the file, so this is best effort.
    try:
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class StoreTree:
    """The directories ioweather writes (the Parquet store under the home), walked and cleaned without
    following a link or crossing a mount: every cleaner (prune, purge, repair, compaction, the daemons'
    retention) lists and deletes through one of these.

    A link or a mount point planted anywhere below `root` (a day directory, a `fs=NAME` directory, a
    data file) would make a cleaner delete what lies behind it: a whole directory of someone else's
    files with `rmtree`. So every directory below `root` is opened from its parent's descriptor with
    O_NOFOLLOW|O_DIRECTORY and must be on root's device; only regular files are unlinked, by
    `unlinkat` on the opened parent (a name swapped for a link after the check loses the link, never
    what it points to); directories are removed only when empty (`rmdir`, never a recursive delete).
    What was refused is kept in `skipped` as (path, reason) for the command to say in one line.
    `root` itself is the admin's (the home may be a link to a bigger disk): it is followed."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.skipped: list[tuple[str, str]] = []
        self._dev: int | None = None

    def skip(self, path: str | os.PathLike, why: str) -> None:
        if (str(path), why) not in self.skipped:
            self.skipped.append((str(path), why))

    def _parts(self, path: Path) -> list[str]:
        rel = Path(path).relative_to(self.root)  # ValueError: not in the store, never touched
        return [p for p in rel.parts if p not in ("", ".")]

    @contextlib.contextmanager
    def opened(self, path: str | os.PathLike) -> Iterator[int | None]:
        """The directory `path` (inside root) as a descriptor, or None when it is absent or refused
        (a link, a mount point or not a directory on the way: recorded in `skipped`)."""
        fd = self._open_dir(Path(path))
        try:
            yield fd
        finally:
            if fd is not None:
                os.close(fd)

    def _open_dir(self, path: Path) -> int | None:
        try:
            parts = self._parts(path)
        except ValueError:
            self.skip(path, "outside the store")
            return None
        try:
            fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return None
        self._dev = os.fstat(fd).st_dev
        at = self.root
        for name in parts:
            at = at / name
            try:
                sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except FileNotFoundError:
                os.close(fd)
                return None
            except OSError:
                os.close(fd)
                self.skip(at, self._kind_at(at))
                return None
            os.close(fd)
            fd = sub
            if os.fstat(fd).st_dev != self._dev:
                os.close(fd)
                self.skip(at, "a mount point")
                return None
        return fd

    @staticmethod
    def _kind_at(path: Path) -> str:
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            return "unreadable"
        return "a symbolic link" if stat.S_ISLNK(mode) else kind_of(mode)

    def _kind(self, fd: int, name: str) -> str:
        """'dir', 'file', or the reason a cleaner refuses the entry."""
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return "gone"
        if stat.S_ISLNK(st.st_mode):
            return "a symbolic link"
        if stat.S_ISDIR(st.st_mode):
            return "dir" if st.st_dev == self._dev else "a mount point"
        if stat.S_ISREG(st.st_mode):
            return "file"
        return kind_of(st.st_mode)

    def entries(self, path: str | os.PathLike, match=lambda name: True) -> list[tuple[Path, str]]:
        """(path, kind) of the entries of directory `path` whose name `match`es, sorted by name; kind is
        'dir', 'file' or why the entry is not one (a link, a mount point, a FIFO, ...)."""
        path = Path(path)
        with self.opened(path) as fd:
            if fd is None:
                return []
            names = sorted(n for n in os.listdir(fd) if match(n))
            kinds = [(path / n, self._kind(fd, n)) for n in names]
        return [(p, k) for p, k in kinds if k != "gone"]

    def subdirs(self, path: str | os.PathLike, match=lambda name: True) -> list[Path]:
        """The real subdirectories of `path` whose name matches; a link or mount point there is skipped (noted)."""
        return self._only(path, match, "dir")

    def regular_files(self, path: str | os.PathLike, match=lambda name: True) -> list[Path]:
        """The regular files in `path` whose name matches; anything else of that name is skipped (noted)."""
        return self._only(path, match, "file")

    def _only(self, path, match, want: str) -> list[Path]:
        out = []
        for p, kind in self.entries(path, match):
            if kind == want:
                out.append(p)
            elif kind in ("dir", "file"):
                continue  # the other kind of entry, which the caller does not ask for
            else:
                self.skip(p, kind)
        return out

    def unlink(self, path: str | os.PathLike) -> bool:
        """Remove the regular file `path`; False when it is absent or refused (noted in `skipped`)."""
        path = Path(path)
        with self.opened(path.parent) as fd:
            if fd is None:
                return False
            kind = self._kind(fd, path.name)
            if kind != "file":
                if kind != "gone":
                    self.skip(path, kind)
                return False
            try:
                os.unlink(path.name, dir_fd=fd)
            except FileNotFoundError:
                return False
            except OSError as e:
                raise from_os_error(path, e, "remove") from None
        return True

    def rmdir(self, path: str | os.PathLike) -> bool:
        """Remove the directory `path` if it is empty (never recursively); False otherwise."""
        path = Path(path)
        if path == self.root:
            return False
        with self.opened(path.parent) as fd:
            if fd is None or self._kind(fd, path.name) != "dir":
                return False
            try:
                os.rmdir(path.name, dir_fd=fd)
            except OSError:  # not empty (a file we do not know, a late write), or gone
                return False
        return True

    def makedirs(self, path: str | os.PathLike, mode: int = 0o700) -> bool:
        """Create the directory `path` (inside root) and its missing parents, each made and then opened from
        its parent's descriptor: a link or mount point on the way is refused (noted), never followed, so
        nothing is created outside the store. False when refused."""
        try:
            parts = self._parts(Path(path))
        except ValueError:
            self.skip(path, "outside the store")
            return False
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        dev, at = os.fstat(fd).st_dev, self.root
        try:
            for name in parts:
                at = at / name
                try:
                    os.mkdir(name, mode, dir_fd=fd)
                except FileExistsError:
                    pass
                try:
                    sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
                except OSError:
                    self.skip(at, self._kind_at(at))
                    return False
                os.close(fd)
                fd = sub
                if os.fstat(fd).st_dev != dev:
                    self.skip(at, "a mount point")
                    return False
            return True
        finally:
            os.close(fd)

    def rename(self, src: str | os.PathLike, dst: str | os.PathLike) -> bool:
        """Move the regular file `src` to `dst` (a name not yet taken, inside root), both through opened directories."""
        src, dst = Path(src), Path(dst)
        with self.opened(src.parent) as sfd, self.opened(dst.parent) as dfd:
            if sfd is None or dfd is None or self._kind(sfd, src.name) != "file":
                return False
            try:
                os.stat(dst.name, dir_fd=dfd, follow_symlinks=False)
                return False  # never over an existing name
            except FileNotFoundError:
                pass
            os.rename(src.name, dst.name, src_dir_fd=sfd, dst_dir_fd=dfd)
        return True

    def skipped_line(self, doing: str = "removed") -> str | None:
        """One line saying what was not `doing` and why, or None."""
        return skipped_line(self.skipped, doing)


def skipped_line(skipped, doing: str = "removed") -> str | None:
    """'skipped 2 paths (not removed): ... (a symbolic link), ... (a mount point)' for (path, reason) pairs."""
    if not skipped:
        return None
    shown = "; ".join(f"{display_path(p)} ({why})" for p, why in list(skipped)[:3])
    more = f"; and {len(skipped) - 3} more" if len(skipped) > 3 else ""
    return f"skipped {len(skipped)} path{'s' if len(skipped) != 1 else ''} (not {doing}): {shown}{more}"
