"""Issue 41 item 5, the pages' side: one damaged Parquet file in a dataset answered HTTP 500 on Servers,
Metadata and Capacity (their queries list the files themselves); they must leave it out with a note, as
`workload` does, and show the numbers of the files that can be read."""

from __future__ import annotations

import json
import time

import numpy as np
import pandas as pd
import pytest

from ioweather.config import Settings
from ioweather.store import telemetry_layout as layout

T0 = int(pd.Timestamp("2024-05-01T00:00:00Z").value)


def _rows(writer_scale: float) -> pd.DataFrame:
    """Ten minutes at 60 s of two OSTs (bytes, capacity) and an MDT (md_open)."""
    out = []
    for k in range(10):
        t = T0 + k * 60 * 10**9
        for ost in ("x-OST0000", "x-OST0001"):
            out += [(t, ost, "read_bytes", writer_scale * (k + 1) * 1e6), (t, ost, "write_bytes", writer_scale * 5e5),
                    (t, ost, "capacity_bytes", 1e12), (t, ost, "free_bytes", 1e12 - writer_scale * 1e9 * (k + 1))]
        out.append((t, "x-MDT0000", "md_open", writer_scale * (100 + k)))
    df = pd.DataFrame(out, columns=["time_ns", "target", "metric", "value"])
    df["time_ns"] = df["time_ns"].astype(np.int64)
    df["interval_s"] = 60.0
    return df


@pytest.fixture
def damaged(tmp_path):
    home = tmp_path / "home"
    settings = Settings(home=home)
    good: list = []
    layout.write_rows(settings, "x", _rows(1.0), writer="collect-a", paths_out=good)
    bad: list = []
    layout.write_rows(settings, "x", _rows(3.0), writer="collect-b", paths_out=bad)
    bad[0].write_bytes(bad[0].read_bytes()[:40] + b"\0" * 200)
    return home, _rows(1.0), bad[0]


@pytest.mark.slow  # a store built by several commands, a server or a probe history: seconds
def test_fs_pages_skip_a_damaged_file_with_a_note(damaged):
    from web_server import Server, frozen_app

    home, rows, bad = damaged
    io = rows[rows["metric"].isin(["read_bytes", "write_bytes"])]
    q = "fs=x&since=2024-05-01T00:00:00Z&until=2024-05-01T00:10:00Z"
    with Server(frozen_app(home, time.time_ns())) as s:
        docs = {}
        for page in ("servers", "metadata", "capacity"):
            code, _, body = s.get(f"/api/{page}?{q}")
            assert code == 200, (page, code, body[:400])
            docs[page] = json.loads(body)
            assert len(docs[page]["notes"]) == 1 and "skipped 1 unreadable telemetry file" in docs[page]["notes"][0]
            assert bad.name in docs[page]["notes"][0]
            code, _, html = s.get(f"/{page}?{q}")
            assert code == 200 and b"skipped 1 unreadable telemetry file" in html, page
    # the readable file's numbers, recounted from its rows
    srv = docs["servers"]
    assert srv["fs_read_bytes"] == io[io["metric"] == "read_bytes"]["value"].sum()
    assert srv["fs_write_bytes"] == io[io["metric"] == "write_bytes"]["value"].sum()
    assert docs["metadata"]["total_ops"] == rows[rows["metric"] == "md_open"]["value"].sum()
    last = {t["target"]: t["used_bytes"] for t in docs["capacity"]["targets"]}
    assert last == {"x-OST0000": 10e9, "x-OST0001": 10e9}
