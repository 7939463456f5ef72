"""The layer rules of docs/architecture.md, enforced: import-linter's contracts in pyproject.toml.

Data flows one way (commands → web → services → sources, store, views → stats → config, units, errors);
a change that imports against it fails here, naming the offending import and line.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept():
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    # A skip here would let a broken layer pass CI unseen: the contracts are the design's only guard.
    assert exe is not None, "import-linter is not installed (pip install -e '.[test]'): the layer contracts cannot be checked"
    r = subprocess.run([exe, "--no-cache", "--config", str(ROOT / "pyproject.toml")], cwd=ROOT / "src",
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]
    assert "BROKEN" not in r.stdout and "KEPT" in r.stdout
