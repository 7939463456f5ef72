"""Parsing of the durations, sizes and times users type on the command line.

Durations: `500ms`, `1s`, `10m`, `4h`, `30d`, `1w`, or plain seconds (`2.5`).
Sizes: `4k`, `1MiB`, `1G`, `3901` (binary multiples: k = KiB, as `dd` and `fio` do).
Times: ISO 8601 (naive means UTC), a year (`2020`: 4 digits), unix seconds, `now`, `now-2h`, `now+10m`;
in `--since` also a duration ago, which needs its unit (`90m`; a bare `90` is refused as ambiguous).
All functions raise `UserError` with a one-line reason on malformed input, and on values
outside what the store can hold: durations from 1 ns to 100 years, times from 1970 to 2199
(nanoseconds since 1970 in a signed 64-bit integer end in 2262), sizes below 8 EiB.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timezone

from ioweather.errors import UserError

_DURATION_UNITS = {
    "ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0,
    "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0,
}
_SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
    "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
    "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
    "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40,
    "p": 1 << 50, "pb": 1 << 50, "pib": 1 << 50,
}
_NUM = r"(\d+(?:\.\d*)?|\.\d+)"
_DURATION_RE = re.compile(rf"^\s*{_NUM}\s*([a-zµ]*)\s*$", re.IGNORECASE)
_SIZE_RE = re.compile(rf"^\s*{_NUM}\s*([a-z]*)\s*$", re.IGNORECASE)
_RELATIVE_RE = re.compile(r"^\s*now\s*(?:([+-])\s*(.+))?$", re.IGNORECASE)

MAX_DURATION_S = 100 * 365.25 * 86400.0
MIN_DURATION_S = 1e-9
FIRST_TIME = datetime(1970, 1, 1, tzinfo=timezone.utc)
END_TIME = datetime(2200, 1, 1, tzinfo=timezone.utc)
MAX_SIZE = (1 << 63) - 1


def parse_duration(text: str | float | int) -> float:
    """Seconds in `text` (`10m` -> 600.0). Negative, zero-length or unknown units are errors."""
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        m = _DURATION_RE.match(str(text))
        if not m:
            raise UserError(f"malformed duration {text!r}: expected e.g. 500ms, 10s, 10m, 4h, 30d")
        unit = m.group(2).lower() or "s"
        if unit not in _DURATION_UNITS:
            raise UserError(f"unknown duration unit {m.group(2)!r} in {text!r}: use ns, us, ms, s, m, h, d or w")
        value = float(m.group(1)) * _DURATION_UNITS[unit]
    if not math.isfinite(value) or value < 0:
        raise UserError(f"duration must be a non-negative finite number, got {text!r}")
    if value > MAX_DURATION_S:
        raise UserError(f"duration {text!r} is longer than 100 years")
    if 0 < value < MIN_DURATION_S * (1 - 1e-9):
        raise UserError(f"duration {text!r} is shorter than 1 ns, the finest time ioweather stores")
    return value


def parse_size(text: str | int) -> int:
    """Bytes in `text` (`1MiB` -> 1048576). Fractions are allowed if the result is whole."""
    if isinstance(text, int):
        value = float(text)
    else:
        m = _SIZE_RE.match(str(text))
        if not m:
            raise UserError(f"malformed size {text!r}: expected e.g. 4k, 1MiB, 1G or a number of bytes")
        unit = m.group(2).lower()
        if unit not in _SIZE_UNITS:
            raise UserError(f"unknown size unit {m.group(2)!r} in {text!r}: use B, KiB, MiB, GiB, TiB (or k, M, G, T)")
        value = float(m.group(1)) * _SIZE_UNITS[unit]
    if value < 0 or value != int(value):
        raise UserError(f"size must be a whole non-negative number of bytes, got {text!r}")
    if value > MAX_SIZE:
        raise UserError(f"size {text!r} is larger than 8 EiB")
    return int(value)

def parse_rate(text: str) -> float:
    """A rate in bytes/s: `1GiB/s`, `500M`, `1G/s` (sizes as everywhere in ioweather, binary)."""
    s = str(text).strip()
    if s.lower().endswith("/s"):
        s = s[:-2]
    return float(parse_size(s))


def parse_time(text: str, now: datetime | None = None) -> datetime:
    """An aware UTC datetime for `text`: ISO 8601, unix seconds, `now`, `now-2h`."""
    now = now or datetime.now(timezone.utc)
    s = str(text).strip()
    m = _RELATIVE_RE.match(s)
    if m:
        if not m.group(1):
            return now
        delta = parse_duration(m.group(2))
        return _from_unix(now.timestamp() + (delta if m.group(1) == "+" else -delta), text)
    if re.fullmatch(r"\d{4}", s):
        # `--since 2020` is the year 2020, not Unix second 2020 (1970-01-01 00:33:40): nobody means that.
        if int(s) < 1:  # no year 0 in the proleptic calendar datetime counts in
            raise _out_of_range(text)
        return _in_range(datetime(int(s), 1, 1, tzinfo=timezone.utc), text)
    if re.fullmatch(r"\d+(\.\d+)?", s):
        return _from_unix(float(s), text)
    try:
        dt = datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        raise UserError(f"malformed time {text!r}: expected ISO 8601 (2026-11-22T10:00Z), unix seconds or now-2h") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    try:
        return _in_range(dt.astimezone(timezone.utc), text)
    except OverflowError:  # year 1 in a zone east of UTC
        raise _out_of_range(text) from None


def _out_of_range(text) -> UserError:
    return UserError(f"time {text!r} is outside the years 1970 to 2199 that ioweather stores")


def _in_range(dt: datetime, text) -> datetime:
    if not FIRST_TIME <= dt < END_TIME:
        raise _out_of_range(text)
    return dt


def _from_unix(seconds: float, text) -> datetime:
    try:
        return _in_range(datetime.fromtimestamp(seconds, timezone.utc), text)
    except (OverflowError, OSError, ValueError):  # beyond what the C library's time_t holds
        raise _out_of_range(text) from None


def time_ago(text: str, now: datetime | None = None) -> datetime:
    """A start time for `--since`: a duration with its unit (`2h`) means that long before now; anything
    else is a time as every time option reads it (time_option)."""
    now = now or datetime.now(timezone.utc)
    if looks_like_duration(text, need_unit=True):
        return _from_unix(now.timestamp() - parse_duration(text), f"{text} ago")
    s = str(text).strip()
    if _ambiguous(s):
        raise UserError(f"ambiguous time {text!r}: give a duration its unit ({s}s, {s}m, {s}h, {s}d), "
                        "a year as 4 digits, a date in ISO 8601 (2026-11-22T10:00Z) or Unix seconds (9 digits or more)")
    return parse_time(text, now)


def time_option(text: str, now: datetime | None = None) -> datetime:
    """A time given on a command line or a page (`--until`, `--at`, an importer's `--since`): parse_time,
    except that a bare number is a year in 4 digits and Unix seconds in 9 digits or more; any other is
    refused, since `--until 90` could be 90 s or 1970 (a file's own times are read by parse_time)."""
    s = str(text).strip()
    if _ambiguous(s):
        raise UserError(f"ambiguous time {text!r}: give a year as 4 digits, a date in ISO 8601 (2026-11-22T10:00Z), "
                        f"Unix seconds (9 digits or more) or now-{s}s")
    return parse_time(text, now)


def _ambiguous(s: str) -> bool:
    return bool(re.fullmatch(r"\d+(\.\d+)?", s)) and not re.fullmatch(r"\d{4}|\d{9,}(\.\d+)?", s)


def looks_like_duration(text: str, need_unit: bool = False) -> bool:
    """Whether `text` is written as a duration (`2h`; `90` too unless `need_unit`), so that its errors are a duration's."""
    m = _DURATION_RE.match(str(text))
    if not m or (need_unit and not m.group(2)):
        return False
    return (m.group(2).lower() or "s") in _DURATION_UNITS


def format_utc(dt: datetime) -> str:
    """'2026-11-26 13:13:44 UTC': a time in an error message, with its zone said."""
    return f"{dt.astimezone(timezone.utc):%Y-%m-%d %H:%M:%S} UTC"


def check_order(since: datetime, until: datetime) -> None:
    """The one error for a window that ends before it starts, naming both ends in UTC."""
    if since >= until:
        raise UserError(f"--since ({format_utc(since)}) must be before --until ({format_utc(until)})")


def ns_to_iso(ns: int) -> str:
    """ISO 8601 UTC string (with Z) for unix nanoseconds."""
    return datetime.fromtimestamp(ns / 1e9, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def to_ns(dt: datetime) -> int:
    return int(round(dt.timestamp() * 1e9))


def format_bytes(n: float) -> str:
    """Human-readable binary size: 1536 -> '1.5 KiB'."""
    if n is None or not math.isfinite(n):
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def format_seconds(s: float | None) -> str:
    """Human-readable duration, never in scientific notation: 3 significant digits in ns/µs/ms/s
    below a minute, then `12.5 min`, `3.2 h`, `4.1 d` (people read 5.25e+05 s as noise)."""
    if s is None or not math.isfinite(s):
        return "-"
    a = abs(s)
    if a == 0:
        return "0 s"
    if a < 1e-6:
        return f"{_sig3(s * 1e9)} ns"
    if a < 1e-3:
        return f"{_sig3(s * 1e6)} µs"
    if a < 1:
        return f"{_sig3(s * 1e3)} ms"
    if a < 60:
        return f"{_sig3(s)} s"
    if a < 3600:
        return f"{s / 60:.1f} min"
    if a < 86400:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:,.1f} d"


def _sig3(x: float) -> str:
    """x with 3 significant digits in positional notation (12.3, 0.5, 999): `%g` switches to exponents."""
    a = abs(x)
    decimals = 0 if a >= 100 else 2 - int(math.floor(math.log10(a)))
    text = f"{x:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def format_number(v: float | None, digits: int = 4) -> str:
    """A number for a table or a page, never in scientific notation (`%g` wrote an age of 17,130 days
    as 1.713e+04): from 100 on with thousands separators and at most one decimal ('17,130', '365.2'),
    below with `digits` significant digits ('12.35', '0.000001234'); '-' for None and nan."""
    if v is None or not math.isfinite(v):
        return "-"
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:,.0f}" if v == int(v) or abs(v) >= 10 ** digits else f"{v:,.1f}"
    text = f"{v:.{digits - 1 - math.floor(math.log10(abs(v)))}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def format_age(s: float) -> str:
    """'45 s', '12 min', '3.0 h', '2.5 days': an age as people say it."""
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    if s < 172800:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} days"


# C0 and C1 controls (ESC starts a terminal escape sequence, a newline forges a table row), the
# bidirectional overrides that reorder what a terminal shows, and the lone surrogates by which Python
# carries the bytes of a file name that is not UTF-8 (printing one raises UnicodeEncodeError).
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\udc80-\udcff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_char(m: re.Match) -> str:
    c = m.group()
    if c in _NAMED:
        return _NAMED[c]
    n = ord(c)
    if 0xDC80 <= n <= 0xDCFF:  # os.fsdecode's stand-in for the byte n - 0xDC00
        return f"\\x{n - 0xDC00:02x}"
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}"


def printable(text: str) -> str:
    """`text` with what a terminal would act on rather than show written as escapes (`\\x1b`, `\\n`,
    `\\u202e`, a non-UTF-8 byte as `\\xff`): names users chose (directories, targets, jobs) reach
    tables, and a name must not be able to recolour, rewrite or fake the output around it."""
    return _UNPRINTABLE.sub(_escape_char, text)


def check_timezone(tz: str) -> str:
    """TZ if it names an IANA time zone, else one line; `--timezone` of the importers is checked before any work."""
    # lazy: zoneinfo: the command line imports this module at its start; only --timezone needs it
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise UserError(f"unknown time zone {tz!r}: use an IANA name such as America/Los_Angeles or UTC") from None
    return tz
