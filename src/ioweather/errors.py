"""Errors a user can act on.

Anything raised as `UserError` reaches the terminal as one line on stderr and a
non-zero exit code, never as a traceback (ARCHITECTURE.md, CLI contract).
"""


class UserError(Exception):
    """Bad input or an environment problem, explained in one line."""

    exit_code = 2


class StoreError(UserError):
    """The store cannot be opened, read or written."""


class SchemaTooNew(StoreError):
    """The database was written by a newer ioweather."""
