"""The I/O lab (docs/lab.md): real runs under a real Darshan runtime, each with a planted cause.

    toolchain  finds or builds Darshan, IOR and mdtest (outside the checkout) and compiles the lab's C programs
    catalogue  the cases with their planted causes and labels, and the label vocabulary with its finding codes
    run        runs cases on a directory under Darshan and keeps their logs with an INDEX.json
    score      scores ioweather's findings and Drishti's insights against the planted labels
    answers    what `lab list` (the catalogue) and `lab run` (the run, with its scores) answer
    record     `lab run`'s telemetry (collect's diskstats into a lab store, the logs ingested); storm's recorders
    storm      `lab storm`: `why` scored on planted truth (the storm pair)
"""
