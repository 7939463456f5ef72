"""The change-point detector's defaults (stats/changepoints.py explains them), importable without numpy
so that building the CLI stays fast."""

PENALTY_PER_LOG_N = 4.0
MIN_SEGMENT = 6
