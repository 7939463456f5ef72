"""The revision of the advisor's rules (stats/findings.py), in a module of its own that imports nothing: the
store's reads (store/jobs.py, store/sqlite_reads.py) and `why`'s stored facts (services/jobs/facts.py) compare
it without loading the findings' numpy and pandas (issue 40's light paths).

A stored job row, and the `why` facts in it, say the revision they were derived under (darshan store
version 5); a row of another revision is not "seen": the next `jobs ingest` reads its log again and
refreshes the row in place (docs/darshan.md "When the rules change").
"""

#: Bump (to the day's date; "DATE.N" for the Nth change of one day) with any change of a finding's level, cost or message, or of which findings a
#: log gets (a rule added, removed, or testing something else, as R01 counting shared files did): stores
#: written before then are refreshed by their next `jobs ingest`. Re-exported by stats/findings.py, beside
#: the rules.
RULES_REVISION = "2026-11-29.2"


def rules_current(revision: str | None) -> bool:
    """Whether a stored answer stamped `revision` (a row's `rules_revision`; None: stored before the stamp, darshan
    schema 4) was derived under this code's rules: the one reading every surface that shows a stored verdict or
    finding marks (`jobs list`, `jobs show`, the Jobs and job pages, /api/jobs, /api/job). A row that is not is
    refreshed by the next `jobs ingest`; until then it is shown as stored, marked."""
    return revision == RULES_REVISION
