"""Issue 30, item 6: a bare 4-digit number in a time option is a year, a duration needs its unit, and the
error of a window that ends before it starts names both ends in UTC."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from ioweather.errors import UserError
from ioweather.units import parse_time, time_ago
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)

NOW = datetime(2026, 11, 26, 13, 13, 44, tzinfo=timezone.utc)


def test_a_bare_year_is_a_year():
    assert parse_time("2020", NOW) == datetime(2020, 1, 1, tzinfo=timezone.utc)
    assert time_ago("2019", NOW) == datetime(2019, 1, 1, tzinfo=timezone.utc)
    assert time_ago("90m", NOW) == datetime(2026, 11, 26, 11, 43, 44, tzinfo=timezone.utc)
    assert time_ago("1700000000", NOW) == datetime(2023, 11, 14, 22, 13, 20, tzinfo=timezone.utc)  # Unix seconds
    with pytest.raises(UserError, match=r"ambiguous time '90': give a duration its unit \(90s, 90m"):
        time_ago("90", NOW)
    with pytest.raises(UserError, match="outside the years 1970 to 2199"):
        parse_time("1969", NOW)


def test_the_reported_case_names_both_ends_in_utc(cli, tmp_path):
    home = tmp_path / "home"
    proc = cli("probe", "stats", "--since", "2020", "--until", "2019", home=home)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == ("ioweather: error: --since (2020-01-01 00:00:00 UTC) must be before "
                           "--until (2019-01-01 00:00:00 UTC)\n")
    proc = cli("slowdown", "--since", "600", home=home)
    assert proc.returncode == 2 and "ambiguous time '600'" in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert not home.exists()
