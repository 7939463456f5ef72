"""The plumbing every domain uses. Imports no domain package (one exception, in pyproject's contract:
retention summarizes a probe day before it deletes it). See docs/architecture.md.

    daemon       the daemons' one loop: a fixed tick grid, missed ticks, signals, a write-behind buffer
    retention    what `store prune` and the daemons remove, per kind of data
    server       the dashboard server's lifecycle behind `serve` and `watch`: socket, uvicorn thread, stop
    stores       the store as commands and pages get it: its one door (they import services, never store/)
    distributed  Dask for the commands that spread work over processes or nodes (`--dask SPEC`)
    fs_names     the name of the file system a directory lives on, one for probes, benchmarks and telemetry
    defaults     the defaults and names commands offer in --help and pages accept, importable without numpy
"""
