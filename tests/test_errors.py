"""`from_os_error` on OSErrors the kernel really raised (missing files, a 0000 directory, a full
and a read-only tmpfs, symlinks, /proc/self/mem's EIO), never on hand-built ones."""

from __future__ import annotations

import errno
import os
import socket

import pytest

from ioweather.errors import StoreError, UserError, from_os_error, os_error_reason
from unprivileged import as_nobody, world_readable_tmp


def _raised(fn, *args, **kw) -> OSError:
    try:
        fn(*args, **kw)
    except OSError as e:
        return e
    raise AssertionError(f"{fn.__name__}{args} did not fail")


def _open_nofollow(p):
    return os.open(p, os.O_RDONLY | os.O_NOFOLLOW)


def test_missing_file_and_missing_directory(tmp_path):
    e = _raised(open, tmp_path / "missing.csv")
    assert e.errno == errno.ENOENT
    err = from_os_error(tmp_path / "missing.csv", e, "read")
    assert isinstance(err, UserError) and str(err) == f"cannot read {tmp_path}/missing.csv: no such file or directory"
    # the reason names the first directory that is missing, not the file
    deep = tmp_path / "nope" / "deeper" / "x.json"
    e = _raised(open, deep, "w")
    assert e.errno == errno.ENOENT
    assert str(from_os_error(deep, e, "write")) == f"cannot write {deep}: no such directory {tmp_path / 'nope'}"


def test_file_where_a_directory_should_be(tmp_path):
    (tmp_path / "afile").write_text("")
    e = _raised(open, tmp_path / "afile" / "x.parquet", "w")
    assert e.errno == errno.ENOTDIR
    assert os_error_reason(e, tmp_path / "afile" / "x.parquet") == f"{tmp_path / 'afile'} is not a directory"
    e = _raised(os.open, tmp_path / "afile", os.O_RDONLY | os.O_DIRECTORY)
    assert e.errno == errno.ENOTDIR and os_error_reason(e, tmp_path / "afile") == "not a directory"


def test_directory_where_a_file_should_be(tmp_path):
    e = _raised(open, tmp_path, "w")
    assert e.errno == errno.EISDIR
    assert str(from_os_error(tmp_path, e, "write")) == f"cannot write {tmp_path}: it is a directory"


def test_symlinks_refused_and_symlink_loops(tmp_path):
    (tmp_path / "real").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    for name in ("link", "dangling"):  # O_NOFOLLOW refuses both with ELOOP
        e = _raised(_open_nofollow, tmp_path / name)
        assert e.errno == errno.ELOOP
        assert os_error_reason(e, tmp_path / name) == "it is a symlink, which ioweather never follows"
    (tmp_path / "dirlink").symlink_to(tmp_path)
    e = _raised(os.open, tmp_path / "dirlink", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    assert e.errno in (errno.ELOOP, errno.ENOTDIR)
    assert os_error_reason(e, tmp_path / "dirlink") == "it is a symlink, which ioweather never follows"
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    e = _raised(open, tmp_path / "a")
    assert e.errno == errno.ELOOP
    assert os_error_reason(e, tmp_path / "a") == "too many levels of symbolic links (a symlink loop)"


def test_existing_file_and_long_name(tmp_path):
    (tmp_path / "f").write_text("")
    e = _raised(os.open, tmp_path / "f", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    assert e.errno == errno.EEXIST and os_error_reason(e) == "it already exists"
    long = tmp_path / ("n" * 300)
    e = _raised(open, long, "w")
    assert e.errno == errno.ENAMETOOLONG and os_error_reason(e, long) == "file name too long"


def test_permission_denied_in_a_0000_directory():
    with world_readable_tmp("ioweather-errors-") as base:
        locked = base / "locked"
        locked.mkdir()
        (locked / "data.csv").write_text("a\n1\n")
        locked.chmod(0o000)

        def attempt() -> str:
            e = _raised(open, locked / "data.csv")
            return f"{e.errno} {from_os_error(locked / 'data.csv', e, 'read')}"

        # permission bits do not stop root
        got = as_nobody(attempt) if os.geteuid() == 0 else attempt()
        assert got == f"{errno.EACCES} cannot read {locked}/data.csv: permission denied"


def test_disk_full_and_read_only(tmpfs):
    full = tmpfs("full", "size=64k")
    chunk = b"x" * 4096

    def fill():
        with open(full / "big", "wb") as f:
            for _ in range(1000):  # 4 MB into 64 KiB
                f.write(chunk)
                f.flush()

    e = _raised(fill)
    assert e.errno == errno.ENOSPC
    assert str(from_os_error(full / "big", e, "write", hint="removed it")) == \
        f"cannot write {full}/big: disk full (no space left on device); removed it"
    ro = tmpfs("ro", "ro,size=64k")
    e = _raised(open, ro / "x", "w")
    assert e.errno == errno.EROFS and os_error_reason(e, ro / "x") == "read-only file system"


def test_io_error():
    # Reading unmapped address 0 through /proc/self/mem is a real EIO from the kernel.
    fd = os.open("/proc/self/mem", os.O_RDONLY)
    try:
        e = _raised(os.pread, fd, 16, 0)
    finally:
        os.close(fd)
    assert e.errno == errno.EIO
    assert str(from_os_error("/proc/self/mem", e, "read", cls=StoreError)) == \
        "cannot read /proc/self/mem: I/O error reported by the device or file system"
    assert isinstance(from_os_error("/proc/self/mem", e, "read", cls=StoreError), StoreError)


def test_other_errnos_use_the_c_library_words_in_lower_case():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound but not listening: connecting is refused
        with socket.socket() as c:
            e = _raised(c.connect, ("127.0.0.1", port))
    assert e.errno == errno.ECONNREFUSED
    assert os_error_reason(e) == os.strerror(errno.ECONNREFUSED).lower()


def test_library_errors_without_errno_keep_their_first_line(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "t.parquet").write_text("not parquet\nat all\n")
    with pytest.raises(pa.ArrowException) as info:
        pq.read_schema(tmp_path / "t.parquet")
    reason = os_error_reason(info.value, tmp_path / "t.parquet")
    assert reason == str(info.value).splitlines()[0] and "\n" not in reason and reason
