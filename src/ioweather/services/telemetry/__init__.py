"""The servers' telemetry. See docs/architecture.md.

    collect            `ioweather collect`, the telemetry daemon
    collector          the `collect` loop's state: each tick's raw samples -> rows of the store's long format
    imports            `ioweather import KIND SOURCE...`: each source read by its importer, stored as one import
    ingest             importer chunks -> the store's long format, and the writer name of each import source
    import_kinds       the importer kinds `import` offers, without importing any importer
    fsview             the admin's view of a file system per target: /servers, /metadata, /capacity, /talkers
    fsfacts            what `why`, `events` and `workload` read of that view without it: telemetry kinds, lctl targets, a job's user
    capacity           when the disk is full: the one forecast of the Capacity page, the report and `report --json`
    workload           the `ioweather workload` document: its `--json` and the series behind its figures
    exporter           `ioweather export`: the telemetry store as a Prometheus exporter
    exporter_lctl      what a stateless exporter exports for one `lctl get_param` capture (`export --capture`)
    exporter_defaults  `export`'s defaults, apart so registering its options imports no numpy, pandas, DuckDB
"""
