"""Time, duration and size arguments: one parser, one range check, one message (never a traceback).

The cases are those an attack pass found: each ended in an OverflowError or ValueError traceback.
The property tests fuzz the parsers themselves: any text is a value in range or a UserError.
"""

from __future__ import annotations

from datetime import timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ioweather.errors import UserError
from ioweather.units import (END_TIME, FIRST_TIME, MAX_DURATION_S, MAX_SIZE, parse_duration, parse_size, parse_time,
                             time_ago)
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)

CASES = [
    (("probe", "stats", "--since", "0001-01-01"), "outside the years 1970 to 2199"),
    (("probe", "stats", "--since", "99999999999999s"), "longer than 100 years"),  # a duration ago
    (("probe", "stats", "--since", "99999999999999"), "outside the years 1970 to 2199"),  # a bare number: unix seconds
    (("probe", "stats", "--until", "99999999999999"), "outside the years 1970 to 2199"),  # unix seconds
    (("probe", "stats", "--interval", "0.0000000001s"), "shorter than 1 ns"),
    (("slowdown", "--baseline", "99999999999w"), "longer than 100 years"),
    (("workload", "--fs", "x", "--resample", "99999999w"), "longer than 100 years"),
    (("slowdown", "--until", "now+99999w"), "longer than 100 years"),
    (("probe", "stats", "--until", "1e400"), "malformed time"),
]


@pytest.mark.parametrize("args,needle", CASES)
def test_out_of_range_arguments_are_one_line_usage_errors(home, cli, args, needle):
    r = cli(*args, home=home)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert needle in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and r.stderr.strip().count("\n") <= 2, r.stderr


_text = st.one_of(st.text(max_size=40), st.from_regex(r"\s*(now\s*[+-]\s*)?[0-9.]{1,25}\s*[a-zµA-Z]{0,4}\s*",
                                                       fullmatch=True))


@settings(max_examples=400, deadline=None)
@given(_text)
def test_duration_parser_fuzz(text):
    try:
        v = parse_duration(text)
    except UserError:
        return
    assert 0 <= v <= MAX_DURATION_S


@settings(max_examples=400, deadline=None)
@given(_text)
def test_size_parser_fuzz(text):
    try:
        v = parse_size(text)
    except UserError:
        return
    assert 0 <= v <= MAX_SIZE and isinstance(v, int)


@settings(max_examples=400, deadline=None)
@given(st.one_of(_text, st.datetimes().map(lambda d: d.isoformat()),
                 st.datetimes(timezones=st.timezones()).map(lambda d: d.isoformat())))
def test_time_parsers_fuzz(text):
    for fn in (parse_time, time_ago):
        try:
            v = fn(text)
        except UserError:
            continue
        assert v.tzinfo is not None and v.utcoffset().total_seconds() == 0
        assert FIRST_TIME <= v.astimezone(timezone.utc) < END_TIME


def test_an_inverted_range_is_a_usage_error(home, cli):
    r = cli("probe", "stats", "--since", "2020-01-01", "--until", "2019-01-01", home=home)
    assert r.returncode == 2 and "must be before --until" in r.stderr, r.stderr


def test_help_names_the_environment_variables(cli):
    out = cli("--help").stdout
    assert "IOWEATHER_HOME" in out and "IOWEATHER_DB" in out
