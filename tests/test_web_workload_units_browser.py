"""Issue 20, item 10, in headless Chromium: the Workload page's plots carry the binary unit that
units.format_bytes chooses for their largest value (MiB/s data no longer drawn as 0.02 GiB/s), and the
page takes the resample values `ioweather workload` takes, with the command's own refusal and warning."""

from __future__ import annotations

import math

import pytest

from browser import json_twin, visit
from web_pages_data import CSV_FS, pages_home, pages_server  # noqa: F401  (fixtures)

from ioweather.units import format_bytes
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PLOT = """([id, axis, trace]) => {
  const el = document.getElementById(id);
  return {title: el.layout[axis].title.text, values: el.data[trace][axis[0]]};
}"""


def _unit(*lists) -> tuple[str, int]:
    """The reference: format_bytes' unit for the largest value, and its size in bytes."""
    top = max(abs(v) for values in lists for v in values if v is not None and math.isfinite(v))
    name = format_bytes(top).split()[1]
    return name, 1024 ** ["B", "KiB", "MiB", "GiB", "TiB", "PiB"].index(name)


def _assert_scaled(shown, twin, div):
    assert len(shown) == len(twin)
    for a, b in zip(shown, twin):
        assert (a is None and b is None) or a * div == pytest.approx(b, rel=1e-12)


@pytest.mark.parametrize("fs", [CSV_FS, "syn"])
def test_every_rate_axis_has_the_unit_of_its_values(browser, pages_server, fs):
    path = f"/workload?fs={fs}"
    with visit(browser, pages_server.url + path) as v:
        twin = json_twin(v.page, path)
        s, d, r = twin["series"], twin["daily_rates"], twin["result"]
        ps = r["power_spectrum"]
        checks = [("workload-signal", "yaxis", 0, (s["total_bps"], s["smoothed_bps"], [e["peak_bps"] for e in r["events"]]),
                   s["total_bps"], "{}/s"),
                  ("workload-daily", "yaxis", 0, (d["read_bps"], d["write_bps"]), d["read_bps"], "mean rate ({}/s)"),
                  ("workload-cdf", "xaxis", 0, (r["burstiness"]["cdf_bps"], [r["peak_total_bps"]]),
                   r["burstiness"]["cdf_bps"], "aggregate throughput ({}/s)"),
                  ("workload-spectrum", "yaxis", 0, (ps["read"]["bytes"], ps["write"]["bytes"]), ps["read"]["bytes"],
                   "{} in bin")]
        units = set()
        for plot, axis, trace, lists, values, title in checks:
            name, div = _unit(*lists)
            units.add(name)
            got = v.page.evaluate(PLOT, [plot, axis, trace])
            assert got["title"] == title.format(name), (plot, got["title"])
            _assert_scaled(got["values"], values, div)
        name, _ = _unit(ps["read"]["bin_edges_bytes"], ps["write"]["bin_edges_bytes"])
        assert v.page.evaluate(PLOT, ["workload-spectrum", "xaxis", 0])["title"].endswith(f"({name}); dashed: centroid")
        if fs == CSV_FS:  # the case of the issue: daily means of a few hundred MiB/s
            assert _unit(d["read_bps"], d["write_bps"])[0] == "MiB"
        assert v.errors == []


def test_resample_5s_as_on_the_command_line(browser, pages_server, pages_home, cli):
    # syn is sampled every 5 s: the CLI accepts --resample 5s, and so does the page now
    path = "/workload?fs=syn&resample=5s"
    with visit(browser, pages_server.url + path) as v:
        twin = json_twin(v.page, path)
        assert twin["resample_s"] == 5 and twin["result"]["interval_s"] == 5
        assert v.page.input_value("input[name=resample]") == "5s"
        assert v.errors == []
    # 7 s is not a multiple of 5 s: the command warns, and the page shows the same words
    path = "/workload?fs=syn&resample=7s"
    with visit(browser, pages_server.url + path) as v:
        shown = v.page.inner_text(".workload-warning")
        p = cli("workload", "--fs", "syn", "--resample", "7s", "--json", home=pages_home, check=True)
        err = " ".join(p.stderr.split())  # rich wraps the line at the terminal's width
        assert err.count("ioweather: warning: ") == 1 and " ".join(shown.split()) in err
        assert shown.startswith("warning: --resample 7s is not a multiple of the sampling interval (5 s)")
        assert v.errors == []
