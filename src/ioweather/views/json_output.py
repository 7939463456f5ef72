"""`--json` output without rich: a command that must start fast (`slowdown --check`, run by cron every
minute) prints its document from here; views/output.py, with the tables, hands out the same function."""

from __future__ import annotations

import sys
from typing import Any

from ioweather.encoding import to_json


def print_json(obj: Any) -> None:
    sys.stdout.write(to_json(obj) + "\n")
    sys.stdout.flush()
