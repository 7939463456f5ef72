from datetime import datetime, timezone

import pytest

from ioweather.errors import UserError
from ioweather.units import ns_to_iso, parse_duration, parse_size, parse_time, time_ago


@pytest.mark.parametrize("text,seconds", [("10m", 600), ("4h", 14400), ("30d", 2592000), ("1s", 1), ("500ms", 0.5),
                                          ("2.5", 2.5), ("1w", 604800), (" 3 h ", 10800), ("250us", 250e-6)])
def test_durations(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text,nbytes", [("1MiB", 1 << 20), ("4k", 4096), ("1G", 1 << 30), ("3901", 3901),
                                         ("1.5KiB", 1536), ("2 GiB", 2 << 30), ("0", 0)])
def test_sizes(text, nbytes):
    assert parse_size(text) == nbytes


@pytest.mark.parametrize("bad", ["", "ten", "10x", "-5s", "1e3s", "m", "10 m s"])
def test_malformed_durations_are_one_line_errors(bad):
    with pytest.raises(UserError) as e:
        parse_duration(bad)
    assert "\n" not in str(e.value) and "duration" in str(e.value)


@pytest.mark.parametrize("bad", ["", "1.5", "1Q", "-4k", "k"])
def test_malformed_sizes(bad):
    with pytest.raises(UserError):
        parse_size(bad)


def test_times():
    now = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)
    assert parse_time("now", now) == now
    assert parse_time("now-2h", now) == datetime(2026, 11, 22, 10, 0, tzinfo=timezone.utc)
    assert parse_time("now+10m", now) == datetime(2026, 11, 22, 12, 10, tzinfo=timezone.utc)
    # naive ISO means UTC; offsets are converted
    assert parse_time("2026-11-22T10:00") == datetime(2026, 11, 22, 10, 0, tzinfo=timezone.utc)
    assert parse_time("2026-11-22T12:00+02:00") == datetime(2026, 11, 22, 10, 0, tzinfo=timezone.utc)
    assert parse_time("2026-11-22T10:00Z") == datetime(2026, 11, 22, 10, 0, tzinfo=timezone.utc)
    assert parse_time("0") == datetime(1970, 1, 1, tzinfo=timezone.utc)
    assert time_ago("30d", now) == datetime(2026, 10, 23, 12, 0, tzinfo=timezone.utc)
    assert time_ago("2026-11-01", now) == datetime(2026, 11, 1, tzinfo=timezone.utc)
    with pytest.raises(UserError):
        parse_time("yesterday-ish")


def test_iso_output_is_utc_with_z():
    assert ns_to_iso(0) == "1970-01-01T00:00:00.000Z"
    assert ns_to_iso(1_500_000_000) == "1970-01-01T00:00:01.500Z"
