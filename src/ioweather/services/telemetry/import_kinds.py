"""The importer kinds `ioweather import` offers: sources/telemetry/importers.py's registry (each kind's
name, help, target and options), handed to the command without importing any importer, so that starting
the command line stays fast; services/telemetry/imports.py (telemetry) and services/jobs/scheduler.py (jobs) run the
import itself."""

from ioweather.sources.telemetry.importers import REGISTRY, Importer, Option, importer, kinds  # noqa: F401
