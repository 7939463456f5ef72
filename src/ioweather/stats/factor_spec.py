"""Defaults of the factor analysis, importable without numpy so that building the CLI stays fast."""

#: h of METHODS.md 2.3, changed from 0.01 by measurement (docs/factors.md, "Choosing h").
DEFAULT_SIGNIFICANCE = 0.03
