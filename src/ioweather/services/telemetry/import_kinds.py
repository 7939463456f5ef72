"""The importer kinds `ioweather import` offers: sources/telemetry/importers.py's registry (each kind's
face: name, help, target and options), handed to the command without importing any importer, so that
starting the command line and `import KIND --help` load no reader (numpy, pandas, h5py);
services/telemetry/imports.py (telemetry) and services/jobs/scheduler.py (jobs) run the import itself."""

from ioweather.sources.telemetry.importers import REGISTRY, Kind, Option, face, kinds  # noqa: F401
