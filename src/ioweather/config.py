"""Where ioweather keeps its data, and which database it talks to.

IOWEATHER_HOME (default $XDG_DATA_HOME/ioweather, i.e. ~/.local/share/ioweather) holds
the SQLite database and the Parquet archives. `--home DIR` overrides it per command.
`--db URL` / IOWEATHER_DB point the relational store elsewhere (postgresql://...).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


def default_home() -> Path:
    env = os.environ.get("IOWEATHER_HOME")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg) / "ioweather"


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
