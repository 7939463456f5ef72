"""The defaults of `ioweather export` (services/telemetry/exporter.py), apart so that registering the command's
options does not import numpy, pandas and DuckDB into every `ioweather` invocation."""

DEFAULT_PORT = 9769
TOP_JOBS = 50
JOB_WINDOW_S = 600.0     # Lustre's default job_cleanup_interval
STALE_S = 600.0
