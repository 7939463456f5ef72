"""The servers' telemetry: `collect` (collect, collector), `import` (imports, ingest, import_kinds), the
file system views (fsview, capacity), the workload document (workload) and the Prometheus exporter
(exporter, exporter_lctl, exporter_defaults). See docs/architecture.md.
"""
