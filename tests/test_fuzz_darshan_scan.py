"""Darshan directory scans over generated trees (issue 19 items 1, 2 and "keep it fixed"): regular
files, FIFOs, links to files, to /dev/zero, to nothing, to directories up the tree (loops), links
named *.darshan to directories. `find_logs` never hangs (a deadline), never raises, never yields a
link unless asked, and yields exactly the *.darshan entries the tree holds (the reference is the
list the generator made, not another walk).

Short in CI: IOWEATHER_FUZZ_EXAMPLES trees (default 25). The long run (docs/architecture.md,
"Test data and checks"):

    IOWEATHER_FUZZ_EXAMPLES=2000 IOWEATHER_FUZZ_RANDOM=1 .venv/bin/python -m pytest tests/test_fuzz_darshan_scan.py -q
"""

from __future__ import annotations

import os
import tempfile
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ioweather.services.jobs.ingest import find_logs

EXAMPLES = int(os.environ.get("IOWEATHER_FUZZ_EXAMPLES", "25"))
FUZZ = settings(max_examples=EXAMPLES, deadline=timedelta(seconds=30), derandomize=not os.environ.get(
    "IOWEATHER_FUZZ_RANDOM"), suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
#: A scan of a few dozen entries that takes longer than this is a hang.
SCAN_S = 10

pytestmark = pytest.mark.timeout(600)

KINDS = ["log", "other", "fifo", "link_file", "link_dev", "broken", "link_dir", "link_dir_named_log"]


@st.composite
def trees(draw):
    """(directories as parent indices, entries as (directory index, kind, target index))."""
    parents = draw(st.lists(st.integers(0, 30), max_size=6))
    dirs = [min(p, i) for i, p in enumerate(parents)]  # directory i+1 lives in directory dirs[i] (0 is the root)
    n = len(dirs) + 1
    entries = draw(st.lists(st.tuples(st.integers(0, n - 1), st.sampled_from(KINDS), st.integers(0, 50)),
                            max_size=25))
    return dirs, entries


def build(root: Path, dirs: list[int], entries) -> tuple[list[Path], int]:
    """Make the tree; (the *.darshan entries a scan must find, the links a scan without following skips)."""
    paths = [root]
    for i, parent in enumerate(dirs):
        paths.append(paths[parent] / f"d{i}")
        paths[-1].mkdir()
    regular: list[Path] = []
    logs, links = [], 0
    for j, (where, kind, target) in enumerate(entries):
        d = paths[where]
        name = d / (f"e{j}.txt" if kind == "other" else f"e{j}.darshan")
        if kind in ("log", "other"):
            name.write_bytes(b"x" * j)
            regular.append(name)
        elif kind == "fifo":
            os.mkfifo(name)
        elif kind == "link_file":
            name.symlink_to(regular[target % len(regular)] if regular else Path("/etc/hostname"))
        elif kind == "link_dev":
            name.symlink_to("/dev/zero")
        elif kind == "broken":
            name.symlink_to(d / f"missing{j}")
        else:  # a link to any directory of the tree: an ancestor makes a loop
            name = d / (f"l{j}.darshan" if kind == "link_dir_named_log" else f"l{j}")
            name.symlink_to(paths[target % len(paths)], target_is_directory=True)
            links += 1
            continue
        if kind in ("link_file", "link_dev", "broken"):
            links += 1
        if name.name.endswith(".darshan"):
            logs.append(name)
    return logs, links


def scan(root: Path, follow: bool) -> tuple[list[str], list]:
    out: dict = {}
    links: list = []

    def run():
        try:
            out["logs"] = list(find_logs([str(root)], follow_symlinks=follow, links=links))
        except BaseException as e:  # noqa: BLE001 - reported by the assertion below
            out["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(SCAN_S)
    assert not t.is_alive(), f"find_logs(follow_symlinks={follow}) still running after {SCAN_S} s"
    assert "error" not in out, repr(out.get("error"))
    return out["logs"], links


@FUZZ
@given(tree=trees())
def test_fuzz_scan(tree):
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "logs"
        root.mkdir()
        logs, n_links = build(root, *tree)

        found, links = scan(root, follow=False)
        assert sorted(found) == sorted(str(p) for p in logs if not p.is_symlink())
        for p in found:
            rel = Path(p).relative_to(root)
            assert not any((root / Path(*rel.parts[:k])).is_symlink() for k in range(1, len(rel.parts) + 1)), p
        assert len(links) == n_links

        found, _ = scan(root, follow=True)
        assert len(found) == len(logs) and len(set(found)) == len(found)
        assert {os.path.realpath(p) for p in found} == {os.path.realpath(p) for p in logs}


def test_two_loops_end(tmp_path):
    """Before: two links to the root made `--follow-symlinks` walk 2^40 paths (ELOOP ends it only at depth 40)."""
    (tmp_path / "a.darshan").write_bytes(b"x")
    (tmp_path / "x").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "y").symlink_to(tmp_path, target_is_directory=True)
    found, _ = scan(tmp_path, follow=True)
    assert found == [str(tmp_path / "a.darshan")]
