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
RETENTION_HELP = {"probe": "raw probe samples (database rows and archived days)",
                  "rollups": "the probe's per-day and per-hour summaries (probe pieces)",
                  "telemetry": "server telemetry (Parquet day directories and their rollups)"}


def retention_from_env(env=None) -> dict[str, float | None]:
    """{kind: seconds, None = kept forever} from IOWEATHER_RETAIN_<KIND> (a duration with its unit, or
    `forever`) over `RETENTION_DEFAULTS`."""
    from ioweather.errors import UserError
    from ioweather.units import parse_duration

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
