"""The name of the file system a directory lives on, as probe targets, benchmark runs and telemetry
datasets all call it (config.fs_name; docs/why.md "One name per file system")."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from ioweather.config import fs_name, load_fs_map
from ioweather.sources.mounts import mount_entry


def fs_map_of(store) -> list[tuple[str, str]]:
    """The site's fs-map for `store` (opened by `open_store`): the file lives in its home, the parent of
    its Parquet directory."""
    return load_fs_map(Path(store.parquet_dir).parent)


def fs_name_of(directory: str | os.PathLike, fs_map: list[tuple[str, str]]) -> str:
    """The name of the file system holding `directory`, from this node's mount table."""
    m = mount_entry(directory)
    return fs_name(m.point, m.fs_type, m.source, fs_map, socket.gethostname())
