"""issue 30: the web's time parameters read a bare 4-digit number as a year, as the CLI does (one
parser, units.time_ago), and an inverted window names both ends in UTC."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from starlette.datastructures import QueryParams

from ioweather.units import to_ns
from ioweather.web.params import BadRequest, Query

NOW = datetime(2026, 11, 26, 13, 13, 44, tzinfo=timezone.utc)
YEAR = 366 * 86400.0


def window(qs: str):
    return Query(QueryParams(qs), ("since", "until")).window("6h", 10 * YEAR, NOW)


def test_bare_year_is_a_year():
    assert window("since=2025&until=2026") == (to_ns(datetime(2025, 1, 1, tzinfo=timezone.utc)),
                                               to_ns(datetime(2026, 1, 1, tzinfo=timezone.utc)))


def test_inverted_years_name_both_ends_in_utc():
    with pytest.raises(BadRequest, match=r"since \(2026: 2026-01-01 00:00:00 UTC\) must be before "
                                         r"until \(2025: 2025-01-01 00:00:00 UTC\)"):
        window("since=2026&until=2025")


def test_durations_still_count_back_from_until_and_a_bare_number_is_ambiguous():
    assert window("since=2h&until=2026-11-26T12:00Z")[0] == to_ns(datetime(2026, 11, 26, 10, tzinfo=timezone.utc))
    with pytest.raises(BadRequest, match="ambiguous"):
        window("since=90")
