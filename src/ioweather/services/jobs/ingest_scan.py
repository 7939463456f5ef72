"""What `jobs ingest` finds before it reads any log: the logs under the paths given (`find_logs`), which of
them are unchanged since an ingest read them (`unchanged_file`), and the whole answer when none changed
(`unchanged_answer`). Without SQLAlchemy, pandas or the reader (issue 40): a re-ingest of an unchanged archive
of 1,000 logs opened none, and its 0.6 s of CPU were mostly those imports.

`unchanged_answer` reads the store through `sqlite3` (store/sqlite_reads.py) and answers only when the full
path (services/jobs/ingest.py) would have written nothing and said the same: an embedded SQLite store at the
darshan schema it knows, no Parquet part that the full path would remove as an orphan, and every log found
unchanged by the same test. Anything else is None, and the caller runs the full path.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ioweather.encoding import Answer
from ioweather.errors import UserError, from_os_error
from ioweather.store import sqlite_reads
from ioweather.store.job_files import files_dir, is_part_name
from ioweather.store.job_stamps import file_stamp, path_hash


def find_logs(paths: Iterable[str], *, follow_symlinks: bool = False, links: list | None = None) -> Iterator[str]:
    """Files named on the command line, and *.darshan files under directories (recursively, sorted),
    as absolute, normalized paths (symlinks are kept: the path is the one the user gave).

    A directory scan does not follow symlinks unless asked: a log directory is often writable by
    everyone, and a link planted there (to /etc/shadow, /dev/zero) must not make a privileged
    ingest read it or report its size. Skipped links are appended to `links` (counted, never described).
    """
    for p in paths:
        try:
            p = os.path.abspath(p)
        except OSError as e:  # the current directory was removed
            raise from_os_error(p, e, "find") from None
        if os.path.isdir(p):
            seen = set(_dir_ids([p]).values())
            for root, dirs, files in os.walk(p, followlinks=follow_symlinks):
                dirs.sort()
                if follow_symlinks:
                    # Two links up the tree (a/x -> a, a/y -> a) would make the walk 2^40 long before
                    # ELOOP ends it: each directory is entered once, by the first path that reaches it.
                    dirs[:] = _first_visits(root, dirs, seen)
                if not follow_symlinks and links is not None:
                    links.extend(d for d in dirs if os.path.islink(os.path.join(root, d)))
                for f in sorted(files):
                    if f.endswith(".darshan"):
                        full = os.path.join(root, f)
                        if not follow_symlinks and os.path.islink(full):
                            if links is not None:
                                links.append(full)
                            continue
                        yield full
        elif os.path.exists(p) or os.path.islink(p):
            yield p
        else:
            raise UserError(f"no such file or directory: {p}")


def _dir_ids(paths) -> dict:
    """{path: (st_dev, st_ino)} of the directories among `paths` that can be stat'ed (links followed)."""
    out = {}
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            continue
        out[path] = (st.st_dev, st.st_ino)
    return out


def _first_visits(root: str, dirs: list[str], seen: set) -> list[str]:
    """The names in `dirs` whose directory is not in `seen` (which they are then added to)."""
    ids = _dir_ids(os.path.join(root, d) for d in dirs)
    out = []
    for d in dirs:
        key = ids.get(os.path.join(root, d))
        if key is not None and key not in seen:
            seen.add(key)
            out.append(d)
    return out


@dataclass(frozen=True)
class IngestCounts(Answer):
    """`jobs ingest --json`: logs stored by this run, stored rows refreshed (read again because they were
    derived under other advisor rules, or lack a column added since: rewritten in place), failed (recorded
    with their reason), duplicates (content already stored: under another path, twice in this run, or by an
    ingest running at the same time), skipped (read before and unchanged since: not even opened), symlinks
    skipped by a directory scan, and logs found."""

    ingested: int
    refreshed: int
    failed: int
    duplicates: int
    skipped: int
    symlinks_skipped: int
    found: int


def unchanged_file(p: str, seen_files: dict, known_hashes: set[str], known_paths: dict) -> bool:
    """Whether `p` was read by an ingest and is unchanged since, by stat alone (never opened nor hashed):
    the same device, inode, size and mtime as when read, its content still stored; for a path known
    only from a job row stored before `seen_files` was, or from a failure, the same size and mtime."""
    try:
        st = os.stat(p)
    except OSError:
        return False
    key = path_hash(p)
    got = seen_files.get(key)
    if got is not None:
        return got[0] == file_stamp(st) and got[1] in known_hashes
    return known_paths.get(key) == (st.st_size, st.st_mtime_ns)


def unchanged_answer(settings, paths: list[str], *, follow_symlinks: bool = False) -> IngestCounts | None:
    """`ingest`'s answer for `paths` when every log found is unchanged and the store needs no write, read
    without SQLAlchemy; None when the full path must run (see the module's docstring)."""
    try:
        store = sqlite_reads.open_light(settings)
    except sqlite_reads.Fallback:
        return None
    if store is None:
        return None
    try:
        if _orphans(settings.parquet_dir, sqlite_reads.used_parts(store)):
            return None
        known_hashes, known_paths = sqlite_reads.seen(store)
        seen_files = sqlite_reads.seen_stamps(store)
    except sqlite_reads.Fallback:
        return None
    finally:
        store.dispose()
    links: list = []
    found = 0
    try:
        for p in find_logs(paths, follow_symlinks=follow_symlinks, links=links):
            if not unchanged_file(p, seen_files, known_hashes, known_paths):
                return None
            found += 1
    except UserError:  # a path that is not there: the full path says so in its words
        return None
    return IngestCounts(ingested=0, refreshed=0, failed=0, duplicates=0, skipped=found, symlinks_skipped=len(links), found=found)


def _orphans(parquet_dir, used: set[str]) -> bool:
    """Whether the parts' directory holds a name that store.jobs.remove_orphan_parts would look at and remove
    (or is anything but a plain directory: that walker's notes are the full path's to print)."""
    d = files_dir(parquet_dir)
    if os.path.islink(d):
        return True
    try:
        names = os.listdir(d)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return any(is_part_name(n) and n not in used for n in names)
