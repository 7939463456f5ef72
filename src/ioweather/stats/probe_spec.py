"""The probe statistics' names and thresholds (METHODS.md section 1), importable without numpy
so that building the CLI stays fast."""

STAT_QUANTILES = {"min": 0.0, "q1": 0.25, "median": 0.5, "q3": 0.75, "p90": 0.9, "p95": 0.95, "p99": 0.99, "max": 1.0}
SLOWDOWN_STATS = ("median", "mean", "p90", "p95", "p99", "max")

#: Default state thresholds on the slowdown of the median over the last 10 minutes.
DEGRADED, SEVERE = 2.0, 10.0

#: A rolling baseline is "learning" until it holds this much history and this many successful samples
#: of an op (docs/dashboard.md): before that the window being judged is most of the baseline itself, and
#: every slowdown is about 1× by construction. A reference period given by the site is taken as it is.
MIN_BASELINE_S, MIN_BASELINE_SAMPLES = 86_400.0, 1000
#: The rule in words, as every surface says it (Status page, `slowdown`, docs/probe.md): stats.status.min_history_s
#: and min_samples. A shorter baseline needs what it can hold at the probe's own period, so a 5-minute
#: baseline at 1 Hz is judged from 150 samples, and a 0.1 Hz probe is not asked for samples it never takes.
LEARNING_RULE = ("until the baseline holds 24 h (95 % of a shorter baseline) and 1,000 samples per op "
                 "(half of what a shorter baseline holds at the probe's period)")

#: What a statistic is divided by: the baseline median (the paper's definition, seed 001) or the same
#: statistic over the baseline (like for like: a p99 against the usual p99).
EXPECTED = ("median", "same")
