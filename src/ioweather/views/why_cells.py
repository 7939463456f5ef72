"""The cells of `why`'s answer that the CLI's tables, `why --html` and the job page write alike."""

from __future__ import annotations

from ioweather.units import format_seconds


def system_time(part: dict) -> str:
    """The system's seconds of a job or one log (`why`'s Why or LogBudget as JSON): 'unknown' without evidence,
    the readings' range when they cannot tell the share from 0, else the seconds."""
    if part["system_s"] is not None:
        return format_seconds(part["system_s"])
    r = part.get("system_range")
    if part["system_model"] == "below_resolution" and r is not None:
        return f"0–{format_seconds(r['high_s'])}, not told from 0"
    return "unknown"
