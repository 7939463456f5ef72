"""NFS client mounts from /proc/self/mountstats (what nfsiostat and mountstats(8) read).

Per NFS mount the kernel prints (fs/nfs/super.c nfs_show_stats, net/sunrpc/stats.c):
  device SERVER:/EXPORT mounted on /MNT with fstype nfs4 statvers=1.1
    bytes: normalread normalwrite directread directwrite serverread serverwrite readpages writepages
    per-op statistics
        READ: ops transmissions timeouts bytes_sent bytes_recv queue_ms rtt_ms execute_ms [errors]
read_bytes/write_bytes are the bytes that crossed the wire (serverread/serverwrite: what the
server saw, page-cache hits excluded); read_ops/write_ops count READ/WRITE RPCs; metadata RPCs
become md_<op> with NFSv3/v4 names mapped onto the Lustre vocabulary (REMOVE -> unlink,
FSSTAT/STATFS -> statfs, COMMIT -> sync, READDIRPLUS -> readdir). read_rtt_s/write_rtt_s sum
the round-trip times, so rtt per operation = read_rtt_s / read_ops over any interval.
"""

from __future__ import annotations

from ioweather.sources.telemetry.base import COUNTER, Sample, Source, SourceError, read_text

NFS_MD_OPS = {
    "GETATTR": "getattr", "SETATTR": "setattr", "LOOKUP": "lookup", "ACCESS": "access", "OPEN": "open",
    "OPEN_NOATTR": "open", "CLOSE": "close", "CREATE": "create", "MKNOD": "mknod", "REMOVE": "unlink",
    "RENAME": "rename", "LINK": "link", "SYMLINK": "symlink", "MKDIR": "mkdir", "RMDIR": "rmdir",
    "READDIR": "readdir", "READDIRPLUS": "readdir", "FSSTAT": "statfs", "STATFS": "statfs", "COMMIT": "sync",
    "GETXATTR": "getxattr", "SETXATTR": "setxattr", "LISTXATTRS": "listxattr", "REMOVEXATTR": "removexattr",
}


def parse_mountstats(text: str) -> dict[str, dict[str, float]]:
    """{mount point: {metric: counter}} for every NFS mount with statistics."""
    mounts: dict[str, dict[str, float]] = {}
    current: dict[str, float] | None = None
    in_ops = False
    for line in text.splitlines():
        if line.startswith("device "):
            f = line.split()
            current = None
            in_ops = False
            # device X mounted on Y with fstype nfs[4] statvers=...
            if "mounted" in f and "fstype" in f:
                fstype = f[f.index("fstype") + 1]
                if fstype.startswith("nfs"):
                    mount = " ".join(f[f.index("on") + 1:f.index("with")])
                    current = mounts.setdefault(mount, {})
            continue
        if current is None:
            continue
        s = line.strip()
        if s.startswith("bytes:"):
            v = s.split()[1:]
            if len(v) >= 6:
                current["read_bytes"] = int(v[4])
                current["write_bytes"] = int(v[5])
        elif s.startswith("per-op statistics"):
            in_ops = True
        elif in_ops and ":" in s:
            op, _, rest = s.partition(":")
            v = rest.split()
            if len(v) < 8 or not v[0].isdigit():
                continue
            ops, rtt_ms = int(v[0]), int(v[6])
            if op == "READ":
                current["read_ops"] = current.get("read_ops", 0) + ops
                current["read_rtt_s"] = current.get("read_rtt_s", 0) + rtt_ms / 1000.0
            elif op == "WRITE":
                current["write_ops"] = current.get("write_ops", 0) + ops
                current["write_rtt_s"] = current.get("write_rtt_s", 0) + rtt_ms / 1000.0
            elif op in NFS_MD_OPS:
                key = f"md_{NFS_MD_OPS[op]}"
                current[key] = current.get(key, 0) + ops
    return {m: v for m, v in mounts.items() if v}


class Nfs(Source):
    name = "nfs"
    description = "NFS client mounts (/proc/self/mountstats)"

    def available(self) -> bool:
        p = self.path("proc/self/mountstats")
        try:
            return p.is_file() and "fstype nfs" in read_text(p)
        except OSError:
            return False

    def collect(self) -> list[Sample]:
        p = self.path("proc/self/mountstats")
        try:
            text = read_text(p)
        except FileNotFoundError:
            raise SourceError(f"{p} not found") from None
        return [Sample(f"{self.host}:{mount}", metric, value, COUNTER)
                for mount, metrics in parse_mountstats(text).items() for metric, value in metrics.items()]
