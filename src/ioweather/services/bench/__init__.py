"""Benchmarks. See docs/architecture.md.

    runs     regression benchmarks: fio motifs run on a schedule, imported results, their statistics, `bench check`
    iomodel  the io-model benchmark: its plan, its execution into Parquet with the run metadata, its summary
"""
