"""Services: what a command or a page asks for, done once.

Between commands/web and the layers below: services read and write through store/,
compute through stats/, and hand results to views/ for rendering. Joins of several
sources (a job with its weather, a run with its servers' rates) live here, never in a
command or a page. See docs/architecture.md.
"""
