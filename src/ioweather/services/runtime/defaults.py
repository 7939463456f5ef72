"""The defaults and names commands offer in --help and pages accept as parameters.

Importable without numpy (like stats/probe_spec.py and stats/factor_spec.py, which hold them), so that
building a command's options stays fast; commands and pages take them from here, not from stats/.
"""

from ioweather.stats.changepoint_spec import MIN_SEGMENT, PENALTY_PER_LOG_N  # noqa: F401 (re-exported)
from ioweather.stats.factor_spec import DEFAULT_SIGNIFICANCE  # noqa: F401 (re-exported)
from ioweather.stats.probe_spec import DEGRADED, EXPECTED, LEARNING_RULE, SEVERE, SLOWDOWN_STATS  # noqa: F401 (re-exported)

#: The series `ioweather changes` looks at (services/answers/changes.py).
CHANGE_KINDS = ("probe", "bench", "jobs", "workload")
