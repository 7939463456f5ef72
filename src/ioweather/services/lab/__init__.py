"""The I/O lab (docs/lab.md): real runs under a real Darshan runtime, each with a planted cause.

`toolchain` finds or builds Darshan, IOR and mdtest (from ../shared/third_party into a cache outside
the checkout) and compiles the lab's own C programs; `catalogue` holds the cases and the label
vocabulary with its finding codes; `run` runs cases on a directory and writes their logs with an
INDEX.json; `score` reads those logs with ioweather and with Drishti and scores both against the labels;
`answers` holds what `lab list` and `lab run` answer (the catalogue, a run with its scores).
"""
