"""The probe's domain: the daemon that measures, and everything computed from its samples. See
docs/architecture.md.

    run          the probe as a daemon: `probe init`, `probe run` and `watch`'s probe
    pieces       a 30-day baseline and interval rollups from per-day and per-hour pieces
    cache        the dashboard's and `/metrics`' probe numbers, computed once and kept up to date
    status       each target's current state, one rule for the Status page, `/metrics` and `slowdown --check`
    targets      the targets' lifecycle: which the store holds, in which state, retiring one
    slowdown     slowdown per target, op and interval against the baseline, and the monitoring-plugin check
    light_check  `slowdown --check` in plain Python over sqlite3, for cron: no numpy, no SQLAlchemy
    timeline     the Probe timeline of one target: a window's samples, or its 10-minute intervals
    history      the History page: per target, op and interval the slowdown of a statistic, worst first
    samples      probe samples as a latency table for the factor analysis (`factors --probe`, Factors page)
"""
