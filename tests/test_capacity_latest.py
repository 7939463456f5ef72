"""Issue 38 item 5, fullness: the Capacity page's last point summed only the targets reporting in its last
bin, `report` every data target's latest reading; with one OST read later than another they said two
numbers. Both (and /api, and the page's "now") are the fullness of each target's latest reading,
recounted here from the rows written."""

from __future__ import annotations

import json
import time

import numpy as np
import pandas as pd
import pytest

from ioweather.config import Settings
from ioweather.store import telemetry_layout as layout

T0 = int(pd.Timestamp("2024-05-01T00:00:00Z").value)
MIN = 60 * 10**9
CAP = 1e12


def _rows() -> pd.DataFrame:
    """OST0000 read every minute for 30 minutes, filling; OST0001 read every 10 minutes, its last at 00:20
    (nearly empty); both move some bytes."""
    out = []
    for k in range(30):
        t = T0 + k * MIN
        out += [(t, "x-OST0000", "capacity_bytes", CAP), (t, "x-OST0000", "free_bytes", CAP * (0.5 - 0.01 * k)),
                (t, "x-OST0000", "read_bytes", 1e6 * (k + 1)), (t, "x-OST0001", "read_bytes", 2e6)]
        if k % 10 == 0 and k <= 20:
            out += [(t, "x-OST0001", "capacity_bytes", CAP), (t, "x-OST0001", "free_bytes", CAP * (0.95 - 0.01 * k))]
    df = pd.DataFrame(out, columns=["time_ns", "target", "metric", "value"])
    df["time_ns"] = df["time_ns"].astype(np.int64)
    df["interval_s"] = 60.0
    return df


@pytest.mark.slow  # a server and two commands
def test_capacity_last_point_report_and_api_use_each_targets_latest_reading(tmp_path):
    from click.testing import CliRunner
    from starlette.testclient import TestClient

    from ioweather.cli import cli
    from web_server import frozen_app

    home = tmp_path / "home"
    df = _rows()
    layout.write_rows(Settings(home=home), "x", df, writer="collect-a")
    # the recount: each OST's latest capacity and free, used / (used + free)
    last = df[df["metric"].isin(["capacity_bytes", "free_bytes"])].sort_values("time_ns").groupby(["target", "metric"])["value"].last()
    used = sum(last[(t, "capacity_bytes")] - last[(t, "free_bytes")] for t in ("x-OST0000", "x-OST0001"))
    free = sum(last[(t, "free_bytes")] for t in ("x-OST0000", "x-OST0001"))
    want = used / (used + free)
    since, until = "2024-05-01T00:00:00Z", "2024-05-01T00:30:00Z"
    r = CliRunner().invoke(cli, ["--home", str(home), "report", "--fs", "x", "--since", since, "--until", until, "--json"],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    cli_f = json.loads(r.stdout)["fullness"]["fullness"]
    with TestClient(frozen_app(home, time.time_ns()), base_url="http://127.0.0.1") as client:
        cap = client.get(f"/api/capacity?fs=x&since={since}&until={until}").json()
        rep = client.get(f"/api/report?fs=x&since={since}&until={until}").json()["report"]
        html = client.get(f"/capacity?fs=x&since={since}&until={until}").text
    points = [v for v in cap["fs_fullness"]["fullness"] if v is not None]
    assert points[-1] == pytest.approx(want, rel=1e-12), (points[-3:], want)
    assert cap["fs_fullness"]["now"]["fullness"] == pytest.approx(want, rel=1e-12)
    assert cli_f == pytest.approx(want, rel=1e-12) and rep["fullness"]["fullness"] == cli_f
    assert f"{100 * want:.1f}%" in html.split('id="fs-now"')[1].split("</td>")[0].replace("\u202f", "").replace(" ", "")
