"""The name of the file system a directory lives on, as probe targets, benchmark runs and telemetry
datasets all call it (config.fs_name; docs/why.md "One name per file system")."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

from ioweather.config import MountBytes, dataset_for_mounts, fs_map_entry, fs_name, load_fs_map, short_host, under
from ioweather.encoding import answer_dict
from ioweather.errors import UserError
from ioweather.sources.mounts import mount_entry
from ioweather.store.telemetry_names import known_fs


def fs_map_of(store) -> list[tuple[str, str]]:
    """The site's fs-map for `store` (opened by `open_store`): the file lives in its home, the parent of
    its Parquet directory."""
    return load_fs_map(Path(store.parquet_dir).parent)


def fs_name_of(directory: str | os.PathLike, fs_map: list[tuple[str, str]]) -> str:
    """The name of the file system holding `directory`, from this node's mount table."""
    m = mount_entry(directory)
    return fs_name(m.point, m.fs_type, m.source, fs_map, socket.gethostname())


def block_device(path, sys_block: Path = Path("/sys/dev/block")) -> str | None:
    """THE resolver of the disk holding `path`: its name in /proc/diskstats (st_dev's MAJOR:MINOR in
    /sys/dev/block; a partition's disk, as collect keeps disks, not partitions, diskstats.IGNORED_DEVICES). None
    where `path` is on no block device of its own (Lustre, GPFS, NFS, tmpfs, overlay, btrfs's anonymous ones);
    OSError when `path` cannot be stat'ed."""
    dev = os.stat(path).st_dev
    try:
        node = (sys_block / f"{os.major(dev)}:{os.minor(dev)}").resolve(strict=True)
    except OSError:
        return None
    if (node / "partition").is_file():
        node = node.parent
    return node.name


def disk_target(dataset: str, mount: str | None, sys_block: Path = Path("/sys/dev/block")) -> tuple[str | None, str]:
    """THE resolver of the one `collect --sources diskstats` target a job's mount is on (`job_fs` names its
    dataset; collect names a disk's target `HOST:DEVICE`): the disk of the mount point on this node
    (`block_device`). (target, "") or (None, why not): the dataset is not this node's own disks', the mount has no
    block device or not one collect keeps."""
    # lazy: the diskstats source's rule, only when a crowd is priced
    from ioweather.sources.telemetry.diskstats import IGNORED_DEVICES

    host = short_host(socket.gethostname())
    if dataset != host:
        return None, f"{dataset} is not this node's ({host}) disks: its devices cannot be told apart from here"
    if not mount:
        return None, "the job's files are under no mount of its log"
    try:
        name = block_device(mount, sys_block)
    except OSError as e:
        return None, f"cannot stat {mount} here ({e.strerror})"
    if name is None:
        return None, f"{mount} has no block device of its own"
    if IGNORED_DEVICES.match(name):
        return None, f"{mount} is on {name}, a device `collect --sources diskstats` does not keep"
    return f"{dataset}:{name}", ""


def known_datasets(parquet_dir) -> list[str]:
    """The file systems with telemetry in the store whose Parquet directory is `parquet_dir`."""
    return known_fs(parquet_dir)


def check_fs(fs: str | None, names: list[str]) -> str | None:
    """`fs` as given to --fs, refused (one line naming the known ones) when no telemetry has that name."""
    if fs is not None and fs not in names:
        raise UserError(f"unknown file system {fs!r}: the store has telemetry for "
                        f"{', '.join(names) if names else 'none'} (docs/telemetry.md)")
    return fs


def probes_on(targets: list[str], dirs: dict[str, set[str]], fs_of: dict[str, str | None], mounts: list[str],
              name: str | None, fs_map: list[tuple[str, str]] = ()) -> list[str]:
    """THE rule by which a probe target is on a file system (`why` asks it with a job's mount, the Status
    page with a name): one of its directories (`dirs`) is under one of `mounts` or maps to `name` by the
    fs-map (an fs-map written after the probe ran), or the name its newest run recorded (`fs_of`,
    config.fs_name) is `name`. Never every probe there is."""
    def mapped(d: str) -> str | None:
        entry = fs_map_entry(d, list(fs_map))
        return entry[1] if entry else None

    return [t for t in targets if (name is not None and fs_of.get(t) == name)
            or any(any(under(d, m) for m in mounts) or (name is not None and mapped(d) == name)
                   for d in dirs.get(t, ()))]


@dataclass(frozen=True)
class UnmappedMount:
    """A mount the job moved bytes on that maps to no dataset with telemetry."""

    mount: str
    fs_type: str | None
    bytes: float


@dataclass(frozen=True)
class JobFs:
    """A job's file system and its evidence: the telemetry `dataset` (None: none for its files), the
    `mount` and `fs_type` it was found by, `how` (one line), the mounts that map to none, and the shared
    file system's mount it moved the most bytes on, mapped or not (`shared_mount`: probes match it)."""

    dataset: str | None
    mount: str | None
    fs_type: str | None
    how: str | None
    unmapped: list[UnmappedMount]
    shared_mount: str | None

    @classmethod
    def of(cls, found: dict) -> JobFs:
        """From config.dataset_for_mounts' dict."""
        return cls(found["dataset"], found["mount"], found["fs_type"], found["how"],
                   [UnmappedMount(m["mount"], m["fs_type"], m["bytes"]) for m in found["unmapped"]],
                   found["shared_mount"])

    def to_json(self) -> dict:
        return {**answer_dict(self), "unmapped": [answer_dict(m) for m in self.unmapped]}


def job_fs(parquet_dir, mounts: list[MountBytes], fs: str | None = None, hosts: list[str] | None = None) -> JobFs:
    """THE resolver of a job's file system: `why`, `umami`, the job page (its budget and its weather box)
    and the Jobs page all ask it, so they name one file system. `mounts` are the job's MountBytes
    (config); an explicit `fs` (checked) wins; else config.dataset_for_mounts with the site's fs-map.
    `hosts`: the job's nodes when its log names them (DXT); else this node, the rule by which a probe
    directory on a node's own disk is named (`fs_name_of`): a job on `/` is on the disk whose
    `collect --sources diskstats` dataset is the host's."""
    return _resolve(known_datasets(parquet_dir), load_fs_map(Path(parquet_dir).parent), mounts, fs, hosts)


def jobs_fs(parquet_dir, mounts_of: dict[str, list[MountBytes]]) -> dict[str, JobFs]:
    """`job_fs` of many jobs ({key: their mounts} -> {key: JobFs}), the store's names and fs-map read once."""
    names, fs_map = known_datasets(parquet_dir), load_fs_map(Path(parquet_dir).parent)
    return {k: _resolve(names, fs_map, m) for k, m in mounts_of.items()}


def _resolve(names: list[str], fs_map, mounts: list[MountBytes], fs: str | None = None,
             hosts: list[str] | None = None) -> JobFs:
    nodes = [short_host(h) for h in hosts] if hosts else [short_host(socket.gethostname())]
    found = dataset_for_mounts(mounts, names, fs_map, nodes)
    if check_fs(fs, names) is not None:
        found = {**found, "dataset": fs, "how": f"--fs {fs}"}
    return JobFs.of(found)
