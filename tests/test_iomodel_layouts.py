"""The layouts produce the offsets they promise (METHODS.md 2.1), checked on the offsets the C loop recorded.

The expected sequences below are written from the documented rules (docs/iomodel.md), not
from the generator; rnd and rnd8 are checked statistically.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ioweather.errors import UserError
from ioweather.sources.iomodel import ProcRunner
from ioweather.sources.iomodel_grammar import Layout, parse_layout, parse_layouts, parse_sizes
from ioweather.sources.iomodel_plan import Config

MEM = 1 << 20


def record(mem_layout: str, file_layout: str, size: int, n: int, *, file_len: int = 4 << 20, seed: int = 7,
           time_seek: bool = False, op: str = "R", mem: int = MEM):
    """Offsets of a real discard run (reads /dev/zero, so no file is needed)."""
    runner = ProcRunner(0, mem, None, file_len, time_seek=time_seek)
    try:
        cfg = Config("discard", op, parse_layout(mem_layout), parse_layout(file_layout), size)
        runner.prepare(cfg, 0, seed, n)
        r = runner.measure()
    finally:
        runner.close()
    assert "error" not in r.meta
    assert len(r.durations) == n and (r.durations > 0).all()
    return r


def stride_expected(region: int, size: int, gap: int, n: int) -> list[int]:
    out, pos = [], 0
    for _ in range(n):
        out.append(pos)
        pos = pos + size + gap
        if pos + size > region:  # the next access would not fit: back to the start
            pos = 0
    return out


def test_off0_is_always_zero():
    r = record("off0", "off0", 4096, 500)
    assert (r.mem_offsets == 0).all() and (r.file_offsets == 0).all()


@pytest.mark.parametrize("size,gap", [(1, 0), (4096, 0), (3000, 0), (4096, 8192), (1000, 333)])
def test_seq_and_stride_step_and_wrap(size, gap):
    layout = "seq" if gap == 0 else f"stride:{gap}"
    mem = 64 << 10
    n = 3 * (mem // (size + gap)) + 5  # wraps around the memory buffer several times
    r = record(layout, layout, size, n, file_len=mem // 2 + 7, mem=mem)
    assert r.mem_offsets.tolist() == stride_expected(mem, size, gap, n)
    assert r.file_offsets.tolist() == stride_expected(mem // 2 + 7, size, gap, n)


@pytest.mark.parametrize("size,gap", [(4096, 0), (1000, 24), (64, 4096)])
def test_reverse_walks_down_from_the_top_slot(size, gap):
    step = size + gap
    top = ((MEM - size) // step) * step
    n = 2 * (top // step + 1) + 3
    layout = "reverse" if gap == 0 else f"reverse:{gap}"
    r = record(layout, "off0", size, n)
    slots = list(range(top, -1, -step))
    assert r.mem_offsets.tolist() == (slots * 3)[:n]
    assert (np.diff(r.mem_offsets)[: len(slots) - 1] == -step).all()


def test_rnd_is_uniform_over_aligned_slots():
    size, n = 4096, 20000
    r = record("rnd", "rnd", size, n, file_len=64 << 20)
    for offs, region in ((r.mem_offsets, MEM), (r.file_offsets, 64 << 20)):
        assert (offs % size == 0).all()
        assert offs.min() >= 0 and offs.max() <= region - size
        slots = offs // size
        counts = np.bincount(slots * 16 // (region // size), minlength=16)  # 16 equal bins of slots
        assert stats.chisquare(counts).pvalue > 1e-4
    # memory and file draws are not the same numbers
    assert not np.array_equal(r.mem_offsets // size, r.file_offsets // size)


def test_rnd_is_reproducible_from_the_seed():
    a = record("rnd", "rnd", 1, 1000, seed=11)
    b = record("rnd", "rnd", 1, 1000, seed=11)
    c = record("rnd", "rnd", 1, 1000, seed=12)
    assert np.array_equal(a.file_offsets, b.file_offsets) and np.array_equal(a.mem_offsets, b.mem_offsets)
    assert not np.array_equal(a.file_offsets, c.file_offsets)


def test_rnd8_steps_by_gap_plus_minus_gap():
    size, gap, region, n = 4096, 65536, 64 << 20, 20000
    r = record("off0", f"rnd8:{gap}", size, n, file_len=region)
    offs = r.file_offsets
    assert offs[0] == 0 and offs.min() >= 0 and offs.max() <= region - size
    steps = (np.diff(offs)) % (region - size + 1)  # wrapped modulo (last + 1)
    assert steps.min() >= size and steps.max() <= size + 2 * gap
    jitter = steps - size  # U[0, 2S]
    assert abs(jitter.mean() - gap) < 0.03 * gap
    assert stats.kstest(jitter / (2 * gap), "uniform").pvalue > 1e-4
    assert (offs % size != 0).any()  # byte granularity, not slots


def test_time_seek_records_the_same_layouts():
    a = record("seq", "reverse", 512, 3000, seed=3)
    b = record("seq", "reverse", 512, 3000, seed=3, time_seek=True)
    assert np.array_equal(a.file_offsets, b.file_offsets) and np.array_equal(a.mem_offsets, b.mem_offsets)


def test_starts_are_increasing_unix_times():
    import time

    r = record("seq", "seq", 64, 2000)
    assert (np.diff(r.starts) > 0).all()
    assert abs(r.starts[0] / 1e9 - time.time()) < 60


def test_layout_names_and_bad_layouts():
    assert [str(x) for x in parse_layouts("off0,seq,stride:8MiB,reverse,rnd,rnd8:8MiB")] == [
        "off0", "seq", "stride:8MiB", "reverse", "rnd", "rnd8:8MiB"]
    assert parse_layout("reverse:4k") == Layout("reverse", 4096)
    for bad, msg in (("foo", "unknown layout"), ("stride", "needs a size"), ("rnd8", "needs a size"),
                     ("rnd:4k", "takes no size"), ("stride:4q", "unknown size unit"), ("", "empty list")):
        with pytest.raises(UserError, match=msg):
            parse_layouts(bad)


def test_size_lists_and_ranges():
    assert parse_sizes("all")[:7] == [1, 4, 16, 64, 256, 1024, 2048] and parse_sizes("all")[-1] == 16 << 20
    assert len(parse_sizes("all")) == 20  # the paper's 20 sizes
    assert parse_sizes("1..4KiB") == [1, 4, 16, 64, 256, 1024, 2048, 4096]
    assert parse_sizes("1..1MiB:x16") == [1, 16, 256, 4096, 65536, 1 << 20]
    assert parse_sizes("4k,1,4k") == [4096, 1]
    for bad, msg in (("0", "out of range"), ("32MiB", "out of range"), ("16MiB..1", "empty"),
                     ("1..4k:2", "step"), ("x", "malformed size")):
        with pytest.raises(UserError, match=msg):
            parse_sizes(bad)
