"""Trees with exactly known content for the fsstats tests, and the independent arithmetic they are checked with.

Nothing here imports ioweather: expected values come from what the tree was built
with (sizes, times set with os.utime, link counts) and from the test's own lstat.
"""

from __future__ import annotations

import math
import os
import random
import socket
import stat
import subprocess
from dataclasses import dataclass, field
from unprivileged import run_as_nobody  # noqa: F401  (the tests call kt.run_as_nobody)

DAY_NS = 86_400 * 10**9
SECRET_BYTES = 7_777_777  # a size that appears nowhere inside the trees


def log2_bucket(v: int) -> int:
    """0 for 0, else k with 2^(k-1) <= v < 2^k, computed from the binary digits."""
    return 0 if v == 0 else len(format(v, "b"))


def age_bucket(age_ns: int) -> int:
    whole_days = age_ns // DAY_NS if age_ns >= 0 else 0
    return 0 if whole_days == 0 else int(math.floor(math.log2(whole_days))) + 1


@dataclass
class Item:
    path: bytes
    size: int = 0
    atime_days: float = 0.25
    mtime_days: float = 0.25
    uid: int = 0


@dataclass
class KnownTree:
    root: bytes
    now_ns: int
    files: list[Item] = field(default_factory=list)          # one per inode
    hardlink_names: list[bytes] = field(default_factory=list)  # extra names of files[...] inodes
    symlinks: list[bytes] = field(default_factory=list)
    others: list[bytes] = field(default_factory=list)
    dirs: list[bytes] = field(default_factory=list)           # including the root (b"")

    def abspath(self, rel: bytes) -> bytes:
        return os.path.join(self.root, rel) if rel else self.root


def _write(path: bytes, size: int, sparse: bool = False) -> None:
    with open(path, "wb") as f:
        if sparse:
            f.truncate(size)
        else:
            f.write(os.urandom(size))


def build_known_tree(root: bytes, outside: bytes) -> KnownTree:
    """The tree of the main correctness test.  `outside` is a directory outside `root` that
    symlinks point into (it holds a file of SECRET_BYTES that must never be counted)."""
    import time

    now = time.time_ns()
    t = KnownTree(root=root, now_ns=now)
    os.makedirs(outside, exist_ok=True)
    _write(os.path.join(outside, b"secret"), SECRET_BYTES, sparse=True)
    dirs = [b"", b"proj_a", b"proj_a/sub", b"proj_a/sub/deeper", b"proj_b", b"proj_c", b"proj_d", b"caf\xe9"]
    for d in dirs[1:]:
        os.makedirs(os.path.join(root, d))
    t.dirs = dirs
    specs = [
        Item(b"proj_a/f0", 0, 0.25, 0.5),
        Item(b"proj_a/f1", 1, 1.5, 1.5),
        Item(b"proj_a/sub/f1023", 1023, 3, 3),
        Item(b"proj_a/sub/f1024", 1024, 6, 12),
        Item(b"proj_a/sub/deeper/f4096", 4096, 100, 100),
        Item(b"proj_b/f65536", 65536, 1000, 1000, uid=4242),
        Item(b"proj_b/f100000", 100_000, 5000, 5000),
        Item(b"proj_b/sparse_1g", 2**30, 20, 40),
        Item(b"proj_b/sparse_big", 2**33 + 5, 2.5, 300),
        Item(b"top_file", 10, 0.25, 0.25),
        Item("proj_c/données.txt".encode(), 7, 9, 9),
        Item("proj_c/日本語".encode(), 3, 9, 9),
        Item(b"proj_c/new\nline", 5, 9, 9),
        Item(b"proj_c/bad\xff\xfe", 9, 9, 9),
        Item(b"proj_c/" + b"x" * 200, 2, 9, 9),
        Item(b"caf\xe9/inner", 123, 0.25, 0.25),
        Item(b"proj_a/hl_a", 3000, 50, 60),
    ]
    for it in specs:
        p = os.path.join(root, it.path)
        _write(p, it.size, sparse=it.size > 2**20)
    t.files = specs
    # hard links: one inode under three names, in two projects
    os.link(os.path.join(root, b"proj_a/hl_a"), os.path.join(root, b"proj_a/hl_b"))
    os.link(os.path.join(root, b"proj_a/hl_a"), os.path.join(root, b"proj_b/hl_c"))
    t.hardlink_names = [b"proj_a/hl_b", b"proj_b/hl_c"]
    links = {b"proj_c/loop1": b"loop2", b"proj_c/loop2": b"loop1", b"proj_c/outside": outside,
             b"proj_c/dangling": b"does-not-exist", b"proj_c/todir": b"../proj_a",
             b"proj_c/long": b"../" * 200 + b"far"}  # 603 bytes: past fsstats' 127 and our last linear bucket
    for name, target in links.items():
        os.symlink(target, os.path.join(root, name))
    t.symlinks = list(links)
    os.mkfifo(os.path.join(root, b"proj_c/fifo"))
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(os.path.join(root, b"proj_c/sock"))
    s.close()
    t.others = [b"proj_c/fifo", b"proj_c/sock"]
    for it in specs:
        p = os.path.join(root, it.path)
        if it.uid:
            os.chown(p, it.uid, -1)
        os.utime(p, ns=(now - int(it.atime_days * DAY_NS), now - int(it.mtime_days * DAY_NS)))
    return t


def build_shared_links_tree(root: bytes, nprojects: int = 40) -> bytes:
    """40 projects (and one whose name sorts before "."), each with files of its own at several
    depths, and 80 inodes hard-linked from random subsets of 2 to 41 projects and from the root:
    regular files of many sizes (some sparse) and a few hard-linked symlinks."""
    rng = random.Random(11)
    projects = [f"p{i:02d}".encode() for i in range(nprojects)] + [b"-early"]
    rng.shuffle(projects)  # creation order differs from name order, and so does listing order
    places = []
    for p in projects:
        for sub in (b"", b"a", b"a/b", b"c"):
            d = os.path.join(root, p, sub) if sub else os.path.join(root, p)
            os.makedirs(d, exist_ok=True)
            places.append(d)
        for j in range(3):
            with open(os.path.join(root, p, b"c", b"own%d" % j), "wb") as f:
                f.write(b"o" * rng.randrange(1, 9000))
    for i in range(80):
        src = os.path.join(rng.choice(places), b"s%d" % i)
        if i % 10 == 9:
            os.symlink(b"target-" * rng.randrange(1, 30), src)
        else:
            size = int(2 ** rng.uniform(0, 34))
            _write(src, size, sparse=size > 2**16)
        names = rng.sample(projects, rng.randrange(2, len(projects) + 1))
        for k, p in enumerate(names):
            dst = os.path.join(root, p, rng.choice([b"", b"a", b"a/b", b"c"]), b"l%d_%d" % (i, k))
            os.link(src, dst, follow_symlinks=False)
        if i % 4 == 0:
            os.link(src, os.path.join(root, b"r%d" % i), follow_symlinks=False)
    return root


def lstat(t: KnownTree, rel: bytes) -> os.stat_result:
    return os.lstat(t.abspath(rel))


def all_names(t: KnownTree) -> list[bytes]:
    """Every name below the root (not the root itself)."""
    return [p for p in t.dirs if p] + [i.path for i in t.files] + t.hardlink_names + t.symlinks + t.others


def du_bytes(path: bytes) -> int:
    """GNU du's disk usage (st_blocks * 512, hard links once, one file system): a reference outside our code."""
    out = subprocess.run([b"du", b"-sxB1", path], capture_output=True, check=True).stdout
    return int(out.split()[0])


def make_deep(root: bytes, depth: int, name: bytes = b"d") -> None:
    """A chain of `depth` directories below root, longer than PATH_MAX, built through descriptors."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            nfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        with open(os.open(b"leaf", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "wb") as f:
            f.write(b"12345")
    finally:
        os.close(fd)


def remove_deep(root: bytes, name: bytes = b"d") -> None:
    """Remove a make_deep chain without recursion (shutil.rmtree recurses on Python 3.11)."""
    fds = [os.open(root, os.O_RDONLY | os.O_DIRECTORY)]
    try:
        while True:
            try:
                fds.append(os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fds[-1]))
            except FileNotFoundError:
                break
        for entry in os.listdir(fds[-1]):
            os.unlink(entry, dir_fd=fds[-1])
        while len(fds) > 1:
            os.close(fds.pop())
            os.rmdir(name, dir_fd=fds[-1])
    finally:
        for fd in fds:
            os.close(fd)


def world_readable_tmp(prefix: str) -> bytes:
    """A fresh directory under /tmp that uid 65534 can enter (pytest's tmp_path is 0700)."""
    import tempfile

    d = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    os.chmod(d, 0o755)
    return os.fsencode(d)


def mode_of(path: bytes) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)
