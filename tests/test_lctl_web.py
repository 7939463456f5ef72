"""Captures of `lctl get_param` on the Servers page (brw_stats: sizes and disk times per OST over the
window) and the Capacity page (recovery state and connected clients): the JSON twin, and headless
Chromium drawing both pages."""

from __future__ import annotations

import pytest

from ioweather.config import Settings
from ioweather.web.app import create_app
from lctl_captures import BRW_READ_ADD, BRW_WRITE_ADD, two_captures
from web_server import Server, api

WINDOW = "since=2023-07-11T07:00:00Z&until=2023-07-11T08:00:00Z"  # around the captures' snapshot times
RECOVERING = """obdfilter.ai400-OST0001.recovery_status=
status: RECOVERING
recovery_start: 1689060400
time_remaining: 119
connected_clients: 3/7
req_replay_clients: 0
lock_repay_clients: 0
completed_clients: 3
evicted_clients: 1
"""


@pytest.fixture(scope="module")
def home(tmp_path_factory, testdata):
    from inprocess import run_cli

    home = tmp_path_factory.mktemp("lctlweb")
    d = two_captures(tmp_path_factory.mktemp("caps"), testdata, RECOVERING)
    run_cli("import", "lctl-params", str(d), "--fs", "ai400", home=home, check=True)
    return home


@pytest.fixture(scope="module")
def server(home):
    with Server(create_app(Settings.resolve(home))) as s:
        yield s


def test_servers_shows_brw_distributions(server):
    code, d = api(server, f"/api/servers?fs=ai400&{WINDOW}")
    assert code == 200, d
    size = d["brw"]["disk_iosize"]
    assert size["buckets"] == ["32K", "64K", "128K", "256K", "512K", "1M", "2M"]
    ost = next(t for t in size["targets"] if t["target"] == "ai400-OST0000")
    assert ost["write"] == [BRW_WRITE_ADD] * 7 and ost["read"] == [BRW_READ_ADD] * 7
    times = d["brw"]["io_time"]
    assert times["buckets"] == ["1", "2", "4", "8", "16"]
    assert times["write"] == [BRW_WRITE_ADD * len(times["targets"])] * 5


def test_capacity_shows_recovery_and_clients(server):
    code, d = api(server, f"/api/capacity?fs=ai400&{WINDOW}")
    assert code == 200, d
    mdt, ost = d["lustre"]["ai400-MDT0000"], d["lustre"]["ai400-OST0001"]
    assert mdt["connected_clients"] == 4 and mdt["exports"] == 19 and mdt["recovery"] is None
    assert ost["recovery_label"] == "recovering" and ost["recovery_completed_clients"] == 3
    assert ost["recovery_connected_clients"] == 3 and ost["recovery_evicted_clients"] == 1


def test_no_lctl_data_no_section(server):
    code, d = api(server, "/api/servers?fs=ai400&since=2020-01-01T00:00:00Z&until=2020-01-02T00:00:00Z")
    assert code == 200 and d["brw"] == {}


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("page", ["servers", "capacity"])
def test_pages_draw_them(browser, server, artifacts_dir, page):
    from browser import assert_renders_with_data, visit
    from playwright.sync_api import expect

    with visit(browser, server.url + f"/{page}?fs=ai400&{WINDOW}") as v:
        assert_renders_with_data(v, artifacts_dir, f"lctl-{page}")
        if page == "servers":
            expect(v.page.locator("#brw-disk_iosize tr.total td").last).to_have_text(
                f"{BRW_READ_ADD:,} / {BRW_WRITE_ADD:,}")  # one OST has disk I/O sizes
        else:
            row = v.page.locator("#recovery-table tr.bad")
            expect(row).to_have_count(1)
            expect(row.locator("td").nth(1)).to_have_text("recovering")
