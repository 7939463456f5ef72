"""Snapshot statistics against references: fsstats' own histogram code (ported below from
fsstats 1.4.5's Histo.pm, line by line), seed 002's Table IV, and hand-made histograms."""

from __future__ import annotations

import os
import random
import stat

import pytest

import fsstats_trees as kt
from ioweather.sources.tree_walk import walk
from ioweather.stats import fsstats as fs
from ioweather.views.fsstats_csv import kb_to_print, render_csv


class PerlHisto:
    """fsstats 1.4.5 Histo.pm (Marc Unangst, Panasas): add() and print_csv() rows, as written there."""

    def __init__(self, min=0, incr=1, log_incr=0, integer_vals=1, max=None):
        self.min, self.incr, self.log_incr, self.integer_vals, self.max = min, incr, log_incr, integer_vals, max
        self.count = 0
        self.total_val = 0.0
        self.min_val = self.max_val = None
        self.buckets, self.buckets_val = {}, {}
        self.bucket_max = [min + log_incr] if log_incr else []
        self.over_max = self.over_max_val = 0

    def add(self, val, count=1, bucket_val=None):
        """`bucket_val`: Histo.pm picks the bucket of the two overhead histograms by the item's
        size ($val_to_use = $size), not by the overhead value it adds."""
        if self.min_val is None or val < self.min_val:
            self.min_val = val
        if self.max_val is None or val > self.max_val:
            self.max_val = val
        self.count += count
        self.total_val += val * count
        if self.max is not None and val > self.max:
            self.over_max += count
            self.over_max_val += val * count
            return
        at = val if bucket_val is None else bucket_val
        if self.log_incr:
            b, x = 0, self.bucket_max[0]
            while at >= x + 1:
                x = x * 2 + 1
                b += 1
                if b > len(self.bucket_max) - 1:
                    self.bucket_max.append(x)
        else:
            b = int((at - self.min) / self.incr)
        self.buckets[b] = self.buckets.get(b, 0) + count
        self.buckets_val[b] = self.buckets_val.get(b, 0.0) + val * count

    def _bmin(self, b):
        if self.log_incr:
            return self.min if b == 0 else self.bucket_max[b - 1] + 1
        return self.min + self.incr * b

    def _bmax(self, b):
        return self.bucket_max[b] if self.log_incr else self.incr * (b + 1) - 1

    def rows(self):
        out, c, d = [], 0, 0.0
        for b in sorted(self.buckets):
            x, y = self.buckets[b], self.buckets_val[b]
            if not x:
                continue
            c += x
            d += y
            hi = self._bmax(b) if self.integer_vals else self._bmax(b) + 1
            tv = self.total_val
            out.append((int(self._bmin(b)), int(hi), x, x / self.count, c / self.count, y,
                        y / tv if tv else 0, d / tv if tv else 0))
        if self.over_max:
            c += self.over_max
            d += self.over_max_val
            out.append((self.max, -1, self.over_max, self.over_max / self.count, c / self.count, self.over_max_val,
                        self.over_max_val / self.total_val, d / self.total_val))
        return out


@pytest.fixture
def varied_tree(tmp_path):
    """A few hundred files of random sizes, ages of at least a day, names up to 200 bytes,
    directories of different sizes, hard links, symlinks with targets of 1 to 300 bytes (to files,
    to directories, dangling); no special files (fsstats does not histogram them)."""
    rng = random.Random(7)
    root = tmp_path / "v"
    root.mkdir()
    now = __import__("time").time_ns()
    dirs = [root]
    for i in range(12):
        d = dirs[rng.randrange(len(dirs))] / f"dir{i}{'_' * rng.randrange(0, 140)}"
        d.mkdir()
        dirs.append(d)
    files = []
    for i in range(300):
        d = dirs[rng.randrange(len(dirs))]
        size = rng.choice([0, 1, 2, 1000, 1024, 2047, 2048, 4095, 4096, 10**5]) if i % 3 else int(2 ** rng.uniform(0, 24))
        p = d / f"f{i}{'x' * rng.randrange(0, 190)}"
        if size > 2**20:
            with open(p, "wb") as f:
                f.truncate(size)
        else:
            p.write_bytes(b"\0" * size)
        age_a, age_m = rng.uniform(1.01, 3000), rng.uniform(1.01, 3000)
        os.utime(p, ns=(now - int(age_a * kt.DAY_NS), now - int(age_m * kt.DAY_NS)))
        files.append(p)
    for i in range(5):
        os.link(files[i], dirs[-1] / f"link{i}")
    for i in range(40):
        target = rng.choice([str(rng.choice(files)), str(rng.choice(dirs)), "t" * rng.randrange(1, 300)])
        os.symlink(target, dirs[rng.randrange(len(dirs))] / f"s{i}")
    return root


def test_fsstats_csv_sections_equal_fsstats_own_histograms(varied_tree):
    r = walk(str(varied_tree))
    doc = fs.snapshot_document(r, host="h", version="v")
    snap_s = r.snapshot_time_ns / 1e9
    H = {"file size": PerlHisto(log_incr=1, integer_vals=0), "capacity used": PerlHisto(log_incr=1, integer_vals=0),
         "positive overhead": PerlHisto(log_incr=1, integer_vals=0),
         "negative overhead": PerlHisto(log_incr=1, integer_vals=0),
         "directory size (entries)": PerlHisto(log_incr=1), "directory size": PerlHisto(log_incr=1, integer_vals=0),
         "filename length": PerlHisto(max=127, incr=8), "link count": PerlHisto(log_incr=1),
         "symlink target length": PerlHisto(max=127, incr=8)}
    for t in ("mtime", "ctime", "atime"):
        H[f"{t} (files)"] = PerlHisto(log_incr=1, integer_vals=0)
        H[f"{t} (KB)"] = PerlHisto(log_incr=1, integer_vals=0)

    def inode(st):  # what fsstats adds once per regular file, directory or symlink
        kb, cap = st.st_size / 1024.0, st.st_blocks / 2.0
        if cap >= kb:
            H["positive overhead"].add(cap - kb, bucket_val=kb)
        else:
            H["negative overhead"].add(kb - cap, bucket_val=kb)
        if stat.S_ISDIR(st.st_mode):
            H["directory size"].add(kb)

    inode(os.lstat(varied_tree))
    seen = set()
    for dirpath, dirnames, filenames in os.walk(varied_tree):
        H["directory size (entries)"].add(len(dirnames) + len(filenames))
        for n in dirnames + filenames:  # a symlink to a directory is in dirnames, not entered
            p = os.path.join(dirpath, n)
            st = os.lstat(p)
            # deliberate difference: every name counts in "filename length"; fsstats skips the
            # names of hard links after the first, which makes the result depend on walk order
            H["filename length"].add(len(os.fsencode(n)))
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            inode(st)
            if stat.S_ISLNK(st.st_mode):
                H["symlink target length"].add(len(os.fsencode(os.readlink(p))))
            if not stat.S_ISREG(st.st_mode):
                continue
            kb = st.st_size / 1024.0
            H["file size"].add(kb)
            H["capacity used"].add(st.st_blocks / 2.0)
            H["link count"].add(st.st_nlink)
            for t, ts in (("mtime", st.st_mtime_ns), ("ctime", st.st_ctime_ns), ("atime", st.st_atime_ns)):
                age = (snap_s - ts / 1e9) / 86400
                age = 0 if age < 1 else age  # fsstats' clamp
                H[f"{t} (files)"].add(age)
                H[f"{t} (KB)"].add(age, kb)
    sections = {s["title"]: s for s in fs.fsstats_sections(doc["histograms"])}
    assert set(sections) == set(H)
    assert len(sections["file size"]["rows"]) >= 8 and len(sections["mtime (KB)"]["rows"]) >= 8
    assert sections["filename length"]["rows"][-1][:2] == (127, -1)  # names over 127 bytes: fsstats' "over" row
    assert sections["symlink target length"]["rows"][-1][:2] == (127, -1)
    assert sections["positive overhead"]["count"] and sections["negative overhead"]["count"]  # both sides present
    assert [s["title"] for s in fs.fsstats_sections(doc["histograms"])] == [
        "file size", "capacity used", "positive overhead", "negative overhead", "directory size (entries)",
        "directory size", "filename length", "link count", "symlink target length", "mtime (files)", "mtime (KB)",
        "ctime (files)", "ctime (KB)", "atime (files)", "atime (KB)"]  # fsstats 1.4.5's order
    for title, ref in H.items():
        got = sections[title]
        rows = ref.rows()
        assert [row[:2] for row in got["rows"]] == [row[:2] for row in rows], title
        clamp = title.startswith("ctime")  # ctime is "now" here: fsstats zeroes ages under a day, we do not
        for g, e in zip(got["rows"], rows):
            assert g[2:5] == pytest.approx(e[2:5], rel=1e-9), title
            if not (clamp and g[0] == 0):
                assert g[5] == pytest.approx(e[5], rel=1e-6), title
        assert got["count"] == pytest.approx(ref.count, rel=1e-9)
        if not clamp:
            assert got["average"] == pytest.approx(ref.total_val / ref.count, rel=1e-6), title
        assert int(got["min"]) == int(ref.min_val) and int(got["max"]) == int(ref.max_val), title
    csv = render_csv(doc)
    assert "histogram,file size\n" in csv and f"count,{r.totals['files']},items\n" in csv
    assert f"skipped duplicate hardlinks,{r.totals['hardlinks_deduplicated']}\n" in csv


def test_kb_to_print_matches_fsstats():
    assert kb_to_print(512) == "512.00 KB"
    assert kb_to_print(1024) == "1024.00 KB"      # fsstats switches units only above the limit
    assert kb_to_print(1536) == "1.50 MB"
    assert kb_to_print(3 * 1024**3) == "3.00 TB"


def _doc(when: str, total_bytes, total_files, projects: dict) -> dict:
    return {"snapshot_time": when, "bytes": total_bytes, "files": total_files, "capacity_bytes": total_bytes,
            "dirs": 0, "symlinks": 0, "other": 0,
            "top_dirs": [{"name": n, "bytes": b, "files": f, "capacity_bytes": b} for n, (b, f) in projects.items()],
            "owners": []}


def test_growth_reproduces_seed_002_table_iv():
    # Intrepid, GPFS: January 23 and March 25, 2010 (seed 002 section IV-A, Table IV)
    pb, tb, m = 1e15, 1e12, 1e6
    a = _doc("2010-01-23T00:00:00Z", 1.14 * pb, 96.2 * m,
             {"EarthScience": (274.4 * tb, 12.3 * m), "rest": (1.14 * pb - 274.4 * tb, 96.2 * m - 12.3 * m)})
    b = _doc("2010-03-25T00:00:00Z", 1.28 * pb, 191.4 * m,
             {"EarthScience": (295.1 * tb, 96.2 * m), "rest": (1.28 * pb - 295.1 * tb, 191.4 * m - 96.2 * m)})
    g = fs.growth(a, b)
    assert round(g["total"]["bytes_change_pct"], 1) == 12.3
    assert round(g["total"]["files_change_pct"], 1) == 99.0
    es = next(r for r in g["top_dirs"] if r["name"] == "EarthScience")
    assert round(es["bytes_change_pct"], 1) == 7.5
    assert round(es["files_change_pct"], 1) == 682.1
    # "EarthScience was responsible for 88% of the additional files ... but only 15% of the new data"
    assert round(es["share_of_files_change_pct"]) == 88
    assert round(es["share_of_bytes_change_pct"]) == 15
    assert g["interval_s"] == 61 * 86400
    assert g["largest_movers"]["top_dirs_by_files"][0] == "EarthScience"
    assert g["largest_movers"]["top_dirs_by_bytes"][0] == "rest"


def test_growth_new_and_gone_parts_and_zero_base():
    a = _doc("2024-01-01T00:00:00Z", 100, 10, {"old": (100, 10)})
    b = _doc("2024-01-02T00:00:00Z", 300, 30, {"new": (300, 30)})
    g = fs.growth(a, b)
    rows = {r["name"]: r for r in g["top_dirs"]}
    assert rows["new"]["status"] == "new" and rows["new"]["bytes_change_pct"] is None  # from zero: no percentage
    assert rows["old"]["status"] == "gone" and rows["old"]["bytes_change_pct"] == -100.0
    assert rows["new"]["share_of_bytes_change_pct"] == 150.0 and rows["old"]["share_of_bytes_change_pct"] == -50.0
    assert g["files_per_day"] == 20 and g["bytes_per_day"] == 200


def _hist_from(values_sizes, scheme=fs.LOG2):
    count, nbytes, sums = [0] * 65, [0] * 65, [0] * 65
    for v, s in values_sizes:
        k = kt.log2_bucket(v) if scheme == fs.LOG2 else v // 8
        count[k] += 1
        nbytes[k] += s
        sums[k] += v
    vals = [v for v, _ in values_sizes]
    return {"count": count, "bytes": nbytes, "sum": sums, "n": len(vals), "min": min(vals, default=None),
            "max": max(vals, default=None)}


def test_cdf_and_fractions_from_buckets():
    # 86 files under 1 MiB (of 512 bytes each), 14 files of 4 MiB: "86% of files were under 1 MiB"
    h = fs.histogram(_hist_from([(512, 512)] * 86 + [(4 << 20, 4 << 20)] * 14), fs.LOG2, "bytes")
    assert fs.fraction_below(h, 1 << 20) == pytest.approx(0.86)
    by_bytes = 86 * 512 / (86 * 512 + 14 * (4 << 20))
    assert fs.fraction_below(h, 1 << 20, "bytes") == pytest.approx(by_bytes)
    x, y = fs.cdf(h)
    assert list(x) == [1024.0 * 2**k for k in range(0, 14)] and y[-1] == 1.0
    assert all(a <= b for a, b in zip(y, y[1:]))
    assert fs.largest_bucket(h)["min"] == 512
    counts = [0] * 10 + [86] + [0] * 12 + [14]
    lx, ly = fs.cdf_from_log2(counts, [0] * 24, "count")
    assert lx[10] == 1024 and ly[10] == pytest.approx(0.86) and ly[-1] == 1.0


def test_empty_and_linear_histograms():
    empty = fs.histogram(_hist_from([]), fs.LOG2, "bytes")
    assert empty == {"unit": "bytes", "count": 0, "min": None, "max": None, "mean": None, "buckets": []}
    assert fs.cdf(empty)[0].size == 0 and fs.fraction_below(empty, 10) is None and fs.largest_bucket(empty) is None
    names = fs.histogram(_hist_from([(3, 0), (9, 0), (15, 0), (200, 0)], fs.LINEAR8), fs.LINEAR8, "bytes")
    assert [(b["min"], b["max"], b["count"]) for b in names["buckets"] if b["count"]] == [(0, 8, 1), (8, 16, 2), (200, 208, 1)]
    assert fs.bucket_bounds(fs.LOG2, 0) == (0, 1) and fs.bucket_bounds(fs.LOG2, 64) == (2**63, 2**64)
