"""Benchmarks: the regression benchmark runs (runs: fio motifs, imported results) and the io-model
benchmark (iomodel). See docs/architecture.md.
"""
