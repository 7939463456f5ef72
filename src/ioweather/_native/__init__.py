"""The small C core: timed system calls. Built by setup.py from *_core.c files."""

from __future__ import annotations

import importlib

from ioweather.errors import UserError


def load(name: str):
    """The C module `name` (probe_core, iomodel_core, ...), or a UserError saying how to get it built."""
    try:
        return importlib.import_module(f"ioweather._native.{name}")
    except ImportError as e:  # pragma: no cover - only on a broken install
        raise UserError(f"the C core is not built ({e}); reinstall ioweather with gcc and the Python headers present") from None
