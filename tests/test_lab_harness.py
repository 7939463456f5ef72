"""`lab run`'s harness settings read from the environment (services/lab/run.py): the ranks' autogroup priority
and the pause before each case. What they do to real runs is in tests/test_lab.py (slow tier) and
docs/validation.md ("collective-rmw against CPU contention and the VM's memory")."""

from __future__ import annotations

import pytest

from ioweather.errors import UserError
from ioweather.services.lab.run import AUTOGROUP_NICE, SETTLE_S, _priority, _settle_s


def test_each_process_is_started_through_a_wrapper_that_sets_its_autogroup_nice(monkeypatch):
    monkeypatch.delenv("IOWEATHER_LAB_AUTOGROUP_NICE", raising=False)
    sh, flag, script, name = _priority()
    assert (sh, flag, name) == ("/bin/sh", "-c", "lab")
    assert f"echo {AUTOGROUP_NICE} > /proc/self/autogroup" in script and script.endswith('exec "$@"')
    monkeypatch.setenv("IOWEATHER_LAB_AUTOGROUP_NICE", "5")
    assert "echo 5 > /proc/self/autogroup" in _priority()[2]
    monkeypatch.setenv("IOWEATHER_LAB_AUTOGROUP_NICE", "off")
    assert _priority() == []


@pytest.mark.parametrize("bad", ["-10.5", "fast", "", "40"])
def test_a_priority_that_is_no_nice_value_is_refused(monkeypatch, bad):
    monkeypatch.setenv("IOWEATHER_LAB_AUTOGROUP_NICE", bad)
    with pytest.raises(UserError, match="IOWEATHER_LAB_AUTOGROUP_NICE"):
        _priority()


def test_the_pause_before_each_case(monkeypatch):
    monkeypatch.delenv("IOWEATHER_LAB_SETTLE_S", raising=False)
    assert _settle_s() == SETTLE_S
    monkeypatch.setenv("IOWEATHER_LAB_SETTLE_S", "0")
    assert _settle_s() == 0
    for bad in ("-1", "soon", "601"):
        monkeypatch.setenv("IOWEATHER_LAB_SETTLE_S", bad)
        with pytest.raises(UserError, match="IOWEATHER_LAB_SETTLE_S"):
            _settle_s()


@pytest.mark.parametrize("var, value", [("IOWEATHER_LAB_AUTOGROUP_NICE", "high"), ("IOWEATHER_LAB_SETTLE_S", "-5")])
def test_a_bad_setting_is_said_before_any_case_runs(monkeypatch, tmp_path, var, value):
    from ioweather.services.lab.run import run_cases

    monkeypatch.setenv(var, value)
    with pytest.raises(UserError, match=var):
        run_cases([], None, tmp_path, tmp_path / "logs")
    assert list(tmp_path.iterdir()) == []   # no run directory, no index
