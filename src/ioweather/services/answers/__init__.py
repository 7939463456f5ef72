"""The answers that join domains. They may import every domain package and runtime/; no domain imports
them; inside, job_diff sits on why and event_probes under events (pyproject's contracts). See
docs/architecture.md.

    why           `why JOB` and the job page's top: a job's I/O time split into its code's cost, the fs's, the rest
    job_diff      `job diff BEFORE AFTER`: what changed between two runs of a job, costed on why's budgets
    report        the weekly report of one file system: probes, change points, events, benchmarks, fullness
    report_kept   the report's reads of closed hours at its moving window's edges, kept between computations
    events        I/O events attributed to jobs, and what contention cost them
    event_probes  the probes' baselines of the events' slowdowns, from the store's pieces
    changes       change points of the long series the store keeps (probes, benchmarks, jobs, workload)
    umami         climate vs weather of a job, an imported feature row or a benchmark run; job-feature imports
    factors       performance-factor runs (density, fit, classification) on a latency table or probe samples
    metrics       `/metrics`: probe and benchmark numbers in the Prometheus exposition format
    imports       `ioweather import KIND SOURCE...` of telemetry, and the jobs' weather it changes
"""
