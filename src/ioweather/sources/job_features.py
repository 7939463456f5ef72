"""Per-job feature tables from elsewhere: tokio-abc's summaries (one CSV row per benchmark job, columns
named darshan_*, fs_*, fshealth_*, jobsdb_*, topology_*) and its abcconfig.json.

Reads and checks only; deriving coverage factors, motifs and fraction of peak is
stats/abc_features.py's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from ioweather.errors import UserError, from_os_error
from ioweather.files import check_input, read_regular_bytes

#: Columns a tokio-abc summary cannot do without (performance, the window, the motif's parts).
REQUIRED = ["_datetime_start", "_datetime_end", "_file_system", "_jobid", "darshan_agg_perf_by_slowest_posix",
            "darshan_app", "darshan_nprocs", "darshan_biggest_read_api_bytes", "darshan_biggest_write_api_bytes",
            "darshan_biggest_read_api_files", "darshan_biggest_write_api_files",
            "darshan_tot_bytes_read_posix", "darshan_tot_bytes_written_posix",
            "fs_tot_bytes_read", "fs_tot_bytes_written"]
_SYSTEM = re.compile(r"^([a-z0-9]+)-summaries", re.IGNORECASE)


def read_csv(path: str | Path) -> pd.DataFrame:
    """The CSV (plain or .gz) as a DataFrame; one-line UserError on a missing file or a wrong table."""
    p = Path(path)
    check_input(p)  # a FIFO or /proc file would block pandas forever
    try:
        df = pd.read_csv(p, low_memory=False)
    except OSError as e:
        raise from_os_error(p, e, "read") from None
    except (ValueError, UnicodeDecodeError, EOFError) as e:  # pandas' parser errors are ValueErrors
        raise UserError(f"cannot read {p}: not a CSV table ({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
    df = df.drop(columns=[c for c in df.columns if c.startswith("Unnamed:")])
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise UserError(f"{p}: not a tokio-abc summary: missing columns {', '.join(missing[:5])}"
                        + (f" and {len(missing) - 5} more" if len(missing) > 5 else ""))
    return df


def system_from_name(path: str | Path) -> str | None:
    """'edison' from 'edison-summaries_2017-02-14-2018-02-15.csv.gz' (tokio-abc's file names)."""
    m = _SYSTEM.match(Path(path).name)
    return m.group(1).lower() if m else None


def read_config(path: str | Path) -> dict:
    """abcconfig.json: metric directions (`metric_big_is_good`), labels, UMAMI rows, processes per node."""
    p = Path(path)
    try:
        doc = json.loads(read_regular_bytes(p))
    except (ValueError, RecursionError) as e:
        raise UserError(f"cannot read {p}: not JSON ({e})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("metric_big_is_good", {}), dict):
        raise UserError(f"{p}: not a tokio-abc abcconfig.json (no metric_big_is_good table)")
    return doc
