"""The tree walk on trees with exactly known content: every count, byte total and bucket
against an independent computation (tests/fsstats_trees.py), plus the hostile cases:
races, symlink swaps, deep trees, unreadable directories, mount points."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import time
from collections import Counter, defaultdict

import numpy as np
import pytest

import fsstats_trees as kt
from ioweather.errors import UserError
from ioweather.sources import tree_walk
from ioweather.sources.tree_walk import walk
from ioweather.stats import fsstats as fs

DAY = kt.DAY_NS


@pytest.fixture
def known(tmp_path):
    root = os.fsencode(tmp_path / "tree")
    os.mkdir(root)
    return kt.build_known_tree(root, os.fsencode(tmp_path / "outside"))


def _hist(result, key):
    return result.histograms[key]


def _expected_buckets(values_and_sizes, bucket_fn):
    count, nbytes = Counter(), Counter()
    for v, size in values_and_sizes:
        k = bucket_fn(v)
        count[k] += 1
        nbytes[k] += size
    return count, nbytes


def _check_hist(h, values_and_sizes, bucket_fn, by_size=False):
    """Buckets, bucket bytes, count, min and max; `by_size` buckets by the item's size instead of
    its value (the overhead histograms, as fsstats buckets them), then also checks the value sums."""
    count, nbytes = _expected_buckets([(s if by_size else v, s) for v, s in values_and_sizes], bucket_fn)
    got_c = {k: int(c) for k, c in enumerate(h["count"]) if c}
    got_b = {k: int(b) for k, b in enumerate(h["bytes"]) if h["count"][k]}
    assert got_c == dict(count)
    assert got_b == {k: nbytes[k] for k in count}
    assert h["n"] == len(values_and_sizes)
    if by_size:
        sums = Counter()
        for v, s in values_and_sizes:
            sums[bucket_fn(s)] += v
        assert {k: int(x) for k, x in enumerate(h["sum"]) if h["count"][k]} == dict(sums)
    if values_and_sizes:
        assert h["min"] == min(v for v, _ in values_and_sizes)
        assert h["max"] == max(v for v, _ in values_and_sizes)


@pytest.mark.parametrize("threads", [1, 3])
def test_known_tree_totals_and_histograms(known, threads):
    r = walk(known.root, threads=threads)
    t = r.totals
    files = known.files
    assert t["files"] == len(files) == 17
    assert t["bytes"] == sum(i.size for i in files)
    assert t["dirs"] == len(known.dirs)
    assert t["symlinks"] == len(known.symlinks) == 6
    assert t["other"] == 2
    assert t["hardlinks_deduplicated"] == 2
    assert t["errors"] == 0 and r.errors == []
    assert t["entries"] == len(kt.all_names(known)) + 1
    # capacity: every inode once (the root included), from our own lstat and from GNU du
    inodes = {}
    for rel in [b""] + kt.all_names(known):
        st = kt.lstat(known, rel)
        inodes[(st.st_dev, st.st_ino)] = st.st_blocks * 512
    assert t["capacity_bytes"] == sum(inodes.values()) == kt.du_bytes(known.root)

    # file sizes and capacity of regular files
    _check_hist(_hist(r, "file_size"), [(i.size, i.size) for i in files], kt.log2_bucket)
    caps = [(kt.lstat(known, i.path).st_blocks * 512, i.size) for i in files]
    _check_hist(_hist(r, "capacity"), caps, kt.log2_bucket)
    # link count: the hard-linked file has 3 names
    _check_hist(_hist(r, "link_count"), [(3 if i.path == b"proj_a/hl_a" else 1, i.size) for i in files], kt.log2_bucket)
    # ages from the times we set and the one snapshot time of the walk
    snap = r.snapshot_time_ns
    atimes = [(snap - (known.now_ns - int(i.atime_days * DAY)), i.size) for i in files]
    mtimes = [(snap - (known.now_ns - int(i.mtime_days * DAY)), i.size) for i in files]
    ctimes = [(snap - kt.lstat(known, i.path).st_ctime_ns, i.size) for i in files]
    for key, vals in (("atime_age", atimes), ("mtime_age", mtimes), ("ctime_age", ctimes)):
        h = _hist(r, key)
        _check_hist(h, vals, kt.age_bucket)
        assert h["sum"].sum() == pytest.approx(sum(v for v, _ in vals), rel=1e-12)
        assert h["wsum"].sum() == pytest.approx(sum(v * s for v, s in vals), rel=1e-12)
    # the ages land where the tree put them: 1000-day file in [512, 1024) days, 5000 in [4096, 8192)
    mt = _hist(r, "mtime_age")
    assert mt["count"][kt.age_bucket(1000 * DAY)] >= 1 and kt.age_bucket(1000 * DAY) == 10
    # directory sizes in entries (the directory's own st_size as weight)
    dir_vals = [(len(os.listdir(known.abspath(d))), kt.lstat(known, d).st_size) for d in known.dirs]
    _check_hist(_hist(r, "dir_entries"), dir_vals, kt.log2_bucket)
    # name lengths: every name below the root, hard links included
    names = [(len(os.path.basename(p)), kt.lstat(known, p).st_size) for p in kt.all_names(known)]
    _check_hist(_hist(r, "name_length"), names, lambda n: n // 8)

    # directory sizes in bytes (st_size), every directory once, the root included
    dsz = [(kt.lstat(known, d).st_size,) * 2 for d in known.dirs]
    _check_hist(_hist(r, "dir_size"), dsz, kt.log2_bucket)
    # symlink target lengths from our own readlink; the 603-byte one lands in the last, open bucket
    tl = [(len(os.readlink(known.abspath(p))), kt.lstat(known, p).st_size) for p in known.symlinks]
    _check_hist(_hist(r, "symlink_target_length"), tl, lambda n: min(n // 8, 64))
    assert max(n for n, _ in tl) == 603 and _hist(r, "symlink_target_length")["count"][64] == 1
    # overhead = capacity - size of every regular file, directory and symlink (each inode once),
    # split by sign as fsstats does and bucketed by size
    pos, neg = [], []
    for (blocks, size, mode) in {(st.st_dev, st.st_ino): (st.st_blocks, st.st_size, st.st_mode)
                                 for st in (kt.lstat(known, rel) for rel in [b""] + kt.all_names(known))}.values():
        if stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode):
            (pos if blocks * 512 >= size else neg).append((abs(blocks * 512 - size), size))
    assert pos and neg  # the sparse files have less capacity than size, small files more
    _check_hist(_hist(r, "overhead_positive"), pos, kt.log2_bucket, by_size=True)
    _check_hist(_hist(r, "overhead_negative"), neg, kt.log2_bucket, by_size=True)
    assert len(pos) + len(neg) == t["files"] + t["dirs"] + t["symlinks"]

    # owners: uid 4242 owns one file
    owners = {o["uid"]: o for o in r.owners}
    assert owners[4242]["files"] == 1 and owners[4242]["bytes"] == 65536
    assert owners[0]["files"] == len(files) - 1
    assert owners[0]["bytes"] == t["bytes"] - 65536
    assert sum(o["capacity_bytes"] for o in r.owners) == t["capacity_bytes"]

    # first-level directories ("projects"); the file hard-linked from proj_a and proj_b is carried
    # by the project whose name sorts first, whichever link a thread met first
    tops = {d["name"]: d for d in r.top_dirs}
    assert set(tops) == {".", "proj_a", "proj_b", "proj_c", "proj_d", "caf\\xe9"}
    by_top = defaultdict(lambda: [0, 0])
    for i in files:
        first = i.path.split(b"/")[0] if b"/" in i.path else b"."
        by_top[tree_walk.display_name(first)][0] += 1
        by_top[tree_walk.display_name(first)][1] += i.size
    for name, (nfiles, nbytes) in by_top.items():
        assert (tops[name]["files"], tops[name]["bytes"]) == (nfiles, nbytes), name
    assert tops["proj_d"]["files"] == 0 and tops["proj_d"]["dirs"] == 1
    assert tops["."]["dirs"] == 1  # the root itself
    assert sum(d["files"] for d in r.top_dirs) == t["files"]
    assert sum(d["capacity_bytes"] for d in r.top_dirs) == t["capacity_bytes"]
    assert sum(d["dirs"] for d in r.top_dirs) == t["dirs"]
    newest_b = min([i.mtime_days for i in files if i.path.startswith(b"proj_b/")] + [60])  # + the link hl_c
    assert tops["proj_b"]["newest_mtime_ns"] == known.now_ns - int(newest_b * DAY)
    # per-project size histograms add up to the whole
    total = np.zeros(65, np.uint64)
    for d in r.top_dirs:
        total += d["size_count"]
    assert np.array_equal(total, _hist(r, "file_size")["count"])
    # the secret behind the symlink was never counted
    assert kt.SECRET_BYTES not in [i.size for i in files] and t["bytes"] < 2**34


def test_hard_links_across_projects_are_carried_deterministically(tmp_path):
    root = tmp_path / "t"
    names = [f"p{i:02d}" for i in range(40)]
    for n in names:
        (root / n).mkdir(parents=True)
        (root / n / "own").write_bytes(b"o" * 10)
        os.utime(root / n / "own", ns=(time.time_ns(), time.time_ns() - 100 * DAY))
    src = root / "p39" / "shared"
    src.write_bytes(b"s" * 5000)
    os.utime(src, ns=(time.time_ns(), time.time_ns() - 2 * DAY))
    for n in names[:-1]:
        os.link(src, root / n / "shared")
    for _ in range(5):
        r = walk(str(root), threads=4)
        tops = {d["name"]: d for d in r.top_dirs}
        assert (tops["p00"]["files"], tops["p00"]["bytes"]) == (2, 5010)
        assert all((tops[n]["files"], tops[n]["bytes"]) == (1, 10) for n in names[1:])
        assert sum(int(d["size_count"].sum()) for d in r.top_dirs) == r.totals["files"] == 41
        assert r.totals["hardlinks_deduplicated"] == 39
        # every project that names the file saw it as its newest
        assert all(tops[n]["newest_mtime_ns"] == src.stat().st_mtime_ns for n in names)


def _projects_by_os_walk(root: bytes) -> dict:
    """Per first-level directory, independently of the walker: files, bytes, capacity and the
    log2 file-size counts, from os.walk + lstat.  A first-level directory is its own project, what
    sits directly in the root is ".", and an inode with several names goes, once, to the project
    whose name sorts first (bytewise) among its names' projects."""
    inodes = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            top = rel.split(b"/")[0] if b"/" in rel or stat.S_ISDIR(st.st_mode) else b"."
            inodes.setdefault((st.st_dev, st.st_ino), [st, set()])[1].add(top)
    rst = os.lstat(root)
    inodes[(rst.st_dev, rst.st_ino)] = [rst, {b"."}]
    out = defaultdict(lambda: {"files": 0, "bytes": 0, "capacity_bytes": 0, "size_count": Counter()})
    for st, tops in inodes.values():
        d = out[tree_walk.display_name(min(tops))]
        d["capacity_bytes"] += st.st_blocks * 512
        if stat.S_ISREG(st.st_mode):
            d["files"] += 1
            d["bytes"] += st.st_size
            d["size_count"][kt.log2_bucket(st.st_size)] += 1
    return out


@pytest.fixture
def shared_links_tree(tmp_path):
    return kt.build_shared_links_tree(os.fsencode(tmp_path / "t"))


def test_hard_links_shared_by_many_projects_are_credited_once_every_time(shared_links_tree):
    # the stress case of the old bug (a file's share moved between per-thread project sums while
    # other threads kept adding: about one walk in twenty went wrong here): many threads meeting the
    # names of one inode in different projects at once; every walk must give every project its share
    expected = _projects_by_os_walk(shared_links_tree)
    assert len(expected) == 42 and expected["-early"]["files"] > 0  # "-" sorts before "."
    for threads in [4] * 60 + [8] * 20 + [16] * 20:
        r = walk(shared_links_tree, threads=threads)
        got = {d["name"]: d for d in r.top_dirs}
        assert set(got) == set(expected)
        for name, e in expected.items():
            g = got[name]
            assert (g["files"], g["bytes"], g["capacity_bytes"]) == (e["files"], e["bytes"], e["capacity_bytes"]), \
                (threads, name)
            assert {k: int(c) for k, c in enumerate(g["size_count"]) if c} == dict(e["size_count"]), (threads, name)
        assert sum(d["files"] for d in r.top_dirs) == r.totals["files"]
        assert sum(d["capacity_bytes"] for d in r.top_dirs) == r.totals["capacity_bytes"]


def test_snapshot_document_buckets_and_summaries(known):
    r = walk(known.root)
    doc = fs.snapshot_document(r, host="h", version="v")
    sizes = sorted(i.size for i in known.files)
    h = doc["histograms"]["file_size"]
    assert h["count"] == len(sizes) and h["min"] == 0 and h["max"] == 2**33 + 5
    assert h["mean"] == pytest.approx(sum(sizes) / len(sizes))
    # bucket bounds: every size inside its bucket, buckets contiguous
    for b1, b2 in zip(h["buckets"], h["buckets"][1:]):
        assert b1["max"] == b2["min"]
    for s in sizes:
        (b,) = [b for b in h["buckets"] if b["min"] <= s < b["max"]]
        assert b["count"] >= 1
    sixty_four_k = [b for b in h["buckets"] if b["min"] == 65536][0]
    assert (sixty_four_k["max"], sixty_four_k["count"], sixty_four_k["bytes"]) == (131072, 2, 65536 + 100_000)
    age = doc["histograms"]["mtime_age_days"]
    snap = r.snapshot_time_ns
    mt = [(snap - (known.now_ns - int(i.mtime_days * DAY))) / DAY for i in known.files]
    assert age["min"] == pytest.approx(min(mt), abs=1e-9) and age["max"] == pytest.approx(max(mt), abs=1e-9)
    assert age["mean"] == pytest.approx(sum(mt) / len(mt), rel=1e-9)
    (b5000,) = [b for b in age["buckets"] if b["min"] <= 5000 < b["max"]]
    assert (b5000["min"], b5000["max"], b5000["count"], b5000["bytes"]) == (4096, 8192, 1, 100_000)
    # overhead: signed capacity - size of every regular file, directory and symlink, one row per size bucket
    inodes = {}
    for rel in [b""] + kt.all_names(known):
        st = kt.lstat(known, rel)
        if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode) or stat.S_ISLNK(st.st_mode):
            inodes[(st.st_dev, st.st_ino)] = (st.st_size, st.st_blocks * 512 - st.st_size)
    ov = doc["histograms"]["overhead"]
    signed = [o for _, o in inodes.values()]
    assert ov["count"] == len(inodes) == doc["files"] + doc["dirs"] + doc["symlinks"]
    assert (ov["min"], ov["max"]) == (min(signed), max(signed)) and ov["min"] < 0 < ov["max"]
    assert ov["mean"] == pytest.approx(sum(signed) / len(signed))
    assert sum(b["sum"] for b in ov["buckets"]) == sum(signed) == doc["capacity_bytes"] - sum(s for s, _ in inodes.values())
    assert (ov["positive"]["count"], ov["positive"]["sum"]) == (sum(o >= 0 for o in signed), sum(o for o in signed if o >= 0))
    assert (ov["negative"]["count"], ov["negative"]["sum"]) == (sum(o < 0 for o in signed), -sum(o for o in signed if o < 0))
    for size, o in inodes.values():
        (b,) = [b for b in ov["buckets"] if b["min"] <= size < b["max"]]
        assert b["positive_count" if o >= 0 else "negative_count"] >= 1
    (big,) = [b for b in ov["buckets"] if b["min"] <= 2**33 + 5 < b["max"]]
    assert big["negative_sum"] == 2**33 + 5 - kt.lstat(known, b"proj_b/sparse_big").st_blocks * 512
    assert doc["histograms"]["dir_size"]["count"] == doc["dirs"]
    links = doc["histograms"]["symlink_target_length"]
    assert links["count"] == doc["symlinks"] and links["max"] == 603
    assert (links["buckets"][-1]["min"], links["buckets"][-1]["max"], links["buckets"][-1]["count"]) == (512, 4096, 1)
    json.dumps(doc)  # plain JSON types only


def test_exclude_by_name_and_by_path(tmp_path):
    root = tmp_path / "t"
    (root / "proj/cache").mkdir(parents=True)
    (root / "other/cache").mkdir(parents=True)
    for rel, size in {"proj/keep.dat": 11, "proj/skip.tmp": 13, "proj/cache/x": 17, "other/cache/y": 19,
                      "other/a.tmp": 23}.items():
        (root / rel).write_bytes(b"z" * size)
    r = walk(str(root), exclude=["*.tmp", "proj/cache"])
    assert r.totals["files"] == 2 and r.totals["bytes"] == 11 + 19
    assert r.totals["excluded"] == 3  # two *.tmp names and the proj/cache directory (not entered)
    assert r.totals["dirs"] == 4      # root, proj, other, other/cache
    assert r.exclude == ["*.tmp", "proj/cache"]


def test_progress_callback_reports_entries(tmp_path):
    root = tmp_path / "t"
    for d in range(20):
        (root / f"d{d}").mkdir(parents=True)
        (root / f"d{d}" / "f").write_bytes(b"x")
    seen = []

    def slow(event, rel):
        if event == "listed":
            time.sleep(0.01)

    r = walk(str(root), threads=1, progress=lambda e, err, q: seen.append((e, err, q)), interval=0.02, _hook=slow)
    assert seen, "no progress reported during a walk of > 0.2 s"
    assert all(0 <= e <= r.totals["entries"] for e, _, _ in seen)
    assert [e for e, _, _ in seen] == sorted(e for e, _, _ in seen)


def test_interrupted_walk_raises_and_releases_everything(tmp_path):
    root = tmp_path / "t"
    for d in range(30):
        (root / f"d{d}" / "sub").mkdir(parents=True)
    fds_before = len(os.listdir("/proc/self/fd"))

    def slow(event, rel):
        time.sleep(0.005)

    def stop(entries, errors, queued):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        walk(str(root), threads=2, progress=stop, interval=0.02, _hook=slow)
    assert len(os.listdir("/proc/self/fd")) == fds_before  # no directory left open
    assert walk(str(root)).totals["dirs"] == 61  # and the next walk is whole


# ------------------------------------------------------------------ bad input


def test_missing_root_and_file_root(tmp_path):
    with pytest.raises(UserError, match="no such file or directory"):
        walk(str(tmp_path / "nope"))
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(UserError, match="not a directory"):
        walk(str(f))


def test_symlink_root_reports_the_link(tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    (target / "f").write_bytes(b"abc")
    link = tmp_path / "link"
    link.symlink_to(target)
    r = walk(str(link))
    assert r.root_is_symlink and r.symlink_target == str(target)
    assert (r.totals["symlinks"], r.totals["files"], r.totals["dirs"]) == (1, 0, 0)
    assert "symbolic link" in r.notes[0]
    followed = walk(str(link) + "/")  # the trailing slash asks for the target
    assert followed.totals["files"] == 1 and followed.totals["bytes"] == 3 and not followed.root_is_symlink


def test_entries_deleted_during_the_walk_are_counted_not_fatal(tmp_path):
    root = tmp_path / "t"
    (root / "d").mkdir(parents=True)
    for i in range(6):
        (root / "d" / f"f{i}").write_bytes(b"x" * (i + 1))

    def hook(event, rel):
        if event == "listed" and rel == b"d":
            for i in (2, 3):
                os.unlink(root / "d" / f"f{i}")

    r = walk(str(root), threads=2, _hook=hook)
    assert r.totals["files"] == 4 and r.totals["bytes"] == 1 + 2 + 5 + 6
    assert r.totals["errors"] == 2
    assert sorted((e["path"], e["op"], e["errno"]) for e in r.errors) == [
        (str(root / "d" / "f2"), "stat", 2), (str(root / "d" / "f3"), "stat", 2)]


def test_symlink_replaced_before_readlink_is_an_error_not_a_length(tmp_path):
    root = tmp_path / "t"
    (root / "d").mkdir(parents=True)
    (root / "d" / "link").symlink_to("target-of-19-bytes!")
    (root / "e").mkdir()
    (root / "e" / "kept").symlink_to("abc")

    def hook(event, rel):
        # between the link's lstat and the reading of its target, it becomes a regular file
        if event == "readlink" and rel == b"d":
            (root / "d" / "link").unlink()
            (root / "d" / "link").write_bytes(b"now a file")

    r = walk(str(root), threads=1, _hook=hook)
    assert r.totals["symlinks"] == 2 and r.totals["files"] == 0  # both were links when listed
    assert [(e["path"], e["op"], e["errno"]) for e in r.errors] == [(str(root / "d" / "link"), "readlink", 22)]
    h = r.histograms["symlink_target_length"]
    assert (h["n"], h["min"], h["max"]) == (1, 3, 3)  # only the link that could be read


@pytest.mark.parametrize("mode", ["kept-fd", "openat2-from-ancestor", "component-walk"])
def test_directory_replaced_by_symlink_does_not_escape(tmp_path, mode):
    root = tmp_path / "t"
    (root / "a" / "b" / "c").mkdir(parents=True)
    (root / "a" / "b" / "c" / "inside").write_bytes(b"i")
    outside = tmp_path / "outside"
    (outside / "c").mkdir(parents=True)
    (outside / "c" / "secret").write_bytes(b"s" * 1000)
    (outside / "secret").write_bytes(b"s" * 1000)

    def hook(event, rel):
        # just before a/b/c is opened, a/b becomes a symlink to a tree outside
        if event == "open" and rel == b"a/b/c":
            shutil.rmtree(root / "a" / "b")
            os.symlink(outside, root / "a" / "b")

    kw = {"kept-fd": {}, "openat2-from-ancestor": {"_fd_budget": 0},
          "component-walk": {"_fd_budget": 0, "_no_openat2": True}}[mode]
    r = walk(str(root), threads=1, _hook=hook, **kw)
    assert r.totals["bytes"] == 0 and r.totals["files"] == 0  # neither 'inside' (deleted) nor the secrets
    assert r.totals["errors"] == 1
    (err,) = r.errors
    assert err["path"] == str(root / "a" / "b" / "c") and err["op"] == "open"
    # through the kept descriptor the old, deleted b has no c any more (ENOENT); by path, b is now a
    # symlink: RESOLVE_NO_SYMLINKS says ELOOP, O_NOFOLLOW|O_DIRECTORY says ENOTDIR
    assert err["errno"] in (2, 40, 20)


def test_directory_replaced_by_other_directory_is_not_entered(tmp_path):
    root = tmp_path / "t"
    (root / "a" / "victim").mkdir(parents=True)
    (root / "a" / "victim" / "old").write_bytes(b"o")
    parked = tmp_path / "parked"

    def hook(event, rel):
        if event == "open" and rel == b"a/victim":
            os.rename(root / "a" / "victim", parked)
            (root / "a" / "victim").mkdir()
            (root / "a" / "victim" / "new").write_bytes(b"n" * 50)

    r = walk(str(root), threads=1, _hook=hook)
    assert r.totals["files"] == 0
    assert [(e["op"], e["errno"]) for e in r.errors] == [("changed", 116)]  # ESTALE


@pytest.fixture
def scratch(tmp_path):
    """A tmpfs when we may mount one: removing thousands of directories on a disk mounted with
    `discard` takes milliseconds each; the walk is the same on either."""
    d = tmp_path / "fs"
    d.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "iow-scratch", str(d)],
                             capture_output=True).returncode == 0
    yield d
    if mounted:
        subprocess.run(["umount", "-l", str(d)], check=True)


@pytest.mark.parametrize("kw", [{}, {"_fd_budget": 0}, {"_fd_budget": 3}], ids=["default", "no-kept-fds", "tiny-budget"])
def test_deep_tree_no_recursion_limit(scratch, kw):
    depth = 2500  # 5000-byte paths: longer than PATH_MAX, deeper than Python's recursion limit
    root = os.fsencode(scratch / "deep")
    os.mkdir(root)
    kt.make_deep(root, depth)
    try:
        r = walk(root, threads=2, **kw)
        assert r.totals["dirs"] == depth + 1 and r.totals["files"] == 1 and r.totals["bytes"] == 5
        assert r.totals["errors"] == 0
        doc = fs.snapshot_document(r, host="h", version="v")
        assert doc["histograms"]["dir_entries"]["count"] == depth + 1
    finally:
        kt.remove_deep(root)


def test_deep_tree_component_walk(scratch):
    depth = 600
    root = os.fsencode(scratch / "deep")
    os.mkdir(root)
    kt.make_deep(root, depth)
    try:
        r = walk(root, threads=2, _fd_budget=0, _no_openat2=True)
        assert (r.totals["dirs"], r.totals["files"], r.totals["errors"]) == (depth + 1, 1, 0)
    finally:
        kt.remove_deep(root)


def test_non_utf8_names_in_errors_and_projects(tmp_path):
    root = os.fsencode(tmp_path / "t")
    os.makedirs(os.path.join(root, b"\xff\xfeproj"))
    with open(os.path.join(root, b"\xff\xfeproj", b"n\xe9"), "wb") as f:
        f.write(b"abc")

    def hook(event, rel):
        if event == "listed" and rel == b"\xff\xfeproj":
            os.unlink(os.path.join(root, b"\xff\xfeproj", b"n\xe9"))

    r = walk(root, _hook=hook)
    assert [d["name"] for d in r.top_dirs if d["name"] != "."] == ["\\xff\\xfeproj"]
    assert r.errors[0]["path"].endswith("/\\xff\\xfeproj/n\\xe9")
    json.dumps(fs.snapshot_document(r, host="h", version="v"), ensure_ascii=False).encode("utf-8")


# ------------------------------------------------------ permissions (as uid 65534)


def _walk_as_nobody(path: bytes):
    try:
        r = walk(path, threads=2)
    except UserError as e:
        return 3, str(e).encode()
    return 0, json.dumps({"totals": r.totals, "errors": r.errors}).encode()


@pytest.fixture
def public_tree():
    base = kt.world_readable_tmp("iow-fsstats-perm-")
    root = os.path.join(base, b"t")
    os.makedirs(os.path.join(root, b"open/sub"))
    os.makedirs(os.path.join(root, b"locked"))
    os.makedirs(os.path.join(root, b"listonly"))
    for rel, size in ((b"open/a", 10), (b"open/sub/b", 20), (b"locked/hidden", 1000), (b"listonly/x", 30),
                      (b"listonly/y", 40)):
        with open(os.path.join(root, rel), "wb") as f:
            f.write(b"q" * size)
    for d in (base, root, os.path.join(root, b"open"), os.path.join(root, b"open/sub")):
        os.chmod(d, 0o755)
    os.chmod(os.path.join(root, b"locked"), 0o700)    # nobody can neither list nor enter
    os.chmod(os.path.join(root, b"listonly"), 0o744)  # nobody can list but not stat the entries
    yield root
    shutil.rmtree(base)


def test_unreadable_directories_counted_and_listed(public_tree):
    code, out = kt.run_as_nobody(_walk_as_nobody, public_tree)
    assert code == 0, out
    got = json.loads(out)
    t = got["totals"]
    assert t["files"] == 2 and t["bytes"] == 30
    assert t["dirs"] == 5  # root, open, open/sub, locked, listonly: seen in their parents' listings
    assert t["errors"] == 3
    errs = sorted((os.path.relpath(e["path"], os.fsdecode(public_tree)), e["op"], e["errno"]) for e in got["errors"])
    assert errs == [("listonly/x", "stat", 13), ("listonly/y", "stat", 13), ("locked", "open", 13)]


def test_permission_denied_at_the_root_is_a_user_error(public_tree):
    code, out = kt.run_as_nobody(_walk_as_nobody, os.path.join(public_tree, b"locked"))
    assert code == 3 and b"permission denied" in out


# ------------------------------------------------------------------ mount points


@pytest.fixture
def tree_with_mount(tmp_path):
    root = tmp_path / "t"
    (root / "local").mkdir(parents=True)
    (root / "local" / "f").write_bytes(b"l" * 100)
    mnt = root / "mnt"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "iow-test", str(mnt)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs CAP_SYS_ADMIN): {proc.stderr.strip()}")
    try:
        (mnt / "inner").mkdir()
        (mnt / "inner" / "g").write_bytes(b"m" * 200)
        yield root
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_stays_on_one_file_system_unless_asked(tree_with_mount):
    root = tree_with_mount
    r = walk(str(root))
    assert (r.totals["files"], r.totals["bytes"], r.totals["dirs"], r.totals["skipped_mounts"]) == (1, 100, 2, 1)
    assert r.totals["capacity_bytes"] == kt.du_bytes(os.fsencode(root))  # du -x leaves the mount point out too
    crossed = walk(str(root), cross_mounts=True)
    assert (crossed.totals["files"], crossed.totals["bytes"], crossed.totals["dirs"]) == (2, 300, 4)
    assert crossed.totals["skipped_mounts"] == 0


def test_default_threads_in_range():
    assert 4 <= tree_walk.default_threads() <= 16
