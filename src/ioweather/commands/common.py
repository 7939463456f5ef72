"""Click parameter types and options shared by commands."""

from __future__ import annotations

import click

from ioweather.errors import UserError
from ioweather.units import parse_duration, parse_size, parse_time, time_ago


class _Parsed(click.ParamType):
    def __init__(self, name: str, fn):
        self.name = name
        self._fn = fn

    def convert(self, value, param, ctx):
        if value is None or not isinstance(value, str):
            return value
        try:
            return self._fn(value)
        except UserError as e:
            self.fail(str(e), param, ctx)


DURATION = _Parsed("duration", parse_duration)
SIZE = _Parsed("size", parse_size)
TIME = _Parsed("time", parse_time)
SINCE = _Parsed("time", time_ago)

json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON on stdout.")
