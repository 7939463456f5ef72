"""The monitoring-plugin codes (Nagios plugin guidelines) that `slowdown --check` and `bench check` answer
with: one table, so that both checks name and rank their states alike. Imports nothing (the checks
run from cron and monitoring agents, where starting fast matters).
"""

CHECK_NAMES = {0: "OK", 1: "WARNING", 2: "CRITICAL", 3: "UNKNOWN"}
#: Which code wins when targets differ: CRITICAL, then WARNING, then UNKNOWN, then OK (the Nagios habit).
CHECK_PRECEDENCE = (2, 1, 3, 0)
