"""Validation of query parameters: every bad value is a 400 with a one-line message, never a 500."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from starlette.datastructures import QueryParams

from ioweather.errors import UserError
from ioweather.units import format_seconds, format_utc, looks_like_duration, parse_duration, time_ago, time_option, to_ns

MAX_PARAM_CHARS = 300
#: Earliest time a page accepts: anything before is a typo, not a probe sample.
EPOCH_FLOOR = datetime(2000, 1, 1, tzinfo=timezone.utc)


class BadRequest(Exception):
    """A query parameter is malformed or out of range (HTTP 400)."""

    status_code = 400


class NotFound(Exception):
    """The page has nothing to show (HTTP 404); the message says how to get data."""

    status_code = 404


class Query:
    """The request's parameters, checked against the names a page accepts."""

    def __init__(self, params: QueryParams, allowed: tuple[str, ...]):
        unknown = sorted(set(params.keys()) - set(allowed))
        if unknown:
            takes = ", ".join(allowed) if allowed else "no parameters"
            raise BadRequest(f"unknown parameter {unknown[0]!r}; this page takes: {takes}")
        self._p = params

    def text(self, name: str, default: str | None = None) -> str | None:
        values = self._p.getlist(name)
        if len(values) > 1:
            raise BadRequest(f"parameter {name!r} given {len(values)} times; give it once")
        if not values or values[0] == "":
            return default
        if len(values[0]) > MAX_PARAM_CHARS:
            raise BadRequest(f"parameter {name!r} is longer than {MAX_PARAM_CHARS} characters")
        return values[0]

    def fs(self, known: list[str], default: str | None = None) -> str | None:
        """`fs`, refused with the known names listed as every page refuses it (a nav link keeps `fs`)."""
        fs = self.text("fs", default)
        if fs is not None and fs not in known:
            raise BadRequest(f"unknown file system {fs!r}; known: {', '.join(known[:20]) or 'none'}")
        return fs

    def choice(self, name: str, choices, default: str) -> str:
        v = self.text(name, default)
        if v not in choices:
            raise BadRequest(f"{name} must be one of {', '.join(choices)}, got {v!r}")
        return v

    def duration(self, name: str, default: str, allowed: tuple[float, ...] | None = None,
                 lo: float | None = None, hi: float | None = None) -> float:
        raw = self.text(name, default)
        try:
            v = parse_duration(raw)
        except UserError as e:
            raise BadRequest(f"{name}: {e}") from None
        if allowed is not None and v not in allowed:
            raise BadRequest(f"{name} must be one of {', '.join(format_seconds_short(a) for a in allowed)}, got {raw!r}")
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise BadRequest(f"{name} must be between {format_seconds_short(lo)} and {format_seconds_short(hi)}, got {raw!r}")
        return v

    def integer(self, name: str, default: int, lo: int, hi: int) -> int:
        raw = self.text(name, str(default))
        try:
            v = int(raw)
        except ValueError:
            raise BadRequest(f"{name} must be a whole number, got {raw!r}") from None
        if not lo <= v <= hi:
            raise BadRequest(f"{name} must be between {lo} and {hi}, got {v}")
        return v

    def number(self, name: str, default: float, lo: float, hi: float, *, lo_open: bool = False) -> float:
        """A float in [lo, hi] (or (lo, hi] with `lo_open`); nan and inf are refused by the bounds."""
        raw = self.text(name, repr(default))
        try:
            v = float(raw)
        except ValueError:
            raise BadRequest(f"{name} must be a number, got {raw!r}") from None
        if not (lo < v if lo_open else lo <= v) or not v <= hi:
            raise BadRequest(f"{name} must be {'above' if lo_open else 'at least'} {lo:g} and at most {hi:g}, got {raw!r}")
        return v

    def window(self, default_since: str, max_s: float, now: datetime,
               default_until: datetime | None = None) -> tuple[int, int]:
        """(since_ns, until_ns) from `since` (a time or a duration ago) and `until` (a time, default
        `default_until` or now)."""
        since_raw, until_raw = self.text("since", default_since), self.text("until")
        if until_raw is None and default_until is not None:
            until, until_raw = default_until, default_until.isoformat()
        else:
            until_raw = until_raw or "now"
            until = _time(time_option, "until", until_raw, now)
        # A duration with its unit counts back from until (now-2h is from now); anything else is a time
        # read as the CLI's --since reads it (units.time_ago): 2020 is a year, a bare 90 is ambiguous.
        if looks_like_duration(since_raw, need_unit=True):
            try:
                since = until - timedelta(seconds=parse_duration(since_raw))
            except UserError as e:
                raise BadRequest(f"since: {e}") from None
            except OverflowError:
                raise BadRequest(f"since: {since_raw!r} is out of range") from None
        else:
            since = _time(time_ago, "since", since_raw, now)
        if since >= until:
            raise BadRequest(f"since ({since_raw}: {format_utc(since)}) must be before "
                             f"until ({until_raw}: {format_utc(until)})")
        if since < EPOCH_FLOOR:
            raise BadRequest(f"since ({since_raw}) is before {EPOCH_FLOOR.date()}; no probe data can be that old")
        if (until - now).total_seconds() > 86400:
            raise BadRequest(f"until ({until_raw}) is more than a day in the future")
        span = (until - since).total_seconds()
        if span > max_s:
            raise BadRequest(f"the window since..until is {format_seconds_short(span)}; this page shows at most "
                             f"{format_seconds_short(max_s)}")
        return to_ns(since), to_ns(until)


def _time(fn, name: str, raw: str, now: datetime) -> datetime:
    try:
        return fn(raw, now)
    except UserError as e:
        raise BadRequest(f"{name}: {e}") from None
    except (OverflowError, ValueError, OSError):
        raise BadRequest(f"{name}: {raw!r} is out of range") from None


def format_seconds_short(s: float) -> str:
    """600 -> '10m', 86400 -> '1d': how users type durations."""
    for unit, n in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= n and s % n == 0:
            return f"{int(s // n)}{unit}"
    if s >= 1 and s == int(s):
        return f"{int(s)}s"
    return format_seconds(s)
