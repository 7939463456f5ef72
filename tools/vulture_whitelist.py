"""What vulture (`[tool.vulture]` in pyproject.toml, tests/test_dead_code.py) calls unused but is not.

vulture only parses this file. Each entry names what a framework, a file format or a test reaches
by a name vulture cannot follow, with the reason. A new entry needs a reason as good; code that
is simply unused is deleted instead. Click commands and SQLAlchemy event listeners are left out
by `ignore_decorators` (pyproject.toml), not listed here.
"""

_ = object()

# click calls these overrides of click.Group (lazy command loading, `import KIND` sub-commands)
_.get_command  # cli.py, commands/imports.py
_.format_usage  # commands/jobs.py: `ioweather job LOG`'s usage line names `ioweather job`, not its hidden `log`

# http.server's hooks and class settings (services/telemetry/exporter.py's /metrics server)
_.address_family
_.daemon_threads
_.do_GET
_.log_message
_.handle_error  # socketserver's hook: a scraper that hangs up is one log line, not a traceback

# uvicorn reads these flags of its Server (services/runtime/server.py's graceful and forced stop)
_.should_exit
_.force_exit

# sqlite3's connection attribute, set so SQLAlchemy decides when transactions begin (store/db.py)
_.isolation_level

# SQLAlchemy's TypeDecorator settings and hook: the type it stands for, per dialect (store/probe_tables.py's
# LONGBLOB on MySQL, without importing the MySQL dialect on a SQLite store)
_.impl
_.cache_ok
_.load_dialect_impl

# importers are loaded by name from sources/telemetry/importers.py's REGISTRY ("module:Class")
_.LmtImporter
_.IostatImporter
_.TtsImporter
_.CsvImporter
_.MmperfmonImporter
_.LfsdfImporter
_.LctlImporter
_.LctlParamsImporter
_.SlurmImporter  # sources/scheduler.py: a jobs importer
_.NerscJobsdbImporter

# dataclass fields that reach the output through asdict()/__dict__ or a template, not by attribute
_.node_names_source  # sources/darshan_log.py: where the DXT host names came from, in the log document
_.lo_s  # stats/factors.py FactorClass: `factors classify --json`, views/factors_tables.py
_.hi_s
_.mean_bps
_.block_bytes  # store/probe.py run info: columns of the probe runs table (asdict)
_.total_pages  # sources/iomodel_cache.py CacheInfo: the run's cache record (as_dict)
_.dropped_caches
_.created_ns  # sources/probe.py ProbeLayout: written to probe.json (layout.__dict__) and read back
_.filesystem  # sources/telemetry/lmt.py LmtInfo: FILESYSTEM_INFO's name, set positionally
_.purpose  # services/bench/runs.py Motif: the motif's description, set positionally in MOTIFS

# read by getattr with a name in a string
_.__getattr__  # store/__init__.py: PEP 562, Python calls it for `from ioweather.store import open_store`
_.mem_offsets  # store/iomodel.py run rows
_.file_offsets
_.lock_fd  # sources/probe.py close(): the probe directory's lock is held while the fd is open

# references the tests check the production path against (the only check of that path)
_.median_of_durations  # stats/status.py: baseline_stats' in-place median, bit for bit
_.unusual_in_bad_direction  # stats/umami.py: the vectorised climate's `unusual`, one value at a time
_.bucket_low  # stats/slowdown_pieces.py: the lower bound of each duration bucket, checked against bucket_of

# test seams: what a test observes of a daemon or a store that no command prints
_.rebuilds  # services/telemetry/exporter.py: how often the exporter folded its sums again from scratch
_.warm_s  # services/probe/cache.py: set when the cache's warm-up ends
_.pending_frame  # services/telemetry/collector.py: the rows a flush would write
_.metric_of  # sources/telemetry/mmperfmon.py: each value's GPFS metric name
_.make_tree  # sources/telemetry/synthetic.py: a synthetic Lustre /proc tree for collect's tests
_.file_rows  # store/jobs.py: the per-file table of the jobs archive
_.read_frame  # store/telemetry_layout.py: a file system's telemetry rows as a DataFrame
