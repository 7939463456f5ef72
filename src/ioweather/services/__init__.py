"""Services: what a command or a page asks for, done once.

Between commands/web and the layers below: services read and write through store/,
compute through stats/, and hand results to views/ for rendering. Joins of several
sources (a job with its weather, a run with its servers' rates) live here, never in a
command or a page. One package per domain (probe/, jobs/, telemetry/, bench/, content/), none
importing another; above them answers/ (what joins domains) and lab/, below them runtime/ (the
plumbing they share); no module at this top (docs/architecture.md "services/ by domain", enforced by
pyproject's import-linter contracts).
"""
