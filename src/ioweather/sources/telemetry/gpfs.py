"""GPFS (IBM Storage Scale) node I/O: `mmpmon -p` with the `fs_io_s` request, per mounted file system.

`mmpmon` answers on the node it runs on. With `-p` each file system is one line of keyword/value
pairs (IBM's "Display I/O statistics per mounted file system"):

    _fs_io_s_ _n_ 199.18.1.8 _nn_ node1 _rc_ 0 _t_ 1066660148 _tu_ 407431 _cl_ myCluster.xxx.com
    _fs_ gpfs2 _d_ 2 _br_ 6291456 _bw_ 314572800 _oc_ 10 _cc_ 16 _rdc_ 101 _wc_ 300 _dir_ 7 _iu_ 2

(one line in the real output). The values are **counters**, cumulative since the file system
was mounted or since the last `mmpmon reset`: they are returned raw, and the collector turns them
into amounts per interval like the Lustre counters (a reset or a remount makes that interval
missing, never negative). They count this node's application I/O to the file system (cache hits
included), not the file system's total across the cluster: the target is `<host>:<file system>`,
as for `import mmperfmon`'s GPFSFilesystem metrics, and the rows go into the host's dataset.

    _br_ _bw_    bytes read / written            -> read_bytes, write_bytes
    _rdc_ _wc_   read / write requests           -> read_ops, write_ops
    _oc_ _cc_    open() (creat() included) / close() calls -> md_open, md_close
    _dir_        readdir() calls                 -> md_readdir
    _d_ _iu_     disks, inode updates            (not stored)

A record whose `_rc_` is not 0 is an error reported by GPFS for that request: it is skipped and
noted. The source is available only where `/usr/lpp/mmfs/bin/mmpmon` exists (and not under a
--proc-root tree, which describes another machine).
"""

from __future__ import annotations

import os
import subprocess

from ioweather.sources.telemetry.base import COUNTER, Sample, Source, SourceError

MMPMON = "/usr/lpp/mmfs/bin/mmpmon"
COUNTERS = {"_br_": "read_bytes", "_bw_": "write_bytes", "_rdc_": "read_ops", "_wc_": "write_ops",
            "_oc_": "md_open", "_cc_": "md_close", "_dir_": "md_readdir"}


def parse_fs_io_s(text: str) -> tuple[list[dict[str, str]], list[str]]:
    """`mmpmon -p` output -> ([{keyword: value} per _fs_io_s_ record], [lines that are not records]).

    Keywords and values alternate after the record name; a record with an odd number of words
    after it, or without _fs_, is not a record."""
    records, bad = [], []
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] != "_fs_io_s_" or len(words) % 2 == 0:
            bad.append(line)
            continue
        rec = dict(zip(words[1::2], words[2::2]))
        if "_fs_" not in rec and rec.get("_rc_", "0") == "0":
            bad.append(line)
            continue
        records.append(rec)
    return records, bad


class Gpfs(Source):
    name = "gpfs"
    description = "GPFS node I/O per file system: `mmpmon -p` fs_io_s counters"

    def __init__(self, *args, mmpmon: str = MMPMON, timeout_s: float = 10.0, **kw):
        super().__init__(*args, **kw)
        self.mmpmon = mmpmon
        self.timeout_s = timeout_s

    def available(self) -> bool:
        return str(self.root) == "/" and os.access(self.mmpmon, os.X_OK)

    def collect(self) -> list[Sample]:
        try:
            proc = subprocess.run([self.mmpmon, "-p", "-s"], input="fs_io_s\n", capture_output=True, text=True,
                                  timeout=self.timeout_s)
        except FileNotFoundError:
            raise SourceError(f"{self.mmpmon} not found") from None
        except subprocess.TimeoutExpired:
            raise SourceError(f"`mmpmon -p` did not answer within {self.timeout_s:g} s") from None
        records, bad = parse_fs_io_s(proc.stdout)
        if not records:
            detail = (proc.stderr.strip() or (bad[0] if bad else "no output")).splitlines()[0][:200]
            raise SourceError(f"`mmpmon -p` fs_io_s gave no statistics (exit {proc.returncode}): {detail}")
        if bad:
            self.warn(f"`mmpmon -p`: {len(bad)} lines that are not fs_io_s records, first {bad[0][:120]!r}")
        out = []
        for rec in records:
            if rec.get("_rc_", "0") != "0":
                self.warn(f"`mmpmon -p` fs_io_s: return code {rec['_rc_']} for {rec.get('_fs_', 'a file system')}")
                continue
            target = f"{self.host}:{rec['_fs_']}"
            for key, metric in COUNTERS.items():
                value = rec.get(key)
                if value is not None and value.isdigit():
                    out.append(Sample(target, metric, int(value), COUNTER))
        return out
