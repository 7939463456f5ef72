"""The plumbing every domain uses: the daemons' loop and failure policy, retention, the HTTP server,
opening the stores, Dask clusters, file-system names and the defaults. Imports no domain package
(one exception, in pyproject's contract: retention summarizes a probe day before it deletes it)."""
