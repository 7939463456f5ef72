"""Cache states, data files, and that the recorded offsets are the ones the calls used."""

from __future__ import annotations

import os

import numpy as np
import pytest

from ioweather.errors import UserError
from ioweather.sources import iomodel_cache as cache
from ioweather.sources.iomodel import Benchmark, ProcRunner
from ioweather.sources.iomodel_grammar import parse_layout
from ioweather.sources.iomodel_plan import Config, make_plan
from ioweather.sources.mounts import mount_of

MEM = 4 << 20


def _needs_evictable(path):
    fs = mount_of(path)[1]
    if fs in ("tmpfs", "ramfs"):
        pytest.skip(f"{path} is on {fs}, which cannot evict pages")


def file_bytes(offset: int, n: int) -> bytes:
    """The data files hold the little-endian file offset of each 8-byte word."""
    first = offset // 8
    words = np.arange(first, (offset + n + 7) // 8 + 1, dtype="<u8") * 8
    raw = words.view(np.uint8).tobytes()
    return raw[offset - first * 8: offset - first * 8 + n]


@pytest.fixture
def datafile(tmp_path):
    path = tmp_path / cache.data_file_name(0)
    assert cache.ensure_data_file(path, 2 << 20) is True
    assert cache.ensure_data_file(path, 2 << 20) is False  # reused when the size matches
    return path


def run_one(path, cache_state, op, mem_layout, file_layout, size, n, *, seed=1, fill=None):
    runner = ProcRunner(0, MEM, path, os.path.getsize(path))
    try:
        if fill is not None:
            np.frombuffer(runner.memory, dtype=np.uint8)[:] = fill
        prep = runner.prepare(Config(cache_state, op, parse_layout(mem_layout), parse_layout(file_layout), size),
                              0, seed, n)
        r = runner.measure()
        memory = bytes(runner.memory)
    finally:
        runner.close()
    assert "error" not in r.meta, r.meta
    return prep, r, memory


def test_data_file_content_encodes_offsets(datafile):
    with open(datafile, "rb") as f:
        f.seek(123457)
        assert f.read(100) == file_bytes(123457, 100)
    assert os.path.getsize(datafile) == 2 << 20


@pytest.mark.parametrize("file_layout,size", [("rnd", 4096), ("rnd8:8192", 1000), ("reverse", 512)])
def test_reads_land_at_the_recorded_offsets(datafile, file_layout, size):
    n = 200  # memory layout seq: n * size fits, so every op has its own slot in the buffer
    _, r, memory = run_one(datafile, "cached", "R", "seq", file_layout, size, n)
    for mo, fo in zip(r.mem_offsets, r.file_offsets):
        assert memory[mo: mo + size] == file_bytes(int(fo), size)


def test_writes_land_at_the_recorded_offsets(datafile):
    size = 4096
    n = (2 << 20) // size  # reverse visits each file slot exactly once
    pattern = np.random.default_rng(5).integers(0, 256, MEM, dtype=np.uint8)
    _, r, memory = run_one(datafile, "cached", "W", "rnd", "reverse", size, n, fill=pattern)
    assert len(set(r.file_offsets.tolist())) == n
    with open(datafile, "rb") as f:
        content = f.read()
    for mo, fo in zip(r.mem_offsets, r.file_offsets):
        assert content[fo: fo + size] == memory[mo: mo + size]
    assert "sync_s" in r.meta


def test_cached_reads_come_from_memory_and_uncached_from_the_device(datafile):
    """Kernel counters, not timings: /proc/self/io read_bytes counts bytes fetched from storage."""
    _needs_evictable(datafile)
    n = (2 << 20) // 4096
    prep, r, _ = run_one(datafile, "cached", "R", "off0", "seq", 4096, n)
    assert prep["cache_state"]["resident_pages"] == prep["cache_state"]["total_pages"] == 512
    assert r.meta["proc_io_delta"]["read_bytes"] == 0
    # the kernel counted one read() per operation (plus reading /proc/self/io itself)
    assert n <= r.meta["proc_io_delta"]["syscr"] <= n + 5
    prep, r, _ = run_one(datafile, "uncached", "R", "off0", "seq", 4096, n)
    assert prep["cache_state"]["resident_pages"] == 0 and prep["cache_state"]["total_pages"] == 512
    assert r.meta["proc_io_delta"]["read_bytes"] >= (2 << 20) * 0.9


def test_uncached_cannot_be_verified_on_tmpfs():
    if mount_of("/dev/shm")[1] != "tmpfs":
        pytest.skip("no tmpfs at /dev/shm")
    d = "/dev/shm"
    import tempfile

    with tempfile.TemporaryDirectory(dir=d) as tmp:
        path = os.path.join(tmp, "f")
        cache.ensure_data_file(__import__("pathlib").Path(path), 1 << 20)
        fd = os.open(path, os.O_RDWR)
        try:
            with pytest.raises(UserError, match=r"256 of 256 pages still in the page cache.*tmpfs"):
                cache.make_uncached(fd, 1 << 20, path)
        finally:
            os.close(fd)


def test_drop_caches_needs_root(monkeypatch, tmp_path):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(UserError, match=r"--drop-caches needs root \(you are uid 1000\)"):
        make_plan(caches=["uncached"], ops=["R"], mem_layouts=[parse_layout("off0")],
                  file_layouts=[parse_layout("seq")], sizes=[4096], runs=1, file_size=1 << 20, mem_size=1 << 20,
                  directory=tmp_path, drop_caches=True)


def test_mem_size_is_scaled_down_when_memory_is_short(tmp_path):
    plan = make_plan(caches=["cached"], ops=["R"], mem_layouts=[parse_layout("rnd")], file_layouts=[parse_layout("seq")],
                     sizes=[4096], runs=1, file_size=1 << 30, mem_size=1 << 30, procs=2, directory=tmp_path,
                     available_bytes=3 << 30)
    # (3 GiB - 1 GiB of cached file) / 2, shared by 2 processes -> 512 MiB each
    assert plan.mem_size == 512 << 20
    assert "using 512.0 MiB per process" in plan.warnings[0]
    with pytest.raises(UserError, match="exceeds the memory available"):
        make_plan(caches=["cached"], ops=["R"], mem_layouts=[parse_layout("rnd")], file_layouts=[parse_layout("seq")],
                  sizes=[4096], runs=1, file_size=4 << 30, directory=tmp_path, available_bytes=3 << 30)


def test_a_failed_run_is_recorded_and_the_batch_goes_on(tmp_path):
    """Someone truncates the data file during a sweep: that run fails with a clear reason, the next runs still run."""
    plan = make_plan(caches=["cached", "discard"], ops=["R"], mem_layouts=[parse_layout("off0")],
                     file_layouts=[parse_layout("reverse")], sizes=[4096], runs=1, repeats=100, file_size=1 << 20,
                     mem_size=1 << 20, directory=tmp_path, seed=1)
    with Benchmark(plan) as bench:
        os.truncate(tmp_path / cache.data_file_name(0), 8192)
        results = list(bench.results())
    assert [r.config.cache for r in results] == ["cached", "discard"]
    assert "changed size (8192 B instead of 1048576 B)" in results[0].error
    assert results[1].error is None and len(results[1].procs[0].durations) == 100
    assert not (tmp_path / cache.data_file_name(0)).exists()  # files removed without --keep-files


def test_the_loop_stops_at_a_short_or_failed_transfer(datafile):
    """The C loop reports the first op that did not move `size` bytes: (done, errno, returned)."""
    core = cache.core()
    bufs = [np.full(8, -1, np.int64) for _ in range(4)]
    mem = bytearray(1 << 16)
    fd = os.open(datafile, os.O_RDONLY)
    try:
        os.truncate(datafile, 8192)
        # a file layout over 16 KiB of which 8 KiB exist: ops 0 and 1 read, op 2 hits EOF
        assert core.run(fd, True, mem, 4096, core.OFF0, 0, core.STRIDE, 0, 16384, 8, 1, True, False, *bufs) == (2, 0, 0)
        assert bufs[3][:3].tolist() == [0, 4096, 8192]
    finally:
        os.close(fd)
    import errno

    done, err, ret = core.run(fd, True, mem, 4096, core.OFF0, 0, core.STRIDE, 0, 16384, 8, 1, True, False, *bufs)
    assert (done, err, ret) == (0, errno.EBADF, -1)
    with pytest.raises(ValueError, match="int64 array"):
        core.run(fd, True, mem, 1, core.OFF0, 0, core.OFF0, 0, 16, 9, 1, False, False, *bufs)
    with pytest.raises(ValueError, match="region smaller"):
        core.run(fd, True, mem, 1 << 17, core.OFF0, 0, core.OFF0, 0, 1 << 20, 1, 1, False, False, *bufs)
