"""The jobs' domain: one Darshan log (darshan, darshan_child), the archive's ingest (ingest), the
scheduler's jobs (scheduler) and a job's weather from our telemetry (weather). See docs/architecture.md.
"""
