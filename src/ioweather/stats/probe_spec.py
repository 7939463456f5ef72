"""The probe statistics' names and thresholds (METHODS.md section 1), importable without numpy
so that building the CLI stays fast."""

STAT_QUANTILES = {"min": 0.0, "q1": 0.25, "median": 0.5, "q3": 0.75, "p90": 0.9, "p95": 0.95, "p99": 0.99, "max": 1.0}
SLOWDOWN_STATS = ("median", "mean", "p90", "p95", "p99", "max")

#: Default state thresholds on the slowdown of the median over the last 10 minutes.
DEGRADED, SEVERE = 2.0, 10.0
