"""The findings' early skips (issue 40, round 5): a rule skipped by a bound of its inputs must be one that would
not have fired. On every distinct public log, at the default thresholds and at thresholds low enough to fire, each
skip is checked against the rule's own computation run without it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from darshan_support import TESTDATA_LOGS, all_real_logs, need_darshan_logs  # noqa: F401
from ioweather.errors import UserError
from ioweather.sources.darshan_log import read_log
from ioweather.stats.costs import Clock
from ioweather.stats.damage import drop_impossible
from ioweather.stats.findings import Job, Thresholds, _lustre_findings, _lustre_may_fire


#: the defaults, and thresholds under which the small-request and Lustre rules fire on some public logs
THRESHOLDS = (Thresholds(), Thresholds(small_requests=0.01, small_requests_absolute=10, lustre_large_file_bytes=1 << 20,
                                       lustre_small_files=2, lustre_small_file_bytes=1 << 30, min_bytes=1 << 20))


def _jobs():
    seen = set()
    for path in all_real_logs():
        if (b := path.read_bytes()) in seen:  # each content once
            continue
        seen.add(b)
        try:
            log = drop_impossible(read_log(str(path), dxt=False, heatmaps=False))[0]
        except Exception:  # a log the reader refuses has no findings to skip
            continue
        for t in THRESHOLDS:
            clock = Clock(io_time_s=10.0, cumulative_s=20.0, runtime_s=30.0, nprocs=max(int(log.nprocs), 1))
            ch = {"job": {"nnodes": 1}}
            yield path, log, t, clock, Job(log=log, ch=ch, t=t, clock=clock, nprocs=max(int(log.nprocs), 1))


@pytest.mark.slow  # every public log read
def test_a_skipped_rule_would_not_have_fired():
    skipped = {"small": 0, "lustre": 0}
    passed = {"small": 0, "lustre": 0}
    for path, log, t, clock, j in _jobs():
        x = j.px
        if x is None:
            continue
        for kind in ("READ", "WRITE"):
            for shared in (False, True):
                if shared and not x.shared_mask.any():
                    continue
                small, n, _ = x.small(kind, shared)
                fires = bool(n) and small / n > t.small_requests and small > t.small_requests_absolute
                if x.may_be_small(kind, shared):
                    passed["small"] += fires
                else:
                    skipped["small"] += 1
                    assert not fires, (path.name, kind, shared, t)
        lu = log.lustre
        if lu is not None and len(lu):
            got = _lustre_findings(log, t, clock)
            if _lustre_may_fire(x, lu, t):
                passed["lustre"] += bool(got)
            else:
                skipped["lustre"] += 1
                assert got == [], (path.name, t)
    print("skipped", skipped, "fired past the bound", passed)
    # the bounds skip somewhere, and let findings through somewhere: the checks above compared something
    assert all(skipped.values()) and all(passed.values())


@pytest.mark.parametrize("name", ["stragglers", "min_bytes", "small_requests", "lustre_small_files"])
@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_threshold_file_cannot_set_nan_or_inf(name, value):
    # TOML writes both (`x = nan`, `x = inf`): a NaN float threshold silenced its rule (every comparison false),
    # an int one crashed on int(); both are the user's error to be told
    with pytest.raises(UserError, match="non-negative finite"):
        Thresholds.from_mapping({name: value}, "thresholds.toml")
    assert Thresholds.from_mapping({name: 1}, "thresholds.toml") is not None


def test_l03_at_a_threshold_of_zero_files_needs_one_file():
    # `lustre_small_files = 0` (a threshold file may say it) fired L03 on a log without one small file striped
    # wide: "0 Lustre files ... striped over nan OSTs", a NaN cost
    log = drop_impossible(read_log(str(TESTDATA_LOGS / "e3sm_io_heatmap_only.darshan"), dxt=False, heatmaps=False))[0]
    assert log.lustre is not None and len(log.lustre)
    clock = Clock(io_time_s=10.0, cumulative_s=20.0, runtime_s=30.0, nprocs=max(int(log.nprocs), 1))
    assert "L03" not in [f["code"] for f in _lustre_findings(log, Thresholds(lustre_small_files=0), clock)]
    # a threshold the log's small files do reach still fires, with a finite cost
    low = Thresholds(lustre_small_files=0, lustre_small_file_bytes=1 << 40)
    l03 = [f for f in _lustre_findings(log, low, clock) if f["code"] == "L03"]
    assert l03 and l03[0]["evidence"]["files"] > 0 and math.isfinite(l03[0]["cost_s"])


@pytest.mark.slow  # every public log read
def test_mpiio_groups_shortcuts_match_their_references():
    # `_mpiio_groups` picks the MPI-IO and POSIX/STDIO rows of `layer_rows` by layer index, and `_posix_sees`
    # places POSIX's records among MPI-IO's ids: each against its plain reading (module names; a dict of the
    # POSIX bytes per file, added record by record) on every distinct public log with MPI-IO records
    from ioweather.stats.findings import _MPIIO_LAYER, _POSIX_LAYER, _posix_bytes_of, _posix_sees
    from ioweather.stats.job import cols, layer_rows, module_rows, zero_missing
    checked = 0
    for path, log, t, _, j in _jobs():
        mpiio = log.records.get("MPI-IO")
        if t != THRESHOLDS[0] or mpiio is None or not len(mpiio):
            continue
        rows = layer_rows(log, j.nprocs)
        assert ((rows["layer"] == _MPIIO_LAYER) == (rows["module"] == "MPI-IO")).all(), path.name
        assert ((rows["layer"] == _POSIX_LAYER) == np.isin(rows["module"], ["POSIX", "STDIO"])).all(), path.name
        mc = module_rows(mpiio)
        posix = log.records.get("POSIX")
        per: dict[int, float] = {}
        if posix is not None and len(posix):
            pc = cols(posix)
            p_b = zero_missing(pc, "POSIX_BYTES_READ") + zero_missing(pc, "POSIX_BYTES_WRITTEN")
            for i, b in zip(pc["id"].tolist(), p_b.tolist()):
                per[i] = per.get(i, 0.0) + b
            # the bytes themselves, to the last bit (the public logs' files all pass the half below)
            got = [repr(b) for b in _posix_bytes_of(j, pc["id"], mc["id"]).tolist()]
            assert got == [repr(per.get(i, 0.0)) for i in mc["id"].tolist()], path.name
            want = [per.get(i, 0.0) >= 0.5 * m for i, m in
                    zip(mc["id"].tolist(), (mc["bytes_read"] + mc["bytes_written"]).tolist())]
        else:
            want = ((mc["bytes_read"] + mc["bytes_written"]) <= 0).tolist()
        assert _posix_sees(j, mc).tolist() == want, path.name
        checked += 1
    print("logs with MPI-IO checked", checked)
    assert checked
