"""Where ioweather keeps its data, and which database it talks to.

IOWEATHER_HOME (default $XDG_DATA_HOME/ioweather, i.e. ~/.local/share/ioweather) holds
the SQLite database and the Parquet archives. `--home DIR` overrides it per command.
`--db URL` / IOWEATHER_DB point the relational store elsewhere (postgresql://...).
IOWEATHER_RETAIN_<KIND> (PROBE, ROLLUPS, TELEMETRY) bound how long each kind of data is kept
(`RETENTION_DEFAULTS`, docs/store.md); `watch`, `probe run` and `collect` enforce them hourly.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import re

from ioweather.errors import UserError
from ioweather.files import read_home_file
from ioweather.units import parse_duration


def default_home() -> Path:
    env = os.environ.get("IOWEATHER_HOME")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg) / "ioweather"


#: How long each kind of data stays, sized for a year on one node (docs/store.md, "Retention"):
#: raw probe samples (1 Hz x 6 ops per target: ~20 MB a day in the database, ~3 MB archived) three months,
#: beyond the 30-day baseline and the reference periods people pick; the probe's per-day summaries
#: (rollups and sorted durations: slowdowns and baselines of any kept day stay exact) and the servers'
#: telemetry (Parquet, a day per directory) 400 days, a year and a margin to compare with.
RETENTION_DEFAULTS = {"probe": "90d", "rollups": "400d", "telemetry": "400d"}


def retention_from_env(env=None) -> dict[str, float | None]:
    """{kind: seconds, None = kept forever} from IOWEATHER_RETAIN_<KIND> (a duration with its unit, or
    `forever`) over `RETENTION_DEFAULTS`."""
    env = os.environ if env is None else env
    out: dict[str, float | None] = {}
    for kind, default in RETENTION_DEFAULTS.items():
        name = f"IOWEATHER_RETAIN_{kind.upper()}"
        text = (env.get(name) or default).strip()
        if text.lower() == "forever":
            out[kind] = None
            continue
        if not text or text[-1].isdigit():
            raise UserError(f"{name}={text!r}: a duration needs its unit (e.g. 90d), or 'forever'")
        try:
            seconds = parse_duration(text)
        except UserError as e:
            raise UserError(f"{name}: {e}") from None
        if seconds < 86400:
            raise UserError(f"{name}={text!r} keeps less than a day: use 1d or more, or 'forever'")
        out[kind] = seconds
    raw, rolled = out["probe"], out["rollups"]
    if rolled is not None and (raw is None or rolled < raw):
        raise UserError("IOWEATHER_RETAIN_ROLLUPS is shorter than IOWEATHER_RETAIN_PROBE: the summaries would be "
                        "removed and rebuilt from the raw samples every hour; keep them at least as long")
    return out


@dataclass(frozen=True)
class Settings:
    """What every command needs to find the store. Built once by the CLI."""

    home: Path
    db_url: str | None = None

    @classmethod
    def resolve(cls, home: str | os.PathLike | None = None, db: str | None = None) -> "Settings":
        return cls(
            home=Path(home).expanduser() if home else default_home(),
            db_url=db or os.environ.get("IOWEATHER_DB") or None,
        )

    @property
    def sqlite_path(self) -> Path:
        return self.home / "ioweather.sqlite"

    @property
    def parquet_dir(self) -> Path:
        return self.home / "parquet"

    def store_exists(self) -> bool:
        """Whether there is a store to read: a server URL is assumed to exist, the embedded file must.

        Pages and /metrics ask this before opening the store, so that a page view never creates one.
        """
        return self.db_url is not None or self.sqlite_path.exists()

    def url(self) -> str:
        return self.db_url or f"sqlite:///{self.sqlite_path}"


# -- fs-map: which telemetry dataset a job's files lived on ------------------------------------------

#: `PREFIX=DATASET[,PREFIX=DATASET...]`; overrides the file `<home>/fs-map`.
FS_MAP_ENV = "IOWEATHER_FS_MAP"
#: Mount types that are a node's own disk or image, never a shared file system with telemetry: a job's
#: bytes there are not matched by name (only an explicit fs-map entry maps them), and `fs_name` names
#: them after the host, as `collect` names the host's dataset.
LOCAL_FS_TYPES = frozenset({"overlay", "rootfs", "ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "squashfs",
                            "devtmpfs", "proc", "sysfs", "ramfs", "zfs"})


#: The store's rule for a dataset (telemetry file system) name: it becomes a directory `fs=NAME`, so
#: no separator, no leading dot, no control character, at most 128 characters.
_DATASET_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
#: The most of an fs-map read: a site's map is a few hundred lines; a 2 GB file had `why` killed at 23.7 GB.
FS_MAP_MAX_BYTES = 1 << 20
#: The most of a setting's text an error quotes (a 10 MB entry made a 40 MB error line).
QUOTE_CHARS = 80


def valid_dataset_name(name: str) -> bool:
    return isinstance(name, str) and _DATASET_NAME.match(name) is not None


def check_dataset_name(name: str, origin: str | None = None) -> str:
    """`name` if the store can hold a dataset of that name, else a one-line UserError."""
    if not valid_dataset_name(name):
        where = f"{origin}: " if origin else ""
        raise UserError(f"{where}invalid file system name {quoted(name)}: use letters, digits, '.', '_' and '-' "
                        "(at most 128, starting with a letter or digit)")
    return name


def quoted(text: str, limit: int = QUOTE_CHARS) -> str:
    """`text` as repr() for an error line, cut to `limit` characters (and said so)."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text):,} characters)"


def parse_fs_map(text: str, origin: str, quote: bool = True) -> list[tuple[str, str]]:
    """[(mount prefix, dataset)] from `PREFIX DATASET` lines (or `PREFIX=DATASET` items separated by
    commas or newlines); `#` starts a comment. Longest prefix first, so the most specific entry wins.
    With `quote` False (a file reached through a link) an error names the entry, never its text."""
    out = []
    items = [i for line in text.splitlines() for i in line.split("#", 1)[0].split(",")]
    for n, item in enumerate(items, 1):
        item = item.strip()
        if not item:
            continue
        entry = f"entry {n} {quoted(item)}" if quote else f"entry {n}"
        parts = item.split("=", 1) if "=" in item else item.split()
        if len(parts) != 2 or not parts[0].strip().startswith("/") or not parts[1].strip():
            raise UserError(f"{origin}: {entry}: want 'MOUNT_PREFIX DATASET' "
                            "(the prefix an absolute path, e.g. /lus/theta-fs0 theta)")
        if not valid_dataset_name(parts[1].strip()):
            raise UserError(f"{origin}: {entry}: the dataset name is not one the store can hold: use letters, "
                            "digits, '.', '_' and '-' (at most 128, starting with a letter or digit)")
        prefix = parts[0].strip().rstrip("/") or "/"
        out.append((prefix, parts[1].strip()))
    return sorted(out, key=lambda p: -len(p[0]))


def load_fs_map(home: Path) -> list[tuple[str, str]]:
    """The site's fs-map: $IOWEATHER_FS_MAP, else `<home>/fs-map`, else none (docs/why.md). The file is
    read as files.read_home_file reads (no FIFO, device or link out of the home; FS_MAP_MAX_BYTES; UTF-8)."""
    env = os.environ.get(FS_MAP_ENV)
    if env:
        return parse_fs_map(env, FS_MAP_ENV)
    path = Path(home) / "fs-map"
    text = read_home_file(path, home, max_bytes=FS_MAP_MAX_BYTES, what="read fs-map")
    if text is None:
        return []
    return parse_fs_map(text, str(path), quote=not path.is_symlink())


def under(path: str, prefix: str) -> bool:
    """Whether `path` is `prefix` or inside it (/scratch2 is not under /scratch)."""
    return prefix == "/" or path == prefix or path.startswith(prefix.rstrip("/") + "/")


def fs_map_entry(mount: str, fs_map: list[tuple[str, str]]) -> tuple[str, str] | None:
    """The fs-map's (prefix, name) holding `mount`: the longest prefix (parse_fs_map sorts them so)."""
    return next(((prefix, name) for prefix, name in fs_map if under(mount, prefix)), None)


def short_host(hostname: str) -> str:
    """A host's name without its domain: what `collect` names a node's own dataset and `fs_name` its disks."""
    return hostname.split(".")[0] or "localhost"


def lustre_mount_fsname(source: str) -> str | None:
    """The file system name of a Lustre client mount's source (`10.0.0.1@tcp:10.0.0.2@tcp:/scratch/sub`
    → `scratch`): the name its servers' targets carry (`scratch-OST0003`), None when it names none."""
    _, sep, path = source.rpartition(":/")
    name = path.split("/", 1)[0]
    return name if sep and name else None


def fs_name(mount: str, fs_type: str | None, source: str | None, fs_map: list[tuple[str, str]], host: str) -> str:
    """The one name of the file system mounted at `mount`, shared by probe targets, benchmark runs and
    telemetry datasets (docs/why.md "One name per file system"): the fs-map's longest prefix holding
    the mount, else a Lustre mount's fsname (its servers' telemetry dataset), else the short host name
    for a node's own disk (`/` or a LOCAL_FS_TYPES mount: `collect` names the host's dataset so),
    else the mount point's last part."""
    if entry := fs_map_entry(mount, fs_map):
        return entry[1]
    if fs_type == "lustre" and source and (name := lustre_mount_fsname(source)):
        return name
    base = os.path.basename(mount.rstrip("/"))
    if not base or (fs_type or "") in LOCAL_FS_TYPES:
        return short_host(host)
    return base


@dataclass(frozen=True)
class MountBytes:
    """Where a job moved its bytes: a mount point of its log, its file system type and the POSIX and STDIO
    bytes it read and wrote there (None: the log names the mount but no bytes on it)."""

    mount: str | None
    fs_type: str | None = None
    bytes: float | None = None


def dataset_for_mounts(mounts: list[MountBytes], names: list[str], fs_map: list[tuple[str, str]],
                       hosts: tuple[str, ...] | list[str] = ()) -> dict:
    """Which telemetry dataset a job's files lived on. `mounts`: where its log says it moved its bytes;
    `names`: the datasets with telemetry. A mount maps by the fs-map's longest matching prefix, else
    (a shared file system only) when its last component names a dataset, else (a node's own disk: `/`
    or a LOCAL_FS_TYPES mount) to the dataset of the job's node, `hosts` (short names), as `fs_name`
    and `collect --sources diskstats` name a host's disks. The dataset the job moved the most bytes on
    wins. Never "the only dataset there is": a job on /home is not a job on /scratch.
    {dataset (None: no telemetry for its files), mount, fs_type, how, unmapped: [mounts], shared_mount:
    the shared file system's mount the job moved the most bytes on, mapped or not (probes match it)}."""
    best: dict = {"dataset": None, "mount": None, "fs_type": None, "how": None, "bytes": -1.0}
    unmapped = []
    shared, shared_bytes = None, -1.0
    for m in mounts:
        mount = m.mount
        if not mount:
            continue
        dataset, how = None, None
        if entry := fs_map_entry(mount, fs_map):
            dataset, how = entry[1], f"fs-map {entry[0]} → {entry[1]}"
        if dataset is None and (m.fs_type or "") not in LOCAL_FS_TYPES:
            base = os.path.basename(mount.rstrip("/"))
            if base in names:
                dataset, how = base, f"mount {mount} named like the dataset"
        local = (m.fs_type or "") in LOCAL_FS_TYPES or mount == "/"
        if dataset is None and local and (host := next((h for h in hosts if h in names), None)):
            dataset, how = host, f"{mount} ({m.fs_type or '?'}) is node {host}'s own disk: its dataset"
        moved = float(m.bytes or 0)
        if (m.fs_type or "") not in LOCAL_FS_TYPES and moved > shared_bytes:
            shared, shared_bytes = mount, moved
        if dataset is None:
            unmapped.append({"mount": mount, "fs_type": m.fs_type, "bytes": moved})
        elif moved > best["bytes"]:
            best = {"dataset": dataset, "mount": mount, "fs_type": m.fs_type, "how": how, "bytes": moved}
    best.pop("bytes")
    # most bytes first, as `why` lists a job's mounts: every surface names them in one order
    unmapped.sort(key=lambda u: (-u["bytes"], u["mount"]))
    return {**best, "unmapped": unmapped, "shared_mount": shared}
