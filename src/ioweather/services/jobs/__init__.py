"""The jobs' domain: Darshan logs, their archive, the scheduler's jobs and a job's weather from our
telemetry. See docs/architecture.md. The one name of a uid on every surface, `user_label`, lives in
archive_light (which loads no pandas: `jobs summary` on SQLite names users too); darshan imports it.

    report         one Darshan log for `job` and `why`: read, characterize, findings, verdict, HTML (no store)
    answer         `JobReport`, the answer of `ioweather job LOG`, typed to its leaves
    facts          `LogFacts`: what `why` answers with of one log, stored at ingest (no log read again)
    darshan_child  `job LOG` done in a child process, so that a dying Darshan reader is one line
    archive_light  `jobs summary` through sqlite3 and numpy; the one summary every door hands its columns to
    darshan        Darshan jobs for `job`, `jobs ...` and the Jobs pages
    presence       whether the store holds any job (the dashboard's navigation), without darshan's pandas
    ingest         the pipeline of `jobs ingest`: many Darshan logs read in parallel into the store
    ingest_scan    what `jobs ingest` finds before reading: the logs, the unchanged ones, an unchanged archive's answer
    scheduler      `import slurm`, `import nersc-jobsdb`: the scheduler's jobs into the store
    weather        a job's weather: its window joined with our telemetry, fullness, probes and other jobs
"""
