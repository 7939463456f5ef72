"""The one mount-table reader (sources/mounts.py) against the kernel's own answers."""

from __future__ import annotations

import os
import subprocess

import pytest

from ioweather.sources.mounts import mount_entry, mount_of, parse_mounts, read_mounts


def test_escaped_names_and_the_longest_mount_wins():
    text = ("/dev/vda / ext4 rw 0 0\n"
            "tmpfs /scratch\\040space tmpfs rw 0 0\n"
            "tmpfs /scratch\\040space/with\\011tab\\134back lustre rw 0 0\n"
            "short line\n")
    mounts = parse_mounts(text)
    assert mounts == [("/", "ext4", "/dev/vda"), ("/scratch space", "tmpfs", "tmpfs"),
                      ("/scratch space/with\ttab\\back", "lustre", "tmpfs")]
    assert mount_of("/scratch space/with\ttab\\back/x", mounts) == ("/scratch space/with\ttab\\back", "lustre")
    assert mount_of("/scratch space/other", mounts) == ("/scratch space", "tmpfs")
    assert mount_of("/scratch spacey", mounts) == ("/", "ext4")  # a prefix of the name is not a parent


def test_agrees_with_findmnt_on_this_machine(tmp_path):
    if not read_mounts():
        pytest.skip("no /proc/self/mounts here")
    for path in ("/", str(tmp_path), "/proc/self", "/dev/shm" if os.path.isdir("/dev/shm") else "/"):
        r = subprocess.run(["findmnt", "-n", "--raw", "-o", "TARGET,FSTYPE,SOURCE", "-T", path], capture_output=True,
                           text=True)
        if r.returncode != 0:
            pytest.skip("findmnt (util-linux) is not available")
        target, fstype, source = r.stdout.splitlines()[-1].split()  # stacked mounts: the last one is what a path sees
        assert mount_of(path) == (target, fstype), path
        assert mount_entry(path).source == source, path
