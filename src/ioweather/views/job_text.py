"""A job report's phrases shared by its three renderings (the terminal's table, the HTML page, the
dashboard's job page): plain strings, no rich, so that `job LOG --html` loads no terminal library."""

from __future__ import annotations

from ioweather.units import format_bytes, format_seconds


def lustre_text(lu) -> str:
    """A mount's Lustre striping as the CLI, the HTML report and the dashboard show it: `lu` a `Lustre`
    (services/jobs/answer.py) or a stored job's layout with the same keys."""
    if not lu:
        return ""
    if isinstance(lu, dict):
        count, size, osts = lu["stripe_count"], lu["stripe_size_bytes"], lu["osts"]
    else:
        count, size, osts = lu.stripe_count, lu.stripe_size_bytes, lu.osts
    return f"stripe count {count} × {format_bytes(size or 0)}, {osts} OSTs used"


def cost_text(f) -> str:
    """'9.9 min (81 %)' of a finding's I/O time; '-' for a finding that is not costed."""
    if not f.cost_s:
        return "-"
    return f"{format_seconds(f.cost_s)} ({100 * f.cost_share:.0f} %)"


def combined_text(f) -> str:
    """What the finding saves after the ones listed before it: '4.3 min', 'in M08' when it counts the
    same seconds as a finding above, '-' when it is not costed."""
    if f.overlapped_by:
        return f"in {f.overlapped_by}"
    if not f.combined_s:
        return "-"
    return format_seconds(f.combined_s)


def layer_text(perf) -> str:
    """'at MPI-IO (MPI-IO 11.7 min, POSIX 4.7 min alone)': the layer the I/O time is measured at."""
    layers = perf.layers
    alone = ", ".join(f"{k} {format_seconds(v.io_time_s)}" for k, v in layers.items())
    return f"at {perf.io_time_layer}" + (f" (each layer alone: {alone})" if len(layers) > 1 else "")
