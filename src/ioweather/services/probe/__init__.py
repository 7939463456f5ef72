"""The probe's domain: the daemon that measures (run), and everything computed from its samples: the
baseline and rollups (pieces, cache), the targets' state (status, targets), slowdown and its check
(and light_check: `slowdown --check` over sqlite3 alone, for cron),
the timeline and history pages, and the samples as a latency table (samples). See docs/architecture.md.
"""
