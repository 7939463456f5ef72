"""Run Drishti on one Darshan log and write the insights it raised, with their levels, as JSON.

Run by `ioweather lab score` with the Python of Drishti's own environment (never ioweather's):
    python drishti_codes.py OUT.json LOG.darshan
Drishti's CSV export names the insights it raised but not their level; its `message()` gets both, so
this wraps it before Drishti's modules import it by name.
"""

import json
import sys
from importlib.metadata import version

out, log = sys.argv[1], sys.argv[2]
sys.argv = ["drishti", log]  # Drishti parses its arguments when its config module is imported

import drishti.includes.config as config  # noqa: E402

LEVELS = {config.HIGH: "HIGH", config.WARN: "WARN", config.INFO: "INFO", config.OK: "OK"}
raised = []
_message = config.message


def message(code, target, level, issue, recommendations=None, details=None):
    raised.append({"code": code, "level": LEVELS.get(level, str(level)), "message": issue})
    return _message(code, target, level, issue, recommendations, details)


config.message = message

from drishti.reporter import main  # noqa: E402

try:
    main()
finally:
    with open(out, "w") as f:
        json.dump({"version": version("drishti-io"), "insights": raised}, f)
