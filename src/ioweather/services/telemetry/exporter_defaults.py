"""The defaults of `ioweather export` (services/telemetry/exporter.py) and collect's job_stats bound, apart so that registering the command's
options does not import numpy, pandas and DuckDB into every `ioweather` invocation."""

DEFAULT_PORT = 9769
TOP_JOBS = 50
JOB_WINDOW_S = 600.0     # Lustre's default job_cleanup_interval
STALE_S = 600.0
#: `collect`: job_stats rows stored per target and tick: the jobs moving the most bytes (then
#: operations), the others summed into one `<target>/_other` row per metric. A busy OST lists a few
#: hundred jobs at once and most move little; 100 keeps every job of a small site and bounds a
#: center's store at 101 rows per target, metric and tick instead of one per job.
JOB_TOP = 100
#: the job id of the rollup of the jobs beyond the top ones (`export`'s jobid label, `collect`'s target)
OTHER_JOBS = "_other"
