"""Pure functions on numpy arrays and DataFrames. No I/O here: no files, no store, no network."""
